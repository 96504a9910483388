"""Bytes between Python and JavaScript memory in Pyodide, right at any heap address.

Pyodide 314's own byte copies -- `Uint8Array.assign(buf)`, `to_js(buf)`, `JsProxy.to_bytes()`
and `JsProxy.assign_to(buf)` -- hand the Python buffer's address to JavaScript as a SIGNED
32-bit number. Once Python's heap has grown past 2 GiB a buffer can lie above that line, and
then `to_bytes` / `assign_to` raise `RangeError: offset is out of bounds` while `assign` and
`to_js` copy OTHER bytes without a word (a checkpoint stored wrong bytes; a 1 GiB container
read back as damaged). `PyProxy.getBuffer()` computes the address unsigned, so every copy of
bytes between Python and JavaScript in this package goes through this module, never through
the calls above:

    to_js(buf)              -> a new Uint8Array (an ArrayBuffer of its own) with buf's bytes
    write_js(dst, at, buf)  copies buf into the JS ArrayBuffer `dst` (e.g. a wasm memory's
                            buffer) at byte offset `at`
    to_bytes(src)           -> bytes: a copy of a JS Uint8Array / ArrayBuffer
    read_js(src, at, n)     -> bytes: n bytes of the JS ArrayBuffer `src` from byte offset `at`
    to_py(src)              -> a new bytearray (writable) with the bytes of a JS Uint8Array /
                            ArrayBuffer
    read_into(dst, src, at) fills the Python buffer dst from the JS array src at offset at
    as_buffer(data)         bytes-like data as it is; a JS Uint8Array / ArrayBuffer by to_py

Strings have the same trouble one way: Pyodide hands an ASCII str of 64 characters or more to
JavaScript by decoding `HEAPU8.subarray(ptr, ptr + len)` with the address SIGNED, so such a
str lying above 2 GiB arrives as other characters (NULs, mostly) -- an argument, a value
inside a dict given to `to_js`, a return value. Shorter or non-ASCII strs, and every string
coming from JavaScript into Python, cross whole. So Python data that JavaScript must read goes
through `call` below: JSON text, copied as UTF-8 bytes (by this module) and parsed in JS.

    call(this, fn, args, js)  this[fn](...args) (fn a method name) or fn(...args) (a JS
                            function), the Python data in `args` rebuilt in JS by JSON.parse

`buf` is anything with the buffer protocol (bytes, bytearray, memoryview, PickleBuffer,
array); a non-contiguous one is copied to bytes first (its view would span the gaps).

Speed: a copy through getBuffer costs about 10-25 us of fixed overhead (a PyProxy, a buffer
view, its release), against about 4 us for Pyodide's own; the core is called with many small
copies per record. So Pyodide's own copy is still used where it is provably right: a `bytes`
object whose data ends below 2 GiB (its address is id() + a fixed offset, checked once against
getBuffer), and `to_bytes`, which is right or raises (then the copy is made again here).
Pyodide only: in host CPython there is no JavaScript.
"""

_LOW = 1 << 31  # Pyodide's own copies are right for Python memory below this address
_js = None      # the JS functions, made on first use
_offset = None  # bytes' data address minus id(bytes): checked once; False if it did not hold
_u8 = None      # js.Uint8Array, looked up once (a `from js import` per call costs ~1 us)
_caller = None  # the JS function of call() and JsProxy, set on first use
_JsProxy = None
_json = None    # JSON text of call()'s data: one encoder, made once (json.dumps with options
                # builds a new one per call)
_ASCII_SAFE = 64  # an ASCII str shorter than this crosses whole at any address


def _functions():
    global _js, _u8
    if _js is None:
        from js import Uint8Array
        from pyodide.code import run_js
        _u8 = Uint8Array
        # getBuffer('u8') of a C-contiguous buffer: `data` is exactly its bytes, and its
        # byteOffset is the buffer's address in Pyodide's heap (unsigned).
        _js = (
            run_js("(src) => { const v = src.getBuffer('u8');"
                   " try { return v.data.slice(); } finally { v.release(); } }"),
            run_js("(dst, src, at) => { const v = dst.getBuffer('u8'); try {"
                   " const n = v.data.length;"
                   " v.data.set(ArrayBuffer.isView(src)"
                   " ? new Uint8Array(src.buffer, src.byteOffset + at, n)"
                   " : new Uint8Array(src, at, n)); } finally { v.release(); } }"),
            run_js("(dst, at, src) => { const v = src.getBuffer('u8'); try {"
                   " new Uint8Array(dst, at, v.data.length).set(v.data);"
                   " } finally { v.release(); } }"),
            run_js("(src) => { const v = src.getBuffer('u8');"
                   " try { return v.data.byteOffset; } finally { v.release(); } }"),
            run_js("(src, n) => ({ byteLength: n, view() { const v = src.getBuffer('u8');"
                   " try { return v.data; } finally { v.release(); } } })"),
        )
    return _js


def _bytes_offset():
    """Where a bytes object's data starts, from its id() (CPython: the object's address):
    bytes.__basicsize__ - 1 (offsetof ob_sval), confirmed on two objects through getBuffer."""
    global _offset
    if _offset is None:
        offset = bytes.__basicsize__ - 1
        samples = (b"elastic-lite", bytes(range(256)) * 3)
        address = _functions()[3]
        _offset = offset if all(address(s) == id(s) + offset for s in samples) else False
    return _offset


def _low(buf):
    """True for a bytes object whose data ends below 2 GiB: Pyodide's own copies are right."""
    if type(buf) is not bytes:
        return False
    offset = _bytes_offset()
    return offset is not False and id(buf) + offset + len(buf) <= _LOW


def _contiguous(buf):
    """buf itself when getBuffer sees exactly its bytes, else a bytes copy."""
    if isinstance(buf, (bytes, bytearray)):
        return buf
    raw = getattr(buf, "raw", None)  # PickleBuffer: its flat view
    mv = raw() if callable(raw) else memoryview(buf)
    return mv if mv.c_contiguous else mv.tobytes()


def _size(buf):
    return len(buf) if isinstance(buf, (bytes, bytearray)) else buf.nbytes


def to_js(buf):
    """A new Uint8Array holding a copy of buf's bytes."""
    if _low(buf):
        out = _u8.new(len(buf))
        out.assign(buf)
        return out
    return _functions()[0](_contiguous(buf))


def write_js(dst, at, buf):
    """Copies buf's bytes into the JS ArrayBuffer `dst` at byte offset `at` (they must fit:
    JS raises a RangeError otherwise)."""
    if _low(buf):
        if buf:
            _u8.new(dst, at, len(buf)).assign(buf)
        return
    buf = _contiguous(buf)
    if _size(buf):
        _functions()[2](dst, at, buf)


def to_py(src):
    """A new bytearray holding a copy of a JS Uint8Array / ArrayBuffer / DataView's bytes."""
    out = bytearray(int(src.byteLength))
    if out:
        _functions()[1](out, src, 0)
    return out


def read_into(dst, src, at):
    """Fills the writable Python buffer `dst` with len(dst) bytes of the JS Uint8Array /
    ArrayBuffer `src` from byte offset `at` (a record's piece straight into its final memory)."""
    if len(dst):
        _functions()[1](dst, src, at)


def to_bytes(src):
    """bytes: a copy of a JS Uint8Array / ArrayBuffer / DataView's bytes."""
    try:
        return src.to_bytes()  # right, or RangeError when its new bytes lie above 2 GiB
    except Exception:
        return bytes(to_py(src))


def read_js(src, at, n):
    """bytes: n bytes of the JS ArrayBuffer `src` from byte offset `at`."""
    if not n:
        return b""
    _functions()
    return to_bytes(_u8.new(src, at, n))


def as_buffer(data):
    """bytes-like data as it is; a JS Uint8Array / ArrayBuffer (a JsProxy: what a host hands
    over) copied in once, into a bytearray (writable: out-of-band buffers can restore as
    writable memory without another copy)."""
    if isinstance(data, (bytes, bytearray, memoryview)) or not hasattr(data, "byteLength"):
        return data
    return to_py(data)


class LiveViews:
    """Live views (`{byteLength, view()}`, see js/store/indexeddb.mjs recordPieces) of Python
    buffers for a JS store that takes them: it reads the bytes where they lie, a chunk at a
    time, instead of a copy of the whole record made first. The buffers must stay alive and
    unchanged until the store's call settles; `close()` then lets go of them.

        with LiveViews() as live:
            await store.putRecords(live.record([piece, ...]))"""

    def __init__(self):
        self._proxies = []

    def view(self, buf):
        from pyodide.ffi import create_proxy
        buf = _contiguous(buf)
        proxy = create_proxy(buf)
        self._proxies.append(proxy)
        return _functions()[4](proxy, _size(buf))

    def close(self):
        for proxy in self._proxies:
            proxy.destroy()
        self._proxies = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _plain_scalar(value):
    """True for a value Pyodide's own conversion hands to JS right at any address."""
    if isinstance(value, str):
        return len(value) < _ASCII_SAFE or not value.isascii()
    return value is None or isinstance(value, (bool, int, float))


def _call_function():
    global _caller, _JsProxy, _json
    if _caller is None:
        import json
        from pyodide.code import run_js
        from pyodide.ffi import JsProxy
        _JsProxy = JsProxy
        _json = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        # data: UTF-8 JSON bytes of [args, paths] (or the same already as JS values, see
        # call); null means "none" as Pyodide's to_js(None) (undefined) does; each path
        # (argument index, then keys) receives the next JS value of `js`.
        _caller = run_js("""(() => { const text = new TextDecoder();
  const none = (k, v) => (v === null ? undefined : v);
  return (self, fn, data, ...js) => {
    const [a, paths] = data instanceof Uint8Array ? JSON.parse(text.decode(data), none) : data;
    paths.forEach((p, k) => { let o = a; for (let i = 0; i < p.length - 1; i++) o = o[p[i]];
      o[p[p.length - 1]] = js[k]; });
    return typeof fn === 'string' ? self[fn](...a) : fn.apply(self, a);
  }; })()""")
    return _caller


def call(this, fn, args=(), js=None):
    """`this[fn](...args)` (fn a method name) or `fn(...args)` (fn a JS function, this None):
    what it returns (a JsProxy of a promise for an async JS method: await it).

    The Python data in `args` (str, numbers, bools, None, lists / tuples, dicts with str
    keys) reaches JS whole at any heap address: as JSON text, copied as UTF-8 bytes, parsed
    in JS (None becomes undefined, as with Pyodide's to_js). A JsProxy argument is passed as
    it is; `js` {path: JS value} puts JS values (Uint8Arrays, arrays of them) inside the
    data, path = (argument index, key, ...), e.g. {(1, "head"): u8}. Data that is not JSON
    (NaN, bytes, other keys) goes through Pyodide's to_js instead. Arguments that are all
    short or non-ASCII strs, numbers, bools or None are passed straight (the fast path)."""
    args = list(args)
    if not js and all(_plain_scalar(a) for a in args):
        return (getattr(this, fn) if isinstance(fn, str) else fn)(*args)
    caller = _call_function()
    js = dict(js or {})
    for i, a in enumerate(args):
        if isinstance(a, _JsProxy):  # handed over as it is
            js[(i,)] = a
            args[i] = None
    paths, values = [list(p) for p in js], list(js.values())
    try:
        data = to_js(_json([args, paths]).encode())
    except (TypeError, ValueError):
        from js import Object
        from pyodide.ffi import to_js as _to_js
        data = _to_js([args, paths], dict_converter=Object.fromEntries)
    return caller(this, fn, data, *values)
