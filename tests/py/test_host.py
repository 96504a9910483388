"""elastic_lite.host on host CPython and the real native core: every operation's report,
typed problems (damaged / refused / needs / failed) decided from structure, the one import
policy, and the JSON entry point the JS hosts use."""

import asyncio
import json
import os
import sys

import pytest

import elastic_lite as el
from elastic_lite import host

STATE = """
import math
import threading
scale = 3
def f(x):
    return x * scale
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
p = Point(3, 4)
data = {"k": [1, 2]}
alias = data["k"]
lock = threading.Lock()
gen = (i for i in [])
"""

# A record whose unpickling would call os.system("true"): made with the public snapshot()
# from an object whose __reduce__ names os.system, as a hostile file would be.
EVIL = """
import os
class Evil:
    def __reduce__(self):
        return (os.system, ("true",))
evil = Evil()
kept = {"a": [1, 2]}
"""


def run(coro):
    return asyncio.run(coro)


def notebook(code):
    ns = {"__name__": "__main__"}
    exec(compile(code, "<cell>", "exec"), ns)
    return ns


@pytest.fixture(autouse=True)
def memory_store():
    el.set_store(el.MemoryStore())
    yield
    el.set_store(None)
    el.set_notebook(None)


def flip(data, record_names):
    """A copy of `data` with one byte flipped in the middle of the named record's payload."""
    rec = next(r for r in el.load.loader.inspect(data)["records"] if r["names"] == record_names)
    out = bytearray(data)
    out[rec["payload_offset"] + rec["length"] // 2] ^= 0x20
    return bytes(out), rec


def test_checkpoint_report_rows_skipped_modules_progress_and_timings():
    ns = notebook(STATE)
    events = []
    rep = run(host.checkpoint("one", namespace=ns, notebook="nb.ipynb", progress=events.append))
    assert rep["op"] == "checkpoint" and rep["ok"] and rep["problems"] == []
    rows = {v["name"]: v for v in rep["variables"]}
    assert rows["f"]["serializer"] == "cloudpickle" and rows["lock"]["serializer"] == "dill"
    assert rows["lock"]["fallback"].startswith("cloudpickle: TypeError")
    together = [v for v in rep["variables"] if v["name"] in ("data", "alias")]
    assert together[0]["record"] == together[1]["record"] and together[1]["bytes"] is None
    assert [s["name"] for s in rep["skipped"]] == ["gen"] and "generator" in rep["skipped"][0]["reason"]
    assert {m["name"] for m in rep["modules"]} == {"math", "threading"}
    assert set(rep["timings"]) == {"serialize_ms", "store_ms", "total_ms"}
    assert events[0]["phase"] == "serialize" and events[-1] == {"phase": "store"}
    assert events[-2]["done"] == events[-2]["total"]
    [entry] = run(host.list())["checkpoints"]
    assert entry["name"] == "one" and entry["meta"]["notebook"] == "nb.ipynb"
    assert entry["meta"]["variables"] == len(rep["variables"]) and entry["meta"]["size"] == rep["size"]
    json.dumps(rep)  # JSON-able as it is


def test_restore_report_and_the_inspection_it_validated_with():
    run(host.checkpoint("one", namespace=notebook(STATE)))
    out = {"__name__": "__main__"}
    rep = run(host.restore("one", namespace=out))
    assert rep["ok"] and rep["problems"] == [] and rep["source"] == "store"
    restored = {r["name"]: r for r in rep["restored"]}
    assert restored["p"]["type"] == "Point" and restored["lock"]["serializer"] == "dill"
    assert out["f"](2) == 6 and out["alias"] is out["data"]["k"]
    assert rep["inspection"]["ok"] and len(rep["inspection"]["records"]) == len(
        {r["record"] for r in rep["restored"]}) + 1  # + the manifest
    assert [s["name"] for s in rep["skipped"]] == ["gen"]
    assert set(rep["timings"]) == {"read_ms", "load_ms", "total_ms"}
    json.dumps(rep)


def test_restore_newest_of_a_notebook_and_missing_names():
    run(host.checkpoint("a", namespace=notebook("x = 1"), notebook="A.ipynb"))
    run(host.checkpoint("b", namespace=notebook("x = 2"), notebook="B.ipynb"))
    out = {}
    rep = run(host.restore(notebook="A.ipynb", namespace=out))
    assert rep["name"] == "a" and out["x"] == 1
    rep = run(host.restore("nope", namespace={}))
    assert not rep["ok"] and rep["problems"] == [{
        "kind": "failed", "names": [], "record": None, "message": 'no checkpoint named "nope"',
        "code": "not-found", "calls": [], "offset": None}]
    rep = run(host.restore(notebook="C.ipynb", namespace={}))
    assert rep["problems"][0]["code"] == "not-found" and "of C.ipynb" in rep["problems"][0]["message"]
    rep = run(host.restore("bad\nname", namespace={}))
    assert rep["problems"][0]["code"] == "invalid-name"


def test_a_damaged_record_and_a_record_that_needs_it():
    data = el.snapshot(notebook(STATE)).data
    broken, rec = flip(data, ["Point"])
    out = {"__name__": "__main__"}
    # bytes given are foreign (loaded only when trusted); damage is judged the same either way
    rep = run(host.restore(data=broken, namespace=out, trust=True))
    assert not rep["ok"] and rep["source"] == "data"
    kinds = {tuple(p["names"]): p for p in rep["problems"]}
    damaged = kinds[("Point",)]
    assert damaged["kind"] == "damaged" and damaged["record"] == rec["index"]
    assert damaged["code"] == "checksum"  # the C core's error code, carried as it is
    assert damaged["offset"] is not None and "checksum mismatch" in damaged["message"]  # the core's words
    assert kinds[("p",)]["kind"] == "needs" and kinds[("p",)]["code"] == "needs-record"
    assert "Point" not in out and "p" not in out and out["f"](1) == 3


def test_nothing_restorable_is_one_damaged_problem():
    rep = run(host.restore(data=b"not a checkpoint at all", namespace={}))
    assert not rep["ok"] and rep["restored"] == []
    [prob] = rep["problems"]
    assert prob["kind"] == "damaged" and "not a readable Elastic Lite checkpoint" in prob["message"]
    assert prob["code"] == "not-checkpoint"


def test_a_code_running_record_is_refused_with_its_calls_and_trust_loads_it(monkeypatch):
    data = el.snapshot(notebook(EVIL)).data
    calls = []
    import posix  # pickle finds os.system as posix.system
    for mod in (os, posix):
        monkeypatch.setattr(mod, "system", lambda cmd: calls.append(cmd) or 0)
    # a checkpoint of this store: the code-running record is refused, the others restore
    run(run(el.get_store()).put("evil", data, {}, sign=True))
    out = {"__name__": "__main__"}
    rep = run(host.restore("evil", namespace=out))
    [prob] = rep["problems"]
    assert prob["kind"] == "refused" and prob["names"] == ["evil"] and prob["code"] == "denied"
    # calls name the global as pickle looks it up (and what it really is here: the spy)
    assert [c.split(" ")[0] for c in prob["calls"]] in (["posix.system"], ["os.system"])
    assert calls == []
    assert out["kept"] == {"a": [1, 2]} and "evil" not in out
    # the same bytes given as a file are foreign: nothing at all is unpickled
    out = {"__name__": "__main__"}
    rep = run(host.restore(data=data, namespace=out))
    [prob] = rep["problems"]
    assert prob["kind"] == "refused" and prob["code"] == "foreign" and rep["restored"] == []
    assert set(prob["names"]) == {"Evil", "evil", "kept"} and "kept" not in out and calls == []
    assert rep["trust"]["provenance"] == "foreign" and rep["trust"]["imports"]
    rep = run(host.restore(data=data, namespace=out, trust=True))
    assert rep["ok"] and calls == ["true"]


def test_a_module_that_is_not_installed_is_a_needs_problem(monkeypatch):
    fake = type(sys)("el_test_fake_module")
    monkeypatch.setitem(sys.modules, "el_test_fake_module", fake)
    data = el.snapshot(notebook("import el_test_fake_module as fm\nx = 1")).data
    monkeypatch.delitem(sys.modules, "el_test_fake_module")
    rep = run(host.restore(data=data, namespace={}, trust=True))
    [prob] = rep["problems"]
    assert prob["kind"] == "needs" and prob["names"] == ["fm"] and prob["code"] == "needs-module"
    assert [r["name"] for r in rep["restored"]] == ["x"] and not rep["ok"]


def test_inspect_lists_records_and_problems_in_file_order():
    data = el.snapshot(notebook(STATE + EVIL)).data
    broken, rec = flip(data, ["f"])
    rep = run(host.inspect(data=broken))
    assert not rep["ok"] and not rep["whole"] and rep["header"]["format_version"] is not None
    offsets = [p["offset"] for p in rep["problems"]]
    assert offsets == sorted(offsets)
    by_kind = {p["kind"]: p for p in rep["problems"]}
    assert by_kind["damaged"]["names"] == ["f"] and by_kind["refused"]["names"] == ["evil"]
    assert sum(r["manifest"] for r in rep["records"]) == 1
    whole = run(host.inspect(data=data))
    assert whole["ok"] and whole["whole"] and [p["kind"] for p in whole["problems"]] == ["refused"]
    empty = run(host.inspect(data=b""))
    assert not empty["ok"] and empty["problems"][0]["code"] == "empty"


def test_import_policy_whole_damaged_code_running_and_names():
    good = el.snapshot(notebook(STATE)).data
    rep = run(host.import_checkpoint(good, "mine", notebook="nb.ipynb", source="mine.elc"))
    assert rep["ok"] and rep["stored"] and rep["problems"] == []
    assert "f" in rep["variables"] and rep["meta"]["imported"] == "mine.elc"
    assert rep["meta"]["notebook"] == "nb.ipynb" and rep["meta"]["originalCreatedMs"] > 0
    # the same name again: refused, or a free name, or replaced
    again = run(host.import_checkpoint(good, "mine"))
    assert not again["ok"] and again["problems"][0]["code"] == "exists"
    assert again["problems"][0]["message"].startswith('a checkpoint named "mine" already exists')
    assert run(host.import_checkpoint(good, "mine", unique=True))["name"] == "mine (2)"
    assert run(host.import_checkpoint(good, "mine", replace=True))["stored"]
    # partly damaged: refused, nothing stored
    broken, _ = flip(good, ["f"])
    bad = run(host.import_checkpoint(broken, "broken"))
    assert not bad["ok"] and not bad["stored"] and bad["problems"][0]["names"] == ["f"]
    assert bad["problems"][0]["kind"] == "damaged" and "nothing was imported" in bad["warnings"]
    assert "broken" not in {e["name"] for e in run(host.list())["checkpoints"]}
    # not a checkpoint, empty: refused
    assert run(host.import_checkpoint(b"hello", "x"))["problems"][0]["kind"] == "damaged"
    assert run(host.import_checkpoint(b"", "x"))["problems"][0]["code"] == "empty"
    # whole but code-running: stored, the refused records listed
    evil = run(host.import_checkpoint(el.snapshot(notebook(EVIL)).data, "evil"))
    assert evil["ok"] and evil["stored"] and [p["kind"] for p in evil["problems"]] == ["refused"]


def test_delete_and_export():
    run(host.checkpoint("one", namespace=notebook("x = 1")))
    exported = run(host.export("one"))
    stored = run(run(el.get_store()).get("one"))["bytes"]
    assert exported["ok"] and exported["data"] == stored and exported["size"] == len(stored)
    assert run(host.delete("one"))["deleted"]
    gone = run(host.delete("one"))
    assert not gone["ok"] and gone["problems"][0]["code"] == "not-found"
    assert run(host.export("one"))["problems"][0]["code"] == "not-found"


def test_call_is_json_in_and_out():
    ns_json = json.dumps({"name": "j", "notebook": "n.ipynb"})
    el.set_notebook(None)
    report = json.loads(run(host.call("checkpoint", ns_json)))
    assert report["op"] == "checkpoint" and report["name"] == "j"
    exported = json.loads(run(host.call("export", json.dumps({"name": "j"}))))
    assert "data" not in exported and exported["size"] > 0
    with pytest.raises(ValueError, match="unknown operation 'nope'"):
        run(host.call("nope"))


# --- run_cell -----------------------------------------------------------------------------

def cell(code, ns, label="cell 1"):
    return run(host.run_cell(code, label, namespace=ns))


def test_run_cell_value_await_and_underscore():
    ns = {"__name__": "__main__"}
    rep = cell("import asyncio\nawait asyncio.sleep(0)\nx = 41\nx + 1", ns)
    assert rep["ok"] and rep["value"] == "42" and ns["_"] == 42 and ns["x"] == 41
    assert cell("y = 2", ns)["value"] is None
    assert cell("async def g():\n    return 5\nawait g()", ns)["value"] == "5"
    # a final expression that IS a coroutine object is shown, not awaited
    assert cell("g()", ns)["value"].startswith("<coroutine object")
    ns["_"].close()
    assert cell("class R:\n    def __repr__(self):\n        raise ValueError('no')\nR()", ns)["value"] \
        == "<repr() failed: ValueError: no>"


def test_run_cell_traceback_starts_at_the_cell():
    ns = {"__name__": "__main__"}
    rep = cell("def g():\n    return 1 / 0\nprint('before')\ng()", ns, "cell 7")
    assert not rep["ok"] and rep["error"]["type"] == "ZeroDivisionError"
    tb = rep["traceback"]
    assert tb.startswith("Traceback") and 'File "<cell 7>", line 4, in <module>' in tb
    assert "host.py" not in tb and "return 1 / 0" in tb
    assert rep["problems"][0]["code"] == "exception"
    syntax = cell("x = (", ns, "cell 8")
    assert not syntax["ok"] and "SyntaxError" in syntax["traceback"] and "host.py" not in syntax["traceback"]


def test_time_magics_run_their_statement_and_say_so():
    ns = {"__name__": "__main__"}
    rep = cell("def f():\n    return 3\n%time x = f()\n%timeit -n 10 -r 2 y = f() + 1\nif True:\n"
               "    %time z = 5", ns, "cell 2")
    assert rep["ok"], rep["traceback"]
    assert ns["x"] == 3 and ns["y"] == 4 and ns["z"] == 5
    assert rep["warnings"] == [
        'cell 2, line 3: ran the statement of "%time x = f()" once, without timing it',
        'cell 2, line 4: ran the statement of "%timeit -n 10 -r 2 y = f() + 1" once, without timing it',
        'cell 2, line 6: ran the statement of "%time z = 5" once, without timing it']
    rep = cell("%%time\na = 1\nb = a + 1\nb", ns, "cell 3")
    assert rep["ok"] and rep["value"] == "2" and ns["a"] == 1
    assert rep["warnings"] == ['cell 3, line 1: ran the cell of "%%time" once, without timing it']
    rep = cell("%%timeit -n 5 base = 10\nc = base * 2", ns, "cell 4")
    assert rep["ok"] and ns["c"] == 20


def test_other_magics_and_shell_lines_are_skipped_with_a_warning_naming_the_line():
    ns = {"__name__": "__main__"}
    rep = cell("%matplotlib inline\n!pip install nothing\nv = 1\n1/0", ns, "cell 4")
    assert rep["warnings"][:2] == [
        'cell 4, line 1: skipped IPython line "%matplotlib inline" (this kernel has no IPython)',
        'cell 4, line 2: skipped IPython line "!pip install nothing" (this kernel has no IPython)']
    assert ns["v"] == 1 and 'File "<cell 4>", line 4' in rep["traceback"]  # line numbers kept
    rep = cell("%%bash\necho hi", ns, "cell 5")
    assert rep["ok"] and rep["warnings"] == [
        'cell 5: skipped, it is an IPython cell magic ("%%bash") and this kernel has no IPython']
    # a "%" line inside a string is Python, left alone
    rep = cell('s = """\n%time not a magic\n"""', ns)
    assert rep["ok"] and rep["warnings"] == [] and ns["s"] == "\n%time not a magic\n"


def test_in_an_ipython_kernel_ipython_runs_the_magics(capsys):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        rep = cell("%time w = 6 * 7", shell.user_ns)
        assert rep["ok"] and rep["warnings"] == [] and shell.user_ns["w"] == 42
        assert "Wall time" in capsys.readouterr().out  # IPython's own %time ran
    finally:
        shell.reset()


def test_observers_see_every_cell_and_a_broken_one_only_warns():
    seen = []

    class Watcher:
        def before(self, source, raw=None):
            seen.append(("before", source, raw))

        def after(self, ok, error=None):
            seen.append(("after", ok, type(error).__name__ if error else None))

    class Broken:
        def before(self, source, raw=None):
            raise RuntimeError("boom")

    host.observers[:] = [Watcher(), Broken()]
    try:
        ns = {}
        cell("a = 1", ns)
        rep = cell("1/0", ns)
        cell("%time b = 2", ns)  # the source that runs, and the cell as typed
    finally:
        host.observers.clear()
    assert seen == [("before", "a = 1", None), ("after", True, None),
                    ("before", "1/0", None), ("after", False, "ZeroDivisionError"),
                    ("before", "b = 2", "%time b = 2"), ("after", True, None)]
    assert rep["warnings"][0].startswith("cell observer") and "RuntimeError: boom" in rep["warnings"][0]
