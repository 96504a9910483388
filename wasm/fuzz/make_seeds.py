"""Writes format-2.0 seed checkpoints for the fuzzers and the pull-reader tests into
wasm/fuzz/corpus/container/ (v2-*.elc), with the real writer (elastic_lite._core, native
core) and real pickle streams: a snapshot() of a notebook namespace, records with protocol-5
out-of-band buffers (pickle's buffer_callback), a manifest and a history record, a stored
record reused by length. Small (< 16 KiB each, the fuzzers' -max_len).

Run from the repository root after `npm run build`:
    PYTHONPATH=py .venv/bin/python wasm/fuzz/make_seeds.py
"""

import json
import os
import pickle
import sys

from elastic_lite import _core, snapshot

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "container")


class Blob:
    """A stand-in for an array: its memory goes out of band at protocol 5."""

    def __init__(self, data):
        self.data = bytearray(data)

    def __reduce_ex__(self, protocol):
        return (bytearray, (pickle.PickleBuffer(self.data),))


def writer():
    return _core.Writer(producer="elastic-lite seeds", python="3.11", created_ms=1764680000000)


def with_buffers():
    w = writer()
    w.begin_record(["arrays", "view"])
    pickle.Pickler(w, protocol=5, buffer_callback=w.add_buffer).dump(
        ({"a": Blob(range(200)), "b": Blob(b"xy" * 40)}, Blob(b""), [1.5, "text"]))
    w.end_record("cloudpickle")
    w.begin_record(["plain"])
    w.write(pickle.dumps({"k": list(range(30)), "s": "é" * 10}, protocol=5))
    w.end_record("pickle")
    w.begin_record([], kind="manifest")
    w.write(json.dumps({"version": 2, "modules": [["np", "numpy", None]]}).encode())
    w.end_record()
    w.begin_record([], kind="history")
    w.write(json.dumps([{"n": 1, "code": "x = 1", "ok": True}]).encode())
    w.end_record()
    data = w.finish()
    w.free()
    return data


def with_stored(base):
    info = _core.inspect(base)
    rec = info["records"][1]
    stored = base[rec["offset"]:rec["offset"] + rec["record_length"]]
    w = writer()
    w.add_stored_record(len(stored))
    w.begin_record(["new"])
    pickle.Pickler(w, protocol=5, buffer_callback=w.add_buffer).dump(Blob(b"z" * 100))
    w.end_record("dill")
    parts = w.finish(join=False)
    w.free()
    return b"".join(stored if p.kind == "stored" else p.data for p in parts)


def notebook():
    ns = {"__name__": "__main__"}
    exec("import math\nscale = 3\ndef f(x):\n    return x * scale\nclass P:\n    pass\np = P()\n"
         "shared = [1, 2]\nalias = {'s': shared}\n", ns)
    return bytes(snapshot(ns).data)


def main():
    os.makedirs(OUT, exist_ok=True)
    base = with_buffers()
    seeds = {"v2-buffers.elc": base, "v2-stored.elc": with_stored(base),
             "v2-snapshot.elc": notebook()}
    w = writer()
    seeds["v2-empty.elc"] = w.finish()
    w.free()
    for name, data in seeds.items():
        assert _core.inspect(data)["ok"], name
        assert len(data) < 16384, (name, len(data))
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
