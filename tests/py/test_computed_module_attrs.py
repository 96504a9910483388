"""Module attributes computed by a module's `__getattr__` (PEP 562), as typing computes
ContextManager and Pattern on Python 3.14 (`from typing import *`): restored in a NEW process
where the module is already imported (typing always is) but has not computed them yet, in
the default (checked) mode of the person's own checkpoint. Before the fix the restore
refused those bindings ("module computed_attrs computes 'Kept' with its __getattr__") while
the checkpoint listed them as saved. Now what the module keeps is bound by name, what it does
not keep is saved by value, and a class only reachable by its computed name is skipped with
the reason when the checkpoint is taken. tests/node/pyodide-module-getattr.test.mjs does the
same with typing itself in Pyodide.
"""

import json
import os
import subprocess
import sys
import types

import elastic_lite as el
from fresh_kernel import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import json, sys, types
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import computed_attrs  # already imported, nothing computed yet (as typing in a new kernel)
import elastic_lite as el
assert "Kept" not in vars(computed_attrs)
main = types.ModuleType("__main__")
sys.modules["__main__"] = main
ns = main.__dict__
# the person's own checkpoint (a store whose signature checked says foreign=False): checked mode
rep = el.load_snapshot(sys.stdin.buffer.read(), ns, foreign=False)
print(json.dumps({
    "failed": rep.failed, "modules": rep.modules,
    "kept_is": ns.get("Kept") is computed_attrs.Kept,
    "kept_class_is": ns.get("KeptClass") is computed_attrs.KeptClass,
    "k_type_is": type(ns.get("k")) is computed_attrs.KeptClass,
    "table_eq": ns.get("Table") == computed_attrs.Table,
    "fresh_eq": ns.get("Fresh") == computed_attrs.Fresh,
    "names": sorted(n for n in ns if not n.startswith("_")),
}, default=str))
"""

CELLS = """
from computed_attrs import Kept, KeptClass, Table, Fresh, TableClass
k = KeptClass()
"""


def _restore_in_new_process(data):
    proc = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(ROOT, "py"), HERE],
                          input=bytes(data), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def test_computed_module_attributes_restore_or_are_listed_at_checkpoint(monkeypatch):
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.syspath_prepend(HERE)
    exec(compile(CELLS, "<cell>", "exec"), main.__dict__)
    snap = el.snapshot(main.__dict__)
    bound = {m["name"]: (m["module"], m["attr"]) for m in snap.modules}
    saved = {n for g in snap.groups for n in g.names}
    skipped = {s["name"]: s["reason"] for s in snap.skipped}
    # kept by the module: bound by name; not kept: saved by value; a class only reachable
    # through the computed name: skipped, with the reason, now
    assert bound == {"Kept": ("computed_attrs", "Kept"),
                     "KeptClass": ("computed_attrs", "KeptClass")}, snap.table()
    assert saved == {"k", "Table", "Fresh"}, snap.table()
    assert list(skipped) == ["TableClass"], snap.table()
    assert "__getattr__" in skipped["TableClass"] and "after restore" in skipped["TableClass"]

    got = _restore_in_new_process(snap.data)
    assert got["failed"] == [], got["failed"]
    assert all(m["ok"] for m in got["modules"]), got["modules"]
    assert got["kept_is"] and got["kept_class_is"] and got["k_type_is"], got
    assert got["table_eq"] and got["fresh_eq"], got
    assert got["names"] == ["Fresh", "Kept", "KeptClass", "Table", "k"], got["names"]
