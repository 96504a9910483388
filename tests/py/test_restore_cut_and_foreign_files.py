"""Restoring real notebooks and damaged files: what once went wrong (host CPython, real core).

- A file cut short exactly where a record ends has no footer, index or manifest, but every
  record before the cut is whole: restore used to say `ok` with part of the notebook gone.
- A checkpoint made by another Python minor version (host CPython 3.11 -> Pyodide's 3.14)
  rebuilt its functions from foreign bytecode: calling one crashed Pyodide ("memory access
  out of bounds", a fatal error of the whole interpreter), even for the person's own file.
"""

import platform
import sys

import elastic_lite as el
from elastic_lite.capture import container as _container

CELLS = "a = [1, 2]\nb = {'k': 'v'}\ndef f(x): return x + 1\nc = 'text'\n"


def _snap(monkeypatch=None, python=None):
    ns = {"__name__": "__main__"}
    exec(CELLS, ns)
    if python is not None:
        monkeypatch.setattr(_container.platform, "python_version", lambda: python)
    data = el.snapshot(ns).data
    if python is not None:
        monkeypatch.undo()
    return data, el.load.loader.inspect(data)


def test_a_file_cut_at_a_record_boundary_is_not_ok_and_says_what_is_lost():
    data, info = _snap()
    f_rec = next(r for r in info["records"] if r["names"] == ["f"])
    cut = data[:f_rec["offset"] + f_rec["record_length"]]  # a, b, f whole; c and the rest gone
    rep = el.load_snapshot(cut, {}, trust=True)
    assert rep.restored == ["a", "b", "f"]
    assert not rep.ok
    lost = [p for p in rep.problems() if p["kind"] == "damaged"]
    assert len(lost) == 1 and lost[0]["code"] == "truncated" and lost[0]["names"] == []
    assert "not whole" in lost[0]["message"] and "is lost" in lost[0]["message"]
    assert lost[0]["offset"] is not None


def test_the_manifest_names_the_variables_a_damaged_file_lost():
    data, info = _snap()
    broken = bytearray(data)
    broken[-10] ^= 1  # the footer: records are found by scanning
    broken[next(r for r in info["records"] if r["names"] == ["b"])["offset"]] ^= 0xFF  # b's magic
    rep = el.load_snapshot(bytes(broken), {}, trust=True)
    assert set(rep.restored) == {"a", "f", "c"}
    assert not rep.ok
    assert [(p["names"], p["code"]) for p in rep.problems()] == [(["b"], "truncated")]


def test_only_the_footer_damaged_loses_nothing():
    data, _ = _snap()
    broken = bytearray(data)
    broken[-10] ^= 1
    rep = el.load_snapshot(bytes(broken), {}, trust=True)
    assert set(rep.restored) == {"a", "b", "f", "c"} and rep.ok, rep.table()


def test_functions_of_another_python_minor_version_are_not_rebuilt(monkeypatch):
    major, minor = sys.version_info[:2]
    data, info = _snap(monkeypatch, python=f"{major}.{minor - 1}.4")
    assert info["python"] == f"{major}.{minor - 1}.4" and platform.python_version() != info["python"]
    ns = {}
    rep = el.load_snapshot(data, ns, trust=True)  # trusted: still never run foreign bytecode
    assert set(rep.restored) == {"a", "b", "c"} and "f" not in ns
    (p,) = rep.problems()
    assert p["names"] == ["f"] and p["kind"] == "needs" and p["code"] == "needs-python"
    assert f"Python {major}.{minor - 1}" in p["message"] and f"Python {major}.{minor}" in p["message"]


def test_same_minor_version_and_vague_versions_restore_functions(monkeypatch):
    major, minor = sys.version_info[:2]
    for python in (f"{major}.{minor}.99", "3"):
        data, _ = _snap(monkeypatch, python=python)
        ns = {}
        rep = el.load_snapshot(data, ns, trust=True)
        assert rep.ok and ns["f"](1) == 2, (python, rep.table())


def test_json_records_nesting_deeper_than_we_write_are_not_parsed():
    # Pyodide parses JSON on the JS stack: 20,000 levels crashed it (the Node test
    # pyodide-no-fatal-errors runs that); here a depth host CPython would still parse.
    import json
    import sys as _sys
    from elastic_lite import _core
    from elastic_lite.load.loader import JSON_DEPTH, json_depth
    assert json_depth(b'{"a": "[[[{{", "b": [1, {"c": []}]}') == 4 and json_depth(b"7") == 0
    deep = b"[" * (JSON_DEPTH + 1) + b"]" * (JSON_DEPTH + 1)
    w = _core.Writer(producer="test", python=_sys.version.split()[0], created_ms=0)
    w.begin_record(["kept"])
    w.write(b"\x80\x04}\x8c\x01aK\x01s\x85.")
    w.end_record("pickle")
    w.begin_record(["__elastic_lite_manifest__"], kind="manifest")
    w.write(deep)
    w.end_record(None)
    w.begin_record(["__elastic_lite_history__"], kind="history")
    w.write(json.dumps({"cells": [[[[[[{"code": "x = 1"}]]]]]]}).encode())  # deep enough, legal
    w.end_record(None)
    data = w.finish()
    w.free()
    rep = el.load_snapshot(data, {}, data_only=True)
    assert rep.restored == ["kept"] and rep.history is not None
    assert any(f"nests {JSON_DEPTH + 1} levels" in m for m in rep.warnings), rep.warnings
