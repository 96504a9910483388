"""Elastic Lite in a desktop Jupyter kernel (host CPython, ipykernel): where checkpoints go and
the automatic point after each cell.

`%load_ext elastic_lite` in a CPython kernel (a shell with a `.kernel`: ipykernel) calls
`attach(shell)`:
- the notebook: the kernel's notebook path as Jupyter Server gives it ($JPY_SESSION_NAME), so
  checkpoints are that notebook's (meta.notebook) and a bare %restore picks among them;
- the store, unless one was set: a DirectoryStore (the Node CLI's layout) at
  $ELASTIC_LITE_STORE, else `.elastic-lite/` beside the notebook when the kernel knows it,
  else the per-user data folder ($XDG_DATA_HOME/elastic-lite, ~/.local/share/elastic-lite).
  So a checkpoint outlives the kernel: after a restart, %restore brings the last state back;
- an automatic point after each successful cell (`%autocheckpoint off` stops it), only what
  changed written, with the store's retention: the folder's own (retention.json, e.g. the
  CLI's `retention`), else HISTORY, the JupyterLite extension's default history settings.
Any IPython shell gets `%elastic_lite store [PATH]` (show or set the store). In Pyodide the
default store stays IndexedDB (store.stores.default_store); nothing here runs there.
"""

import asyncio
import os
import threading
import time

from ..store.directory import DirectoryStore
from ..session.kernel import SESSION
from .magics import _drive
from ..store.stores import StoreError

STORE_ENV = "ELASTIC_LITE_STORE"
FOLDER = ".elastic-lite"
# The history a desktop kernel keeps when its folder says nothing else: the newest 30 points,
# one per hour for the last 24 hours, at most 1 GiB (the JupyterLite extension's defaults;
# checkpoints a person took by name are never removed by it).
HISTORY = {"keepLast": 30, "keepHourly": 24, "maxBytes": 1 << 30}
_OWN_MAGICS = ("%checkpoint", "%restore", "%checkpoints", "%autocheckpoint", "%elastic_lite",
               "%load_ext elastic_lite", "%reload_ext elastic_lite")


def kernel_notebook():
    """The notebook of this kernel as Jupyter Server names it ($JPY_SESSION_NAME), or None."""
    name = os.environ.get("JPY_SESSION_NAME") or ""
    return name if name.endswith(".ipynb") else None


def default_store_path(notebook=None):
    """Where a CPython kernel keeps its checkpoints (see the module docstring)."""
    given = os.environ.get(STORE_ENV)
    if given:
        return os.path.abspath(os.path.expanduser(given))
    if notebook:
        # Jupyter Server starts a kernel in its notebook's folder; the name may be relative
        # to the server's root rather than to that folder.
        folder = os.path.dirname(notebook) if os.path.isabs(notebook) else os.getcwd()
        return os.path.join(folder, FOLDER)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "elastic-lite")


def _run(make_coro):
    """Runs a coroutine of the package to its end: at once when it never suspends (the
    directory and memory stores), else with its own event loop in a helper thread (the kernel's
    loop is running this very cell)."""
    done, value = _drive(make_coro())
    if done:
        return value
    out = {}

    def worker():
        try:
            out["value"] = asyncio.run(make_coro())
        except BaseException as err:  # handed to the caller
            out["error"] = err
    t = threading.Thread(target=worker, name="elastic-lite")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


class _AutoPoint:
    """post_run_cell: one automatic checkpoint after each successful code cell."""

    def __init__(self, shell):
        self.shell = shell
        self.last_problem = None

    def __call__(self, result):
        if not SESSION.auto or result is None or not result.success:
            return
        source = getattr(result.info, "raw_cell", None) or ""
        if not source.strip() or source.lstrip().startswith(_OWN_MAGICS):
            return
        from .. import host
        cell = {"executionCount": result.execution_count, "firstLine": source,
                "timeMs": int(time.time() * 1000)}
        try:
            report = _run(lambda: host.checkpoint(namespace=self.shell.user_ns, notebook=SESSION.notebook,
                                                  cell=cell, auto=True))
        except Exception as exc:  # never breaks the person's cell
            report = {"ok": False, "problems": [{"message": str(exc)}]}
        if not report.get("ok") and not report.get("off"):
            why = "; ".join(p.get("message", "") for p in report.get("problems") or []) or "unknown"
            if why != self.last_problem:  # said once, not after every cell
                print(f"elastic_lite: the automatic checkpoint after this cell failed: {why}")
            self.last_problem = why
        else:
            self.last_problem = None


def store_magic(line):
    """`%elastic_lite store [PATH]`: show this kernel's checkpoint store, or use the folder PATH."""
    words = line.split(None, 1)
    if not words or words[0] != "store":
        print("elastic_lite: usage: %elastic_lite store [PATH]  (show the checkpoint store, or "
              "keep checkpoints in the folder PATH)")
        return
    if len(words) == 2:
        path = words[1].strip().strip("'\"")
        try:
            SESSION.set_store(DirectoryStore(path, retention=HISTORY))
        except (StoreError, OSError) as exc:
            print(f"elastic_lite: cannot use {path} as the checkpoint store: {exc}")
            return
    store = _run(SESSION.get_store)
    where = getattr(store, "dir", None)
    print(f"checkpoints are kept in {where}" if where else
          f"checkpoints are kept in {type(store).__name__} (lost with this kernel)")


def attach(shell):
    """What `%load_ext elastic_lite` adds on host CPython (see the module docstring)."""
    shell.register_magic_function(store_magic, "line", "elastic_lite")
    if getattr(shell, "kernel", None) is None:
        return  # a plain IPython shell (tests, a terminal): the in-memory default stays
    if SESSION.notebook is None:
        SESSION.notebook = kernel_notebook()
    if SESSION.store is None:
        SESSION.set_store(DirectoryStore(default_store_path(SESSION.notebook), retention=HISTORY))
    for old in [cb for cb in shell.events.callbacks["post_run_cell"] if isinstance(cb, _AutoPoint)]:
        shell.events.unregister("post_run_cell", old)
    shell.events.register("post_run_cell", _AutoPoint(shell))
