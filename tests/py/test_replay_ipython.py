"""The recorder on a real IPython shell (pre_run_cell/post_run_cell events): execution counts,
magics, failed and silent cells; then a checkpoint of that shell restored by replay."""

import asyncio
import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

import elastic_lite as el
from elastic_lite.replay.engine import plan_replay, replay
from elastic_lite.replay.recorder import Recorder


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


def test_cells_run_by_run_cell_async_as_jupyterlite_kernel_does(shell, capsys):
    """JupyterLite's kernel awaits `shell.run_cell_async` itself for cells that await:
    IPython then sends pre_run_cell but never post_run_cell. The next cell (or a checkpoint)
    closes such a cell with the shell's last result: its count, ok or failed."""
    sh, rec = shell

    async def lite(code):  # what pyodide_kernel's run() does for an awaiting cell
        return await sh.run_cell_async(code, store_history=True,
                                       transformed_cell=sh.transform_cell(code))

    asyncio.run(lite("import asyncio\nawait asyncio.sleep(0)\ngen = (n for n in range(5))"))
    asyncio.run(lite("await asyncio.sleep(0)\nfirst = next(gen)"))
    asyncio.run(lite("await asyncio.sleep(0)\n1 / 0"))
    run(sh, "second = next(gen)")  # a plain cell: both events
    cells = rec.cells
    assert [c.count for c in cells] == [sh.execution_count - 4 + i for i in range(4)]
    assert [c.ok for c in cells] == [True, True, False, True]
    assert cells[2].error.startswith("ZeroDivisionError")
    assert rec.versions["gen"] == cells[3].id and cells[3].reads["gen"] == cells[1].id
    # A checkpoint after an unsignalled awaiting cell sees it as ended, not running.
    asyncio.run(lite("await asyncio.sleep(0)\nthird = next(gen)"))
    data = rec.checkpoint_json()
    assert data["versions"]["gen"] == data["cells"][-1]["id"] and data["cells"][-1]["ok"]
    assert rec._pending is None
    capsys.readouterr()


def test_hidden_requests_counted_by_the_shell_are_not_cells(shell, capsys):
    """JupyterLite's kernel runs the extension's snippets (sent silent, without history) with
    store_history=True: the shell counts them, the notebook's prompts do not. The request
    (the kernel's parent message) says so; such a run is not a cell of the notebook and the
    counts recorded are the prompts' numbers. The real kernel: tests/browser/jupyterlite-replay."""
    sh, rec = shell

    class Kernel:  # what pyodide_kernel keeps: the current request, as a dict
        parent = {"content": {"silent": False, "store_history": True}}

        def get_parent(self):
            return self.parent

    sh.kernel = Kernel()
    try:
        start = sh.execution_count
        run(sh, "a = 1")
        Kernel.parent = {"content": {"silent": True, "store_history": False}}
        run(sh, "_snippet = 1\ndel _snippet")  # e.g. elastic_lite.set_notebook(...)
        run(sh, "_snippet = 2\ndel _snippet")
        Kernel.parent = {"content": {"silent": False, "store_history": True}}
        run(sh, "b = a + 1")
        assert [c.count for c in rec.cells] == [start, start + 1]  # as the prompts show them
        assert sh.execution_count == start + 4  # the shell counted all four
    finally:
        del sh.kernel
    capsys.readouterr()
