"""A corpus of hostile checkpoints: each trick of issue 11 in a well-formed container.

`build()` makes them in the interpreter that will restore them (host CPython in pytest,
Pyodide in the CLI and browser tests: the Node tests run this file's source there), because
a code object or a module path is only right for the Python that made it. Every container is
whole (the C core's writer lays it out; every CRC is right): the tricks are in what the
pickle streams import, not in damage.

Each payload, if it ever ran, leaves a SENTINEL: a file named `el-pwned-<id>` in the current
directory (a relative path: the tests run restores in a scratch directory, Pyodide in its own
memory file system), or a JavaScript global `__el_pwned_<id>` for the tricks that call the
page's JavaScript. The payloads that run Python (`marker_code`) also write the file through
Node's `fs` when they run in Pyodide under Node: that is what a hostile file would do to the
host's disk from the CLI, and the CLI tests see it from outside the process. `sentinels()` lists those present; `clear()` removes them. A payload is
`live` when, trusted, it really does leave its sentinel in this interpreter: the tests check
that first, so "nothing ran" can never pass because a payload could not have run anyway.

Record payloads are hand-written pickle opcodes (protocol 2 or 4, as each trick needs), each
a 1-tuple (a record holds the tuple of its names' values).
"""

import copyreg
import json
import os
import struct
import sys

import elastic_lite as el
from elastic_lite import _core

PREFIX = "el-pwned-"
JS_PREFIX = "__el_pwned_"
MANIFEST = "__elastic_lite_manifest__"
PYODIDE = sys.platform == "emscripten"
EXT_CODES = {"EXT1": 0xE1, "EXT2": 0xBEEF, "EXT4": 0x1234567}


# --- pickle opcodes -------------------------------------------------------------------------

def _str(s):
    b = s.encode("utf-8")
    return (b"\x8c" + bytes([len(b)]) + b) if len(b) < 256 else b"X" + struct.pack("<I", len(b)) + b


def _unicode(s):  # BINUNICODE: a protocol 1+ string
    b = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(b)) + b


def _bytes(b):
    return (b"C" + bytes([len(b)]) + b) if len(b) < 256 else b"B" + struct.pack("<I", len(b)) + b


def _int(n):
    return b"J" + struct.pack("<i", n)


def stack_global(module, name):
    """STACK_GLOBAL (protocol 4+): pickle resolves a dotted `name` attribute by attribute."""
    return _str(module) + _str(name) + b"\x93"


def global_(module, name):
    """GLOBAL: at protocol <= 2 pickle maps Python 2 names first (cPickle -> pickle)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def call(func, *args):
    """func(*args) by REDUCE; args are opcode strings, one value each."""
    tuples = {1: b"\x85", 2: b"\x86", 3: b"\x87"}
    return func + b"".join(args) + tuples[len(args)] + b"R"


def record(value, proto):
    """The stream of a record: PROTO, the value, wrapped in a 1-tuple, STOP."""
    return bytes([0x80, proto]) + value + b"\x85."


def marker_code(ident):
    """A Python expression that leaves the file sentinel of `ident` (what every exec/eval
    payload runs): in the current directory, and on the host's disk too when it runs in
    Pyodide under Node."""
    name = PREFIX + ident
    body = (f"open({name!r}, 'w').close()\n"
            "import sys\n"
            "if sys.platform == 'emscripten':\n"
            "    import js\n"
            "    if getattr(js, 'process', None) is not None:\n"
            f"        js.eval(\"process.getBuiltinModule('node:fs').writeFileSync({name!r}, '')\")\n")
    return f"exec({body!r})"


# --- the tricks -------------------------------------------------------------------------------

def _inner_exec(ident):
    """A second pickle stream that calls builtins.exec(marker): what pickle.loads would run."""
    return record(call(global_("builtins", "exec"), _unicode(marker_code(ident))), 2)


def _ext(op, code):
    if op == "EXT1":
        return b"\x82" + bytes([code])
    if op == "EXT2":
        return b"\x83" + struct.pack("<H", code)
    return b"\x84" + struct.pack("<i", code)


def _tricks():
    """(id, what, names of the record, stream, sentinel kind, live here?) of every hand-made
    hostile record."""
    py313 = sys.version_info >= (3, 13)
    yield ("cloudpickle-exec", "STACK_GLOBAL 'cloudpickle' 'builtins.exec' (a dotted name "
           "through a module that imported builtins)",
           record(call(stack_global("cloudpickle", "builtins.exec"),
                       _str(marker_code("cloudpickle-exec"))), 4), "file", True)
    yield ("os-path-system", "STACK_GLOBAL 'os' 'path.os.system'",
           record(call(stack_global("os", "path.os.system"),
                       _str(f"touch {PREFIX}os-path-system")), 4), "file", not PYODIDE)
    yield ("os-path-mkdir", "STACK_GLOBAL 'os' 'path.os.mkdir' (the same path to a call that "
           "works in Pyodide too)",
           record(call(stack_global("os", "path.os.mkdir"), _str(PREFIX + "os-path-mkdir")), 4),
           "file", True)
    yield ("pyodide-run-js", "STACK_GLOBAL 'pyodide' 'code.run_js'",
           record(call(stack_global("pyodide", "code.run_js"),
                       _str(f"globalThis.{JS_PREFIX}pyodide_run_js = 1")), 4), "js", PYODIDE)
    yield ("pickling-loads", "STACK_GLOBAL 'elastic_lite.capture.picklers' 'pickle.loads' (a second "
           "stream, never validated)",
           record(call(stack_global("elastic_lite.capture.picklers", "pickle.loads"),
                       _bytes(_inner_exec("pickling-loads"))), 4), "file", True)
    path = call(stack_global("pathlib._local", "PosixPath"), _str(PREFIX + "pathlib-local"))
    yield ("pathlib-local", "STACK_GLOBAL 'pathlib._local' 'Path.write_text' (an unbound "
           "method reached through its class)",
           record(call(stack_global("pathlib._local", "Path.write_text"), path, _str("x")), 4),
           "file", py313)
    path = call(stack_global("pathlib", "PosixPath"), _str(PREFIX + "pathlib"))
    yield ("pathlib", "STACK_GLOBAL 'pathlib' 'Path.write_text'",
           record(call(stack_global("pathlib", "Path.write_text"), path, _str("x")), 4),
           "file", True)
    yield ("cpickle-loads", "GLOBAL 'cPickle' 'loads' at protocol 2 (pickle maps it to "
           "pickle.loads)",
           record(call(global_("cPickle", "loads"), _bytes(_inner_exec("cpickle-loads"))), 2),
           "file", True)
    yield ("commands-getoutput", "GLOBAL 'commands' 'getoutput' at protocol 2 (mapped to "
           "subprocess.getoutput)",
           record(call(global_("commands", "getoutput"),
                       _unicode(f"touch {PREFIX}commands-getoutput")), 2), "file", not PYODIDE)
    yield ("builtin-eval", "GLOBAL '__builtin__' 'eval' at protocol 2 (mapped to builtins)",
           record(call(global_("__builtin__", "eval"),
                       _unicode(f"exec({marker_code('builtin-eval')!r})")), 2), "file", True)
    yield ("inst-exec", "INST 'builtins' 'exec' (protocol 0 calls the global with its args)",
           b"(" + b"V" + marker_code("inst-exec").encode("raw_unicode_escape") + b"\n"
           + b"ibuiltins\nexec\n" + b"\x85.", "file", True)
    # Three keys: copyreg refuses one key under two codes (a trusted run registers them).
    keys = {"EXT1": ("builtins", "exec"), "EXT2": ("builtins", "eval"), "EXT4": ("__builtin__", "eval")}
    for op, code in EXT_CODES.items():
        ident = f"ext-{op.lower()}"
        register = call(global_("copyreg", "add_extension"), _unicode(keys[op][0]),
                        _unicode(keys[op][1]), _int(code))
        yield (ident, f"{op} {code} after the stream itself calls copyreg.add_extension",
               record(register + b"0" + call(_ext(op, code), _unicode(marker_code(ident))), 2),
               "file", True)
    yield ("js-eval", "GLOBAL 'js' 'eval' (the page's JavaScript, in Pyodide)",
           record(call(global_("js", "eval"), _unicode(f"globalThis.{JS_PREFIX}js_eval = 1")), 2),
           "js", PYODIDE)


def _function_body():
    """A real snapshot of an object whose reduction calls a notebook function: the record
    rebuilds the function (elastic_lite._rebuild.make_function) and REDUCE calls it while
    loading. Every global it imports is one a legitimate checkpoint imports too."""
    ns = {"__name__": "__main__"}
    exec(
        "def pwn():\n"
        f"    {marker_code('function-body')}\n"
        "    return 'pwned'\n"
        "class Boom:\n"
        "    def __reduce__(self):\n"
        "        return (pwn, ())\n"
        "boom = Boom()\n", ns)
    return el.snapshot(ns, names=["boom"]).data


def container(hostile=(), modules=()):
    """A whole checkpoint: a benign record `kept = {'a': [1, 2]}`, the hostile records
    [(names, stream)] (serializer pickle) and a JSON manifest whose `modules` bindings are
    `modules` (restore re-imports each)."""
    w = _core.Writer(producer="elastic-lite hostile corpus", python=sys.version.split()[0],
                     created_ms=0)
    try:
        w.begin_record(["kept"])
        w.write(record(b"}" + _str("a") + b"]" + b"(" + b"K\x01K\x02e" + b"s", 4))
        w.end_record("pickle")
        for names, stream, *serializer in hostile:
            w.begin_record(names)
            w.write(stream)
            w.end_record(serializer[0] if serializer else "pickle")
        w.begin_record([MANIFEST], kind="manifest")
        w.write(json.dumps({"version": 2, "modules": list(modules), "skipped": [], "types": {},
                            "groups": [], "writable_buffers": 0}).encode())
        w.end_record(None)
        return w.finish()
    finally:
        w.free()


def combined(items=None):
    """One whole checkpoint holding every hostile record of `items` (default: build()) and the
    benign `kept`, with the manifest binding of the print trick: one file for the hosts whose
    every restore costs a fresh interpreter (the CLI, a page)."""
    items = build() if items is None else items
    hostile, modules = [], []
    for item in items:
        info = el.load.loader.inspect(item["data"])
        view = memoryview(item["data"])
        manifest = next(r for r in info["records"] if r["kind"] == "manifest")
        text = bytes(view[manifest["payload_offset"]:manifest["payload_offset"] + manifest["length"]])
        modules += json.loads(text).get("modules") or []
        for rec in info["records"]:
            if rec["kind"] == "data" and rec["names"] != ["kept"]:
                stream = bytes(view[rec["payload_offset"]:rec["payload_offset"] + rec["length"]])
                hostile.append((rec["names"], stream, rec["serializer"]))
    return container(hostile, modules)


def build():
    """Every hostile checkpoint: [{"id", "what", "data", "names" (the hostile variables),
    "sentinel" ("file" | "js" | "print"), "live"}]."""
    items = []
    for ident, what, stream, sentinel, live in _tricks():
        name = ident.replace("-", "_")
        items.append({"id": ident, "what": what, "data": container([([name], stream)]),
                      "names": [name], "sentinel": sentinel, "live": live})
    items.append({
        "id": "manifest-print", "what": "a manifest module binding print = builtins.exec",
        "data": container(modules=[{"name": "print", "module": "builtins", "attr": "exec"}]),
        "names": ["print"], "sentinel": "print", "live": True})
    items.append({
        "id": "function-body", "what": "a notebook function rebuilt from the record and called "
        "by REDUCE while loading (every import legitimate)",
        "data": _function_body(), "names": ["boom"], "sentinel": "file", "live": True})
    return items


def poke_print(namespace):
    """What a person does after a restore: call print. If print was rebound to exec, the
    text runs and leaves the sentinel of the manifest trick."""
    fn = namespace.get("print", print)
    fn(marker_code("manifest-print"))


def sentinels():
    """The sentinels present now: files in the current directory, JS globals in Pyodide."""
    found = sorted(f[len(PREFIX):] for f in os.listdir(".") if f.startswith(PREFIX))
    if PYODIDE:
        import js
        found += sorted(k for k in ("pyodide_run_js", "js_eval")
                        if getattr(js, JS_PREFIX + k, None) is not None)
    return found


def clear():
    """Remove every sentinel (and the extension codes a trusted EXT payload registered)."""
    for f in os.listdir("."):
        if f.startswith(PREFIX):
            path = os.path.join(".", f)
            os.rmdir(path) if os.path.isdir(path) else os.remove(path)
    if PYODIDE:
        import js
        for k in ("pyodide_run_js", "js_eval"):
            js.eval(f"delete globalThis.{JS_PREFIX}{k}")
    for code in EXT_CODES.values():
        key = copyreg._inverted_registry.get(code)
        if key is not None:
            copyreg.remove_extension(key[0], key[1], code)
