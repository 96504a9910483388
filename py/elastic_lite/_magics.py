"""IPython magics: %checkpoint [name], %restore [name] [--trust], %checkpoints.

Imported only by `%load_ext elastic_lite` (IPython is not part of plain Pyodide).
The magics work on the notebook given to `elastic_lite.set_notebook()` (the JupyterLite
extension sets it when the kernel starts): %checkpoint ties its checkpoint to it, and
%checkpoints and a bare %restore see only its checkpoints. Without one, all checkpoints.
A magic is a plain function, but the store is async. The snapshot (and, for %restore, the
load) is therefore done synchronously in the magic, and only the store call is awaited:
- a store whose coroutines never suspend (the in-memory one) is driven to completion here;
- in Pyodide with JSPI (`pyodide.ffi.can_run_sync()`), `run_sync` blocks on the JS promise;
- with no running event loop (plain IPython), `asyncio.run`;
- otherwise (a kernel with a running loop and no JSPI) the store call runs as a task and its
  result prints when it finishes; `await elastic_lite.checkpoint(...)` in a cell avoids that.
"""

import asyncio

from ._report import _table, human_size
from ._restore import load_snapshot
from ._snapshot import snapshot
from ._store import DEFAULT_NAME, MemoryStore, StoreError, get_notebook, get_store


def _drive(coro):
    """Run a coroutine that does not really suspend; returns (done, value)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return True, stop.value
    coro.close()
    return False, None


def _run(make_coro, on_done):
    """Run the coroutine made by `make_coro()` by the first means that works here."""
    try:
        from pyodide.ffi import can_run_sync, run_sync
        if can_run_sync():
            return on_done(run_sync(make_coro()))
    except ImportError:
        pass
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return on_done(asyncio.run(make_coro()))

    async def background():
        try:
            on_done(await make_coro())
        except Exception as exc:
            print(f"elastic_lite: {exc}")
    print("elastic_lite: the store call runs in the background; its result prints when done "
          "(use `await elastic_lite.checkpoint()` / `restore()` in a cell to wait for it)")
    return asyncio.ensure_future(background())


def _store_now():
    done, store = _drive(get_store())
    if done:
        return store
    return None  # the default store needs a real await (IndexedDB import): resolve in _run


def _with_store(fn):
    """Call fn(store) coroutine-factory with the store, resolving it if needed."""
    store = _store_now()
    if store is not None:
        return lambda: fn(store)

    async def resolve_then():
        return await fn(await get_store())
    return resolve_then


def _parse_name(line):
    name = line.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    return name or None


def checkpoint_magic(shell, line):
    name = _parse_name(line) or DEFAULT_NAME
    snap = snapshot(namespace=shell.user_ns)
    meta = {"notebook": get_notebook(), "size": len(snap.data), "variables": len(snap.names),
            "names": snap.names,
            "skipped": [{k: s[k] for k in ("name", "type", "reason")} for s in snap.skipped]}

    def done(_):
        print(f"checkpoint {name!r} saved")
        print(snap.table())

    factory = _with_store(lambda store: store.put(name, snap.data, meta))
    store = _store_now()
    if isinstance(store, MemoryStore):
        _drive(factory())
        return done(None)
    return _run(factory, done)


def _of_notebook(notebook):
    return f" of {notebook}" if notebook is not None else ""


def _parse_trust(line):
    """`%restore [name] [--trust]` -> (rest of the line, trust)."""
    words = line.split()
    trust = "--trust" in words
    return " ".join(w for w in words if w != "--trust"), trust


def restore_magic(shell, line):
    line, trust = _parse_trust(line)
    name = _parse_name(line)
    notebook = get_notebook()

    async def fetch(store):
        chosen = name
        if chosen is None:
            entries = await store.list(notebook=notebook)
            if not entries:
                raise StoreError(f"there is no checkpoint{_of_notebook(notebook)} to restore "
                                 "yet; take one with %checkpoint [name]")
            chosen = entries[0]["name"]
        entry = await store.get(chosen)
        if entry is None:
            raise StoreError(f"no checkpoint named {chosen!r} (see %checkpoints)")
        return chosen, entry["bytes"]

    def done(result):
        chosen, data = result
        report = load_snapshot(data, namespace=shell.user_ns, trust=trust)
        print(f"checkpoint {chosen!r}: " + report.table())

    factory = _with_store(fetch)
    if isinstance(_store_now(), MemoryStore):
        ok, value = _drive(factory())
        if ok:
            return done(value)
    return _run(factory, done)


def checkpoints_magic(shell, line):
    notebook = get_notebook()

    def done(entries):
        if not entries:
            print(f"no checkpoints{_of_notebook(notebook)} yet (take one with %checkpoint [name])")
            return
        if notebook is not None:
            print(f"checkpoints of {notebook}:")
        import datetime
        rows = []
        for e in entries:
            m = e.get("meta") or {}
            when = m.get("createdMs")
            when = datetime.datetime.fromtimestamp(when / 1000).strftime("%Y-%m-%d %H:%M:%S") \
                if when else "?"
            rows.append([e["name"], when, human_size(m.get("size") or 0),
                         str(m.get("variables", "?")), str(len(m.get("skipped") or []))])
        print(_table(["name", "created", "size", "variables", "skipped"], rows))

    factory = _with_store(lambda store: store.list(notebook=notebook))
    if isinstance(_store_now(), MemoryStore):
        ok, value = _drive(factory())
        if ok:
            return done(value)
    return _run(factory, done)


def register(shell):
    shell.register_magic_function(lambda line: checkpoint_magic(shell, line),
                                  "line", "checkpoint")
    shell.register_magic_function(lambda line: restore_magic(shell, line), "line", "restore")
    shell.register_magic_function(lambda line: checkpoints_magic(shell, line),
                                  "line", "checkpoints")
