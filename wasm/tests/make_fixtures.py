"""Generates the real pickle streams the C tests and the fuzz seed corpus use.

    .venv/bin/python wasm/tests/make_fixtures.py [path/to/libelastic_lite.so]

Writes wasm/tests/fixtures/<serializer>-p<protocol>-<kind>.pkl for pickle, cloudpickle and
dill at protocols 0-5, and next to each a .globals.json: the globals the stream imports, as
an independent reference computes them from CPython's pickletools.genops (a small symbolic
stack that follows STACK_GLOBAL's strings through the memo). Every stream is also checked by
pickletools.dis (which verifies stack and marks) and loaded back, so a fixture is known good.
With the library path it also writes checkpoint containers into the fuzz seed corpus.
The outputs are committed; rerun this after upgrading cloudpickle or dill.
"""
import collections
import ctypes
import datetime
import decimal
import fractions
import io
import json
import os
import pickle
import pickletools
import shutil
import sys

import cloudpickle
import dill

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
CORPUS = os.path.join(HERE, "..", "fuzz", "corpus")


class Point:  # defined in __main__: cloudpickle and dill store it by value
    def __init__(self, x, y):
        self.x, self.y = x, y

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5


def make_adder(k):
    def add(v):
        return v + k

    return add


SCALE = 3


def scaled(v):
    return v * SCALE


def data_objects():
    shared = [1, 2, 3]
    rec = [0]
    rec.append(rec)
    return {
        "dicts": [{"a": i, "b": str(i), "c": [i, 2 * i]} for i in range(200)],
        "scalars": [None, True, False, 0, -1, 255, 65535, 2**31, -(2**63), 2**200, 1.5, -0.0,
                    float("inf"), 1e300, complex(1, 2)],
        "text": ["", "ascii", "naïve café", "日本語", "emoji 🎉", "line\nbreak", "back\\slash",
                 "quote'\"", "\x00nul"],
        "bytes": [b"", b"\x00\xff" * 10, bytearray(b"abc"), b"x" * 300],
        "containers": [(), (1,), (1, 2), (1, 2, 3), tuple(range(10)), set(range(5)),
                       frozenset({1, 2}), {"shared": shared, "again": shared}, rec],
        "stdlib": [collections.OrderedDict(a=1, b=2), datetime.datetime(2026, 12, 2, 13, 0),
                   decimal.Decimal("1.25"), fractions.Fraction(3, 7),
                   collections.Counter("hello"), collections.deque([1, 2])],
    }


def code_objects():
    return {"functions": [make_adder(5), scaled, lambda v: v - 1], "class": [Point, Point(3, 4)]}


def reference_globals(data):
    """Globals a stream imports, computed from pickletools.genops only."""
    stack, marks, memo, out = [], [], {}, []

    def add(g):
        if g not in out:
            out.append(g)

    for op, arg, pos in pickletools.genops(data):
        name = op.name
        if name in ("GLOBAL", "INST"):
            # the unpickler's reading (two raw UTF-8 lines), not pickletools' ASCII/escapes one
            mod, nm = data[pos + 1:].split(b"\n", 2)[:2]
            add([mod.decode("utf-8"), nm.decode("utf-8")])
        if name == "STACK_GLOBAL":
            nm, mod = stack.pop(), stack.pop()
            add([mod, nm])
            stack.append(None)
            continue
        if name in ("EXT1", "EXT2", "EXT4"):
            add(["copyreg._extension_registry", str(arg)])
        if name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
            continue
        if name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = stack[-1]
            continue
        if name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
            continue
        if name == "DUP":
            stack.append(stack[-1])
            continue
        if name == "MARK":
            marks.append(len(stack))
            continue
        before = op.stack_before
        if pickletools.markobject in before or (name == "POP" and marks and len(stack) == marks[-1]):
            del stack[marks.pop():]
            if name == "POP":
                continue
            before = before[: before.index(pickletools.markobject)]
        if before:
            del stack[len(stack) - len(before):]
        if name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
                    "SHORT_BINSTRING", "BINSTRING"):
            stack.append(arg if isinstance(arg, str) else arg.decode("latin-1"))
        else:
            stack.extend([None] * len(op.stack_after))
    return out


def dumps(lib, obj, proto):
    if lib == "pickle":
        return pickle.dumps(obj, protocol=proto)
    if lib == "cloudpickle":
        return cloudpickle.dumps(obj, protocol=proto)
    return dill.dumps(obj, protocol=proto)


def main():
    shutil.rmtree(FIXTURES, ignore_errors=True)
    os.makedirs(FIXTURES)
    streams = {}
    for lib in ("pickle", "cloudpickle", "dill"):
        objs = dict(data_objects())
        if lib != "pickle":
            objs.update(code_objects())
        for proto in range(6):
            for kind, obj in objs.items():
                data = dumps(lib, obj, proto)
                pickletools.dis(data, out=io.StringIO())  # raises if stack/marks are wrong
                (pickle if lib == "pickle" else dill).loads(data)
                streams[f"{lib}-p{proto}-{kind}"] = data
    # protocol 5 out-of-band buffers: NEXT_BUFFER / READONLY_BUFFER opcodes
    bufs = []
    streams["pickle-p5-oob"] = pickle.dumps(
        [pickle.PickleBuffer(b"readonly"), pickle.PickleBuffer(bytearray(b"writable"))],
        protocol=5, buffer_callback=bufs.append)
    for name, data in sorted(streams.items()):
        with open(os.path.join(FIXTURES, name + ".pkl"), "wb") as f:
            f.write(data)
        with open(os.path.join(FIXTURES, name + ".globals.json"), "w") as f:
            f.write(json.dumps(reference_globals(data), ensure_ascii=False, separators=(",", ":")))
    print(f"{len(streams)} fixtures in {FIXTURES}")

    # fuzz seeds: a spread of real streams, small ones first
    vdir = os.path.join(CORPUS, "validate")
    os.makedirs(vdir, exist_ok=True)
    for old in os.listdir(vdir):  # keep regress-* seeds: inputs the fuzzer once failed on
        if not old.startswith("regress-"):
            os.remove(os.path.join(vdir, old))
    picked = sorted(streams.items(), key=lambda kv: len(kv[1]))
    for name, data in picked[:: max(1, len(picked) // 40)]:
        if len(data) <= 8192:
            with open(os.path.join(vdir, name), "wb") as f:
                f.write(data)
    if len(sys.argv) > 1:
        write_containers(sys.argv[1], picked)


def write_containers(lib_path, picked):
    lib = ctypes.CDLL(lib_path)
    lib.el_writer_new.restype = ctypes.c_void_p
    lib.el_writer_new.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_double]
    for fn in ("el_writer_begin_record", "el_writer_append"):
        getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.el_writer_end_record.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.el_writer_finish.argtypes = [ctypes.c_void_p]
    lib.el_writer_data.restype = ctypes.c_void_p
    lib.el_writer_data.argtypes = [ctypes.c_void_p]
    lib.el_writer_size.restype = ctypes.c_size_t
    lib.el_writer_size.argtypes = [ctypes.c_void_p]
    lib.el_writer_free.argtypes = [ctypes.c_void_p]
    cdir = os.path.join(CORPUS, "container")
    shutil.rmtree(cdir, ignore_errors=True)
    os.makedirs(cdir)
    small = [d for _, d in picked if len(d) < 2048]
    for i in range(12):
        w = lib.el_writer_new(b"elastic-lite 0.1.0", b"3.11.2", 1764680000000.0)
        for k in range(i % 4):
            data = small[(i * 7 + k * 13) % len(small)]
            names = b"\0".join(b"v%d" % j for j in range(k + 1))
            assert lib.el_writer_begin_record(w, names, len(names)) == 0
            assert lib.el_writer_append(w, data, len(data)) == 0
            assert lib.el_writer_end_record(w, 1 + (k % 3)) == 0
        assert lib.el_writer_finish(w) == 0
        out = ctypes.string_at(lib.el_writer_data(w), lib.el_writer_size(w))
        lib.el_writer_free(w)
        with open(os.path.join(cdir, f"checkpoint-{i}"), "wb") as f:
            f.write(out)
    print(f"12 containers in {cdir}")


if __name__ == "__main__":
    main()
