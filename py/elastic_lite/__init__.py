"""Elastic Lite: checkpoint and restore the live Python session of a Pyodide notebook.

    import elastic_lite as el
    snap = el.snapshot()                  # namespace -> container bytes (+ report table)
    rep = el.load_snapshot(snap.data)     # container bytes -> namespace (+ report)
    await el.checkpoint("before-train")   # ... through the store (IndexedDB in a browser)
    await el.restore("before-train")
    await el.list_checkpoints(); await el.delete_checkpoint("before-train")
    el.set_notebook("analysis.ipynb")     # later checkpoints (and the magics) are this notebook's
    %load_ext elastic_lite                # %checkpoint [name], %restore [name], %checkpoints
    el.record_session()                   # record cells: restore recomputes what was not saved
"""

from ._report import GroupReport, RestoreReport, Snapshot
from ._restore import CheckpointError, inspect, load_snapshot
from ._session import record_session, stop_recording
from ._snapshot import snapshot
from ._store import (MemoryStore, StoreError, checkpoint, delete_checkpoint, get_notebook,
                     get_store, list_checkpoints, restore, set_notebook, set_store)
from ._version import __version__

__all__ = [
    "snapshot", "load_snapshot", "inspect", "checkpoint", "restore", "list_checkpoints",
    "delete_checkpoint", "record_session", "stop_recording", "set_store", "get_store", "set_notebook", "get_notebook", "MemoryStore", "Snapshot", "RestoreReport",
    "GroupReport", "CheckpointError", "StoreError", "__version__",
]


def load_ipython_extension(ipython):
    """`%load_ext elastic_lite`: the magics, and the session recorder on the shell's cell
    events (IPython is imported only here, never by the package)."""
    from ._magics import register
    register(ipython)
    record_session(ipython)
