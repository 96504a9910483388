"""%load_ext elastic_lite in a real IPython shell: %checkpoint, %checkpoints, %restore."""

import asyncio

import pytest

# IPython is in .venv as a dependency of the pinned jupyterlab (scripts/setup.sh).
from IPython.core.interactiveshell import InteractiveShell

import elastic_lite as el


@pytest.fixture
def shell():
    el.set_store(el.MemoryStore())
    sh = InteractiveShell.instance()
    sh.run_cell("%load_ext elastic_lite", store_history=False)
    yield sh
    sh.reset()
    el.set_store(None)
    el.set_notebook(None)


def run(sh, code, capsys):
    res = sh.run_cell(code, store_history=True)
    res.raise_error()
    return capsys.readouterr().out


def test_checkpoint_list_restore(shell, capsys):
    run(shell, "import threading\nscale = 3\ndef f(x):\n    return x * scale\n"
               "data = {'k': [1, 2]}\nalias = data['k']\ng = (i for i in [])\n"
               "lk = {'lock': threading.Lock()}", capsys)
    out = run(shell, "%checkpoint first", capsys)
    assert 'checkpoint "first" saved' in out
    assert "variable" in out and "serializer" in out and "size" in out and "time" in out
    assert "lk" in out and "dill" in out
    # %load_ext started the session recorder: the generator is left out of the pickled state
    # and planned for replay instead of being skipped.
    assert "skipped:" not in out
    assert "replay on restore:\n  g: will be recomputed by re-running cell [" in out
    # IPython's own names (In, Out, _i1, get_ipython...) are not user state.
    assert " In " not in out and "get_ipython" not in out and "_i1" not in out

    out = run(shell, "%checkpoints", capsys)
    assert "first" in out and "variables" in out

    shell.reset()
    assert "scale" not in shell.user_ns
    out = run(shell, "%restore first", capsys)
    assert "restored" in out and "NOT restored" not in out
    assert "recomputed by replay:\n  g: recomputed by re-running cell [" in out
    run(shell, "assert data['k'] is alias\nscale = 10\nassert f(2) == 20\n"
               "assert lk['lock'].acquire()\nassert list(g) == []", capsys)


def test_restore_without_name_takes_newest_and_errors_are_clear(shell, capsys):
    assert run(shell, "%restore", capsys) == \
        "elastic_lite: there is no checkpoint to restore yet; take one first\n"
    run(shell, "a = 1", capsys)
    run(shell, "%checkpoint one", capsys)
    run(shell, "a = 2", capsys)
    run(shell, "%checkpoint two", capsys)
    run(shell, "a = 3", capsys)
    run(shell, "%restore", capsys)
    assert shell.user_ns["a"] == 2
    # a failing magic prints one plain line: no traceback through ipython/magics.py
    out = run(shell, "%restore no_such_name", capsys)
    assert out == 'elastic_lite: no checkpoint named "no_such_name"\n'
    long = "x" * 201
    out = run(shell, f"%checkpoint {long}", capsys)
    assert out.startswith(f'elastic_lite: invalid checkpoint name "{long}"') and out.count("\n") == 1


def _notebooks(store):
    """{checkpoint name: meta.notebook} of every entry in the in-memory store."""
    return {e["name"]: e["meta"]["notebook"] for e in asyncio.run(store.list())}


def test_magics_default_to_the_notebook_set(shell, capsys):
    store = asyncio.run(el.get_store())
    run(shell, "a = 'other'", capsys)
    run(shell, "%checkpoint unattached", capsys)
    el.set_notebook("other.ipynb")
    run(shell, "%checkpoint theirs", capsys)

    assert el.set_notebook("work/analysis.ipynb") == "work/analysis.ipynb"
    assert el.get_notebook() == "work/analysis.ipynb"
    run(shell, "a = 1", capsys)
    run(shell, "%checkpoint mine", capsys)
    assert _notebooks(store) == {"unattached": None, "theirs": "other.ipynb",
                                 "mine": "work/analysis.ipynb"}

    out = run(shell, "%checkpoints", capsys)
    assert "checkpoints of work/analysis.ipynb" in out and "mine" in out
    assert "theirs" not in out and "unattached" not in out

    # a bare %restore takes this notebook's newest, not the store's newest
    el.set_notebook("other.ipynb")
    run(shell, "a = 2", capsys)
    run(shell, "%checkpoint theirs-newer", capsys)
    el.set_notebook("work/analysis.ipynb")
    run(shell, "a = 3", capsys)
    out = run(shell, "%restore", capsys)
    assert '"mine"' in out and shell.user_ns["a"] == 1
    # by name, any checkpoint still restores
    run(shell, "%restore theirs-newer", capsys)
    assert shell.user_ns["a"] == 2

    el.set_notebook("empty.ipynb")
    assert "no checkpoints of empty.ipynb yet" in run(shell, "%checkpoints", capsys)
    assert "no checkpoint of empty.ipynb to restore" in run(shell, "%restore", capsys)


def test_magics_show_the_notebook_label_not_its_id(shell, capsys):
    """JupyterLite ties checkpoints to the notebook's id (it survives renames) and passes its
    path as the label: %checkpoints and %restore name the path a person knows, never the id."""
    store = asyncio.run(el.get_store())
    el.set_notebook("4f1c-id", label="work/analysis.ipynb")
    assert el.get_notebook() == "4f1c-id"
    out = run(shell, "%restore", capsys)
    assert "of work/analysis.ipynb" in out and "4f1c-id" not in out
    assert "no checkpoints of work/analysis.ipynb yet" in run(shell, "%checkpoints", capsys)
    run(shell, "a = 1", capsys)
    run(shell, "%checkpoint mine", capsys)
    assert _notebooks(store)["mine"] == "4f1c-id"  # the key stays the id
    out = run(shell, "%checkpoints", capsys)
    assert "checkpoints of work/analysis.ipynb:" in out and "4f1c-id" not in out
    el.set_notebook("other.ipynb")  # without a label: the path is the label
    assert "no checkpoints of other.ipynb yet" in run(shell, "%checkpoints", capsys)


def test_checkpoint_uses_the_notebook_set_unless_given(shell):
    store = asyncio.run(el.get_store())
    ns = {"x": 1}
    el.set_notebook("nb.ipynb")
    asyncio.run(el.checkpoint("default", namespace=ns))
    asyncio.run(el.checkpoint("explicit", namespace=ns, notebook="elsewhere.ipynb"))
    el.set_notebook(None)
    asyncio.run(el.checkpoint("none-set", namespace=ns))
    assert _notebooks(store) == {"default": "nb.ipynb", "explicit": "elsewhere.ipynb",
                                 "none-set": None}
    assert [e["name"] for e in asyncio.run(el.list_checkpoints("nb.ipynb")).checkpoints] == ["default"]
    with pytest.raises(TypeError, match="notebook path"):
        el.set_notebook(42)
