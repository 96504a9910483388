"""The Python half of `npm run bench` (benchmarks/bench.mjs): the same file runs in Pyodide
under Node, in Pyodide in a Chromium worker (benchmarks/bench-worker.mjs) and in native
CPython (the numpy/pandas row of issue 9).

The states are the state helper's: issue 10's shapes (benchmarks/serializer_shapes.py) and
issue 9's rows (benchmarks/serializer_state.py), each made by running its cell in `__main__`,
as a notebook cell would.

serializer(row, runs): snapshot() against pickle.dumps(protocol=5) and load_snapshot()
against pickle.loads of the same values, interleaved (run 1 of the four, then run 2, ...),
median of `runs`, process CPU time (serializer_cases.CPU: Node's process.cpuUsage in
Pyodide). The floor is plain pickle: what any checkpointer must at least do.

The rest are small steps the Chromium worker strings together (timed there, wall clock:
IndexedDB work happens in other threads and processes, so CPU time of this one means
nothing): setup/teardown, dumps() (the floor's serialization), checkpoint()/restore()
through elastic_lite.host (the path every host takes), loads_into() for the floor's load.
"""

import gc
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
import serializer_state  # noqa: E402
from serializer_cases import CPU  # noqa: E402

import elastic_lite as el  # noqa: E402
from elastic_lite import _core, host  # noqa: E402

MiB = 1 << 20

# EL_BENCH_QUICK (the bench smoke test, tests/node/bench-smoke.test.mjs): every state at its
# smallest, the same code with smaller numbers (the text it replaces must be there). The byte
# shapes keep pieces of 1 MiB and more (what a store takes as live views).
QUICK = {
    "dicts": ("range(100000)", "range(2000)"),
    "instances": ("range(20000)", "range(500)"),
    "bytes50": ("50 * 1024 * 1024", "2 * 1024 * 1024"),
    "bytes20x10": ("(10 * 1024 * 1024)", "(1024 * 1024)"),
    "compute": ("N = 2_000_000", "N = 20_000"),
    "standin": ("Blob(72_000_000, 7)", "Blob(2_000_000, 7)"),
    # still 200 variables (what the row is about), each a tenth of its size
    "vars200": [("for k in range(2000)", "for k in range(200)"), ("for _ in range(6000)", "for _ in range(600)"),
                ("for k in range(2500)", "for k in range(250)"), ("for _ in range(1000)", "for _ in range(100)"),
                ("for k in range(800)", "for k in range(80)")],
}


def quick():
    """Makes every state its QUICK size (in this interpreter)."""
    for row, pairs in QUICK.items():
        table = serializer_state.ROWS if row in serializer_state.ROWS else shapes.SHAPES
        for text, small in [pairs] if isinstance(pairs, tuple) else pairs:
            assert text in table[row] or small in table[row], f"bench_python.QUICK: {row!r} no longer holds {text!r}"
            table[row] = table[row].replace(text, small)


class _State:
    """The state made by the current row's cell."""

    row = None
    names = []   # what a checkpoint saves (no module bindings)
    bound = []   # every name the cell bound (teardown removes them)
    dumped = None  # the floor's pickle.dumps bytes
    kept = None  # what the last timed load gave back: freed before the next step, untimed


def setup(row):
    """Runs the row's cell in __main__ (issue 10 shapes, issue 9 rows, or "blobs:N:MIB": N
    variables of MIB MiB of random bytes each); returns the names a checkpoint saves."""
    teardown()
    if row.startswith("blobs:"):
        _, count, mib = row.split(":")
        ns = shapes.main_ns()
        bound = []
        for i in range(int(count)):
            ns[f"blob{i}"] = _random_bytes(int(mib) * MiB, seed=i)
            bound.append(f"blob{i}")
        names = list(bound)
    else:
        names, bound = serializer_state._setup(row)
    _State.row, _State.names, _State.bound = row, names, bound
    gc.collect()
    return list(names)


def _random_bytes(n, seed):
    """Incompressible bytes (a store that compresses must not look faster than it is)."""
    import random
    return random.Random(seed).randbytes(n)


def teardown():
    shapes.teardown(_State.bound)
    _State.row, _State.names, _State.bound = None, [], []
    _State.dumped = _State.kept = None
    gc.collect()


def _values():
    ns = shapes.main_ns()
    return tuple(ns[n] for n in _State.names)


def _fresh_ns():
    return {"__name__": "__main__"}


def state_bytes():
    """The size of the state as plain pickle sees it (the floor's bytes)."""
    return len(pickle.dumps(_values(), protocol=5))


# ---- Node / native: snapshot and load against pickle, CPU time --------------------------------

def serializer(row, runs):
    names = setup(row)
    try:
        ops = {
            "dumps": lambda d: pickle.dumps(_values(), protocol=5),
            "snapshot": lambda d: el.snapshot(shapes.main_ns(), names=names).data,
            "loads": lambda d: pickle.loads(d["dumps"]),
            "load": _load_keeping_namespace,
        }
        data, times = {}, {op: [] for op in ops}
        for run in range(runs + 1):  # run 0 warms up (memory grown, code paths taken)
            for op, fn in ops.items():
                if op in ("dumps", "snapshot"):
                    data[op] = None  # free the previous run's bytes before timing
                gc.collect()
                t0 = CPU()
                out = fn(data)
                if run:
                    times[op].append((CPU() - t0) * 1000.0)
                if op in ("dumps", "snapshot"):
                    data[op] = out
                elif op == "load" and not out[1].ok:
                    raise RuntimeError(f"{row}: load_snapshot failed: {out[1].problems()}")
                out = None  # what was loaded is freed here, outside the timing
        snap = el.snapshot(shapes.main_ns(), names=names)
        return {
            "row": row, "env": _env(), "runs": runs, "names": len(names),
            "pickle_bytes": len(data["dumps"]), "checkpoint_bytes": len(data["snapshot"]),
            "groups": len(snap.groups),
            "largest_group": max((g.bytes for g in snap.groups), default=0),
            "dill_groups": sum(g.serializer == "dill" for g in snap.groups),
            **{f"{op}_ms": statistics.median(v) for op, v in times.items()},
            **{f"{op}_all_ms": v for op, v in times.items()},
        }
    finally:
        teardown()


def _load_keeping_namespace(d):
    """load_snapshot into a fresh namespace, returned with the report: freeing what was
    restored is not part of restoring (pickle.loads' result is freed after its timing too)."""
    ns = _fresh_ns()
    return ns, el.load_snapshot(d["snapshot"], ns)


def _env():
    if sys.platform == "emscripten":
        return "Pyodide " + sys.version.split()[0]
    return "native CPython " + sys.version.split()[0]


# ---- Chromium: steps the worker times ---------------------------------------------------------

def dumps():
    """The floor's serialization: pickle.dumps of the row's values (kept for the raw put);
    returns (ms, size), timed here so that freeing the previous bytes is not counted."""
    _State.dumped = None
    gc.collect()
    t0 = time.perf_counter()
    _State.dumped = pickle.dumps(_values(), protocol=5)
    return (time.perf_counter() - t0) * 1000.0, len(_State.dumped)


def dumped():
    """The bytes of the last dumps() (the worker reads them through the buffer protocol)."""
    return _State.dumped


def alloc(n):
    """A writable buffer the worker fills with what it read back from IndexedDB."""
    return bytearray(n)


def loads(buf):
    """The floor's load (the worker times get + copy in + this)."""
    value = pickle.loads(buf)
    if not isinstance(value, tuple) or len(value) != len(_State.names):
        raise RuntimeError("the raw round trip did not give back the row's values")
    _State.kept = value
    return len(value)


def release():
    """Frees what the last timed load gave back (the worker calls it before each step)."""
    _State.kept = None
    gc.collect()


async def checkpoint(name):
    """host.checkpoint of the row's variables; the report's numbers the table needs."""
    rep = await host.checkpoint(name, names=list(_State.names), notebook="bench")
    if not rep["ok"]:
        raise RuntimeError(f"checkpoint {name} failed: {rep['problems']}")
    sizes = [v["bytes"] for v in rep["variables"] if v["bytes"] is not None]
    return {"size": rep["size"], "groups": len(sizes), "largest_group": max(sizes, default=0),
            "dill_groups": sum(v["serializer"] == "dill" for v in rep["variables"]),
            "timings": rep["timings"], "warnings": rep["warnings"]}


async def restore(name):
    """host.restore into a fresh namespace (so nothing of the live state is reused)."""
    ns = _fresh_ns()
    rep = await host.restore(name, namespace=ns)
    if not rep["ok"] or len(rep["restored"]) != len(_State.names):
        said = [p["message"] for p in rep["problems"]] + rep["warnings"]
        raise RuntimeError(f"restore {name}: {len(rep['restored'])} of {len(_State.names)} "
                           f"variables back; {'; '.join(said) or 'no problem reported'}")
    _State.kept = ns
    return {"size": rep["size"], "timings": rep["timings"], "streamed": rep.get("streamed")}


async def forget(name):
    """Deletes checkpoint `name` and frees its records, so that the next checkpoint writes
    every record again (the store would otherwise skip records it already holds). Through the
    kernel, as the magics, the demo and the CLI delete: its next checkpoint then asks the store
    which remembered records are left (a delete behind its back would have that checkpoint
    find one gone at its commit and be made twice)."""
    rep = await host.delete(name)
    if not rep["ok"] and not any(p.get("code") == "not-found" for p in rep["problems"]):
        raise RuntimeError(f"delete {name} failed: {rep['problems']}")


def core_memory():
    """Bytes of the C core's WebAssembly memory now (0: the instance was dropped)."""
    backend = _core._backend
    return backend.memory_size() if backend is not None else 0


async def run_cells(cells):
    """Runs notebook cells through host.run_cell (how non-IPython hosts run cells); ms."""
    t0 = time.perf_counter()
    for i, code in enumerate(cells):
        rep = await host.run_cell(code, label=f"cell {i + 1}")
        if not rep["ok"]:
            raise RuntimeError(f"cell {i + 1} failed: {rep.get('problems')}")
    return (time.perf_counter() - t0) * 1000.0


HISTORY_SETUP = """
import random as _random
big = bytearray(_random.Random(14).randbytes({mib} * 1024 * 1024))
log = []
del _random
"""

HISTORY_CELL = """
step = {i}
acc{k} = sum(j * j for j in range(1_000_000 + step))
log.append((step, acc{k} % 1000))
"""


async def history(cells, mib):
    """Issue 14's session: a `mib` MiB buffer that never changes and small variables that
    do, `cells` cells of ~0.2 s each; run once without checkpoints, then again with a
    checkpoint after every cell (one name per point, as a timeline keeps them). Returns
    the session times, the checkpoint times, the bytes the store grew by, what changed, and
    checkout (restore of an early point) against restore of the last point."""
    store = await el.get_store()
    for i in range(cells):
        await store.delete(f"history-{i}")
    teardown()
    await _cell(HISTORY_SETUP.format(mib=mib))
    ns = shapes.main_ns()
    _State.bound = ["big", "log", "step"] + [f"acc{k}" for k in range(5)]
    code = [HISTORY_CELL.format(i=i, k=i % 5) for i in range(cells)]
    t0 = time.perf_counter()
    for c in code:
        await _cell(c)
    off_ms = (time.perf_counter() - t0) * 1000.0
    ns["log"].clear()
    stats0 = await store.stats()
    ck_ms, sizes = [], []
    t0 = time.perf_counter()
    for i, c in enumerate(code):
        await _cell(c)
        t1 = time.perf_counter()
        rep = await host.checkpoint(f"history-{i}", notebook="bench-history")
        ck_ms.append((time.perf_counter() - t1) * 1000.0)
        if not rep["ok"]:
            raise RuntimeError(f"history checkpoint {i} failed: {rep['problems']}")
        sizes.append(rep["size"])
    on_ms = (time.perf_counter() - t0) * 1000.0
    stats1 = await store.stats()
    big_bytes = len(ns["big"])
    timing = {}
    for label, point in (("checkout", max(0, cells // 3)), ("restore", cells - 1)):
        t1 = time.perf_counter()
        rep = await host.restore(f"history-{point}", namespace=_fresh_ns())
        timing[label] = (time.perf_counter() - t1) * 1000.0
        if not rep["ok"]:
            raise RuntimeError(f"history restore of point {point} failed: {rep['problems']}")
    for i in range(cells):
        await store.delete(f"history-{i}")
    return {"cells": cells, "big_bytes": big_bytes, "session_off_ms": off_ms,
            "session_on_ms": on_ms, "checkpoint_all_ms": ck_ms,
            "checkpoint_ms": statistics.median(ck_ms[1:] or ck_ms),
            "stored_bytes": stats1["recordBytes"] - stats0["recordBytes"],
            # every checkpoint's bytes beyond the big buffer's count as changed (an upper
            # bound: a small record that did not change is stored once too)
            "changed_bytes": sum(n - big_bytes for n in sizes),
            "checkout_ms": timing["checkout"], "restore_ms": timing["restore"]}


async def _cell(code):
    rep = await host.run_cell(code)
    if not rep["ok"]:
        raise RuntimeError(f"a benchmark cell failed: {rep.get('problems')}")


def bind(names):
    """Makes `names` the row's variables (a notebook run in the worker bound them)."""
    _State.row, _State.names, _State.bound = "notebook", list(names), list(names)


if __name__ == "__main__":
    import json
    import bench_python  # its own module: the cells run in __main__'s globals
    runs = int(os.environ.get("EL_BENCH_RUNS", "5"))
    print(json.dumps([bench_python.serializer(r, runs) for r in sys.argv[1:]]))


# ---- Chromium: where a bytes-heavy checkpoint's and restore's time goes (EL_BENCH_ONLY=phases)

def phase_buffers():
    """The row's large buffers (bytes / bytearray / PickleBuffer-able values of 1 MiB and
    more), as the store sees them: the pieces of the records a checkpoint writes."""
    out = []
    for v in _values():
        try:
            mv = memoryview(v)
        except TypeError:
            continue
        if mv.nbytes >= MiB and mv.c_contiguous:
            out.append(mv.cast("B"))
    return out


def phase_crc(buffers):
    """ms of zlib.crc32 over every buffer (what the writer computes while pickling; the C
    core's el_crc32 through a copy into its memory measured slower here: 79 against 47 ms
    for 50 MiB in Chromium)."""
    import zlib
    t0 = time.perf_counter()
    for b in buffers:
        zlib.crc32(b)
    return (time.perf_counter() - t0) * 1000.0


def phase_sha256(buffers, leaf=4 * MiB):
    """ms of hashlib.sha256 over every buffer, 4 MiB leaves (the store key's shape)."""
    import hashlib
    t0 = time.perf_counter()
    for b in buffers:
        for at in range(0, len(b), leaf):
            hashlib.sha256(b[at:at + leaf]).digest()
    return (time.perf_counter() - t0) * 1000.0


def phase_copy(buffers):
    """ms of bytes(buffer) for every buffer (what loading a `bytes` value costs on top of
    its read: pickle's bytes(PickleBuffer) copy)."""
    t0 = time.perf_counter()
    for b in buffers:
        bytes(b)
    return (time.perf_counter() - t0) * 1000.0
