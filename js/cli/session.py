# The CLI's bridge to elastic_lite inside Pyodide: take a snapshot of __main__ and load one
# back, returning plain JSON reports (and the bytes) so the JS side never holds PyProxies of
# the package's objects. Loaded next to cells.py into a private dict by pyodide-session.mjs.
import json
import time

from pyodide.ffi import to_js

import elastic_lite


def _plain(value):
    """JSON-safe copy of a report value (lists, dicts, numbers, strings; anything else str())."""
    return json.loads(json.dumps(value, default=str))


def take_snapshot(on_progress=None):
    """Returns [Uint8Array of the container, JSON report]. on_progress(done, total): a JS
    function called before each group (only numbers cross, so no proxies leak)."""
    t0 = time.perf_counter()
    progress = None if on_progress is None else (lambda done, total, names: on_progress(done, total))
    snap = elastic_lite.snapshot(progress=progress)
    serialize_ms = (time.perf_counter() - t0) * 1000.0
    groups = [{
        "names": list(g.names),
        "types": list(g.types),
        "serializer": g.serializer,
        "bytes": g.bytes,
        "ms": g.ms,
        "fallback": getattr(g, "fallback", None),
        "note": getattr(g, "note", None),
    } for g in snap.groups]
    walk = snap.to_dict().get("walk") if hasattr(snap, "to_dict") else None
    report = {"groups": groups, "skipped": _plain(snap.skipped), "modules": _plain(getattr(snap, "modules", {})),
              "walk": _plain(walk), "serialize_ms": serialize_ms}
    return [to_js(snap.data), json.dumps(report)]


def load(data, trust=False):
    """data: a JS Uint8Array. Returns the JSON restore report. trust: also load records that
    would call deny-listed globals (see elastic_lite._trust)."""
    payload = data.to_bytes()
    t0 = time.perf_counter()
    rep = elastic_lite.load_snapshot(payload, trust=bool(trust))
    ms = (time.perf_counter() - t0) * 1000.0
    as_dict = rep.to_dict() if hasattr(rep, "to_dict") else {k: v for k, v in vars(rep).items() if not k.startswith("_")}
    out = _plain(as_dict)
    out["load_ms"] = ms
    return json.dumps(out)
