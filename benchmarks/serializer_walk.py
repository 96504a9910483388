"""The grouping walk against pickle.dumps of the same objects, shape by shape (issue 10's
target: the walk costs <= 10% of pickle.dumps on every shape).

    .venv/bin/python benchmarks/serializer_walk.py             # native CPython
    node benchmarks/serializer_both.mjs walk                   # native and Pyodide

Both sides are timed in CPU time (see serializer_cases.CPU), interleaved, best of RUNS (the
machine is shared: the best run is the one least disturbed by others). The walk is
`find_groups` exactly as snapshot() calls it; pickle.dumps gets the tuple of the shape's
values (protocol 5; notebook classes live in __main__, so plain pickle can save them by
reference here). Nothing of ours holds the values meanwhile: an extra reference would make
the walk prove less and do more, which is what it would do in a notebook too.
"""

import gc
import json
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.join(HERE, "..", "py"), HERE):  # the checkout's package, natively
    if os.path.isdir(_path) and _path not in sys.path:
        sys.path.insert(0, _path)

import serializer_shapes as shapes  # noqa: E402
from serializer_cases import CPU  # noqa: E402

from elastic_lite.capture.selection import capture  # noqa: E402
from elastic_lite.capture.groups import find_groups, is_notebook_def  # noqa: E402

RUNS = int(os.environ.get("EL_BENCH_RUNS", "5"))


def _walk(names):
    ns = shapes.main_ns()
    variables = capture(ns, names).variables
    defs = {}
    for name, value in variables.items():
        if is_notebook_def(value, ns):
            defs.setdefault(id(value), name)
    gc.collect()
    t0 = CPU()
    grouping = find_groups(variables, ns, defs)
    return CPU() - t0, grouping


def _dumps(names):
    ns = shapes.main_ns()
    gc.collect()
    t0 = CPU()
    pickle.dumps(tuple(ns[n] for n in names), protocol=5)
    return CPU() - t0


def measure(shape):
    names = shapes.setup(shape)
    try:
        walks, dumps = [], []
        for _ in range(RUNS):
            seconds, grouping = _walk(names)
            walks.append(seconds)
            dumps.append(_dumps(names))
        walk, dump = min(walks), min(dumps)
        return {"shape": shape, "variables": len(names), "groups": len(grouping.groups),
                "objects": grouping.objects, "unwalked": grouping.unwalked,
                "walk_ms": walk * 1000, "dumps_ms": dump * 1000,
                "ratio": walk / dump if dump else None}
    finally:
        shapes.teardown(names)
        gc.collect()


def main(rows=None):
    return [measure(shape) for shape in (rows or shapes.SHAPES)]


def table(rows, env):  # noqa: the mixed199 cell binds `table` in __main__, not here
    out = [f"grouping walk vs pickle.dumps ({env}, CPU ms, best of {RUNS})",
           "| shape | variables | groups | objects walked | largest not walked | walk ms |"
           " pickle.dumps ms | walk / dumps |", "|---|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['shape']} | {r['variables']} | {r['groups']} | {r['objects']:,} | "
                   f"{r['unwalked'] or '—'} | {r['walk_ms']:.2f} | {r['dumps_ms']:.1f} | "
                   f"{r['ratio']:.3f} |")
    return "\n".join(out)


if __name__ == "__main__":
    import serializer_walk  # its own module: the shapes' cells run in __main__'s globals
    rows = serializer_walk.main([a for a in sys.argv[1:] if a != "--json"])
    print(json.dumps(rows) if "--json" in sys.argv else
          serializer_walk.table(rows, "native CPython " + sys.version.split()[0]))
