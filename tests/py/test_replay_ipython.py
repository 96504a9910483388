"""The recorder on a real IPython shell (pre_run_cell/post_run_cell events): execution counts,
magics, failed and silent cells; then a checkpoint of that shell restored by replay."""

import asyncio
import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

import elastic_lite as el
from elastic_lite._replay import plan_replay, replay
from elastic_lite._session import Recorder


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.reset()
    rec = Recorder(audit=True).attach(sh)  # also the run-time side effects
    yield sh, rec
    rec.detach()
    sh.reset()


def run(sh, code, **kw):
    return sh.run_cell(code, store_history=True, **kw)


def test_cells_are_recorded_with_ipython_execution_counts(shell, capsys):
    sh, rec = shell
    run(sh, "x = 1")
    run(sh, "%time y = x + 1")
    run(sh, "!true")
    assert not run(sh, "z = y / 0").success
    run(sh, "hidden = 1", silent=True)  # e.g. the JupyterLite extension's own snippets
    cells = rec.cells
    assert [c.count for c in cells] == [sh.execution_count - 4 + i for i in range(4)]
    t = cells[1]
    assert t.raw == "%time y = x + 1" and "run_line_magic" in t.code
    assert t.reads == {"x": cells[0].id} and t.writes == ["y"] and not t.effects
    assert {(k, s) for k, _, s in cells[2].effects} >= {("runs-command", "code"),
                                                         ("runs-command", "run")}
    assert not cells[3].ok and cells[3].error.startswith("ZeroDivisionError")
    assert "hidden" not in rec.versions and len(cells) == 4
    # IPython's own names are not variables of the session.
    assert not any(n in rec.versions for n in ("_", "_i1", "In", "Out", "_exit_code", "open"))
    capsys.readouterr()


def test_a_checkpoint_of_an_ipython_session_comes_back_by_replay(shell, capsys):
    sh, rec = shell
    run(sh, "def squares():\n    n = 0\n    while True:\n        yield n * n\n        n += 1")
    run(sh, "sq = squares()")
    run(sh, "[next(sq) for _ in range(3)]")
    run(sh, "%matplotlib --list")  # a harmless magic: not in the plan, not needed
    run(sh, "label = 'after'")
    snap = el.snapshot(sh.user_ns)
    history = json.loads(json.dumps(rec.to_json()))
    plan = plan_replay(history, set(snap.names), [s["name"] for s in snap.skipped])
    assert list(plan.targets) == ["sq"] and not plan.skipped
    first = sh.execution_count - 5
    assert plan.targets["sq"]["counts"] == [first + 1, first + 2]
    ns = {"__name__": "__main__"}
    el.load_snapshot(snap.data, ns)
    report = asyncio.run(replay(plan.to_json(), history, ns))
    assert report.recomputed[0]["message"] == \
        f"recomputed by re-running cells [{first + 1}], [{first + 2}]"
    assert next(ns["sq"]) == 9 and ns["label"] == "after"
    capsys.readouterr()


def test_detach_stops_recording(shell):
    sh, rec = shell
    run(sh, "a = 1")
    rec.detach()
    run(sh, "b = 2")
    assert [c.code.strip() for c in rec.cells] == ["a = 1"]
