"""IPython magics: %checkpoint [name], %restore [name | @N] [--trust], %checkpoints,
%autocheckpoint [on|off].

Imported only by `%load_ext elastic_lite` (IPython is not part of plain Pyodide). Each magic
calls one operation of `elastic_lite.host` and prints its report; a failure is one plain line
("elastic_lite: no checkpoint named 'x'"), never a traceback through this file.
The magics work on the notebook given to `elastic_lite.set_notebook()` (the JupyterLite
extension sets it when the kernel starts): %checkpoint ties its checkpoint to it, and
%checkpoints and a bare %restore see only its checkpoints. Without one, all checkpoints.

A magic is a plain function, but the host API is async (the store is). It is driven by the
first means that works here:
- a store whose coroutines never suspend (the in-memory one): driven to completion at once;
- in Pyodide with JSPI (`pyodide.ffi.can_run_sync()`), `run_sync` blocks on the JS promise;
- with no running event loop (plain IPython), `asyncio.run`;
- otherwise (a kernel with a running loop and no JSPI) it runs as a task and its report
  prints when it finishes; `await elastic_lite.checkpoint(...)` in a cell avoids that.
"""

import asyncio
import datetime

from .. import host
from ..session.kernel import SESSION, _of
from .._report import _table, checkpoint_text, foreign_text, human_size, restore_text, shown_text
from ..session.storage_status import lost_text, restore_warnings, storage_line
from ..store.stores import MemoryStore
from .._words import quoted


def _drive(coro):
    """Run a coroutine to its end if it never really suspends; returns (done, value)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return True, stop.value
    coro.close()
    return False, None


def _run(make_coro, show):
    """show(report) of the coroutine made by `make_coro()`, by the first means that works."""
    resolved, store = _drive(SESSION.get_store())
    if resolved and (isinstance(store, MemoryStore) or getattr(store, "never_suspends", False)):
        done, report = _drive(make_coro())
        if done:
            return show(report)
    try:
        from pyodide.ffi import can_run_sync, run_sync
        if can_run_sync():
            return show(run_sync(make_coro()))
    except ImportError:
        pass
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return show(asyncio.run(make_coro()))

    async def background():
        show(await make_coro())
    print("elastic_lite: the store call runs in the background; its result prints when done "
          "(use `await elastic_lite.checkpoint()` / `restore()` in a cell to wait for it)")
    return asyncio.ensure_future(background())


def _failed(report):
    """The one line a failed operation prints; True when there was one."""
    if report["ok"] or report["op"] == "restore" and report["restored"]:
        return False
    print("elastic_lite: " + "; ".join(shown_text(p["message"]) for p in report["problems"]))
    return True


def _parse(line):
    """`[name] [--trust]` -> (name or None, trust)."""
    words = line.split()
    trust = "--trust" in words
    name = " ".join(w for w in words if w != "--trust").strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    return name or None, trust


def _point(name):
    """`@7` -> 7 (a point of the history: the checkpoint taken after cell In [7]), else None."""
    if name and name.startswith("@") and name[1:].isdigit():
        return int(name[1:])
    return None


def checkpoint_magic(shell, line):
    name, _ = _parse(line)

    def show(report):
        if not _failed(report):
            print(f"checkpoint {quoted(report['name'])} saved")
            print(checkpoint_text(report))

    return _run(lambda: host.checkpoint(name, namespace=shell.user_ns), show)


def restore_magic(shell, line):
    name, trust = _parse(line)
    at = _point(name)
    if at is not None:
        name = None
    notebook = SESSION.notebook if name is None else None

    def show(report):
        if not _failed(report):
            print(f"checkpoint {quoted(report['name'])}: " + restore_text(report))
        elif any(p.get("code") == "foreign" for p in report["problems"]):
            print(foreign_text(report.get("trust")))  # what the person looks at before --trust

    return _run(lambda: host.restore(name, namespace=shell.user_ns, trust=trust,
                                     notebook=notebook, at=at), show)


def checkpoints_magic(shell, line):
    notebook = SESSION.notebook

    def show(report):
        if _failed(report):
            return
        entries = report["checkpoints"]
        of = _of(notebook)
        if not entries:
            print(f"no checkpoints{of} yet (take one with %checkpoint [name])")
            _storage(report)
            return
        if any(e["label"] for e in entries):
            print("(%restore @N restores the state after cell [N]; %restore NAME any checkpoint)")
        if notebook is not None:
            print(f"checkpoints{of}:")
        rows = []
        for e in entries:
            m = e.get("meta") or {}
            when = m.get("createdMs")
            when = datetime.datetime.fromtimestamp(when / 1000).strftime("%Y-%m-%d %H:%M:%S") \
                if when else "?"
            rows.append([e["name"] + (" (lost)" if e.get("lost") else ""), when, e["label"],
                         human_size(m.get("size") or 0), str(m.get("variables", "?")),
                         str(len(m.get("skipped") or []))])
        print(_table(["name", "created", "after cell", "size", "variables", "skipped"], rows))
        _storage(report)
        # never one of this kernel's own automatic points (after a restart: the lost state)
        print(f"a bare %restore brings back {quoted(report['restore_choice'])}")

    return _run(lambda: host.list(notebook, namespace=shell.user_ns), show)


def _storage(report):
    """%checkpoints' last lines: the checkpoints whose data the browser removed, and how the
    browser keeps the store (persistent, used, left), when the store is the browser's."""
    for line in restore_warnings(report["checkpoints"]):  # saved too large to restore here
        print(line)
    lost = [e for e in report["checkpoints"] if e.get("lost")]
    for e in lost:
        print(f"{shown_text(e['name'])}: {lost_text(e['lost'])}")
    if lost:  # a folder's records deleted by hand or a tool, or the browser's storage evicted
        keep = "keep the store's folder whole" if all(e["lost"].get("store") == "folder" for e in lost) \
            else "keep copies outside the browser with Export or a folder store"
        print("delete them with `await elastic_lite.delete_checkpoint(NAME)` (or Delete in the "
              f"checkpoints panel); {keep}")
    line = storage_line(report.get("storage"))
    if line:
        print(line)


def autocheckpoint_magic(shell, line):
    """`%autocheckpoint [on|off]`: this kernel's automatic checkpoint after each cell."""
    word = line.strip().lower()
    if word in ("on", "off"):
        SESSION.auto = word == "on"
    elif word:
        print("elastic_lite: %autocheckpoint takes on or off (nothing: show the setting)")
        return
    print("automatic checkpoints after each cell: " + ("on" if SESSION.auto else "off")
          + " (in this kernel; the JupyterLite extension's setting turns them off everywhere)")


def register(shell):
    shell.register_magic_function(lambda line: checkpoint_magic(shell, line),
                                  "line", "checkpoint")
    shell.register_magic_function(lambda line: restore_magic(shell, line), "line", "restore")
    shell.register_magic_function(lambda line: checkpoints_magic(shell, line),
                                  "line", "checkpoints")
    shell.register_magic_function(lambda line: autocheckpoint_magic(shell, line),
                                  "line", "autocheckpoint")
