"""Checkpoints by name, over a store (docs/INTERFACES.md, "Stores").

A store has async put(name, bytes, meta) / get(name) / list({notebook}) / delete(name).
The default store is resolved once, on first use:
1. whatever `set_store()` was given (the JS glue passes its JS store; a JsProxy is wrapped
   so Python sees bytes and dicts);
2. in a browser page or worker that has `indexedDB`: the IndexedDB store, whose ES module
   ships inside this wheel (`elastic_lite/js/indexeddb.mjs`) and is imported from a Blob URL
   (it has no imports of its own, so that works);
3. else an in-memory store (host CPython, Pyodide under Node without a store).
"""

import sys
import time

from ._report import checkpoint_meta
from ._restore import load_snapshot
from ._snapshot import snapshot

DEFAULT_NAME = "checkpoint"


class StoreError(Exception):
    """A store operation failed; the message says what and what to do."""


class MemoryStore:
    """Checkpoints in a dict of this interpreter (lost with it): tests and the fallback."""

    def __init__(self):
        self._entries = {}
        self._seq = 0  # ties in createdMs (same millisecond): the later put is newer

    async def put(self, name, data, meta=None):
        _check_name(name)
        meta = dict(meta or {})
        meta["size"] = len(data)
        meta.setdefault("createdMs", int(time.time() * 1000))
        meta.setdefault("notebook", None)
        self._seq += 1
        self._entries.pop(name, None)
        self._entries[name] = (bytes(data), meta, self._seq)

    async def get(self, name):
        entry = self._entries.get(name)
        return None if entry is None else {"bytes": entry[0], "meta": dict(entry[1])}

    async def list(self, notebook=None):
        out = [(-(m.get("createdMs") or 0), -seq, {"name": n, "meta": dict(m)})
               for n, (_, m, seq) in self._entries.items()
               if notebook is None or m.get("notebook") == notebook]
        return [e for *_, e in sorted(out, key=lambda t: (t[0], t[1]))]

    async def delete(self, name):
        return self._entries.pop(name, None) is not None

    async def close(self):
        pass


def _check_name(name):
    if not isinstance(name, str) or not name or len(name) > 200 or any(
            ord(c) < 32 or ord(c) == 127 for c in name):
        raise StoreError(f"invalid checkpoint name {name!r}: use a non-empty string of at most "
                         "200 printable characters")


def _is_nullish(value):
    """JS null arrives as pyodide.ffi.jsnull (not None) in recent Pyodide."""
    if value is None:
        return True
    try:
        from pyodide.ffi import jsnull
    except ImportError:
        return False
    return value is jsnull


def _plain(value):
    """A JS value as plain Python data (null -> None), through JSON: metadata is JSON-like."""
    if _is_nullish(value):
        return None
    import json
    from js import JSON
    return json.loads(JSON.stringify(value))


class JsStore:
    """A JS store object (JsProxy) seen from Python: bytes in and out, dicts for metadata."""

    def __init__(self, proxy):
        self.proxy = proxy

    @staticmethod
    def _error(op, exc):
        msg = getattr(exc, "message", None) or str(exc)
        err = StoreError(f"the checkpoint store failed to {op}: {msg}")
        err.code = getattr(exc, "code", None) or getattr(exc, "name", None)  # hosts classify by it
        return err

    async def put(self, name, data, meta=None):
        from js import Object, Uint8Array
        from pyodide.ffi import to_js
        buf = Uint8Array.new(len(data))
        buf.assign(data)
        try:
            await self.proxy.put(name, buf, to_js(meta or {}, dict_converter=Object.fromEntries))
        except Exception as exc:
            raise self._error(f"save {name!r}", exc) from None

    async def get(self, name):
        try:
            res = await self.proxy.get(name)
        except Exception as exc:
            raise self._error(f"read {name!r}", exc) from None
        if _is_nullish(res):
            return None
        return {"bytes": res.bytes.to_bytes(), "meta": _plain(res.meta) or {}}

    async def list(self, notebook=None):
        from js import Object
        from pyodide.ffi import to_js
        opts = to_js({} if notebook is None else {"notebook": notebook},
                     dict_converter=Object.fromEntries)
        try:
            res = await self.proxy.list(opts)
        except Exception as exc:
            raise self._error("list checkpoints", exc) from None
        return _plain(res) or []

    async def delete(self, name):
        try:
            return bool(await self.proxy.delete(name))
        except Exception as exc:
            raise self._error(f"delete {name!r}", exc) from None

    async def close(self):
        close = getattr(self.proxy, "close", None)
        if close is not None:
            await close()


_store = None


def _is_jsproxy(obj):
    try:
        from pyodide.ffi import JsProxy
    except ImportError:
        return False
    return isinstance(obj, JsProxy)


def set_store(store):
    """Use `store` for checkpoint()/restore()/...: a JS store (JsProxy), a Python object with
    the same async methods, or None to go back to the default."""
    global _store
    if store is None:
        _store = None
    elif _is_jsproxy(store):
        _store = JsStore(store)
    else:
        for method in ("put", "get", "list", "delete"):
            if not callable(getattr(store, method, None)):
                raise TypeError(f"a store needs an async {method}() method; got {store!r}")
        _store = store
    return _store


async def _indexeddb_store():
    from importlib import resources
    from pyodide.code import run_js
    source = resources.files("elastic_lite").joinpath("js/indexeddb.mjs").read_text("utf-8")
    importer = run_js(
        "(src) => import(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })))")
    module = await importer(source)
    return module.IndexedDBStore.new()


def _has_indexeddb():
    if sys.platform != "emscripten":
        return False
    try:
        import js
        return getattr(js, "indexedDB", None) is not None
    except Exception:
        return False


async def get_store():
    """The store in use (resolving the default on first call)."""
    global _store
    if _store is None:
        if _has_indexeddb():
            _store = JsStore(await _indexeddb_store())
        else:
            _store = MemoryStore()
    return _store


_notebook = None


def set_notebook(path):
    """Tie later checkpoints to the notebook at `path` (None: to no notebook).

    `checkpoint()` without `notebook=` and the magics (%checkpoint, %restore, %checkpoints) use
    it; `meta.notebook` is what the JupyterLite sidebar and its restore offer select by. The
    JupyterLite extension calls it whenever a notebook's kernel starts."""
    global _notebook
    if path is not None and (not isinstance(path, str) or not path):
        raise TypeError(f"set_notebook() takes a notebook path (a non-empty str) or None; "
                        f"got {path!r}")
    _notebook = path
    return path


def get_notebook():
    """The notebook path set by set_notebook(), or None."""
    return _notebook


async def checkpoint(name=None, namespace=None, names=None, notebook=None, progress=None):
    """Snapshot the namespace and save it in the store under `name`; returns the Snapshot.
    `notebook` (default: the one given to set_notebook()) goes into the entry's metadata."""
    name = name or DEFAULT_NAME
    if notebook is None:
        notebook = _notebook
    store = await get_store()
    snap = snapshot(namespace=namespace, names=names, progress=progress)
    meta = checkpoint_meta(snap.names, snap.skipped, len(snap.data), notebook=notebook)
    await store.put(name, snap.data, meta)
    return snap


async def restore(name=None, namespace=None, trust=False):
    """Load checkpoint `name` (default: the newest) into the namespace; returns the report.

    Records that would import a deny-listed callable (os.system, eval, ...) are refused and
    reported unless `trust=True`: pass it only for a checkpoint you made yourself."""
    store = await get_store()
    if name is None:
        entries = await store.list()
        if not entries:
            raise StoreError("there is no checkpoint to restore yet; take one with "
                             "`await elastic_lite.checkpoint(name)` or %checkpoint")
        name = entries[0]["name"]
    entry = await store.get(name)
    if entry is None:
        names = [e["name"] for e in await store.list()]
        raise StoreError(f"no checkpoint named {name!r}; the store holds "
                         f"{', '.join(map(repr, names)) or 'none'}")
    report = load_snapshot(entry["bytes"], namespace=namespace, trust=trust)
    report.name = name
    return report


async def list_checkpoints(notebook=None):
    """[{"name", "meta"}], newest first."""
    store = await get_store()
    return await store.list(notebook=notebook)


async def delete_checkpoint(name):
    """True if a checkpoint of that name existed."""
    store = await get_store()
    return await store.delete(name)
