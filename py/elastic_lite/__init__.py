"""Elastic Lite: checkpoint and restore the live Python session of a Pyodide notebook.

    import elastic_lite as el
    snap = el.snapshot()                  # namespace -> container bytes (+ report table)
    rep = el.load_snapshot(snap.data)     # container bytes -> namespace (+ report)
    await el.checkpoint("before-train")   # ... through the store (IndexedDB in a browser)
    await el.restore("before-train")      # the report: rep.ok, rep.problems, print(rep)
    await el.list_checkpoints(); await el.delete_checkpoint("before-train")
    await el.inspect("before-train")      # or inspect(data=bytes): what it holds, nothing loaded
    el.set_notebook("analysis.ipynb")     # later checkpoints (and the magics) are this notebook's
    %load_ext elastic_lite                # %checkpoint [name], %restore [name], %checkpoints
    el.record_session()                   # record cells: restore recomputes what was not saved

checkpoint, restore, inspect, list_checkpoints and delete_checkpoint are those of
`elastic_lite.host` (what every host calls): the same arguments, the same report (a dict whose
fields also read as attributes), the same words. Nothing raises for a store failure or a
missing checkpoint: `ok` is false and `problems` say what went wrong and what to do.
"""

from . import host
from .session.kernel import SESSION
from ._report import GroupReport, RestoreReport, Snapshot
from .load.loader import CheckpointError, load_snapshot
from .replay.recorder import record_session, stop_recording
from .capture.container import snapshot
from .store.stores import MemoryStore, StoreError
from ._version import __version__

checkpoint, restore, inspect = host.checkpoint, host.restore, host.inspect
list_checkpoints, delete_checkpoint = host.list, host.delete
set_store, get_store = SESSION.set_store, SESSION.get_store
set_notebook, get_notebook = SESSION.set_notebook, SESSION.get_notebook

__all__ = [
    "snapshot", "load_snapshot", "inspect", "checkpoint", "restore", "list_checkpoints",
    "delete_checkpoint", "record_session", "stop_recording", "set_store", "get_store",
    "set_notebook", "get_notebook", "MemoryStore", "Snapshot", "RestoreReport", "GroupReport",
    "CheckpointError", "StoreError", "__version__",
]


def load_ipython_extension(ipython):
    """`%load_ext elastic_lite`: the magics, and the session recorder on the shell's cell
    events (IPython is imported only here, never by the package)."""
    from .ipython.magics import register
    register(ipython)
    record_session(ipython)
    if __import__("sys").platform != "emscripten":  # desktop Jupyter: store, automatic points
        from .ipython.desktop import attach
        attach(ipython)
