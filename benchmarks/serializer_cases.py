"""The serializer benchmark body, run unchanged in native CPython and inside Pyodide.

Three groups, each made by notebook code exec'd in `__main__` (so the class is a notebook
class, exactly what a cell defines):
  dicts      100,000 small dicts  [{"a": i, "b": str(i), "c": [i, 2*i]} ...]
  instances  20,000 instances of a notebook-defined class
  bytes50    one 50 MiB bytes object
Per group, serializers: dill, dill(byref=True), pickle, cloudpickle, pickle-then-dill (the
ElasticNotebook order) and elastic_lite.snapshot() (grouping walk, policy and the C core's
sink included). Dump and load: median of 5 runs each, CPU time of the process (the column
the driver prints) and wall time (in --json). Whether each restores in a FRESH
interpreter (one where the notebook code never ran) is checked by the driver with
`check_fresh()` in a new process / new Pyodide instance.

Driver: benchmarks/serializer.mjs (see benchmarks/README section in the project README).
"""

import gc
import os
import pickle
import statistics
import sys
import time

import cloudpickle
import dill

import elastic_lite as el
from serializer_shapes import SHAPES

CASES = {case: SHAPES[case] for case in ("dicts", "instances", "bytes50")}
ROOT = {"dicts": "data", "instances": "items", "bytes50": "blob"}
NAMES = {"dicts": ["data"], "instances": ["Item", "items"], "bytes50": ["blob"]}
SERIALIZERS = ["dill", "dill(byref=True)", "pickle", "cloudpickle", "pickle-then-dill",
               "elastic_lite.snapshot"]
RUNS = int(os.environ.get("EL_BENCH_RUNS", "5"))  # 5 per the design table; fewer for a smoke run


def _main_ns():
    return sys.modules["__main__"].__dict__


def setup(case):
    exec(compile(CASES[case], f"<cell {case}>", "exec"), _main_ns())


def teardown(case):
    ns = _main_ns()
    for name in NAMES[case]:
        ns.pop(name, None)
    gc.collect()


def _pickle_then_dill(obj):
    try:
        return pickle.dumps(obj, protocol=5)
    except Exception:
        return dill.dumps(obj, protocol=5)


def codec(case, name):
    """(dump() -> bytes, load(bytes) -> object) for one serializer on one group."""
    ns = _main_ns()
    obj = ns[ROOT[case]]
    if name == "dill":
        return (lambda: dill.dumps(obj, protocol=5)), dill.loads
    if name == "dill(byref=True)":
        return (lambda: dill.dumps(obj, protocol=5, byref=True)), dill.loads
    if name == "pickle":
        return (lambda: pickle.dumps(obj, protocol=5)), pickle.loads
    if name == "cloudpickle":
        return (lambda: cloudpickle.dumps(obj, protocol=5)), pickle.loads
    if name == "pickle-then-dill":
        return (lambda: _pickle_then_dill(obj)), dill.loads
    if name == "elastic_lite.snapshot":
        return (lambda: el.snapshot(ns, names=NAMES[case]).data), _el_loader(case)
    raise KeyError(name)


def _el_loader(case, trust=None):
    def load(data):
        target = {"__name__": "__main__"}
        report = el.load_snapshot(data, target, trust=trust)
        if report.failed:
            raise RuntimeError(report.failed[0]["reason"])
        return target[ROOT[case]]
    return load


def _cpu_clock():
    """Seconds of CPU time of this process. The benchmark machine is shared (CI runs other
    suites next to it), so wall time swings by 2-3x between runs while CPU time of this
    single-threaded work does not. In Pyodide, time.process_time() is wall time; Node's
    process.cpuUsage() is the real thing (all threads of the Node process, so V8's own GC and
    compiler threads count too)."""
    if sys.platform == "emscripten":
        try:
            import js
            usage = js.process.cpuUsage
        except Exception:
            return time.process_time

        def clock():
            u = usage()
            return (u.user + u.system) / 1e6
        return clock
    return time.process_time


CPU = _cpu_clock()


def _timed(fn):
    gc.collect()
    c0, w0 = CPU(), time.perf_counter()
    out = fn()
    return (CPU() - c0) * 1000.0, (time.perf_counter() - w0) * 1000.0, out


def measure_case(case):
    """Rows for every serializer on one group, and the payloads (for the fresh check).

    Runs are interleaved (run 1 of every serializer, then run 2, ...) so that load from other
    processes on a shared machine spreads over all serializers instead of hitting one."""
    codecs = {name: codec(case, name) for name in SERIALIZERS}
    rows = {name: {"case": case, "serializer": name} for name in SERIALIZERS}
    times = {name: {"dump": [], "dump_wall": [], "load": [], "load_wall": []}
             for name in SERIALIZERS}
    payloads = {}
    for phase in ("dump", "load"):
        for _ in range(RUNS):
            for name in SERIALIZERS:
                if "error" in rows[name]:
                    continue
                dump, load = codecs[name]
                try:
                    if phase == "dump":
                        payloads[name] = None  # free the previous run's bytes first
                        cpu, wall, payloads[name] = _timed(dump)
                    else:
                        cpu, wall, _ = _timed(lambda: load(payloads[name]))
                except Exception as exc:
                    rows[name]["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    payloads[name] = None
                    continue
                times[name][phase].append(cpu)
                times[name][phase + "_wall"].append(wall)
    for name, row in rows.items():
        for key, values in times[name].items():
            row[key + "_ms"] = statistics.median(values) if len(values) == RUNS else None
        row["size"] = len(payloads[name]) if payloads.get(name) is not None else None
    return list(rows.values()), payloads


def check(case, obj):
    if case == "dicts":
        return len(obj) == 100000 and obj[5] == {"a": 5, "b": "5", "c": [5, 10]}
    if case == "instances":
        return len(obj) == 20000 and obj[3].twice() == 6 and type(obj[0]).__name__ == "Item"
    return len(obj) == 50 * 1024 * 1024 and obj[:3] == b"\x00\x01\x02"


# Fresh-interpreter checks go by-reference serializers first, so that a class recreated by a
# by-value load can never make a later by-reference load look good.
FRESH_ORDER = ["pickle", "pickle-then-dill", "dill(byref=True)", "cloudpickle", "dill",
               "elastic_lite.snapshot"]


def check_fresh(case, name, payload):
    """In an interpreter where the notebook code never ran: 'yes' or 'no: <why>'."""
    if "Item" in _main_ns():
        return "invalid: Item leaked into __main__"
    if name == "elastic_lite.snapshot":
        load = _el_loader(case, trust=True)  # bytes of another interpreter: the person's own file
    else:
        load = pickle.loads if name in ("pickle", "cloudpickle") else dill.loads
    try:
        obj = load(payload)
        return "yes" if check(case, obj) else "no: wrong value"
    except Exception as exc:
        return f"no: {type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
