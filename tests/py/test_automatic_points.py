"""The history timeline through the host API and the magics: automatic checkpoints after a
cell (named by the cell, carrying meta.cell, off with %autocheckpoint off), %checkpoints
listing the cell of each point, and %restore @N / host.restore(at=N) taking a point."""

import asyncio

import pytest
from IPython.core.interactiveshell import InteractiveShell

import elastic_lite as el
from elastic_lite import host
from elastic_lite.session import timeline as _timeline
from elastic_lite.session.kernel import SESSION


@pytest.fixture
def store():
    s = el.MemoryStore()
    el.set_store(s)
    yield s
    el.set_store(None)
    el.set_notebook(None)
    SESSION.auto = True


def cell(count, first_line, time_ms=1764680000000):
    return {"executionCount": count, "firstLine": first_line, "timeMs": time_ms}


def test_an_automatic_checkpoint_is_named_by_its_cell_and_keeps_it(store):
    ns = {"__name__": "__main__", "x": 1}
    report = asyncio.run(host.checkpoint(namespace=ns, notebook="a.ipynb", auto=True,
                                         cell=cell(7, "x = 1\ny = 2", 1764680000123)))
    assert report["ok"] and not report["off"]
    assert report["name"] == "a.ipynb [7] 2025-12-02T12:53:20.123Z"
    assert report["label"] == "[7] x = 1"  # hosts show the kernel's label, never compute one
    [entry] = asyncio.run(store.list())
    assert entry["meta"]["cell"] == {"executionCount": 7, "firstLine": "x = 1",
                                     "timeMs": 1764680000123}
    assert entry["meta"]["notebook"] == "a.ipynb"


def test_a_runs_points_are_named_by_the_kernel_after_the_run_and_cell_without_a_time(store):
    """The CLI's run --history passes its run's name (series) and the cell (its source: the
    kernel keeps the first line that says something); the kernel names the point: a second
    run replaces the first run's points of the same cells."""
    ns = {"__name__": "__main__", "x": 1}
    for _ in range(2):
        report = asyncio.run(host.checkpoint(namespace=ns, notebook="steps.ipynb", auto=True,
                                             series="steps", cell=cell(3, "\n  x = 1  \ny = x")))
        assert (report["ok"], report["name"], report["label"]) == (True, "steps [3]", "[3] x = 1")
    assert [e["name"] for e in asyncio.run(store.list())] == ["steps [3]"]


def test_automatic_checkpoints_do_nothing_while_turned_off(store):
    ns = {"__name__": "__main__", "x": 1}
    SESSION.auto = False
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
    assert not SESSION.auto
    assert "after each cell: off" in run(shell, "%autocheckpoint", capsys)
    assert "after each cell: on" in run(shell, "%autocheckpoint on", capsys)
    assert "takes on or off" in run(shell, "%autocheckpoint maybe", capsys)


_clock = [1764680000000]


def auto_point(ns, count, line, notebook="r.ipynb"):
    """An automatic point of kernel `ns` after cell [count] (each at its own time: names
    differ, as a real clock makes them)."""
    _clock[0] += 1000
    report = asyncio.run(host.checkpoint(namespace=ns, notebook=notebook, auto=True,
                                         cell=cell(count, line, _clock[0])))
    assert report["ok"], report
    return report["name"]


def test_a_restore_without_a_name_brings_back_the_lost_state_not_a_fresh_kernels_point(store):
    # kernel 1: state, a point after each cell
    old = {"__name__": "__main__"}
    old["df"] = [1, 2, 3]
    auto_point(old, 1, "df = [1, 2, 3]")
    old["model"] = "fit"
    last_of_old = auto_point(old, 2, 'model = "fit"')
    # the kernel restarts (a fresh namespace): its first cell, 1+1, leaves a point holding
    # nothing, then a cell makes a variable of its own: two points newer than the lost state
    new = {"__name__": "__main__"}
    empty = auto_point(new, 1, "1+1")
    new["y"] = 2
    with_y = auto_point(new, 2, "y = 2")
    assert [e["name"] for e in asyncio.run(store.list())][2] == last_of_old
    # Restore (toolbar, offer, bare %restore: host.restore with no name) takes the lost state
    report = asyncio.run(host.restore(namespace=new, notebook="r.ipynb"))
    assert report["ok"] and report["name"] == last_of_old
    assert new["df"] == [1, 2, 3] and new["model"] == "fit"
    # and so does the public API, elastic_lite.restore() (as if `other` took those points)
    other = {"__name__": "__main__"}
    SESSION.took_point(empty, other)
    SESSION.took_point(with_y, other)
    assert asyncio.run(el.restore(namespace=other)).name == last_of_old
    assert other["model"] == "fit"
    # a third kernel: the last state of the previous one (its point with y), not the empty point
    third = {"__name__": "__main__"}
    report = asyncio.run(host.restore(namespace=third, notebook="r.ipynb"))
    assert report["name"].startswith("r.ipynb [2] ") and third["y"] == 2 and "df" not in third
    # a checkpoint a person saved in this kernel is what Restore brings back
    third["z"] = 3
    assert asyncio.run(host.checkpoint("saved", namespace=third, notebook="r.ipynb"))["ok"]
    auto_point(third, 3, "z = 3")
    assert asyncio.run(host.restore(namespace=third, notebook="r.ipynb"))["name"] == "saved"
    # own points of a kernel stay reachable by cell (%restore @N) and by name
    assert asyncio.run(host.restore(namespace=new, notebook="r.ipynb", at=1))["name"] == empty


def test_with_only_its_own_points_a_restore_without_a_name_takes_the_newest(store):
    ns = {"__name__": "__main__", "v": 1}
    first = auto_point(ns, 1, "v = 1", notebook="only.ipynb")
    ns["v"] = 2
    newest = auto_point(ns, 2, "v = 2", notebook="only.ipynb")
    assert asyncio.run(host.restore(namespace=ns, notebook="only.ipynb"))["name"] == newest
    assert first != newest
    assert _timeline.restore_choice([]) is None


def test_restore_choice_skips_own_and_empty_points_in_that_order():
    ns = {}
    entry = lambda name, **meta: {"name": name, "meta": meta}  # noqa: E731
    own_full, own_empty = entry("own", variables=1, names=["a"]), entry("own0", variables=0)
    empty = entry("e", variables=0, names=[], skipped=[])
    recompute = entry("r", variables=0, names=[], skipped=[{"name": "g"}])  # replay brings g
    old = entry("old", variables=2, names=["a", "b"])
    SESSION.took_point("own", ns)
    SESSION.took_point("own0", ns)
    pick = lambda *es: SESSION.restore_choice(list(es), ns)["name"]  # noqa: E731
    assert pick(own_full, own_empty, empty, old) == "old"
    assert pick(own_full, empty, recompute, old) == "r"
    assert pick(own_full, empty) == "e"  # nothing else: the newest not its own
    assert pick(own_empty, own_full) == "own0"  # only its own: the newest
    assert SESSION.restore_choice([old], {})["name"] == "old"  # another kernel owns nothing


def test_a_bare_percent_restore_after_a_restart_brings_back_the_previous_kernels_state(shell, capsys):
    el.set_notebook("m.ipynb")
    previous = {"__name__": "__main__", "data": {"rows": 40}}
    auto_point(previous, 5, "data = load()", notebook="m.ipynb")
    run(shell, "1+1", capsys)
    auto_point(shell.user_ns, 1, "1+1", notebook="m.ipynb")
    out = run(shell, "%checkpoints", capsys)
    assert 'a bare %restore brings back "m.ipynb [5] ' in out, out
    out = run(shell, "%restore", capsys)
    assert "m.ipynb [5] " in out, out
    assert shell.user_ns["data"] == {"rows": 40}


def test_a_point_without_a_progress_listener_makes_no_call_per_group(store, monkeypatch):
    """A point reuses a hundred records: with nobody listening to progress, the snapshot loop
    gets no callback to call once per group (with one, each group is still announced)."""
    from elastic_lite.capture import container
    seen = []
    made = container.SnapshotStream.__init__

    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        seen.append(self.progress)
    monkeypatch.setattr(container.SnapshotStream, "__init__", init)
    ns = {"__name__": "__main__", **{f"v{i}": [i] * 50 for i in range(20)}}
    assert asyncio.run(host.checkpoint(namespace=ns, auto=True, cell=cell(1, "v0")))["ok"]
    assert seen == [None]
    events = []
    assert asyncio.run(SESSION.checkpoint("p", namespace=ns, progress=events.append))["ok"]
    assert seen[-1] is not None
    assert sum(e["phase"] == "serialize" for e in events) >= 2 and events[-1] == {"phase": "store"}
