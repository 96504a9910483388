"""Where out-of-band buffers start to pay: snapshot() + load_snapshot() of many buffers of one
size, all kept in the stream (threshold = infinity) against all out of band (threshold 0).

    .venv/bin/python benchmarks/serializer_threshold.py      # native CPython (numpy arrays)
    node benchmarks/serializer_both.mjs threshold            # the same in Pyodide next to it
                                                             # (a pure-Python PickleBuffer
                                                             # stand-in: numpy has no wheel)

Each size gets about 16 MiB of buffers in total (at least 8 of them), one group per buffer
(the worst case: every buffer pays its record). CPU time, best of RUNS, interleaved.
"""

import gc
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.join(HERE, "..", "py"), HERE):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.insert(0, _path)

from serializer_cases import CPU  # noqa: E402

import elastic_lite as el  # noqa: E402
from elastic_lite.capture import container as _container  # noqa: E402

RUNS = int(os.environ.get("EL_BENCH_RUNS", "5"))
SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
TOTAL = 16 << 20


def _from_buffer(buf):
    return Blob(buf)


class Blob:
    """What numpy does at protocol 5, in pure Python: the payload travels as a PickleBuffer."""

    def __init__(self, data):
        self.data = data

    def __reduce_ex__(self, protocol):
        return (_from_buffer, (pickle.PickleBuffer(self.data),))


def _make(size, count):
    np = sys.modules.get("numpy")
    if np is None:
        try:
            import numpy as np
        except ImportError:
            np = None
    if np is not None:
        return {f"a{i}": np.full(size // 8, float(i)) for i in range(count)}
    return {f"a{i}": Blob(bytearray([i % 256]) * size) for i in range(count)}


def _run(ns, threshold):
    gc.collect()
    t0 = CPU()
    stream = _container.SnapshotStream(ns, buffer_threshold=threshold)
    chunks = []
    for part in stream:
        chunks.extend(part[1]) if part[0] == "record" else chunks.append(part[1])
    data = b"".join(chunks)
    t1 = CPU()
    # joined here, not by snapshot(): the bytes are vouched for (foreign=False), as a store's
    # own entry is, so the load measured is the real one and not a refusal
    rep = el.load_snapshot(data, {"__name__": "__main__"}, foreign=False)
    t2 = CPU()
    if not rep.ok:
        raise RuntimeError(f"load_snapshot failed: {rep.problems()}")
    return t1 - t0, t2 - t1


def main(rows=None):
    rows = []
    for size in SIZES:
        count = max(8, TOTAL // size)
        ns = {"__name__": "__main__", **_make(size, count)}
        best = {}
        for _ in range(RUNS):
            for name, threshold in (("in-band", 1 << 62), ("out-of-band", 0)):
                dump, load = _run(ns, threshold)
                old = best.get(name, (1e9, 1e9))
                best[name] = (min(old[0], dump), min(old[1], load))
        rows.append({"size": size, "count": count, **{
            f"{k}_{w}_ms": v[i] * 1000 for k, v in best.items()
            for i, w in enumerate(("dump", "load"))}})
    return rows


def table(rows, env):
    out = [f"out-of-band threshold ({env}; CPU ms for ~16 MiB, best of {RUNS})",
           "| buffer size | buffers | in-band dump | out-of-band dump | in-band load |"
           " out-of-band load | out/in (dump+load) |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ib = r["in-band_dump_ms"] + r["in-band_load_ms"]
        ob = r["out-of-band_dump_ms"] + r["out-of-band_load_ms"]
        out.append(f"| {r['size'] // 1024} KiB | {r['count']} | {r['in-band_dump_ms']:.1f} | "
                   f"{r['out-of-band_dump_ms']:.1f} | {r['in-band_load_ms']:.1f} | "
                   f"{r['out-of-band_load_ms']:.1f} | {ob / ib:.2f} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(table(main(), "native CPython " + sys.version.split()[0]))
