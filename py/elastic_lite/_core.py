"""The C core (wasm/include/elastic_lite.h) seen from Python, with two backends:

- Pyodide (`sys.platform == "emscripten"`): the standalone `elastic_lite.wasm` shipped inside
  this package is instantiated through `js.WebAssembly` (it imports nothing). Bytes go into
  wasm memory with ONE copy into space the core reserved (`el_writer_reserve`), and out with
  one copy, both through `_jsbytes` (Pyodide's own copies break above 2 GiB of its heap);
  `memory.buffer` is fetched again for every copy because memory may grow and replace it.
  WebAssembly memory never shrinks, so once no handle is live and the instance's memory grew
  past 64 MiB (a large checkpoint or inspection), the instance is dropped and the next call
  makes a fresh one from the same compiled module. Compiling synchronously is fine in Node
  and in workers; a page's main thread may refuse it for modules > 4 KiB, so the JS glue can
  hand over a module it compiled asynchronously (`use_wasm_module`).
- Host CPython: the package's own `libelastic_lite.so` (the platform wheel), else the
  checkout's `build/native/libelastic_lite.so` ($ELASTIC_LITE_NATIVE_LIB wins) through ctypes; Python buffers are passed by address (no copy before the core's own).

Both expose the same small surface: `Writer` (a file-like sink that pickle writes into, which
hands the checkpoint out part by part) and `inspect()` / `validate_pickle()` returning the
report dict of docs/INTERFACES.md. Content CRCs (CRC-32/ISO-HDLC) are computed here with
`zlib.crc32` directly over Python memory, which is faster than copying into the core.
"""

import json
import os
import struct
import sys
import zlib
from collections import namedtuple

from . import _jsbytes

SERIALIZERS = {"pickle": 1, "cloudpickle": 2, "dill": 3}
KINDS = {"data": 1, "manifest": 2, "history": 3}
INSPECT_VALIDATE = 1
INSPECT_HEADERS_ONLY = 2

_PART_KINDS = {1: "bytes", 2: "buffer", 3: "stored"}
_PART_HEAD, _PART_TAIL = 0xFFFFFFFF, 0xFFFFFFFE
_PART = struct.Struct("<IIIIQQQ")
TAKE_MANY = 64  # parts read per crossing by Writer.take (Pyodide)  # el_part: kind, record, buffer, reserved, offset, length, data
_MEMORY_KEEP = 64 << 20  # a wasm instance whose memory grew past this is replaced when idle

Part = namedtuple("Part", "kind record buffer offset length data")
Part.__doc__ = """One piece of the checkpoint file, in file order (Writer.take()).

kind: "bytes" (data: bytes of the core), "buffer" (data: the out-of-band buffer's memoryview,
handed back as registered: never copied) or "stored" (data: None, the caller writes the
stored record's bytes). record: the record's index, or "head" / "tail" (file header; index
and footer). buffer: the buffer's index in its record (kind "buffer"), else None. offset:
the part's file offset. Writing every part's bytes in order gives the container."""


class CoreError(Exception):
    """The C core refused an operation; the message is the core's own."""


def _flat(buf):
    """A 1-D unsigned-byte memoryview of any C-contiguous buffer (PickleBuffer, memoryview,
    bytearray, bytes, array...), without copying. Raises BufferError if not contiguous."""
    raw = getattr(buf, "raw", None)
    mv = raw() if callable(raw) else memoryview(buf)
    if not mv.c_contiguous:
        raise BufferError("the buffer is not C-contiguous; pass a contiguous buffer "
                          "(or let pickle write it in-band)")
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


# ---------------------------------------------------------------------------------------
# Pyodide backend


class _WasmBackend:
    _module = None  # the compiled WebAssembly.Module (from the JS glue, or compiled here once)

    def __init__(self):
        from js import Object, WebAssembly  # Pyodide only
        if _WasmBackend._module is None:
            from importlib import resources
            data = resources.files("elastic_lite").joinpath("elastic_lite.wasm").read_bytes()
            _WasmBackend._module = WebAssembly.Module.new(_jsbytes.to_js(data))
        instance = WebAssembly.Instance.new(_WasmBackend._module, Object.new())
        self._ex = instance.exports
        self._memory = self._ex.memory
        self.live = 0  # handles (writers) that still use this instance

    def memory_size(self):
        return self._memory.buffer.byteLength

    # memory helpers ----------------------------------------------------------------------
    def _write(self, ptr, data):
        _jsbytes.write_js(self._memory.buffer, ptr, data)

    def _read(self, ptr, n):
        return _jsbytes.read_js(self._memory.buffer, ptr, n)

    def _put(self, data):
        """Copy bytes into fresh wasm memory; returns the pointer (caller frees)."""
        n = len(data)
        ptr = self._ex.el_malloc(max(n, 1)) & 0xFFFFFFFF
        if not ptr:
            raise CoreError(f"the core could not allocate {n} bytes")
        self._write(ptr, data)
        return ptr

    def _cstr(self, ptr, limit=1 << 16):
        ptr &= 0xFFFFFFFF
        if not ptr:
            return ""
        avail = self._memory.buffer.byteLength - ptr
        raw = self._read(ptr, min(limit, avail))
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def _bytes(self, ptr, n):
        return self._read(ptr & 0xFFFFFFFF, n)

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

    def writer_begin(self, w, kind, names):
        # the names through the reusable scratch area: a malloc and a free are two more
        # crossings into WebAssembly per record (~5 us each in Pyodide)
        return self.el_writer_begin_record(w, kind, self._to_scratch(names), len(names))

    def writer_write(self, w, mv):
        n = len(mv) if isinstance(mv, bytes) else mv.nbytes
        ptr = self.el_writer_reserve(w, n) & 0xFFFFFFFF
        if not ptr:
            return -1
        self._write(ptr, mv)
        return 0

    def writer_take(self, w):
        ptr = self.el_writer_take(w) & 0xFFFFFFFF
        kind, record, buffer, _, offset, length, data = _PART.unpack(
            self._read(ptr, _PART.size))
        return kind, record, buffer, offset, length, (
            self._bytes(data, length) if kind == 1 else None)

    def writer_take_many(self, w):
        """Every part ready now, as writer_take gives them (without the last, empty one), up
        to TAKE_MANY per crossing (el_writer_take_many: a point's hundred stored records are
        two crossings, not a hundred)."""
        if self._parts is None:
            self._parts = self.el_malloc(_PART.size * TAKE_MANY) & 0xFFFFFFFF
        out = []
        while True:
            n = self.el_writer_take_many(w, self._parts, TAKE_MANY)
            raw = self._read(self._parts, n * _PART.size)
            for at in range(0, n * _PART.size, _PART.size):
                kind, record, buffer, _, offset, length, data = _PART.unpack_from(raw, at)
                out.append((kind, record, buffer, offset, length,
                            self._bytes(data, length) if kind == 1 else None))
            if n < TAKE_MANY:
                return out

    _parts = None  # el_writer_take_many's array, allocated once

    def __getattr__(self, name):  # el_* calls with plain numbers: straight to the exports
        if not name.startswith("el_"):
            raise AttributeError(name)
        fn = getattr(self._ex, name)
        setattr(self, name, fn)  # looked up once per instance: a lookup in `exports` (a
        return fn                # JsProxy) costs about as much as the call itself

    def writer_error(self, w):
        return self._cstr(self._ex.el_writer_error(w))

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

    def result_json(self, r):
        return self._result_json(r)

    def feed(self, fn, handle, mv, *args):
        """fn(handle, *args, address, n) with mv copied once into a reusable scratch area."""
        return fn(handle, *args, self._to_scratch(mv), mv.nbytes)

    def _to_scratch(self, data):
        """The address of a copy of `data` in a scratch area reused from call to call (valid
        until the next use)."""
        n = len(data) if isinstance(data, bytes) else data.nbytes
        if n > self._scratch_cap:
            if self._scratch:
                self.el_free(self._scratch)
            self._scratch = self.el_malloc(max(n, 64)) & 0xFFFFFFFF
            self._scratch_cap = max(n, 64) if self._scratch else 0
            if not self._scratch:
                raise CoreError(f"the core could not allocate {n} bytes")
        self._write(self._scratch, data)
        return self._scratch

    _scratch = 0
    _scratch_cap = 0

    def error_text(self, ptr):
        return self._cstr(ptr)


# ---------------------------------------------------------------------------------------
# host CPython backend


def _native_path():
    """$ELASTIC_LITE_NATIVE_LIB, else the library inside the installed package (the platform
    wheel, py/hatch_build.py), else the checkout's build (tests run from py/)."""
    env = os.environ.get("ELASTIC_LITE_NATIVE_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "libelastic_lite.so")
    if os.path.exists(packaged):
        return packaged
    return os.path.join(here, "..", "..", "build", "native", "libelastic_lite.so")


class _NativeBackend:
    def __init__(self):
        import ctypes as C
        path = _native_path()
        if not os.path.exists(path):
            raise CoreError(f"the native core {path} is missing: install the platform wheel "
                            "or the sdist of elastic_lite (pip install elastic_lite), run "
                            "`npm run build` in a checkout, or set ELASTIC_LITE_NATIVE_LIB")
        lib = C.CDLL(path)
        vp, sz, i, cp, u32, d = C.c_void_p, C.c_size_t, C.c_int, C.c_char_p, C.c_uint32, C.c_double

        class Py_buffer(C.Structure):  # the buffer protocol's view (stable since 3.11)
            _fields_ = [("buf", vp), ("obj", vp), ("len", C.c_ssize_t),
                        ("itemsize", C.c_ssize_t), ("readonly", i), ("ndim", i),
                        ("format", vp), ("shape", vp), ("strides", vp),
                        ("suboffsets", vp), ("internal", vp)]
        self._Py_buffer = Py_buffer
        api = C.pythonapi
        api.PyObject_GetBuffer.argtypes = [C.py_object, C.POINTER(Py_buffer), i]
        api.PyObject_GetBuffer.restype = i
        api.PyBuffer_Release.argtypes = [C.POINTER(Py_buffer)]
        api.PyBuffer_Release.restype = None
        sig = {
            "el_last_error": (cp, []),
            "el_writer_new": (vp, [cp, cp, d]),
            "el_writer_free": (None, [vp]),
            "el_writer_begin_record": (i, [vp, i, cp, sz]),
            "el_writer_append": (i, [vp, vp, sz]),
            "el_writer_add_buffer": (i, [vp, d, u32]),
            "el_writer_abort_record": (i, [vp]),
            "el_writer_end_record": (i, [vp, i, u32, i]),
            "el_writer_add_stored_record": (i, [vp, d]),
            "el_writer_finish": (i, [vp]),
            "el_writer_take": (vp, [vp]),
            "el_writer_record_count": (i, [vp]),
            "el_writer_record_offset": (d, [vp, i]),
            "el_writer_record_length": (d, [vp, i]),
            "el_writer_file_size": (d, [vp]),
            "el_writer_error": (cp, [vp]),
            "el_inspect": (vp, [vp, sz, i]),
            "el_validate_pickle": (vp, [vp, sz]),
            "el_result_json": (vp, [vp]),
            "el_result_json_len": (sz, [vp]),
            "el_result_free": (None, [vp]),
            "el_reader_new": (vp, [d, i, d]),
            "el_reader_next": (i, [vp]),
            "el_reader_offset": (d, [vp]),
            "el_reader_length": (d, [vp]),
            "el_reader_feed": (i, [vp, vp, sz]),
            "el_reader_feed_crc32": (i, [vp, u32]),
            "el_reader_feed_window": (i, [vp, d, vp, sz]),
            "el_reader_result": (vp, [vp]),
            "el_reader_error": (cp, [vp]),
            "el_reader_free": (None, [vp]),
        }
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self._lib, self._C = lib, C
        self.live = 0

    def memory_size(self):
        return 0  # native memory is returned by free(); nothing to reset

    def __getattr__(self, name):  # el_* calls with plain numbers: straight to the library
        if not name.startswith("el_"):
            raise AttributeError(name)
        return getattr(self._lib, name)

    def _call_with_buffer(self, fn, obj, *rest):
        """fn(address, nbytes, *rest) on obj's memory, no copy (the buffer protocol)."""
        if isinstance(obj, bytes):
            return fn(self._C.cast(self._C.c_char_p(obj), self._C.c_void_p), len(obj), *rest)
        view = self._Py_buffer()
        if self._C.pythonapi.PyObject_GetBuffer(obj, self._C.byref(view), 0) != 0:
            raise BufferError("could not read the buffer")
        try:
            return fn(view.buf, view.len, *rest)
        finally:
            self._C.pythonapi.PyBuffer_Release(self._C.byref(view))

    def writer_new(self, producer, python, created_ms):
        w = self._lib.el_writer_new(producer.encode(), python.encode(), float(created_ms))
        if not w:
            raise CoreError((self._lib.el_last_error() or b"").decode("utf-8", "replace"))
        return w

    def writer_begin(self, w, kind, names):
        return self._lib.el_writer_begin_record(w, kind, names, len(names))

    def writer_write(self, w, mv):
        return self._call_with_buffer(lambda p, n: self._lib.el_writer_append(w, p, n), mv)

    def writer_take(self, w):
        p = self._lib.el_writer_take(w)
        kind, record, buffer, _, offset, length, data = _PART.unpack(
            self._C.string_at(p, _PART.size))
        return kind, record, buffer, offset, length, (
            self._C.string_at(data, length) if kind == 1 else None)

    def writer_take_many(self, w):
        return None  # a call per part costs little natively

    def writer_error(self, w):
        return (self._lib.el_writer_error(w) or b"").decode("utf-8", "replace")

    def _result_json(self, r):
        if not r:
            raise CoreError((self._lib.el_last_error() or b"out of memory").decode())
        try:
            n = self._lib.el_result_json_len(r)
            return self._C.string_at(self._lib.el_result_json(r), n).decode("utf-8")
        finally:
            self._lib.el_result_free(r)

    def result_json(self, r):
        return self._result_json(r)

    def feed(self, fn, handle, mv, *args):
        """fn(handle, *args, address, n) on mv's memory (no copy)."""
        return self._call_with_buffer(lambda p, n: fn(handle, *args, p, n), mv)

    def error_text(self, ptr):
        return (ptr or b"").decode("utf-8", "replace")

    def inspect_json(self, data, flags):
        return self._call_with_buffer(
            lambda p, n: self._result_json(self._lib.el_inspect(p, n, flags)), data)

    def validate_json(self, data):
        return self._call_with_buffer(
            lambda p, n: self._result_json(self._lib.el_validate_pickle(p, n)), data)


_backend = None


def backend():
    global _backend
    if _backend is None:
        _backend = _WasmBackend() if sys.platform == "emscripten" else _NativeBackend()
    return _backend


def _release_if_idle(b):
    """Drops a WebAssembly instance whose memory grew past 64 MiB once nothing uses it (its
    memory never shrinks); the next call instantiates the compiled module again."""
    global _backend
    if b is _backend and b.live == 0 and b.memory_size() > _MEMORY_KEEP:
        _backend = None


def use_wasm_module(module):
    """Pyodide: use this already compiled WebAssembly.Module (from the JS glue)."""
    global _backend
    _WasmBackend._module = module
    _backend = None


# ---------------------------------------------------------------------------------------
# the API the package uses


class Writer:
    """A checkpoint container (format 2.0) being written; file-like, so pickle streams into it.

        w.begin_record(names)                 # kind="manifest"/"history": a UTF-8 JSON record
        pickler(w, buffer_callback=w.add_buffer).dump(values)   # write() + out-of-band buffers
        w.end_record("cloudpickle")           # or w.abort_record() after a failed attempt
        w.take()                              # the parts ready so far (optional, any time)
        data = w.finish()                     # the parts not taken yet, joined
        w.free()

    `write` accepts anything with the buffer protocol (PickleBuffer, memoryview, bytearray,
    bytes) and copies it once, into the core; the stream's CRC-32 is chained with zlib as it
    is written. `add_buffer` registers an out-of-band buffer: only its length and CRC-32 enter
    the core; its bytes come back, uncopied, as a "buffer" part. `record_bytes` counts the
    stream bytes of the open record (what a failed attempt wrote before it was rewound)."""

    def __init__(self, producer, python, created_ms):
        self._b = backend()
        self._w = self._b.writer_new(producer, python, created_ms)
        self._b.live += 1
        self._crc = 0
        self._open_buffers = []
        self._buffers = {}  # (record, buffer index) -> flat memoryview, until taken
        self.record_bytes = 0

    def _check(self, status, what):
        if status < 0:
            raise CoreError(f"{what}: {self._b.writer_error(self._w)}")
        return status

    def begin_record(self, names, kind="data"):
        if kind not in KINDS:
            raise CoreError(f"begin_record: unknown record kind {kind!r} "
                            "(data, manifest or history)")
        encoded = b"\0".join(n.encode("utf-8") for n in names)
        self._check(self._b.writer_begin(self._w, KINDS[kind], encoded), "begin_record")
        self._crc = 0
        self._open_buffers = []
        self.record_bytes = 0

    def write(self, buf):
        mv = buf if isinstance(buf, bytes) else _flat_or_copy(buf)
        n = len(mv) if isinstance(mv, bytes) else mv.nbytes
        if n:
            self._check(self._b.writer_write(self._w, mv), "write")
            self._crc = zlib.crc32(mv, self._crc)
            self.record_bytes += n
        return n

    def add_buffer(self, buf):
        """Registers an out-of-band buffer (pickle's buffer_callback): returns False, so
        pickle writes only NEXT_BUFFER in the stream. Raises BufferError if not contiguous."""
        mv = _flat(buf)
        self._check(self._b.el_writer_add_buffer(self._w, float(mv.nbytes), zlib.crc32(mv)),
                    "add_buffer")
        self._open_buffers.append(mv)
        return False

    def abort_record(self):
        self._check(self._b.el_writer_abort_record(self._w), "abort_record")
        self._open_buffers = []
        self.record_bytes = 0

    def end_record(self, serializer=None):
        """Ends the open record; serializer is None for the JSON kinds. Returns its index."""
        if serializer is None:
            code = 0
        elif serializer in SERIALIZERS:
            code = SERIALIZERS[serializer]
        else:
            raise CoreError(f"end_record: unknown serializer {serializer!r} "
                            "(pickle, cloudpickle or dill)")
        index = self._check(self._b.el_writer_end_record(self._w, code, self._crc, 0),
                            "end_record")
        for i, mv in enumerate(self._open_buffers):
            self._buffers[(index, i)] = mv
        self._open_buffers = []
        return index

    def add_stored_record(self, length):
        """A record whose bytes (`length`, a multiple of 64) the caller already has stored:
        it appears as a "stored" part. Returns its index."""
        return self._check(self._b.el_writer_add_stored_record(self._w, float(length)),
                           "add_stored_record")

    def take(self):
        """Every part ready now (a list of Part), in file order; the core drops their bytes."""
        parts = []
        many = self._b.writer_take_many(self._w)
        for kind, record, buffer, offset, length, data in (
                many if many is not None else iter(lambda: self._b.writer_take(self._w), None)):
            if kind == 0:
                return parts
            if kind == 2:
                data = self._buffers.pop((record, buffer), None)
            record = "head" if record == _PART_HEAD else "tail" if record == _PART_TAIL else record
            parts.append(Part(_PART_KINDS[kind], record, buffer if kind == 2 else None,
                              offset, length, data))
        return parts

    def finish(self, join=True):
        """Writes index and footer. Returns every part not taken yet joined as bytes (the
        whole checkpoint when nothing was taken before), or with join=False the parts."""
        self._check(self._b.el_writer_finish(self._w), "finish")
        parts = self.take()
        if not join:
            return parts
        for p in parts:
            if p.data is None:
                raise CoreError(f"finish: a {p.kind} part (record {p.record}) is not held by "
                                "the writer; use finish(join=False) and write it yourself")
        return b"".join(p.data for p in parts)

    @property
    def record_count(self):
        return self._b.el_writer_record_count(self._w)

    @property
    def size(self):
        """Bytes of the file laid out so far (records ended, not the open one)."""
        return int(self._b.el_writer_file_size(self._w))

    def record_offset(self, index):
        return int(self._b.el_writer_record_offset(self._w, index))

    def record_length(self, index):
        return int(self._b.el_writer_record_length(self._w, index))

    def free(self):
        if self._w:
            self._b.el_writer_free(self._w)
            self._w = None
            self._b.live -= 1
            self._buffers = {}
            _release_if_idle(self._b)


def _flat_or_copy(buf):
    """_flat, or a bytes copy for the rare non-contiguous buffer pickle writes in-band."""
    try:
        return _flat(buf)
    except (BufferError, TypeError):
        return memoryview(buf).tobytes()


_PULL_ABOVE = 4 << 20  # in Pyodide, containers larger than this are read range by range


def inspect(data, validate=True, headers_only=False):
    """The inspection report (dict) of container bytes; never raises on bad input.

    In Pyodide a large container is read with the pull reader (`read`), so it is never
    copied into wasm memory whole; the report is the same either way."""
    if sys.platform == "emscripten" and _nbytes(data) > _PULL_ABOVE:
        return read(data, validate=validate, headers_only=headers_only)
    flags = (INSPECT_VALIDATE if validate else 0) | (INSPECT_HEADERS_ONLY if headers_only else 0)
    b = backend()
    try:
        return json.loads(b.inspect_json(data, flags))
    finally:
        _release_if_idle(b)


def _nbytes(data):
    return data.nbytes if isinstance(data, memoryview) else len(data)


def read(data, validate=True, headers_only=False, chunk=1 << 20):
    """The inspection report of `data` (any buffer) read with the pull reader: the core asks
    for byte ranges and gets windows of about `chunk` bytes (it serves every request inside a
    window itself), content CRCs it asks for are computed here with zlib.crc32 over `data`,
    so large out-of-band buffers never enter the core. The same report as `inspect`."""
    mv = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    with PullReader(mv.nbytes, validate, headers_only, chunk) as r:
        while (need := r.need()) is not None:
            kind, off, n = need
            if kind == "window":  # a window from there: the core serves the requests inside it
                r.feed_window(off, mv[off:off + max(n, chunk)])
            else:
                r.feed_crc32(zlib.crc32(mv[off:off + n]))
        return r.result()


class PullReader:
    """The core's pull reader, one step at a time, for callers that fetch the bytes it asks
    for from elsewhere (a store, record by record; `read` above over a buffer):

        with PullReader(size) as r:
            while (need := r.need()) is not None:   # ("window", offset, n) | ("crc32", offset, n)
                r.feed_window(offset, bytes_from_offset)  # at least n bytes, from `offset`
                r.feed_crc32(crc)                         # CRC-32 of [offset, offset + n)
            report = r.result()
    """

    def __init__(self, size, validate=True, headers_only=False, chunk=1 << 20):
        flags = (INSPECT_VALIDATE if validate else 0) | (INSPECT_HEADERS_ONLY if headers_only else 0)
        self._b = b = backend()
        self._r = b.el_reader_new(float(size), flags, float(chunk))
        if not self._r:
            raise CoreError(b.error_text(b.el_last_error()))
        b.live += 1

    def need(self):
        b, r = self._b, self._r
        kind = b.el_reader_next(r)
        if kind == 0:
            return None
        return ("window" if kind == 1 else "crc32", int(b.el_reader_offset(r)),
                int(b.el_reader_length(r)))

    def _check(self, rc):
        if rc < 0:
            raise CoreError(self._b.error_text(self._b.el_reader_error(self._r)))

    def feed_window(self, offset, mv):
        self._check(self._b.feed(self._b.el_reader_feed_window, self._r, mv, float(offset)))

    def feed_crc32(self, crc):
        self._check(self._b.el_reader_feed_crc32(self._r, crc))

    def result(self):
        return json.loads(self._b.result_json(self._b.el_reader_result(self._r)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        r, self._r = self._r, None
        if r:
            self._b.el_reader_free(r)
            self._b.live -= 1
            _release_if_idle(self._b)


def validate_pickle(data):
    """The validation report (dict) of one bare pickle stream."""
    b = backend()
    try:
        return json.loads(b.validate_json(data))
    finally:
        _release_if_idle(b)


def crc32(data, crc=0):
    """CRC-32/ISO-HDLC, the content checksum of format 2.0 (zlib's, over Python memory)."""
    return zlib.crc32(data, crc)
