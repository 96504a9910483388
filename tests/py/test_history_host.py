"""The history timeline through the host API and the magics: automatic checkpoints after a
cell (named by the cell, carrying meta.cell, off with %autocheckpoint off), %checkpoints
listing the cell of each point, and %restore @N / host.restore(at=N) taking a point."""

import asyncio

import pytest
from IPython.core.interactiveshell import InteractiveShell

import elastic_lite as el
from elastic_lite import _history, host


@pytest.fixture
def store():
    s = el.MemoryStore()
    el.set_store(s)
    yield s
    el.set_store(None)
    el.set_notebook(None)
    _history.set_auto(True)


def cell(count, first_line, time_ms=1764680000000):
    return {"executionCount": count, "firstLine": first_line, "timeMs": time_ms}


def test_an_automatic_checkpoint_is_named_by_its_cell_and_keeps_it(store):
    ns = {"__name__": "__main__", "x": 1}
    report = asyncio.run(host.checkpoint(namespace=ns, notebook="a.ipynb", auto=True,
                                         cell=cell(7, "x = 1\ny = 2", 1764680000123)))
    assert report["ok"] and not report["off"]
    assert report["name"] == "a.ipynb [7] 2025-12-02T12:53:20.123Z"
    [entry] = asyncio.run(store.list())
    assert entry["meta"]["cell"] == {"executionCount": 7, "firstLine": "x = 1",
                                     "timeMs": 1764680000123}
    assert entry["meta"]["notebook"] == "a.ipynb"


def test_automatic_checkpoints_do_nothing_while_turned_off(store):
    ns = {"__name__": "__main__", "x": 1}
    _history.set_auto(False)
    report = asyncio.run(host.checkpoint(namespace=ns, notebook="a.ipynb", auto=True,
                                         cell=cell(1, "x = 1")))
    assert report["ok"] and report["off"] and "%autocheckpoint on" in report["warnings"][0]
    assert asyncio.run(store.list()) == []
    # a checkpoint asked for by a person is not automatic: it is taken
    assert asyncio.run(host.checkpoint("mine", namespace=ns))["ok"]
    assert [e["name"] for e in asyncio.run(store.list())] == ["mine"]


def test_restore_at_a_point_takes_the_newest_checkpoint_after_that_cell(store):
    ns = {"__name__": "__main__"}
    for count, value in ((1, "a"), (2, "b"), (2, "b2"), (3, "c")):
        ns["v"] = value
        asyncio.run(host.checkpoint(namespace=ns, notebook="n.ipynb", auto=True,
                                    cell=cell(count, f"v = {value!r}", 1764680000000 + len(value) * 10 + count)))
    fresh = {"__name__": "__main__"}
    report = asyncio.run(host.restore(namespace=fresh, notebook="n.ipynb", at=2))
    assert report["ok"] and fresh["v"] == "b2" and report["name"].startswith("n.ipynb [2] ")
    missing = asyncio.run(host.restore(namespace=fresh, notebook="n.ipynb", at=9))
    assert not missing["ok"] and missing["problems"][0]["code"] == "not-found"
    assert missing["problems"][0]["message"] == "no checkpoint of n.ipynb was taken after cell [9]"


@pytest.fixture
def shell(store):
    sh = InteractiveShell.instance()
    sh.run_cell("%load_ext elastic_lite", store_history=False)
    yield sh
    sh.reset()


def run(sh, code, capsys):
    res = sh.run_cell(code, store_history=True)
    res.raise_error()
    return capsys.readouterr().out


def test_magics_list_the_timeline_restore_a_point_and_turn_automatic_checkpoints_off(shell, capsys):
    el.set_notebook("t.ipynb")
    ns = shell.user_ns
    for count in (1, 2, 3):
        run(shell, f"value = {count} * 10", capsys)
        asyncio.run(host.checkpoint(namespace=ns, auto=True, cell=cell(count, f"value = {count} * 10",
                                                                      1764680000000 + count)))
    out = run(shell, "%checkpoints", capsys)
    assert "after cell" in out and "[2] value = 2 * 10" in out and "%restore @N" in out
    out = run(shell, "%restore @2", capsys)
    assert "t.ipynb [2] " in out and "restored" in out
    assert ns["value"] == 20
    assert run(shell, "%restore @8", capsys) == \
        "elastic_lite: no checkpoint of t.ipynb was taken after cell [8]\n"
    assert "after each cell: off" in run(shell, "%autocheckpoint off", capsys)
    assert not _history.auto_enabled()
    assert "after each cell: off" in run(shell, "%autocheckpoint", capsys)
    assert "after each cell: on" in run(shell, "%autocheckpoint on", capsys)
    assert "takes on or off" in run(shell, "%autocheckpoint maybe", capsys)
