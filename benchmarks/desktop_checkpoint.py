"""Issue 22's CPU figure on host CPython: host.checkpoint against snapshot() for ~77 MB of
numpy/pandas state, through the in-memory store and through the DirectoryStore a desktop
kernel uses by default (py/elastic_lite/store/directory.py), and where the rest goes.

    ELASTIC_LITE_NATIVE_LIB=build/native/libelastic_lite.so .venv/bin/python benchmarks/desktop_checkpoint.py [runs]

Side by side, interleaved (run 1 of each, then run 2, ...), median of `runs` (default 5),
process CPU time (time.process_time: every thread of the process). Rows:
  snapshot                the floor: the checkpoint file in memory
  memory full             host.checkpoint into MemoryStore, every record written
  directory full          host.checkpoint into a fresh DirectoryStore: every record written
                          (the first checkpoint of a kernel)
  directory again         every record sent again to a store that holds them (the first point
                          of a new kernel: its change tracker is empty): each is compared with
                          the stored file before it is reused, never trusted by name
  directory incremental   the same after one small change (the automatic point after a cell):
                          only changed records are written
  sha256                  hashlib.sha256 over the file's bytes once: the content keys' share
"""

import asyncio
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "py"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import elastic_lite as el  # noqa: E402
from elastic_lite import host  # noqa: E402
from elastic_lite.store.directory import DirectoryStore  # noqa: E402


def state():
    rng = np.random.default_rng(0)
    return {"__name__": "__main__",
            "a": rng.random(5_000_000),
            "b": rng.integers(0, 100, 2_500_000),
            "df": pd.DataFrame({"x": rng.random(1_000_000), "y": rng.integers(0, 9, 1_000_000),
                                "s": pd.Categorical(rng.choice(list("abc"), 1_000_000))}),
            "small": {"k": list(range(1000))}, "n": 0}


def cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def main(runs):
    ns = state()
    size = el.snapshot(namespace=ns).size
    rows = {k: [] for k in ("snapshot", "memory full", "directory full", "directory again",
                            "directory incremental", "sha256")}
    for i in range(runs):
        rows["snapshot"].append(cpu(lambda: el.snapshot(namespace=ns))[0])
        el.set_store(el.MemoryStore())
        t, r = cpu(lambda: asyncio.run(host.checkpoint("c", namespace=ns, incremental=False)))
        assert r["ok"], r["problems"]
        rows["memory full"].append(t)
        folder = tempfile.mkdtemp(prefix="el-bench-")
        try:
            el.set_store(DirectoryStore(folder))
            t, r = cpu(lambda: asyncio.run(host.checkpoint("c", namespace=ns)))
            assert r["ok"], r["problems"]
            rows["directory full"].append(t)
            t, r = cpu(lambda: asyncio.run(host.checkpoint("c", namespace=ns, incremental=False)))
            assert r["ok"], r["problems"]
            rows["directory again"].append(t)
            ns["n"] = i + 1
            t, r = cpu(lambda: asyncio.run(host.checkpoint("d", namespace=ns)))
            assert r["ok"], r["problems"]
            rows["directory incremental"].append(t)
        finally:
            shutil.rmtree(folder)
        data = el.snapshot(namespace=ns).data
        rows["sha256"].append(cpu(lambda: hashlib.sha256(data).digest())[0])
    floor = statistics.median(rows["snapshot"])
    print(f"state: {size / 1e6:.1f} MB (numpy 60 MB, a 1M-row DataFrame); median of {runs}, CPU s")
    for name, ts in rows.items():
        m = statistics.median(ts)
        print(f"  {name:24s} {m:7.3f} s   {m / floor:5.2f}x snapshot")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
