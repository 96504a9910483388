"""What telling "made by snapshot() in this process" from foreign bytes costs (_made_here).

snapshot() remembers a tag of what it returns (the core lists the container's headers, an
HMAC covers the structural bytes); load_snapshot(bytes) computes the same tag from the
inspection it makes anyway and looks it up. Per shape of notebook state (serializer_shapes),
interleaved in each round: snapshot() whole (the remembering included), the remembering
alone, load_snapshot() whole (the check included), the check alone. CPU time; the figures are
the median over rounds of each round's ratio (part / whole).

    .venv/bin/python benchmarks/made_here.py        # native CPython
    node benchmarks/made_here.mjs                   # the same file in Pyodide under Node
"""

import gc
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import elastic_lite as el  # noqa: E402
from elastic_lite import _core  # noqa: E402
from elastic_lite.trust import made_here as _made_here  # noqa: E402

import serializer_shapes as shapes  # noqa: E402
from serializer_cases import CPU  # noqa: E402

SHAPES = ["mixed199", "dicts", "instances", "bytes50", "bytes20x10"]
ROUNDS = int(os.environ.get("EL_BENCH_ROUNDS", "7"))


def _ms(fn):
    gc.collect()
    t0 = CPU()
    out = fn()
    return (CPU() - t0) * 1000.0, out


def measure(shape, rounds=ROUNDS):
    names = shapes.setup(shape)
    ns = shapes.main_ns()
    try:
        rows = []
        for r in range(rounds + 1):  # round 0 warms up
            snap_ms, snap = _ms(lambda: el.snapshot(ns, names=names))
            data = snap.data
            remember_ms, _ = _ms(lambda: _made_here.remember(data))
            load_ms, rep = _ms(lambda: el.load_snapshot(data, {"__name__": "__main__"}))
            if rep.trust["provenance"] != "yours" or not rep.ok:
                raise RuntimeError(f"{shape}: snapshot()'s own bytes did not load as its own: "
                                   f"{rep.problems()}")
            info = _core.inspect(data, validate=True)
            check_ms, mine = _ms(lambda: _made_here.made_here(data, info))
            assert mine
            if r:
                rows.append((snap_ms, remember_ms, load_ms, check_ms))
        med = lambda i: statistics.median(row[i] for row in rows)  # noqa: E731
        ratio = lambda i, j: statistics.median(row[i] / row[j] for row in rows)  # noqa: E731
        return {"shape": shape, "bytes": len(data), "records": len(info["records"]),
                "snapshot_ms": med(0), "remember_ms": med(1), "remember_share": ratio(1, 0),
                "load_ms": med(2), "check_ms": med(3), "check_share": ratio(3, 2)}
    finally:
        shapes.teardown(names)


def table(rows, env):
    out = [f"made-here tag ({env}; CPU ms, median of {ROUNDS} interleaved rounds; share = "
           "median of per-round part / whole)",
           "| state | MiB | records | snapshot() | remember | share | load_snapshot() | check "
           "| share |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['shape']} | {r['bytes'] / 2**20:.1f} | {r['records']} | "
                   f"{r['snapshot_ms']:.1f} | {r['remember_ms']:.2f} | "
                   f"{r['remember_share'] * 100:.1f}% | {r['load_ms']:.1f} | "
                   f"{r['check_ms']:.2f} | {r['check_share'] * 100:.1f}% |")
    return "\n".join(out)


def main():
    env = ("Pyodide " if sys.platform == "emscripten" else "native CPython ") + \
        sys.version.split()[0]
    return table([measure(s) for s in SHAPES], env)


if __name__ == "__main__":
    print(main())
