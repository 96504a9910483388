"""What recording the session costs per cell, and what planning a replay costs: the Python
body of benchmarks/replay.mjs, run the same in host CPython and in Pyodide.

Per case, the same cell runs many times with and without the recorder around it, interleaved
(compile + exec vs. before + compile + exec + after), in a namespace of `nvars` variables
(the identity comparison is O(namespace)). Reported: medians of the process CPU time, and
the ratio recorded / plain. Planning: a 2,000-cell history of chained updates, 20 targets.
Checkpoint: host.checkpoint of one recorded session with and without its recorder.
"""

import json
import statistics
import sys
import time

from elastic_lite.replay.engine import plan_replay
from elastic_lite.replay.recorder import Recorder

CELLS = {
    "one line": "y = x + 1",
    "40-line cell": "\n".join(
        ["def prep(rows):", "    out = []", "    for r in rows:",
         "        if r % 3 == 0:", "            out.append(r * scale)",
         "        else:", "            out.append(r - 1)", "    return out", ""] +
        [f"part{i} = prep(range({i}, {i} + 20))" for i in range(28)] +
        ["summary = {k: len(v) for k, v in [('a', part1), ('b', part2)]}",
         "total = sum(sum(p) for p in (part0, part1, part2))"]),
    "loop, 50k iterations": "acc = 0\nfor i in range(50000):\n    acc += i * scale",
}
REPS = {"one line": 400, "40-line cell": 200, "loop, 50k iterations": 30}


def _cpu():
    return time.process_time()


def _namespace(nvars):
    ns = {"__name__": "__main__", "x": 1, "scale": 3}
    for i in range(nvars):
        ns[f"v{i}"] = [i]
    return ns


def measure_cell(name, nvars):
    code = CELLS[name]
    ns = _namespace(nvars)
    rec = Recorder(ns)
    plain, recorded = [], []
    for _ in range(REPS[name]):
        t0 = _cpu()
        exec(compile(code, "<cell>", "exec"), ns)
        t1 = _cpu()
        rec.before(code)
        exec(compile(code, "<cell>", "exec"), ns)
        rec.after(True)
        t2 = _cpu()
        plain.append(t1 - t0)
        recorded.append(t2 - t1)
    p, r = statistics.median(plain) * 1e6, statistics.median(recorded) * 1e6
    return {"case": name, "nvars": nvars, "plain_us": p, "recorded_us": r,
            "overhead_us": r - p, "ratio": r / p if p else None,
            "cells_kept": len(rec.cells)}


def measure_plan(ncells=2000, nnames=50, ntargets=20):
    ns = {"__name__": "__main__"}
    rec = Recorder(ns)
    for i in range(ncells):
        code = f"n{i % nnames} = n{(i - 1) % nnames} + 1" if i >= nnames else f"n{i} = 0"
        rec.before(code)
        exec(code, ns)
        rec.after(True)
    t0 = _cpu()
    history = rec.to_json()
    t1 = _cpu()
    text = json.dumps(history)
    targets = [f"n{i}" for i in range(ntargets)]
    saved = {f"n{i}" for i in range(ntargets, nnames)}
    t2 = _cpu()
    plan = plan_replay(history, saved, targets)
    t3 = _cpu()
    return {"case": f"plan: {ncells} cells, {ntargets} targets", "prune_and_json_ms":
            (t1 - t0) * 1e3, "plan_ms": (t3 - t2) * 1e3, "history_bytes": len(text),
            "cells_kept": len(history["cells"]), "planned_cells": len(plan.steps)}


def _sync(coro):
    """Runs a coroutine that never suspends (the in-memory store's): no event loop needed,
    so the same code runs in Pyodide inside runPythonAsync."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the coroutine suspended")


def measure_checkpoint(ncells=200, nvars=300, reps=15):
    """host.checkpoint of one session with and without its recorder, interleaved: what the
    replay side of a checkpoint adds (history JSON, the plan, the capture it needs) — and
    what it saves (a generator is left out rather than tried by two serializers)."""
    import elastic_lite as el
    from elastic_lite import host
    from elastic_lite.replay import recorder as _recorder
    from elastic_lite.session.kernel import SESSION

    ns = _namespace(nvars)
    rec = _recorder.recorder_for(ns, create=True)
    for i in range(ncells):
        code = (f"g{i // 20 % 5} = (n for n in range({i}, {i} + 100))\nnext(g{i // 20 % 5})"
                if i % 20 == 0
                else f"v{i % nvars} = [v{(i + 1) % nvars}[0] + {i}]")
        rec.before(code)
        exec(compile(code, "<cell>", "exec"), ns)
        rec.after(True)
    el.set_store(el.MemoryStore())
    plain, recorded, prep = [], [], []
    try:
        for _ in range(reps):
            SESSION.space(ns).recorder = None  # the same checkpoint without a recording
            t0 = _cpu()
            _sync(host.checkpoint("bench", namespace=ns))
            t1 = _cpu()
            SESSION.space(ns).recorder = rec
            report = _sync(host.checkpoint("bench", namespace=ns))
            t2 = _cpu()
            plain.append(t1 - t0)
            recorded.append(t2 - t1)
            prep.append(report["replay"]["ms"])
    finally:
        el.set_store(None)
        _recorder.stop_recording(ns)
    p, r = statistics.median(plain) * 1e3, statistics.median(recorded) * 1e3
    return {"case": f"checkpoint: {ncells} cells, {nvars} variables, 5 generators",
            "plain_ms": p, "recorded_ms": r, "ratio": r / p if p else None,
            "prep_ms": statistics.median(prep), "recompute": len(report["replay"]["recompute"]),
            "history_cells": len(rec.to_json()["cells"])}


def run():
    rows = [measure_cell(name, nvars) for nvars in (100, 2000) for name in CELLS]
    rows.append(measure_plan())
    rows.append(measure_checkpoint())
    return {"python": sys.version.split()[0], "platform": sys.platform, "rows": rows}


if __name__ == "__main__":
    print(json.dumps(run()))
