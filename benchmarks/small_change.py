"""Issue 21's "many variables" rows, measured side by side in one process (Pyodide under Node
via benchmarks/bench.mjs, or host CPython: `python benchmarks/small_change.py`):

- snapshot(): elastic_lite.snapshot of the vars200 namespace (serializer_shapes.py: 200
  ordinary variables, ~6 MB) against pickle.dumps of the same values, per round;
- automatic point after a small change: a cell changes one small variable, then the
  automatic checkpoint the kernel takes after it (host.checkpoint(auto=True), change
  detection on, into the session's in-memory store), wall time of that checkpoint alone,
  and its process CPU time (on a loaded machine wall time also counts the time other
  processes had the CPU). The first point (everything written) is taken untimed before the
  rounds. `points_in_store` does the same into the kernel's own store (the bench's Chromium
  worker: IndexedDB).

Process CPU time for snapshot / dumps.
"""

import asyncio
import gc
import json
import os
import pickle
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.join(HERE, "..", "py"), HERE):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.insert(0, _path)

import serializer_shapes as shapes  # noqa: E402
from serializer_cases import CPU  # noqa: E402

import elastic_lite as el  # noqa: E402
from elastic_lite import host  # noqa: E402
from elastic_lite.changes import fast_path as _fast_path  # noqa: E402
from elastic_lite.session.kernel import SESSION  # noqa: E402
from elastic_lite.store.stores import MemoryStore  # noqa: E402

SHAPE = "vars200"


def _namespace():
    """The shape's cell run in a namespace of its own, made `__main__` while the benchmark
    runs as IPython makes its user module (so plain pickle finds the notebook's class too):
    not this process's own __main__, whose running code (a script) would count as code of
    the notebook still running."""
    mod = types.ModuleType("__main__")
    sys.modules["__main__"] = mod
    exec(compile(shapes.SHAPES[SHAPE], f"<cell {SHAPE}>", "exec"), mod.__dict__)
    _fast_path.cells_run_in(mod.__dict__)  # its cells run in it, as in a kernel
    return mod.__dict__


def _values(ns, names):
    return tuple(ns[n] for n in names)


def _drive(coro):
    """Runs a coroutine to its end (Pyodide under Node has a running loop: use it there)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return loop.run_until_complete(coro)


def snapshot_rows(ns, runs, names):
    times = {"dumps": [], "snapshot": []}
    sizes = {}
    for run in range(runs + 1):  # run 0 warms up
        for op in ("dumps", "snapshot"):
            gc.collect()
            t0 = CPU()
            out = (pickle.dumps(_values(ns, names), protocol=5) if op == "dumps"
                   else el.snapshot(ns, names=names).data)
            if run:
                times[op].append((CPU() - t0) * 1000.0)
            sizes[op] = len(out)
            out = None
    return times, sizes


async def point_rows(ns, runs, names, own_store=False, notebook=None):
    """(wall ms of each automatic point after a one-variable change, their CPU ms, the last
    report's reuse); into an in-memory store, or with `own_store` the session's store;
    `notebook`: the points are that notebook's (its retention applies at each commit)."""
    if not own_store:
        SESSION.set_store(MemoryStore())
    SESSION.forget_changes(ns)
    first = await host.checkpoint(names=names, namespace=ns, auto=True, notebook=notebook,
                                  cell={"executionCount": 1})
    if not first["ok"]:
        raise RuntimeError(f"the first point failed: {first['problems']}")
    out, cpu, reuse, timings = [], [], None, []
    for run in range(runs):
        # the cell: one small variable changed in place (run as a cell runs: top-level code
        # in the namespace, which is what change tracking sees)
        exec(compile(f"values0[0] = {float(run)!r}", f"<cell {run + 2}>", "exec"), ns)
        gc.collect()
        c0, t0 = CPU(), time.perf_counter()
        rep = await host.checkpoint(names=names, namespace=ns, auto=True, notebook=notebook,
                                    cell={"executionCount": run + 2})
        out.append((time.perf_counter() - t0) * 1000.0)
        cpu.append((CPU() - c0) * 1000.0)
        if not rep["ok"]:
            raise RuntimeError(f"a point failed: {rep['problems']}")
        reuse = rep["reuse"]
        timings.append(rep.get("timings"))
        if reuse["written"] < 1:
            raise RuntimeError("the changed variable was not written: a missed change")
    point_rows.timings = timings  # each point's report timings (serialize / store ms)
    return out, cpu, reuse


async def points_in_store(runs=7, notebook=None):
    """The automatic points alone, into the session's own store (see the module doc);
    `notebook`: as that notebook's points."""
    main = sys.modules["__main__"]
    ns = _namespace()
    names = [n for n in ns if not n.startswith("_")]
    try:
        points, cpu, reuse = await point_rows(ns, runs, names, own_store=True, notebook=notebook)
        return {"row": SHAPE, "env": "Chromium, IndexedDB store", "runs": runs,
                "point_ms": statistics.median(points), "point_all_ms": points,
                "point_timings": point_rows.timings, "point_reuse": reuse}
    finally:
        SESSION.forget_changes(ns)
        sys.modules["__main__"] = main


async def bench(runs=7):
    main = sys.modules["__main__"]
    ns = _namespace()
    names = [n for n in ns if not n.startswith("_")]
    try:
        times, sizes = snapshot_rows(ns, runs, names)
        points, cpu, reuse = await point_rows(ns, runs, names)
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
                "point_cpu_ms": statistics.median(cpu), "point_cpu_all_ms": cpu,
                "point_reuse": reuse}
    finally:
        SESSION.forget_changes(ns)
        sys.modules["__main__"] = main


def main():
    runs = int(os.environ.get("EL_BENCH_RUNS") or 7)
    print(json.dumps(asyncio.run(bench(runs))))


if __name__ == "__main__":
    main()
