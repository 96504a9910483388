"""snapshot() and load_snapshot() against pickle.dumps(protocol=5) / pickle.loads of the same
objects, and the peak extra memory of each, on real notebook state (issues 9 and 10).

    .venv/bin/python benchmarks/serializer_state.py            # native CPython
    node benchmarks/serializer_both.mjs state                  # native and Pyodide

Rows:
  issue9      a 72 MB float64 array and two views of it, a 500,000-row DataFrame with a
              categorical column, a np.random.Generator and a notebook function (native only:
              numpy and pandas have no Pyodide wheel here)
  standin     what numpy does at protocol 5, in pure Python (runs in Pyodide too): a 72 MB
              buffer held by an object whose __reduce_ex__(5) returns a PickleBuffer, a second
              object sharing that buffer, eight 1 MB ones, a notebook function
  + the shapes of benchmarks/serializer_shapes.py (issue 10)

Timing: CPU time (serializer_cases.CPU), best of RUNS, the four operations interleaved.
Memory: one more run of each operation alone, the process's peak resident memory above what
it held before (Linux: VmHWM, reset through /proc/self/clear_refs; it includes the C core's
memory) — natively; in Pyodide the peak of Python's allocations (tracemalloc) plus the
growth of the core's WebAssembly memory. "stream" is the snapshot loop driven into a sink
that writes each part and drops it (a store), "snapshot()" builds the bytes in memory.
Targets (issue 9): snapshot <= 1.25x dumps, load <= 1.5x loads, no dill group, peak extra
memory while checkpointing <= largest group + 64 MiB.
"""

import gc
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.join(HERE, "..", "py"), HERE):
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.insert(0, _path)

import serializer_shapes as shapes  # noqa: E402
from serializer_cases import CPU  # noqa: E402

import elastic_lite as el  # noqa: E402
from elastic_lite import _core  # noqa: E402
from elastic_lite.capture import container as _container  # noqa: E402
from elastic_lite.capture.selection import capture  # noqa: E402

RUNS = int(os.environ.get("EL_BENCH_RUNS", "3"))
MiB = 1 << 20

ROWS = {
    "issue9": r'''
import numpy as np
import pandas as pd
big = np.random.default_rng(1).standard_normal(9_000_000)      # 72 MB of float64
head = big[:1000]
window = big[4_000_000:4_500_000].reshape(1000, 500)
n = 500_000
frame = pd.DataFrame({
    "id": np.arange(n),
    "value": np.random.default_rng(2).standard_normal(n),
    "kind": pd.Categorical(np.array(["red", "green", "blue", "grey"])[np.arange(n) % 4]),
})
rng = np.random.default_rng(3)
def zscore(a):
    return (a - a.mean()) / a.std()
''',
    "standin": r'''
import pickle as _pickle
def _rebuild_blob(buf):
    b = Blob.__new__(Blob)
    b.data = buf if isinstance(buf, bytearray) else memoryview(buf).cast("B")
    return b
class Blob:
    def __init__(self, n, seed):
        self.data = bytearray([seed]) * n
    def __reduce_ex__(self, protocol):
        return (_rebuild_blob, (_pickle.PickleBuffer(self.data),))
big = Blob(72_000_000, 7)
alias = {"same": big}
small = [Blob(1_000_000, i) for i in range(8)]
def total(b):
    return len(b.data)
''',
}


def _setup(row):
    """Runs the row's cell; returns the names of what a checkpoint saves (not modules)."""
    ns = shapes.main_ns()
    if row in ROWS:
        before = set(ns)
        exec(compile(ROWS[row], f"<cell {row}>", "exec"), ns)
        names = [k for k in ns if k not in before and not k.startswith("_")]
    else:
        names = shapes.setup(row)
    saved = capture(ns, names).variables
    return [n for n in names if n in saved], names


def _values(names):
    ns = shapes.main_ns()
    return tuple(ns[n] for n in names)


def _stream(names):
    """The snapshot loop into a sink that takes each part and drops it (as a store does)."""
    size = 0
    for part in _container.SnapshotStream(shapes.main_ns(), names=names):
        for piece in (part[1] if part[0] == "record" else [part[1]]):
            size += memoryview(piece).nbytes
    return size


OPS = {
    "dumps": lambda names, _: pickle.dumps(_values(names), protocol=5),
    "snapshot": lambda names, _: el.snapshot(shapes.main_ns(), names=names).data,
    "loads": lambda names, data: pickle.loads(data["dumps"]),
    "load": lambda names, data: el.load_snapshot(data["snapshot"], {"__name__": "__main__"}),
    "stream": lambda names, _: _stream(names),
}


def _rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


class _Peak:
    """Peak extra memory of one operation (bytes)."""

    def __init__(self):
        self.native = sys.platform != "emscripten" and os.path.exists("/proc/self/clear_refs")

    def __enter__(self):
        gc.collect()
        if self.native:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current resident size
            self.base = _rss_kib("VmRSS") * 1024
        else:
            import tracemalloc
            tracemalloc.start()
            self.core = _core.backend().memory_size()
        return self

    def __exit__(self, *exc):
        if self.native:
            self.extra = _rss_kib("VmHWM") * 1024 - self.base
        else:
            import tracemalloc
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            backend = _core._backend  # the instance may have been dropped after growing
            grown = (backend.memory_size() - self.core) if backend is not None else 0
            self.extra = peak + max(grown, 0)


def measure(row):
    names, bound = _setup(row)
    try:
        data, best = {}, {}
        for _ in range(RUNS):
            for op in ("dumps", "snapshot", "loads", "load"):
                gc.collect()
                t0 = CPU()
                out = OPS[op](names, data)
                best[op] = min(best.get(op, 1e9), CPU() - t0)
                if op in ("dumps", "snapshot"):
                    data[op] = out
                out = None
        snap = el.snapshot(shapes.main_ns(), names=names)
        groups = snap.groups
        largest = max((g.bytes for g in groups), default=0)
        peaks = {}
        for op in ("dumps", "snapshot", "stream", "loads", "load"):
            with _Peak() as p:
                out = OPS[op](names, data)
                out = None
            peaks[op] = p.extra
        return {"row": row, "size": len(data["snapshot"]), "largest_group": largest,
                "dill_groups": sum(g.serializer == "dill" for g in groups),
                **{f"{op}_ms": v * 1000 for op, v in best.items()},
                **{f"peak_{op}": v for op, v in peaks.items()}}
    finally:
        shapes.teardown(bound)
        gc.collect()


def main(rows=None):
    rows = rows or [r for r in ("issue9", "standin", *shapes.SHAPES)
                    if r != "issue9" or _has("numpy") and _has("pandas")]
    return [measure(r) for r in rows]


def _has(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def table(rows, env):
    mb = lambda n: f"{n / MiB:.0f}"  # noqa: E731
    out = [f"snapshot / load against pickle ({env}; CPU ms, best of {RUNS}; memory MiB)",
           "| state | checkpoint MiB | dumps | snapshot | ×dumps | loads | load | ×loads | dill "
           "groups | largest group | peak: dumps | snapshot() | stream | loads | load |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(
            f"| {r['row']} | {mb(r['size'])} | {r['dumps_ms']:.1f} | {r['snapshot_ms']:.1f} | "
            f"{r['snapshot_ms'] / r['dumps_ms']:.2f} | {r['loads_ms']:.1f} | "
            f"{r['load_ms']:.1f} | {r['load_ms'] / r['loads_ms']:.2f} | {r['dill_groups']} | "
            f"{mb(r['largest_group'])} | {mb(r['peak_dumps'])} | {mb(r['peak_snapshot'])} | "
            f"{mb(r['peak_stream'])} | {mb(r['peak_loads'])} | {mb(r['peak_load'])} |")
    return "\n".join(out)


if __name__ == "__main__":
    import json
    import serializer_state  # its own module: the cells run in __main__'s globals
    result = serializer_state.main(sys.argv[1:] and [a for a in sys.argv[1:] if a != "--json"])
    print(json.dumps(result) if "--json" in sys.argv else
          serializer_state.table(result, "native CPython " + sys.version.split()[0]))
