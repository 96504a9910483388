"""The C core (wasm/include/elastic_lite.h) seen from Python, with two backends:

- Pyodide (`sys.platform == "emscripten"`): the standalone `elastic_lite.wasm` shipped inside
  this package is instantiated through `js.WebAssembly` (it imports nothing). Bytes go into
  wasm memory with ONE `Uint8Array.new(memory.buffer, ptr, n).assign(b)` into space the core
  reserved (`el_writer_reserve`); views are re-created after every call because memory may
  grow and replace its buffer. Compiling synchronously is fine in Node and in workers; a page's
  main thread may refuse it for modules > 4 KiB, so the JS glue can hand over a module it
  compiled asynchronously (`use_wasm_module`).
- Host CPython (pytest): `build/native/libelastic_lite.so` (or $ELASTIC_LITE_NATIVE_LIB)
  through ctypes.

Both expose the same small surface: `Writer` (a file-like sink that pickle writes into) and
`inspect()` / `validate_pickle()` returning the report dict of docs/INTERFACES.md.
"""

import json
import os
import sys

SERIALIZERS = {"pickle": 1, "cloudpickle": 2, "dill": 3}
INSPECT_VALIDATE = 1


class CoreError(Exception):
    """The C core refused an operation; the message is the core's own."""


# ---------------------------------------------------------------------------------------
# Pyodide backend


class _WasmBackend:
    _module = None  # a WebAssembly.Module handed over by the JS glue, if any

    def __init__(self):
        from js import Object, Uint8Array, WebAssembly  # noqa: F401 (Pyodide only)
        from pyodide.ffi import to_js
        self._Uint8Array = Uint8Array
        module = _WasmBackend._module
        if module is None:
            from importlib import resources
            data = resources.files("elastic_lite").joinpath("elastic_lite.wasm").read_bytes()
            module = WebAssembly.Module.new(to_js(data))
        instance = WebAssembly.Instance.new(module, Object.new())
        self._ex = instance.exports
        self._memory = self._ex.memory

    # memory helpers ----------------------------------------------------------------------
    def _view(self, ptr, n):
        return self._Uint8Array.new(self._memory.buffer, ptr, n)

    def _put(self, data):
        """Copy bytes into fresh wasm memory; returns the pointer (caller frees)."""
        n = len(data)
        ptr = self._ex.el_malloc(max(n, 1)) & 0xFFFFFFFF
        if not ptr:
            raise CoreError(f"the core could not allocate {n} bytes")
        if n:
            self._view(ptr, n).assign(data)
        return ptr

    def _cstr(self, ptr, limit=1 << 16):
        ptr &= 0xFFFFFFFF
        if not ptr:
            return ""
        avail = self._memory.buffer.byteLength - ptr
        raw = self._view(ptr, min(limit, avail)).to_bytes()
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def _bytes(self, ptr, n):
        return self._view(ptr & 0xFFFFFFFF, n).to_bytes() if n else b""

    # writer --------------------------------------------------------------------------------
    def writer_new(self, producer, python, created_ms):
        p = self._put(producer.encode() + b"\0")
        v = self._put(python.encode() + b"\0")
        try:
            w = self._ex.el_writer_new(p, v, float(created_ms)) & 0xFFFFFFFF
        finally:
            self._ex.el_free(p)
            self._ex.el_free(v)
        if not w:
            raise CoreError(self._cstr(self._ex.el_last_error()))
        return w

    def writer_begin(self, w, names):
        p = self._put(names)
        try:
            return self._ex.el_writer_begin_record(w, p, len(names))
        finally:
            self._ex.el_free(p)

    def writer_write(self, w, buf, n):
        ptr = self._ex.el_writer_reserve(w, n) & 0xFFFFFFFF
        if not ptr:
            return -1
        self._view(ptr, n).assign(buf)
        return 0

    def writer_abort(self, w):
        return self._ex.el_writer_abort_record(w)

    def writer_end(self, w, code):
        return self._ex.el_writer_end_record(w, code)

    def writer_finish(self, w):
        return self._ex.el_writer_finish(w)

    def writer_size(self, w):
        return self._ex.el_writer_size(w) & 0xFFFFFFFF

    def writer_bytes(self, w):
        return self._bytes(self._ex.el_writer_data(w), self.writer_size(w))

    def writer_count(self, w):
        return self._ex.el_writer_record_count(w)

    def writer_error(self, w):
        return self._cstr(self._ex.el_writer_error(w))

    def writer_free(self, w):
        self._ex.el_writer_free(w)

    # inspection ----------------------------------------------------------------------------
    def _result_json(self, r):
        if not (r & 0xFFFFFFFF):
            raise CoreError(self._cstr(self._ex.el_last_error()) or "out of memory")
        try:
            n = self._ex.el_result_json_len(r) & 0xFFFFFFFF
            return self._bytes(self._ex.el_result_json(r), n).decode("utf-8")
        finally:
            self._ex.el_result_free(r)

    def inspect_json(self, data, flags):
        p = self._put(data)
        try:
            return self._result_json(self._ex.el_inspect(p, len(data), flags))
        finally:
            self._ex.el_free(p)

    def validate_json(self, data):
        p = self._put(data)
        try:
            return self._result_json(self._ex.el_validate_pickle(p, len(data)))
        finally:
            self._ex.el_free(p)


# ---------------------------------------------------------------------------------------
# host CPython backend


def _native_path():
    env = os.environ.get("ELASTIC_LITE_NATIVE_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "native", "libelastic_lite.so")


class _NativeBackend:
    def __init__(self):
        import ctypes as C
        path = _native_path()
        if not os.path.exists(path):
            raise CoreError(f"the native core {path} is missing: run `npm run build` "
                            "(or set ELASTIC_LITE_NATIVE_LIB)")
        lib = C.CDLL(path)
        vp, sz, i, cp = C.c_void_p, C.c_size_t, C.c_int, C.c_char_p
        sig = {
            "el_last_error": (cp, []),
            "el_writer_new": (vp, [cp, cp, C.c_double]),
            "el_writer_free": (None, [vp]),
            "el_writer_begin_record": (i, [vp, cp, sz]),
            "el_writer_reserve": (vp, [vp, sz]),
            "el_writer_append": (i, [vp, cp, sz]),
            "el_writer_abort_record": (i, [vp]),
            "el_writer_end_record": (i, [vp, i]),
            "el_writer_finish": (i, [vp]),
            "el_writer_record_count": (i, [vp]),
            "el_writer_data": (vp, [vp]),
            "el_writer_size": (sz, [vp]),
            "el_writer_error": (cp, [vp]),
            "el_inspect": (vp, [cp, sz, i]),
            "el_validate_pickle": (vp, [cp, sz]),
            "el_result_json": (vp, [vp]),
            "el_result_json_len": (sz, [vp]),
            "el_result_free": (None, [vp]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self._lib, self._C = lib, C

    def writer_new(self, producer, python, created_ms):
        w = self._lib.el_writer_new(producer.encode(), python.encode(), float(created_ms))
        if not w:
            raise CoreError((self._lib.el_last_error() or b"").decode("utf-8", "replace"))
        return w

    def writer_begin(self, w, names):
        return self._lib.el_writer_begin_record(w, names, len(names))

    def writer_write(self, w, buf, n):
        if isinstance(buf, bytes):
            return self._lib.el_writer_append(w, buf, n)
        ptr = self._lib.el_writer_reserve(w, n)
        if not ptr:
            return -1
        mv = memoryview(buf).cast("B")
        if mv.readonly:
            self._C.memmove(ptr, bytes(mv), n)
        else:
            self._C.memmove(ptr, (self._C.c_char * n).from_buffer(mv), n)
        return 0

    def writer_abort(self, w):
        return self._lib.el_writer_abort_record(w)

    def writer_end(self, w, code):
        return self._lib.el_writer_end_record(w, code)

    def writer_finish(self, w):
        return self._lib.el_writer_finish(w)

    def writer_size(self, w):
        return self._lib.el_writer_size(w)

    def writer_bytes(self, w):
        return self._C.string_at(self._lib.el_writer_data(w), self._lib.el_writer_size(w))

    def writer_count(self, w):
        return self._lib.el_writer_record_count(w)

    def writer_error(self, w):
        return (self._lib.el_writer_error(w) or b"").decode("utf-8", "replace")

    def writer_free(self, w):
        self._lib.el_writer_free(w)

    def _result_json(self, r):
        if not r:
            raise CoreError((self._lib.el_last_error() or b"out of memory").decode())
        try:
            n = self._lib.el_result_json_len(r)
            return self._C.string_at(self._lib.el_result_json(r), n).decode("utf-8")
        finally:
            self._lib.el_result_free(r)

    def _arg(self, data):
        return data if isinstance(data, bytes) else bytes(data)

    def inspect_json(self, data, flags):
        data = self._arg(data)
        return self._result_json(self._lib.el_inspect(data, len(data), flags))

    def validate_json(self, data):
        data = self._arg(data)
        return self._result_json(self._lib.el_validate_pickle(data, len(data)))


_backend = None


def backend():
    global _backend
    if _backend is None:
        _backend = _WasmBackend() if sys.platform == "emscripten" else _NativeBackend()
    return _backend


def use_wasm_module(module):
    """Pyodide: use this already compiled WebAssembly.Module (from the JS glue)."""
    global _backend
    _WasmBackend._module = module
    _backend = None


# ---------------------------------------------------------------------------------------
# the API the package uses


class Writer:
    """A checkpoint container being written; file-like (`write`) so pickle streams into it.

    `record_bytes` counts the payload bytes of the open record (what a failed attempt wrote
    before it was rewound)."""

    def __init__(self, producer, python, created_ms):
        self._b = backend()
        self._w = self._b.writer_new(producer, python, created_ms)
        self.record_bytes = 0

    def _check(self, status, what):
        if status < 0:
            raise CoreError(f"{what}: {self._b.writer_error(self._w)}")

    def begin_record(self, names):
        encoded = b"\0".join(n.encode("utf-8") for n in names)
        self._check(self._b.writer_begin(self._w, encoded), "begin_record")
        self.record_bytes = 0

    def write(self, buf):
        n = buf.nbytes if isinstance(buf, memoryview) else len(buf)
        if n:
            self._check(self._b.writer_write(self._w, buf, n), "write")
            self.record_bytes += n
        return n

    def abort_record(self):
        self._check(self._b.writer_abort(self._w), "abort_record")
        self.record_bytes = 0

    def end_record(self, serializer):
        self._check(self._b.writer_end(self._w, SERIALIZERS[serializer]), "end_record")

    @property
    def record_count(self):
        return self._b.writer_count(self._w)

    @property
    def size(self):
        return self._b.writer_size(self._w)

    def finish(self):
        self._check(self._b.writer_finish(self._w), "finish")
        return self._b.writer_bytes(self._w)

    def free(self):
        if self._w:
            self._b.writer_free(self._w)
            self._w = None


def inspect(data, validate=True):
    """The inspection report (dict) of container bytes; never raises on bad input."""
    flags = INSPECT_VALIDATE if validate else 0
    return json.loads(backend().inspect_json(data, flags))


def validate_pickle(data):
    """The validation report (dict) of one bare pickle stream."""
    return json.loads(backend().validate_json(data))
