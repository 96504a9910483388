"""Replay through elastic_lite.host on host CPython and the real native core: cells run by
host.run_cell are recorded; host.checkpoint leaves files, connections and iterators out of the
pickled state and plans their replay (manifest + history record); host.restore into a FRESH
namespace re-runs the planned cells and reports each recomputed variable in the one report
schema. Side effects, trust, and replay turned off per checkpoint, per restore and per cell."""

import asyncio
import json
import os

import pytest

import elastic_lite as el
from elastic_lite import host
from elastic_lite.replay.recorder import recorder_for, stop_recording
from replay_helpers import scratch  # noqa: F401 (a fixture: a Path removed after the test)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(autouse=True)
def memory_store():
    el.set_store(el.MemoryStore())
    yield
    el.set_store(None)


class Notebook:
    """A namespace whose cells go through host.run_cell, numbered like In [n]."""

    def __init__(self):
        self.ns = {"__name__": "__main__"}
        self.count = 0

    def cell(self, code, ok=True):
        self.count += 1
        rep = run(host.run_cell(code, f"cell {self.count}", namespace=self.ns, count=self.count))
        assert rep["ok"] is ok, rep["traceback"]
        return rep

    def close(self):
        stop_recording(self.ns)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def nb():
    with Notebook() as book:
        yield book


def fresh():
    return {"__name__": "__main__"}


def restored(name, **kw):
    """(namespace, report) of restoring checkpoint `name` into a fresh namespace."""
    ns = fresh()
    return ns, run(host.restore(name, namespace=ns, **kw))


def by_name(rows):
    return {r["name"]: r for r in rows}


def test_generator_file_and_sqlite_come_back_positioned(nb, scratch):
    data = os.path.join(scratch, "data.csv")
    with open(data, "w") as fh:
        fh.write("h\n1\n2\n3\n")
    nb.cell("import sqlite3")
    nb.cell("k = 3\ngen = (i * k for i in range(100))")
    nb.cell("first = next(gen)")
    nb.cell(f"f = open({data!r})\nheader = f.readline()")
    nb.cell("con = sqlite3.connect(':memory:')\ncon.execute('create table t (x)')")
    nb.cell("con.executemany('insert into t values (?)', [(1,), (2,)])\nsecond = next(gen)")
    nb.cell("row = f.readline()")
    nb.cell("k = 1000")
    rep = run(host.checkpoint("nb", namespace=nb.ns))
    assert rep["ok"], rep["problems"]
    plan = rep["replay"]
    assert plan["enabled"] and plan["left_out"] == ["con", "f", "gen"]
    recompute = by_name(plan["recompute"])
    assert recompute["gen"]["cells"] == [2, 3, 5, 6]  # made by [2], advanced by [3] and [6]
    assert recompute["gen"]["message"] == "will be recomputed by re-running cells [2], [3], [5], [6]"
    assert recompute["f"]["cells"] == [4, 7] and recompute["f"]["type"] == "_io.TextIOWrapper"
    # Left out of the pickled state: not variables, not skipped.
    assert {"gen", "f", "con"}.isdisjoint(v["name"] for v in rep["variables"])
    assert rep["skipped"] == []
    expected = [next(nb.ns["gen"]), nb.ns["f"].readline()]

    ns = fresh()
    back = run(host.restore("nb", namespace=ns))
    assert back["ok"], back["problems"]
    assert {r["name"]: r["cells"] for r in back["recomputed"]} == {
        "gen": [2, 3, 5, 6], "f": [4, 7], "con": [2, 3, 5, 6]}
    assert by_name(back["recomputed"])["con"]["type"] == "sqlite3.Connection"
    assert back["replay"]["ok"] and "replay_ms" in back["timings"]
    # Each continues from the same item as the original session.
    assert [next(ns["gen"]), ns["f"].readline()] == expected
    assert ns["con"].execute("select x from t").fetchall() == [(1,), (2,)]
    # Restored values the replayed cells rebound are the checkpoint's, not the replay's.
    assert (ns["k"], ns["first"], ns["second"], ns["header"], ns["row"]) == (1000, 0, 3, "h\n", "1\n")
    ns["f"].close()
    nb.ns["f"].close()


def test_a_side_effect_is_reported_not_silently_rerun(nb, scratch):
    log = os.path.join(scratch, "log.txt")
    nb.cell(f"with open({log!r}, 'a') as fh:\n    fh.write('ran\\n')\n"
            "ticker = (n for n in range(5))\ncounter = iter(range(5))")
    nb.cell("print('hello from cell 2')\nshown = iter('xyz')\nnext(shown)")
    rep = run(host.checkpoint("fx", namespace=nb.ns))
    skipped = by_name(rep["replay"]["skipped"])
    assert skipped["ticker"]["message"].startswith("stays skipped: recreating it needs cell [1]")
    assert "writes files" in skipped["ticker"]["reason"]
    # counter cannot be replayed either, but a range iterator pickles (at its position)
    assert rep["replay"]["left_out"] == ["fh", "shown"] and "counter" not in skipped
    # `with open(...) as fh` leaves a closed file: never pickled (dill would save a handle
    # restore refuses), never replayed.
    assert by_name(rep["skipped"])["fh"]["reason"] == "a closed file: nothing to save"
    assert rep["replay"]["flagged"][0]["cell"] == 2
    assert "cell [2] has side effects (prints)" in rep["replay"]["flagged"][0]["message"]

    ns = fresh()
    back = run(host.restore("fx", namespace=ns))
    assert back["ok"], back["problems"]
    with open(log) as fh:
        assert fh.read() == "ran\n"  # the file-writing cell did not run again
    assert "ticker" not in ns and next(ns["counter"]) == 0 and next(ns["shown"]) == "y"
    assert "not recomputed: recreating it needs cell [1]" in by_name(back["skipped"])["ticker"]["reason"]
    cell2 = [c for c in back["replay"]["cells"] if c["count"] == 2][0]
    assert cell2["ran"] and cell2["output"] == "hello from cell 2\n"
    assert "cell [2] was re-run to recompute variables; it has side effects (prints)" in back["warnings"]


def test_restore_text_and_checkpoint_text_say_it(nb):
    nb.cell("gen = (n for n in range(3))\nnext(gen)")
    rep = run(host.checkpoint("t", namespace=nb.ns))
    text = el._report.checkpoint_text(rep)
    assert "replay on restore:\n  gen: will be recomputed by re-running cell [1]" in text
    back = run(host.restore("t", namespace=fresh()))
    assert "recomputed by replay:\n  gen: recomputed by re-running cell [1]" in \
        el._report.restore_text(back)


def test_what_cannot_be_recomputed_stays_skipped_with_the_reason(nb):
    ns = nb.ns
    ns["before"] = (n for n in range(3))  # made outside any recorded cell
    nb.cell("x = 1")
    rep = run(host.checkpoint("s", namespace=ns))
    assert by_name(rep["skipped"])["before"]["type"] == "generator"
    reason = by_name(rep["replay"]["skipped"])["before"]["reason"]
    assert reason.startswith("no recorded cell created it")
    back = run(host.restore("s", namespace=fresh()))
    assert back["ok"] and back["recomputed"] == []
    assert "; not recomputed: no recorded cell created it" in by_name(back["skipped"])["before"]["reason"]


def test_a_failing_replay_is_a_problem_of_the_variable(nb, scratch):
    data = os.path.join(scratch, "gone.txt")
    with open(data, "w") as fh:
        fh.write("x\n")
    nb.cell(f"f = open({data!r})")
    nb.cell("n = 2")
    rep = run(host.checkpoint("gone", namespace=nb.ns))
    assert rep["replay"]["left_out"] == ["f"]
    nb.ns["f"].close()
    os.remove(data)
    ns = fresh()
    back = run(host.restore("gone", namespace=ns))
    assert not back["ok"] and back["restored"][0]["name"] == "n"
    [p] = back["problems"]
    assert (p["kind"], p["code"], p["names"]) == ("failed", "replay", ["f"])
    assert p["message"].startswith("not recomputed: cell [1] raised FileNotFoundError")
    assert "f" not in ns and ns["n"] == 2


def test_replay_off_per_checkpoint_per_restore_and_per_cell(nb):
    nb.cell("gen = (n for n in range(3))\nnext(gen)")
    nb.cell("# elastic-lite: no-replay\nother = (n for n in [1, 2, 3])\nsame = iter([1, 2, 3])")
    off = run(host.checkpoint("off", namespace=nb.ns, replay=False))
    assert off["replay"]["enabled"] is False and off["replay"]["left_out"] == []
    assert by_name(off["skipped"])["gen"]["type"] == "generator"  # as without replay
    assert "turned off for this checkpoint" in by_name(off["replay"]["skipped"])["gen"]["reason"]
    back = run(host.restore("off", namespace=fresh()))
    assert back["recomputed"] == [] and "turned off for this checkpoint" in \
        by_name(back["skipped"])["gen"]["reason"]

    on = run(host.checkpoint("on", namespace=nb.ns))
    # The no-replay cell's iterators: `same` is pickled (at its position), `other` (a
    # generator) stays skipped, with the reason.
    assert on["replay"]["left_out"] == ["gen"] and "same" in {v["name"] for v in on["variables"]}
    assert "is marked not to be replayed" in by_name(on["replay"]["skipped"])["other"]["reason"]
    ns = fresh()
    back = run(host.restore("on", namespace=ns, replay=False))
    assert back["recomputed"] == [] and "gen" not in ns
    reason = by_name(back["skipped"])["gen"]["reason"]
    assert reason.startswith("left out to be recomputed by replay; not recomputed: replay is "
                             "turned off for this restore (it would re-run cell [1])")
    assert next(ns["same"]) == 1 and "other" not in ns


def test_a_checkpoint_from_elsewhere_replays_only_when_trusted(nb):
    nb.cell("gen = (n * n for n in range(5))\nnext(gen)")
    snap = run(host.export(run(host.checkpoint("mine", namespace=nb.ns))["name"]))
    data = snap["data"]
    ns = fresh()
    back = run(host.restore(data=data, namespace=ns))
    assert back["recomputed"] == [] and "gen" not in ns
    assert "replay runs code saved in the checkpoint and it was read from a file" in \
        by_name(back["skipped"])["gen"]["reason"]
    # Its history is not adopted either: a later checkpoint of this session must not carry
    # (and replay) code the person never trusted.
    assert recorder_for(ns) is None
    imported = run(host.import_checkpoint(data, "theirs"))
    assert imported["stored"]
    back = run(host.restore("theirs", namespace=fresh()))
    assert "it was imported from elsewhere" in by_name(back["skipped"])["gen"]["reason"]
    ns = fresh()
    back = run(host.restore(data=data, namespace=ns, trust=True))
    assert [r["name"] for r in back["recomputed"]] == ["gen"] and next(ns["gen"]) == 1
    assert [c.code for c in recorder_for(ns).cells] == ["gen = (n * n for n in range(5))\nnext(gen)"]
    stop_recording(ns)


def test_a_checkpoint_inside_a_running_cell_never_recomputes_a_stale_value(nb):
    nb.cell("import elastic_lite.host as H\ngen = (n for n in range(10))\nit = iter(range(10))")
    nb.cell("a, b = next(gen), next(it)\nrep = await H.checkpoint('inside', namespace=globals())")
    rep = nb.ns["rep"]
    # The running cell advanced both: the history cannot vouch for their current values.
    assert rep["replay"]["left_out"] == []
    assert "it" in {v["name"] for v in rep["variables"]}  # pickled, at its position
    assert "or by the cell still running when the checkpoint was taken" in \
        by_name(rep["replay"]["skipped"])["gen"]["reason"]
    ns = fresh()
    back = run(host.restore("inside", namespace=ns))
    assert "gen" not in ns and next(ns["it"]) == 1


def test_the_history_continues_after_restore(nb):
    nb.cell("gen = (n for n in range(10))")
    nb.cell("next(gen)")
    run(host.checkpoint("one", namespace=nb.ns))
    with Notebook() as second:
        second.count = 10
        run(host.restore("one", namespace=second.ns))
        second.cell("after = next(gen)")  # In [11], recorded on top of the loaded history
        assert second.ns["after"] == 1
        rep = run(host.checkpoint("two", namespace=second.ns))
        assert by_name(rep["replay"]["recompute"])["gen"]["cells"] == [1, 2, 11]
        assert next(restored("two")[0]["gen"]) == 2


def test_restore_inside_a_recorded_cell_does_not_claim_the_restored_names(nb):
    nb.cell("gen = (n for n in range(10))\nnext(gen)")
    run(host.checkpoint("r", namespace=nb.ns))
    with Notebook() as other:
        other.cell("import elastic_lite.host as H\n"
                   "rep = await H.restore('r', namespace=globals())")
        assert [r["name"] for r in other.ns["rep"]["recomputed"]] == ["gen"]
        other.cell("v = next(gen)")
        ids = [c["id"] for c in recorder_for(other.ns).to_json()["cells"]]
        assert ids == sorted(set(ids))  # still a history that loads
        rep = run(host.checkpoint("r2", namespace=other.ns))
        # gen is made by the checkpoint's cell [1] and advanced by [2] here, not by the
        # restoring cell (whose code is a restore: never replayed).
        assert by_name(rep["replay"]["recompute"])["gen"]["cells"] == [1, 2]
        assert next(restored("r2")[0]["gen"]) == 2


def test_manifest_and_history_records_hold_the_plan(nb):
    nb.cell("gen = (n for n in range(3))")
    run(host.checkpoint("m", namespace=nb.ns))
    entry = run(el.get_store()).get  # MemoryStore
    data = run(entry("m"))["bytes"]
    rep = el.load_snapshot(data, namespace=fresh())
    assert rep.history["format"] == "elastic-lite-history"
    section = rep.manifest["replay"]
    assert section["plan"]["targets"]["gen"]["counts"] == [1]
    assert section["types"] == {"gen": "generator"}
    json.dumps(rep.manifest)  # plain JSON


def test_no_recorder_no_history_and_nothing_changes():
    ns = fresh()
    exec("gen = (n for n in range(3))\nx = 1", ns)
    rep = run(host.checkpoint("plain", namespace=ns))
    assert rep["replay"] is None and by_name(rep["skipped"])["gen"]
    back = run(host.restore("plain", namespace=fresh()))
    assert back["replay"] is None and back["recomputed"] == []


def test_the_cost_model_leaves_out_what_is_cheaper_to_recompute(nb):
    nb.cell("import os\nsize = 8 << 20")
    nb.cell("table = bytes(range(256)) * (size // 256)")  # 8 MiB, made in about a millisecond
    nb.cell("noise = os.urandom(size)")  # as large, but it would not come back the same
    nb.cell("small = list(range(10))")
    plain = run(host.checkpoint("plain", namespace=nb.ns))
    assert plain["replay"]["choices"] == [] and plain["size"] > 16 << 20
    # A slow store (10 MB/s) so that no scheduling hiccup of this shared machine makes the
    # recorded run time of cell [2] look costlier than storing 8 MiB.
    rep = run(host.checkpoint("cost", namespace=nb.ns, recompute_large={"bytes_per_ms": 10_000}))
    choices = {c["names"][0]: c for c in rep["replay"]["choices"]}
    assert choices["table"]["chosen"] and choices["table"]["cells"] == [2]  # size is restored
    assert choices["table"]["reason"].startswith("not stored: recomputed by re-running cell [2]")
    assert not choices["noise"]["chosen"]
    assert "uses randomness" in choices["noise"]["reason"]
    assert "small" not in choices  # under the 1 MiB threshold: never a candidate
    assert by_name(rep["replay"]["recompute"])["table"]["why"] == "cost"
    assert "table" not in {v["name"] for v in rep["variables"]}
    assert 8 << 20 < rep["size"] < 9 << 20  # noise stored, table not
    ns, back = restored("cost")
    assert back["ok"] and [r["name"] for r in back["recomputed"]] == ["table"]
    assert ns["table"] == nb.ns["table"] and ns["noise"] == nb.ns["noise"]
    # Told to store the table after all (replay off for that restore), it says what is missing.
    ns, back = restored("cost", replay=False)
    assert "table" not in ns and by_name(back["skipped"])["table"]["reason"].startswith(
        "not stored: cheaper to recompute than to store (cost model); not recomputed: replay is "
        "turned off for this restore")


def test_the_public_api_checkpoint_and_restore_replay_too(nb):
    nb.cell("gen = (n * 3 for n in range(10))\nnext(gen)")
    nb.cell("import elastic_lite as el\nsnap = await el.checkpoint('public', namespace=globals())")
    snap = nb.ns["snap"]
    assert [r["name"] for r in snap.replay["recompute"]] == ["gen"]
    assert "gen: will be recomputed by re-running cell [1]" in snap.table()
    ns = fresh()
    rep = run(el.restore("public", namespace=ns))
    assert rep.ok and [r["name"] for r in rep.recomputed] == ["gen"] and next(ns["gen"]) == 3
    assert "recomputed by replay:\n  gen: recomputed by re-running cell [1]" in rep.table()
    assert rep.to_dict()["replay"]["recomputed"][0]["cells"] == [1]
    ns = fresh()
    rep = run(el.restore("public", namespace=ns, replay=False))
    assert "gen" not in ns and rep.replay["skipped"][0]["reason"].startswith(
        "replay is turned off for this restore")
    # An imported copy replays only when trusted.
    data = run(host.export("public"))["data"]
    assert run(host.import_checkpoint(data, "public-copy"))["stored"]
    ns = fresh()
    rep = run(el.restore("public-copy", namespace=ns))
    assert "gen" not in ns and "it was imported from elsewhere" in rep.replay["skipped"][0]["reason"]
    ns = fresh()
    rep = run(el.restore("public-copy", namespace=ns, trust=True))
    assert next(ns["gen"]) == 3


def test_a_replayed_cell_calling_a_closure_does_not_advance_the_restored_closure(nb):
    # counter() changes state only its closure holds: no global is rebound or mutated in the
    # cell's text. Replaying cell 2 (to advance `gen`) must call a counter recreated by the
    # replay, not the restored one, or the restored counter comes back one step ahead.
    nb.cell("def make_counter(start):\n    n = [start]\n    def inc():\n        n[0] += 1\n"
            "        return n[0]\n    return inc\n"
            "def make_total():\n    total = 0\n    def add(k):\n        nonlocal total\n"
            "        total += k\n        return total\n    return add\n"
            "class Tally:\n    def __init__(self):\n        self.n = 0\n    def __call__(self):\n"
            "        self.n += 1\n        return self.n\n"
            "counter = make_counter(10); add = make_total(); tally = Tally()\n"
            "gen = (i * i for i in range(9))")
    nb.cell("first = (counter(), add(5), tally(), next(gen))")
    rep = run(host.checkpoint("clo", namespace=nb.ns))
    assert rep["ok"], rep["problems"]
    ns, back = restored("clo")
    assert back["ok"], back["problems"]
    assert ns["first"] == (11, 5, 1, 0)
    assert (ns["counter"](), ns["add"](1), ns["tally"](), next(ns["gen"])) == (12, 6, 2, 1)


def test_calling_a_closure_over_nothing_that_changes_is_not_a_change(nb):
    # A decorator's wrapper closes over the function it wraps (and constants): calling it
    # changes nothing, so the restored wrapper is read as it is, and no earlier cell reruns.
    nb.cell("def logged(fn):\n    def wrapper(*a):\n        return fn(*a)\n    return wrapper\n"
            "@logged\ndef sq(x):\n    return x * x\n"
            "scale = (lambda k: (lambda x: x * k))(3)")
    nb.cell("gen = iter(range(5))\nvals = [sq(2), scale(2), next(gen)]")
    rep = run(host.checkpoint("deco", namespace=nb.ns))
    assert rep["ok"], rep["problems"]
    ns, back = restored("deco")
    assert back["ok"], back["problems"]
    assert ns["vals"] == [4, 6, 0] and next(ns["gen"]) == 1
    ran = [c["count"] for c in back["replay"]["cells"] if c["ran"]]
    assert ran == [2], ran
