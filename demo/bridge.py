"""The demo worker's calls into elastic_lite, returning plain data for the page.

Loaded by demo/worker-python.mjs into its own module (never ``__main__``). Only the public API
of elastic_lite is used: ``snapshot()`` and ``load_snapshot()``. The worker does validation and
storage itself (C core, IndexedDB store) so the page can time each phase separately.
"""

import json
import sys

import elastic_lite
from elastic_lite._report import type_name as _type_name
from js import Object, Uint8Array
from pyodide.ffi import to_js


def _short(names, limit=3):
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def take_snapshot(progress):
    """Serializes ``__main__``; returns {bytes: Uint8Array, report: JSON text}."""

    def on_group(done, total, names):
        progress(done, total, _short(list(names)) if names else "the manifest")

    snap = elastic_lite.snapshot(progress=on_group)
    variables = []
    for index, group in enumerate(snap.groups):
        for i, (name, typ) in enumerate(zip(group.names, group.types)):
            # Variables written together share one record: its size and time are the group's,
            # shown once on the first variable of the group.
            variables.append({
                "name": name, "type": typ, "serializer": group.serializer, "record": index,
                "size": group.bytes if i == 0 else None, "ms": group.ms if i == 0 else None,
                "fallback": group.fallback if i == 0 else None,
            })
    report = {
        "variables": variables,
        "skipped": [dict(s) for s in snap.skipped],
        "modules": [dict(m) for m in snap.modules],
        "ms": snap.ms,
    }
    data = Uint8Array.new(len(snap.data))
    data.assign(snap.data)
    return to_js({"bytes": data, "report": json.dumps(report, default=str)},
                 dict_converter=Object.fromEntries)


def load(data):
    """Restores checkpoint bytes (a JS Uint8Array) into ``__main__``; returns JSON text."""
    try:
        rep = elastic_lite.load_snapshot(data.to_bytes())
    except elastic_lite.CheckpointError as exc:
        return json.dumps({"error": str(exc)})
    ns = sys.modules["__main__"].__dict__
    return json.dumps({
        "restored": [{"name": n, "type": _type_name(ns.get(n))} for n in rep.restored],
        "failed": [{"names": list(f["names"]), "error": f["reason"]} for f in rep.failed],
        "modules": [dict(m) for m in rep.modules],
        "skipped": [dict(s) for s in rep.skipped],
        "warnings": list(rep.warnings),
        "ms": rep.ms,
    }, default=str)


def refused(records_json):
    """For an imported file: the records restore would refuse (their pickle would call a
    deny-listed function such as os.system), from the C core's inspection report (JSON
    text). Nothing is unpickled. Returns JSON text: [{names, calls}]."""
    from elastic_lite import _trust

    out = []
    for rec in json.loads(records_json):
        hits = _trust.denied_globals(rec.get("globals"))
        if hits:
            out.append({"names": list(rec["names"]), "calls": [f"{m}.{n}" for m, n, _ in hits]})
    return json.dumps(out)
