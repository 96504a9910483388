"""Issue 21's "many variables" rows, measured side by side in one process (Pyodide under Node
via benchmarks/bench.mjs, or host CPython: `python benchmarks/small_change.py`):

- snapshot(): elastic_lite.snapshot of the vars200 namespace (serializer_shapes.py: 200
  ordinary variables, ~6 MB) against pickle.dumps of the same values, per round;
- automatic point after a small change: a cell changes one small variable, then the
  automatic checkpoint the kernel takes after it (host.checkpoint(auto=True), change
  detection on, into the session's in-memory store), wall time of that checkpoint alone.
  The first point (everything written) is taken untimed before the rounds.

Wall time for the point (it awaits a store), process CPU time for snapshot / dumps.
"""

import asyncio
import gc
import json
import os
import pickle
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.join(HERE, "..", "py"), HERE):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.insert(0, _path)

import serializer_shapes as shapes  # noqa: E402
from serializer_cases import CPU  # noqa: E402

import elastic_lite as el  # noqa: E402
from elastic_lite import host  # noqa: E402
from elastic_lite._kernel_session import SESSION  # noqa: E402
from elastic_lite._store import MemoryStore  # noqa: E402

SHAPE = "vars200"


def _values(names):
    ns = shapes.main_ns()
    return tuple(ns[n] for n in names)


def _drive(coro):
    """Runs a coroutine to its end (Pyodide under Node has a running loop: use it there)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return loop.run_until_complete(coro)


def snapshot_rows(runs, names):
    times = {"dumps": [], "snapshot": []}
    sizes = {}
    for run in range(runs + 1):  # run 0 warms up
        for op in ("dumps", "snapshot"):
            gc.collect()
            t0 = CPU()
            out = (pickle.dumps(_values(names), protocol=5) if op == "dumps"
                   else el.snapshot(shapes.main_ns(), names=names).data)
            if run:
                times[op].append((CPU() - t0) * 1000.0)
            sizes[op] = len(out)
            out = None
    return times, sizes


async def point_rows(runs, names):
    """(ms of each automatic point after a one-variable change, the last report's reuse)."""
    ns = shapes.main_ns()
    SESSION.set_store(MemoryStore())
    SESSION.forget_changes(ns)
    first = await host.checkpoint(names=names, auto=True, cell={"executionCount": 1})
    if not first["ok"]:
        raise RuntimeError(f"the first point failed: {first['problems']}")
    out, reuse = [], None
    for run in range(runs):
        ns["values0"][0] = float(run)  # the cell: one small variable changed in place
        gc.collect()
        t0 = time.perf_counter()
        rep = await host.checkpoint(names=names, auto=True, cell={"executionCount": run + 2})
        out.append((time.perf_counter() - t0) * 1000.0)
        if not rep["ok"]:
            raise RuntimeError(f"a point failed: {rep['problems']}")
        reuse = rep["reuse"]
    return out, reuse


async def bench(runs=7):
    names = shapes.setup(SHAPE)
    names = [n for n in names if not isinstance(shapes.main_ns()[n], type)] + [
        n for n in names if isinstance(shapes.main_ns()[n], type)]
    try:
        times, sizes = snapshot_rows(runs, names)
        points, reuse = await point_rows(runs, names)
        env = ("Pyodide " if sys.platform == "emscripten" else "native CPython ") + \
            sys.version.split()[0]
        ratio = statistics.median(s / d for s, d in zip(times["snapshot"], times["dumps"]))
        return {"row": SHAPE, "env": env, "runs": runs, "names": len(names),
                "pickle_bytes": sizes["dumps"], "checkpoint_bytes": sizes["snapshot"],
                "snapshot_ms": statistics.median(times["snapshot"]),
                "dumps_ms": statistics.median(times["dumps"]),
                "snapshot_all_ms": times["snapshot"], "dumps_all_ms": times["dumps"],
                "snapshot_ratio": ratio,
                "point_ms": statistics.median(points), "point_all_ms": points,
                "point_reuse": reuse}
    finally:
        shapes.teardown(names)
        SESSION.forget_changes(shapes.main_ns())


def main():
    runs = int(os.environ.get("EL_BENCH_RUNS") or 7)
    print(json.dumps(asyncio.run(bench(runs))))


if __name__ == "__main__":
    main()
