"""Varied notebooks written like real ones (tests/notebooks/varied/), each run as a
kernel runs it, checkpointed with the public API and restored in a NEW Python process (trust:
the person's own file), where the notebook's last cell (tagged "checks") must pass: values,
aliasing and identity, types, that functions and methods run, views that stay views.

Each notebook says in its metadata ("elastic_lite_test") what it is about, which variables
the checkpoint must report as skipped, and which the restore must report as failed — exactly
those, each with a reason. tests/node/pyodide-notebooks-varied.test.mjs does the same in
two fresh Pyodide interpreters ("skipped_pyodide" where its Python 3.14 differs); they also
ran through the CLI and the demo page in Chromium when they were written, and the fatal
errors found there have their own tests (tests/node/pyodide-no-fatal-errors.test.mjs).
"""

import json
import os
import sys
import types

import pytest

import elastic_lite as el
from fresh_kernel import ROOT, restore_elsewhere

NOTEBOOKS = os.path.join(ROOT, "tests", "notebooks", "varied")


def _notebooks():
    return sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb"))


def _load(name):
    with open(os.path.join(NOTEBOOKS, name), encoding="utf-8") as f:
        nb = json.load(f)
    cells, checks = [], None
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if "checks" in (cell.get("metadata") or {}).get("tags", []):
            checks = src
        elif cell["cell_type"] == "code":
            cells.append(src)
    return cells, checks, nb["metadata"]["elastic_lite_test"]


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_round_trip_in_a_new_process(name, monkeypatch):
    cells, checks, expect = _load(name)
    for module in expect.get("needs", []):
        pytest.importorskip(module)
    main = types.ModuleType("__main__")  # a kernel's user namespace is a __main__ module
    monkeypatch.setitem(sys.modules, "__main__", main)
    for i, src in enumerate(cells, 1):
        exec(compile(src, f"<{name} cell {i}>", "exec"), main.__dict__)
    snap = el.snapshot(main.__dict__)
    skipped = {s["name"]: s["reason"] for s in snap.skipped}
    assert sorted(skipped) == sorted(expect["skipped"]), snap.table()
    assert all(skipped.values())
    report = restore_elsewhere(snap.data, checks + '''
import json as _json
print("REPORT " + _json.dumps(restore_report, default=str))
''')
    rep = json.loads(report.split("REPORT ", 1)[1])
    failed = {n: f["reason"] for f in rep["failed"] for n in f["names"]}
    assert sorted(failed) == sorted(expect["failed"]), failed
    assert all(failed.values())
