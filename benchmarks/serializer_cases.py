"""The serializer benchmark body, run unchanged in native CPython and inside Pyodide.

Three groups, each made by notebook code exec'd in `__main__` (so the class is a notebook
class, exactly what a cell defines):
  dicts      100,000 small dicts  [{"a": i, "b": str(i), "c": [i, 2*i]} ...]
  instances  20,000 instances of a notebook-defined class
  bytes50    one 50 MiB bytes object
Per group, serializers: dill, dill(byref=True), pickle, cloudpickle, pickle-then-dill (the
ElasticNotebook order) and elastic_lite.snapshot() (grouping walk, policy and the C core's
sink included). Dump and load: median of 5 runs each. Whether each restores in a FRESH
interpreter (one where the notebook code never ran) is checked by the driver with
`check_fresh()` in a new process / new Pyodide instance.

Driver: benchmarks/serializer.mjs (see benchmarks/README section in the project README).
"""

import gc
import pickle
import statistics
import sys
import time

import cloudpickle
import dill

import elastic_lite as el

CASES = {
    "dicts": "data = [{'a': i, 'b': str(i), 'c': [i, 2 * i]} for i in range(100000)]",
    "instances": (
        "class Item:\n"
        "    def __init__(self, i):\n"
        "        self.i = i\n"
        "        self.name = 'item%d' % i\n"
        "        self.tags = [i % 7]\n"
        "    def twice(self):\n"
        "        return 2 * self.i\n"
        "items = [Item(i) for i in range(20000)]\n"),
    "bytes50": "blob = bytes(range(256)) * (50 * 1024 * 1024 // 256)",
}
ROOT = {"dicts": "data", "instances": "items", "bytes50": "blob"}
NAMES = {"dicts": ["data"], "instances": ["Item", "items"], "bytes50": ["blob"]}
SERIALIZERS = ["dill", "dill(byref=True)", "pickle", "cloudpickle", "pickle-then-dill",
               "elastic_lite.snapshot"]
RUNS = 5


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


def _el_loader(case):
    def load(data):
        target = {"__name__": "__main__"}
        report = el.load_snapshot(data, target)
        if report.failed:
            raise RuntimeError(report.failed[0]["reason"])
        return target[ROOT[case]]
    return load


def _median_ms(fn):
    times = []
    out = None
    for _ in range(RUNS):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000.0)
        if len(times) < RUNS:
            out = None
    return statistics.median(times), out


def measure(case, name):
    """One row: dump/load medians and the payload (for the fresh-interpreter check)."""
    dump, load = codec(case, name)
    row = {"case": case, "serializer": name}
    try:
        row["dump_ms"], payload = _median_ms(dump)
    except Exception as exc:
        row.update(dump_ms=None, load_ms=None, size=None, error=f"{type(exc).__name__}: {exc}")
        return row, None
    row["size"] = len(payload)
    row["load_ms"], _ = _median_ms(lambda: load(payload))
    return row, payload


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
        load = _el_loader(case)
    else:
        load = pickle.loads if name in ("pickle", "cloudpickle") else dill.loads
    try:
        obj = load(payload)
        return "yes" if check(case, obj) else "no: wrong value"
    except Exception as exc:
        return f"no: {type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
