"""Makes the benchmark streams and times pickletools.genops on them (host CPython).

    python benchmarks/validate_streams.py OUTDIR     -> writes OUTDIR/dicts.pkl, OUTDIR/bytes.pkl
    python benchmarks/validate_streams.py --genops FILE [min_seconds]
        -> one JSON line {"bytes", "runs", "best_s", "mb_per_s", "ops"}
"""
import json
import os
import pickle
import pickletools
import random
import sys
import time


def make(outdir):
    os.makedirs(outdir, exist_ok=True)
    dicts = [{"a": i, "b": str(i), "c": [i, 2 * i]} for i in range(100000)]
    rnd = random.Random(42)
    # ~100 MB, bytes-heavy: 25,000 records each with a 4,000-byte blob and a little structure
    blobs = [{"id": i, "name": f"item{i}", "blob": rnd.randbytes(4000)} for i in range(25000)]
    for name, obj in (("dicts", dicts), ("bytes", blobs)):
        path = os.path.join(outdir, name + ".pkl")
        if not os.path.exists(path):
            with open(path + ".tmp", "wb") as f:
                pickle.dump(obj, f, protocol=5)
            os.replace(path + ".tmp", path)


def genops(path, min_s):
    with open(path, "rb") as f:
        data = f.read()
    best, runs, start, ops = float("inf"), 0, time.perf_counter(), 0
    while runs < 1 or time.perf_counter() - start < min_s:
        t0 = time.perf_counter()
        ops = 0
        for _ in pickletools.genops(data):
            ops += 1
        best = min(best, time.perf_counter() - t0)
        runs += 1
    print(json.dumps({"bytes": len(data), "runs": runs, "best_s": best,
                      "mb_per_s": len(data) / best / 1e6, "ops": ops}))


if __name__ == "__main__":
    if sys.argv[1] == "--genops":
        genops(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
    else:
        make(sys.argv[1])
