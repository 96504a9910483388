"""Planner and replayer in host CPython, on real checkpoints: the session is recorded,
snapshot() saves what it can, the planner covers what it could not, and the restore side
(load_snapshot into a new namespace — and once in a fresh `python` process) replays."""

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

import elastic_lite as el
from elastic_lite.replay.engine import (Plan, PlanError, choose_recompute, plan_replay, replay,
                                        replay_sync)
from replay_helpers import Session, scratch  # noqa: F401 (a fixture)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def checkpoint(s, extra_targets=()):
    """snapshot() + the plan for what it skipped (+ extra_targets), as a checkpoint holds
    them: container bytes, history JSON, plan JSON."""
    snap = el.snapshot(s.ns)
    targets = [x["name"] for x in snap.skipped] + list(extra_targets)
    saved = (set(snap.names) | {m["name"] for m in snap.modules}) - set(extra_targets)
    history = s.history()
    plan = plan_replay(history, saved, targets)
    return snap, history, json.loads(json.dumps(plan.to_json()))


def restored(snap):
    """A new namespace with the checkpoint loaded into it (no replay yet)."""
    ns = {"__name__": "__main__"}
    el.load_snapshot(snap.data, ns)
    return ns


def restore(snap, history, plan, **kw):
    ns = restored(snap)
    report = asyncio.run(replay(plan, history, ns, **kw))
    return ns, report


def test_a_generator_advanced_by_a_later_cell_comes_back_positioned():
    s = Session()
    s.run("k = 10\ngen = (i * k for i in range(100))")
    s.run("first = next(gen)")
    s.run("other = 5")
    s.run("second = next(gen)\nthird = next(gen)")
    snap, history, plan = checkpoint(s)
    assert [x["name"] for x in snap.skipped] == ["gen"]
    assert plan["targets"]["gen"]["counts"] == [1, 2, 4]  # not cell 3: it did not touch gen
    ns, report = restore(snap, history, plan)
    assert report.recomputed == [{"name": "gen", "cells": [1, 2, 4],
                                  "message": "recomputed by re-running cells [1], [2], [4]"}]
    assert next(ns["gen"]) == next(s.ns["gen"]) == 30  # continues from the same item
    assert ns["first"] == 0 and ns["third"] == 20 and ns["k"] == 10


def test_an_open_file_and_an_in_memory_database_filled_by_earlier_cells_come_back(scratch):
    data = scratch / "data.txt"
    data.write_text("header\nrow1\nrow2\nrow3\n")
    s = Session()
    s.run("import sqlite3")
    s.run(f"f = open({str(data)!r})\nheader = f.readline()")
    s.run("con = sqlite3.connect(':memory:')\ncon.execute('create table t (x, y)')")
    s.run("row1 = f.readline()")
    s.run("con.executemany('insert into t values (?, ?)', [(1, 'a'), (2, 'b')])")
    s.run("con.execute('insert into t values (3, ?)', (row1.strip(),))")  # reads row1 (saved)
    s.run("cur = con.execute('select x from t order by x')\nfirst_row = cur.fetchone()")
    # An open file is a replay target too: dill could pickle the handle, but restoring it
    # opens a file, which the trust check refuses; recomputing it by replay is the plan.
    snap, history, plan = checkpoint(s, extra_targets=["f"])
    assert {x["name"] for x in snap.skipped} == {"con", "cur"}
    ns, report = restore(snap, history, plan)
    assert report.ok and {r["name"] for r in report.recomputed} == {"f", "con", "cur"}
    assert ns["f"].readline() == "row2\n"
    assert ns["con"].execute("select x, y from t order by x").fetchall() == [
        (1, "a"), (2, "b"), (3, "row1")]
    assert ns["cur"].fetchone() == (2,)
    ns["f"].close()
    s.ns["f"].close()


def test_a_cell_with_a_side_effect_is_reported_not_silently_rerun(scratch, capsys):
    log = scratch / "log.txt"
    s = Session()
    s.run(f"out = open({str(log)!r}, 'w')\nout.write('once')\nout.flush()\n"
          "gen = (x for x in range(10))")
    s.run("print('progress', 1)\ng2 = (x * 2 for x in range(3))")
    capsys.readouterr()
    snap, history, plan = checkpoint(s)
    reason = plan["skipped"]["gen"]
    assert "cell [1]" in reason and "writes files" in reason and "allow=['writes-files'" in reason
    assert plan["targets"]["g2"]["counts"] == [2]  # its cell prints: replayed, and flagged
    assert Plan.from_json(plan).flagged[0]["count"] == 2
    os.unlink(log)
    ns, report = restore(snap, history, plan)
    assert not log.exists()  # the file-writing cell was not re-run
    assert {x["name"] for x in report.skipped} >= {"gen"}
    assert report.recomputed[0]["name"] == "g2"
    cell2 = next(c for c in report.cells if c["count"] == 2)
    assert cell2["output"] == "progress 1\n"
    assert ["prints", "print('progress', 1)", "code"] in cell2["effects"]
    assert capsys.readouterr().out == ""  # captured, not printed into the restore
    assert "cell [2] was re-run and prints" in report.table()
    s.ns["out"].close()
    # Allowing the effect at planning time re-runs it (and the file is written again).
    plan2 = plan_replay(history, set(snap.names), ["gen", "g2"], allow="all")
    ns2, report2 = restore(snap, history, plan2.to_json())
    assert log.read_text() == "once" and {r["name"] for r in report2.recomputed} == {"gen", "g2"}
    assert "out" not in ns2  # not a target: the replay's own file object is not kept


def test_a_variable_needing_an_unavailable_input_stays_skipped_with_the_reason():
    s = Session()
    s.ns["outside"] = [1, 2, 3]  # there before recording began, never saved
    s.run("gen_a = (v for v in outside)")
    s.run("base = [4, 5]\ngen_b = (v for v in base)")
    s.run("base = [6]")  # the checkpoint holds only this later value of `base`
    s.run("gen_c = (v for v in range(3))\nboom = 1 / 0", expect_ok=False)
    s.run("# elastic-lite: no-replay\ngen_d = (v for v in range(4))")
    s.run("gen_e = (v for v in range(5))")
    hist = s.history()
    plan = plan_replay(hist, {"base"}, ["gen_a", "gen_b", "gen_c", "gen_d", "gen_e"],
                       exclude=[6])
    sk = plan.skipped
    assert '"outside", which no recorded cell created and the checkpoint does not hold' in sk["gen_a"]
    assert "gen_b" not in sk and plan.targets["gen_b"]["counts"] == [2]  # base's old value too
    assert "raised an error when it ran (ZeroDivisionError" in sk["gen_c"]
    assert "marked not to be replayed" in sk["gen_d"]
    assert "excluded from replay" in sk["gen_e"]
    # A value from before the recorded history that was later overwritten cannot be had.
    s2 = Session()
    s2.ns["cfg"] = {"n": 1}
    s2.run("it = (k for k in cfg)")
    s2.run("cfg = {'m': 2}")
    plan2 = plan_replay(s2.history(), {"cfg"}, ["it"])
    assert '"cfg" as it was before the recorded history began' in plan2.skipped["it"]
    assert "no recorded cell created it" in plan_replay(s2.history(), set(), ["nope"]).skipped["nope"]


def test_restored_variables_the_plan_did_not_ask_for_are_not_overwritten():
    s = Session()
    s.run("data = [1, 2, 3]\ncounter = 0")
    s.run("it = (v for v in data)\ncounter = counter + 1\ntemp = 'scratch'\ndata = data + [4]")
    s.run("del temp")
    snap, history, plan = checkpoint(s)
    assert plan["targets"]["it"]["counts"] == [1, 2]
    ns = restored(snap)
    originals = {n: ns[n] for n in ("data", "counter")}
    report = asyncio.run(replay(plan, history, ns))
    assert report.ok
    assert all(ns[n] is v for n, v in originals.items())  # the very restored objects
    assert ns["data"] == [1, 2, 3, 4] and ns["counter"] == 1
    assert "temp" not in ns  # a temporary of the replayed cells does not stay
    assert list(ns["it"]) == [1, 2, 3]


def test_replay_does_not_change_restored_objects_in_place():
    s = Session()
    s.run("acc = []")
    s.run("acc.append(1)\nit = (v for v in acc)")
    s.run("acc.append(2)")
    snap, history, plan = checkpoint(s)
    ns = restored(snap)
    acc = ns["acc"]
    asyncio.run(replay(plan, history, ns))
    # Cell 2 mutates acc: replaying it recreates acc's earlier version (cell 1) first, so the
    # restored list is untouched.
    assert ns["acc"] is acc and acc == [1, 2]
    assert plan["targets"]["it"]["counts"] == [1, 2]


def test_a_reader_of_a_restored_value_gets_it_back_after_an_older_version_was_replayed():
    s = Session()
    s.run("n = 1\nsrc = iter(range(100))")
    s.run("n = 5")
    s.run("window = [next(src) for _ in range(n)]\npos = iter(window)")
    s.run("taken = next(pos)")
    # pos needs window (not saved: only what we say), window needs n@2 (restored) and src,
    # src needs cell 1, which binds n = 1: before cell 3, n must be the restored 5 again.
    hist = s.history()
    plan = plan_replay(hist, {"n", "taken"}, ["pos", "src", "window"])
    assert plan.targets["pos"]["counts"] == [1, 3, 4]
    assert next(st for st in plan.steps if st["count"] == 3)["rebind"] == ["n"]
    ns = {"__name__": "__main__", "n": 5, "taken": 0}
    report = replay_sync(plan, hist, ns)
    assert report.ok and ns["window"] == [0, 1, 2, 3, 4] and next(ns["pos"]) == 1
    assert ns["n"] == 5 and next(ns["src"]) == 5


def test_functions_defined_by_replayed_cells_use_the_real_namespace():
    s = Session()
    s.run("step = 2\ndef counter():\n    i = 0\n    while True:\n        yield i\n"
          "        i += step\nc = counter()")
    s.run("next(c)\nnext(c)")
    snap, history, plan = checkpoint(s)
    ns, report = restore(snap, history, plan)
    assert report.ok and next(ns["c"]) == next(s.ns["c"]) == 4
    ns["step"] = 100  # as in the original session, the generator reads the live global
    s.ns["step"] = 100
    assert next(ns["c"]) == next(s.ns["c"]) == 104
    assert ns["c"].gi_frame.f_globals is ns


def test_replay_can_be_turned_off_per_checkpoint_and_per_restore():
    s = Session()
    s.run("g = (v for v in range(3))\nnext(g)")
    snap, history, _ = checkpoint(s)
    off = plan_replay(history, set(snap.names), ["g"], enabled=False)
    assert not off.targets and "turned off for this checkpoint" in off.skipped["g"]
    ns, report = restore(snap, history, off.to_json())
    assert "g" not in ns and "turned off for this checkpoint" in report.skipped[0]["reason"]
    on = plan_replay(history, set(snap.names), ["g"]).to_json()
    ns, report = restore(snap, history, on, enabled=False)
    assert "g" not in ns and "turned off for this restore" in report.skipped[0]["reason"]
    ns, report = restore(snap, history, on, exclude=[1])
    assert "g" not in ns and "excluded from replay" in report.failed[0]["reason"]


def test_a_failing_replay_is_reported_and_never_aborts():
    s = Session()
    s.run("import os\nsrc = os.environ.get('EL_REPLAY_TEST', 'x')\ngood = (v for v in range(3))")
    s.run("bad = (v for v in src.split(','))")
    s.run("quitter = (v for v in range(2))\nif src == 'never':\n    raise SystemExit(3)")
    snap, history, plan = checkpoint(s)
    ns = restored(snap)
    # The world changed since the checkpoint: cell 1 now raises, cell 3 calls exit().
    history2 = json.loads(json.dumps(history))
    for c in history2["cells"]:
        if c["count"] == 1:
            c["code"] = ("import os\nsrc = os.environ['EL_REPLAY_TEST_NO_SUCH_VARIABLE']\n"
                         "good = (v for v in range(3))")
        if c["count"] == 3:
            c["code"] = "quitter = (v for v in range(2))\nraise SystemExit(3)"
    report = replay_sync(plan, history2, ns)
    assert not report.ok
    failed = {f["name"]: f["reason"] for f in report.failed}
    assert set(failed) == {"good", "quitter"}
    assert "cell [1] raised KeyError" in failed["good"] and "(line 2)" in failed["good"]
    assert "SystemExit: 3" in failed["quitter"]
    assert [r["name"] for r in report.recomputed] == ["bad"]  # it needs only the restored src
    assert "good" not in ns and "quitter" not in ns and ns["src"] == "x"  # rolled back
    assert list(ns["bad"]) == ["x"]


def test_top_level_await_in_a_replayed_cell():
    s = Session()
    s.run("class Later:\n    def __await__(self):\n        yield\n\n"
          "async def make():\n    return (v for v in range(5))")
    s.run("it = await make()\nnext(it)")
    snap, history, plan = checkpoint(s)
    ns, report = restore(snap, history, plan)
    assert report.ok and next(ns["it"]) == 1
    # Without an event loop, a cell whose await really suspends cannot run.
    history2 = json.loads(json.dumps(history))
    history2["cells"][-1]["code"] = "await Later()\nit = (v for v in range(5))\nnext(it)"
    ns2 = restored(snap)
    report2 = replay_sync(plan, history2, ns2)
    assert "awaits something that does not finish at once" in report2.failed[0]["reason"]
    assert "await replay(...)" in report2.failed[0]["reason"]


def test_cost_model_chooses_large_groups_that_are_cheap_to_recompute():
    s = Session()
    s.run("import random")
    s.run("table = [i * i for i in range(200000)]")  # large, deterministic, fast enough
    s.run("noise = [random.random() for _ in range(100000)]")  # large, not deterministic
    s.run("small = list(range(10))")
    snap = el.snapshot(s.ns)
    groups = [{"names": g.names, "bytes": g.bytes} for g in snap.groups]
    saved = set(snap.names) | {m["name"] for m in snap.modules}
    history = s.history()
    plan, choices = choose_recompute(history, groups, saved, bytes_per_ms=1000, factor=1.0,
                                     min_bytes=100_000)
    by_name = {c["names"][0]: c for c in choices}
    assert set(by_name) == {"table", "noise"}  # `small` is under min_bytes: not a candidate
    assert by_name["table"]["chosen"] and "not stored: recomputed by re-running cell [2]" in \
        by_name["table"]["reason"]
    assert not by_name["noise"]["chosen"] and "randomness" in by_name["noise"]["reason"]
    assert plan.targets["table"]["why"] == "cost" and plan.choices == choices
    # If storing is fast, recomputing is not worth it.
    _, fast = choose_recompute(history, groups, saved, bytes_per_ms=1e12, min_bytes=100_000)
    assert not any(c["chosen"] for c in fast) and "costs more than storing" in fast[0]["reason"]
    # The chosen group comes back by replay when the checkpoint leaves it out.
    snap2 = el.snapshot(s.ns, names=[n for n in snap.names if n != "table"])
    ns = restored(snap2)
    report = asyncio.run(replay(plan.to_json(), history, ns))
    assert report.ok and ns["table"] == s.ns["table"]


def test_a_damaged_plan_is_refused_clearly():
    with pytest.raises(PlanError, match="not a replay plan"):
        Plan.from_json({"version": 9})
    with pytest.raises(PlanError, match="malformed"):
        Plan.from_json({"version": 1, "steps": [{"cell": "x"}]})
    with pytest.raises(PlanError, match="malformed"):
        Plan.from_json({"version": 1, "allow": ["deletes-the-disk"]})
    with pytest.raises(ValueError, match="unknown side-effect kind"):
        plan_replay({"format": "elastic-lite-history", "version": 1, "next_id": 1,
                     "versions": {}, "cells": []}, set(), [], allow=["nope"])


def test_restore_and_replay_in_a_fresh_python_process(scratch):
    """Nothing of the recording process is needed: bytes, history and plan suffice."""
    s = Session()
    s.run("import itertools\ndef numbers(start):\n    n = start\n    while True:\n"
          "        yield n\n        n += 1\ngen = numbers(100)")
    s.run("a = next(gen)\nb = next(gen)")
    s.run("pairs = (p for p in itertools.combinations('abcd', 2))\nnext(pairs)")
    snap, history, plan = checkpoint(s)
    (scratch / "ck.bin").write_bytes(snap.data)
    (scratch / "history.json").write_text(json.dumps(history))
    (scratch / "plan.json").write_text(json.dumps(plan))
    script = textwrap.dedent(f"""
        import asyncio, json, sys
        sys.path.insert(0, {os.path.join(ROOT, 'py')!r})
        import elastic_lite as el
        from elastic_lite.replay.engine import replay
        d = {str(scratch)!r}
        ns = {{"__name__": "__main__"}}
        el.load_snapshot(open(d + "/ck.bin", "rb").read(), ns, trust=True)  # their own file
        rep = asyncio.run(replay(json.load(open(d + "/plan.json")),
                                 json.load(open(d + "/history.json")), ns))
        print(json.dumps([rep.ok, [r["message"] for r in rep.recomputed],
                          next(ns["gen"]), next(ns["pairs"])]))
    """)
    env = dict(os.environ)
    env.setdefault("ELASTIC_LITE_NATIVE_LIB", os.path.join(ROOT, "build", "native",
                                                           "libelastic_lite.so"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    ok, messages, nxt, pair = json.loads(out.stdout.strip().splitlines()[-1])
    assert ok and nxt == 102 and pair == ["a", "c"]
    assert sorted(messages) == ["recomputed by re-running cell [3]",
                                "recomputed by re-running cells [1], [2]"]
