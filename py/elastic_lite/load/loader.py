"""load_snapshot(): checkpoint bytes -> the namespace, record by record.

1. The C core inspects the container once: header, index, the CRC of every record, stream
   and out-of-band buffer, and a walk of every pickle stream (opcodes, frames, memo, STOP).
   Nothing is unpickled before that. Format 2.0 and 1.0 are both read.
2. Module bindings from the manifest are re-imported under their names. A target namespace
   without `__builtins__` (a plain dict) gets the builtins module first.
3. Every good data record is unpickled on its own, its out-of-band buffers handed to
   pickle as writable memoryview slices of the container (a read-only container is copied
   into one bytearray first, once), and its names are put into the namespace at once. A record that refers to a notebook function/class of another record
   (`_rebuild.ref`) loads that record first (once). A bad record, or one that needs a bad
   record, is reported by variable name with the reason; the others restore.
4. Before anything is imported or unpickled, every import of every record and every
   manifest module binding is resolved and judged by `_trust` (the real target of dotted
   names, Python 2 names, EXT codes; unknown counts as dangerous), against the interpreter
   as it is then. What is judged depends on where the bytes come from and on the mode:
   - bytes are FOREIGN unless snapshot() made them in this process (_made_here) or the
     caller vouches for them (`foreign=False`: a store whose signature checked); a store
     entry it did not sign (an import, another browser's) is foreign too. A foreign
     checkpoint loads nothing at all until the person confirmed (`trust=True`) after seeing
     `report.trust["imports"]` (every global and module binding it would import);
   - by default, a record importing a deny-listed or unknown global is refused (the others
     restore), and so is a module binding of one (`print = builtins.exec`);
   - `data_only=True`: only the allow-list of plain data types loads (no code is rebuilt);
     it needs no confirmation, even for a foreign checkpoint;
   - `trust=True`: everything loads.
   Records load through an unpickler whose find_class hands out only the imports judged
   beforehand, each judged again by what it really is. Not a sandbox (see trust/rules.py).
The manifest (JSON in 2.0, a plain pickle in 1.0) is `report.manifest`; a session-history
record, if any, is `report.history` (parsed JSON).
"""

import builtins
import gc
import importlib
import itertools
import json
import re
import sys
import time

from .. import _core, _jsbytes, _rebuild
from ..capture import random_state as _random_state
from ..changes import tracker as _tracker
from ..trust import made_here as _made_here, module_attrs as _module_attrs, rules as _trust
from ..capture.selection import default_namespace
from ..capture.picklers import load, load_plain
from .._report import RestoreReport, Snapshot, describe_error as _describe_error
from .._report import problem as _problem, record_problem
from .._words import quoted
from ..capture.container import MANIFEST
from .streamed import Streamed


class CheckpointError(Exception):
    """The bytes are not a usable checkpoint at all (nothing could be restored).
    `.inspection`: the core's report that says why."""

    def __init__(self, message, inspection=None):
        super().__init__(message)
        self.inspection = inspection


class _RecordFailed(Exception):
    """A record that cannot be restored; `.problem` is its typed problem (_report.problem)."""

    def __init__(self, message, kind="failed", code=None, problem=None):
        super().__init__(message if problem is None else problem["message"])
        self.problem = problem or _problem(kind, message, code=code)


_as_bytes = _jsbytes.as_buffer  # a JS Uint8Array is copied in once, into a bytearray


def _writable(data, records, manifest):
    """The container as writable memory when a record has out-of-band buffers that must be
    writable (numpy arrays: the manifest counts them): buffers are handed to pickle as
    memoryview slices of it, so arrays come back writable with no further copy. Read-only
    input (bytes) is copied once, here; a bytearray is used as is."""
    if not any(rec.get("buffers") for rec in records):
        return data
    if isinstance(manifest, dict) and manifest.get("writable_buffers") == 0:
        return data  # only bytes values, which are copied out of the container anyway
    view = memoryview(data)
    return data if not view.readonly else bytearray(view)


def inspect(data):
    """The C core's inspection report (see docs/INTERFACES.md) of checkpoint bytes."""
    return _core.inspect(_as_bytes(data), validate=True)


# Our manifests and histories nest a few levels. Pyodide's JSON parser recurses on the JS
# stack, which a record nesting 20,000 levels overflowed: a fatal error of the whole
# interpreter (inspect, import and even --data-only restores of such a file), where host
# CPython raises RecursionError. Deeper records are refused before they are parsed.
JSON_DEPTH = 100
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(raw):
    """How deep the arrays and objects of the JSON bytes `raw` nest (brackets in strings do
    not count), without parsing it."""
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(1 if c in b"[{" else -1 for c in brackets), default=0)


def _decode_special(rec, payload):
    """The value of a manifest or history record: JSON (2.0), or format 1.0's manifest (a
    plain pickle that may import nothing)."""
    if rec.get("kind") == "data":
        return load_plain(payload)
    raw = bytes(payload)
    depth = json_depth(raw)
    if depth > JSON_DEPTH:
        raise ValueError(f"its JSON nests {depth} levels deep, and Elastic Lite writes at most "
                         f"{JSON_DEPTH}: this record was not written by Elastic Lite")
    return json.loads(raw.decode("utf-8"))


def read_manifest(data, info):
    """The manifest (a dict) of checkpoint bytes already inspected (`info`), or None when it
    is missing, damaged or unreadable. Nothing of the data records is read."""
    view = memoryview(_as_bytes(data))
    for rec in info.get("records") or []:
        if rec.get("ok") and (rec.get("kind") == "manifest" or rec.get("names") == [MANIFEST]):
            start = rec["payload_offset"]
            try:
                value = _decode_special(rec, view[start:start + rec["length"]])
            except Exception:
                return None
            return value if isinstance(value, dict) else None
    return None


FOREIGN_BYTES = "these bytes were not made by snapshot() in this Python process"


def load_snapshot(data, namespace=None, trust=None, *, data_only=False, foreign=None):
    """Restore checkpoint bytes (or a Snapshot) into `namespace` (default: the user namespace).

    Bytes that snapshot() made in this process (`snapshot().data`, or the Snapshot itself)
    are yours: records that would import a deny-listed global (one that runs commands or
    code, see `_trust`) or one that cannot be resolved without running code are refused and
    reported, the others load. Any other bytes (a file read back, bytes from elsewhere) are
    FOREIGN: nothing is unpickled or imported; the report says why (code `foreign`) and lists
    every import, marked (`report.trust["imports"]`, or `inspect(data)`), until you confirm
    with `trust=True` — "I made it / I trust where it comes from": everything then loads —
    or ask for `data_only=True` (only plain data types load, nothing that builds code; see
    allowlist.json). `foreign`: None decides as above; True (or a string saying why) makes
    the bytes foreign; False says the caller has checked they are the person's own (a store
    whose signature matched). `report.trust` says how it was judged and lists every import.
    """
    t0 = time.perf_counter()
    streamed = data if isinstance(data, Streamed) else None  # read and inspected already
    if isinstance(data, Snapshot):
        if data.data is None:
            raise ValueError("this Snapshot was streamed into a store and holds no bytes; "
                             "restore it from the store (restore(name))")
        data = data.data
    data = _as_bytes(data)
    ns = default_namespace() if namespace is None else namespace
    _tracker.forget(ns)  # its next checkpoint is written whole (change detection starts over)
    if "__builtins__" not in ns:  # a fresh dict: restored functions look builtins up here
        ns["__builtins__"] = builtins
    report = RestoreReport()
    report.history = None  # the session's cells (a "history" record), when the checkpoint has one
    info = streamed.info if streamed is not None else _core.inspect(data, validate=True)
    report.inspection = info
    records = info.get("records") or []
    if not records:
        raise CheckpointError(
            "this is not a readable Elastic Lite checkpoint: "
            f"{_describe_error(info.get('error'))}. Nothing was restored; check that the "
            "file is a checkpoint (elastic-lite verify FILE) or take a new one.", info)
    if foreign is None:
        foreign = (FOREIGN_BYTES if streamed is not None or not _made_here.made_here(data, info)
                   else False)
    view = None if streamed is not None else memoryview(data)

    def payload(rec):
        if streamed is not None:
            return streamed.payload(rec)
        start = rec["payload_offset"]
        return view[start:start + rec["length"]]

    def buffers(rec):
        if streamed is not None:  # each its own bytearray: writable, the values' memory
            return streamed.buffers(rec)
        return [view[b["offset"]:b["offset"] + b["length"]] for b in rec.get("buffers") or ()]

    manifest = None
    data_records = []
    for rec in records:
        kind = rec.get("kind")
        if kind in ("manifest", "history") or rec.get("names") == [MANIFEST]:
            what = "history" if kind == "history" else "manifest"
            if not rec.get("ok"):
                report.warnings.append(
                    f"the {what} record is damaged: " + (
                        "module imports and the list of skipped variables are unavailable"
                        if what == "manifest" else "the session's cells are unavailable")
                    + f" ({_describe_error(rec.get('error'))})")
                continue
            try:
                value = _decode_special(rec, payload(rec))
            except Exception as exc:
                report.warnings.append(f"the {what} record could not be read ({exc})")
                continue
            if what == "manifest":
                manifest = value
            else:
                report.history = value
        elif kind == "data" or kind is None and not rec.get("ok") and not rec.get("kind_code"):
            data_records.append(rec)  # (a record whose header is damaged: reported below)
        else:
            report.warnings.append(
                f"record {rec['index']} ({', '.join(rec.get('names') or []) or 'no names'}) is "
                f"of a kind this version cannot read (kind {rec.get('kind_code')}); it was "
                "skipped. A newer elastic-lite wrote it: upgrade to restore it")
    if streamed is None:
        data = _writable(data, records, manifest)  # the manifest says if buffers need it
        view = memoryview(data)
    if manifest is None and not any("manifest" in w for w in report.warnings):
        report.warnings.append("the checkpoint has no manifest record")
    if not info.get("ok") and info.get("error"):
        report.warnings.append("container: " + _describe_error(info["error"]))

    report.manifest = manifest if isinstance(manifest, dict) else None
    mode = _trust.DATA if data_only else _trust.TRUST if trust else _trust.DENY
    if not foreign and not data_only:  # names a module computes when asked (_module_attrs)
        _module_attrs.ask_modules(info, report.manifest)
    judgement = _trust.Judgement(info, report.manifest, mode)  # before anything is imported
    report.trust = _trust_section(judgement, foreign, trust, data_only)
    if isinstance(manifest, dict):
        report.skipped = list(manifest.get("skipped") or [])
    if _unconfirmed(report, judgement, data_records, foreign):
        report.ms = (time.perf_counter() - t0) * 1000.0
        return report
    _import_modules(report, judgement, ns)

    made_by = _minor_version(info.get("python"))
    by_name = {}
    for rec in data_records:
        for name in rec.get("names") or []:
            by_name.setdefault(name, rec)
    state = {}  # record index -> "loading" | "done" | _RecordFailed
    restored = {}

    def load_record(rec):
        idx = rec["index"]
        st = state.get(idx)
        if st == "done":
            return
        if isinstance(st, _RecordFailed):
            raise st
        if st == "loading":
            raise _RecordFailed(f"records refer to each other in a cycle (record {idx})",
                                code="structure")
        names = rec.get("names") or []
        bad = record_problem(rec, judgement=judgement)  # damaged, or refused by the mode
        if bad is None:
            bad = _other_python(rec, made_by, names)
        if bad is not None:
            err = _RecordFailed(None, problem=bad)
            state[idx] = err
            raise err
        state[idx] = "loading"
        try:
            values = _load_judged(rec, payload(rec), buffers(rec), judgement)
            if not isinstance(values, tuple) or len(values) != len(names):
                raise _RecordFailed(f"record {idx} does not hold {len(names)} values",
                                    code="structure")
        except _RecordFailed as exc:
            state[idx] = exc
            raise
        except _trust.Refused as exc:  # the guarded unpickler met what was not judged safe
            state[idx] = err = _RecordFailed(None, problem=_problem(
                "refused", str(exc), names, idx, code=_refusal_code(mode),
                calls=[_trust.label(exc.judged)], offset=rec.get("offset")))
            raise err
        except Exception as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, _RecordFailed) else None
            err = cause or _RecordFailed(
                f"unpickling with {rec.get('serializer')} failed: {type(exc).__name__}: {exc}",
                # a module that is not installed here: the record needs it
                kind="needs" if isinstance(exc, ImportError) else "failed",
                code="needs-module" if isinstance(exc, ImportError) else "unpickle")
            state[idx] = err
            raise err
        for name, value in zip(names, values):
            restored[name] = value
            ns[name] = value
        state[idx] = "done"
        if streamed is not None:
            streamed.release(rec)  # its buffers now belong to its values (or were copied)

    def resolve(name):
        if name in restored:
            return restored[name]
        rec = by_name.get(name)
        if rec is None:
            raise _RecordFailed(f"it refers to {quoted(name)}, which this checkpoint does not hold",
                                kind="needs", code="needs-record")
        try:
            load_record(rec)
        except _RecordFailed as exc:
            raise _RecordFailed(f"it needs {quoted(name)}, which could not be restored: {exc}",
                                kind="needs", code="needs-record")
        return restored[name]

    ctx = _rebuild.RestoreContext(ns, resolve)
    prev = _rebuild.push(ctx)
    # Unpickling allocates many objects and no garbage: automatic collections would only
    # rescan the growing heap again and again (very visible in Pyodide). Paused meanwhile.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rec in data_records:
            try:
                load_record(rec)
            except _RecordFailed as exc:
                report.failed.append(dict(exc.problem, names=list(rec.get("names") or []),
                                          record=rec["index"], reason=str(exc)))
    finally:
        _rebuild.pop(prev)
        if gc_was_enabled:
            gc.enable()
    report.warnings.extend(ctx.warnings)
    lost = _lost_variables(info, report.manifest, data_records)
    if lost is not None:
        report.failed.append(dict(lost, reason=lost["message"]))
    report.restored = [n for rec in data_records if state.get(rec["index"]) == "done"
                       for n in rec.get("names") or []]
    report.random_state = _random_state.put_back(report.manifest, report.warnings)
    report.ms = (time.perf_counter() - t0) * 1000.0
    return report


# --- what a checkpoint cannot bring back here ------------------------------------------------

def _lost_variables(info, manifest, data_records):
    """The `damaged` problem of a container that is not whole (no valid footer or index: the
    core found its records by scanning), naming the variables that are lost, or None.
    Without it a file cut short at a record boundary restored "ok" with part of the notebook
    missing. The manifest (written last) names every variable; when it is lost too, which
    variables are gone cannot be known and the problem says so."""
    err = info.get("error") or {}
    if info.get("ok") or not err:
        return None
    found = {n for rec in data_records for n in rec.get("names") or []}
    at = _describe_error(err)
    if isinstance(manifest, dict) and isinstance(manifest.get("groups"), list):
        lost = [n for g in manifest["groups"] if isinstance(g, dict)
                for n in g.get("names") or [] if n not in found]
        if not lost:
            return None  # only the index or footer is damaged: every record was found
        return _problem("damaged", f"not in the file, which is not whole ({at}): restore an "
                        "intact copy of it, or take a new checkpoint", names=lost,
                        code=err.get("code"), offset=err.get("offset"))
    return _problem("damaged", f"the file is not whole ({at}): what was saved after that point "
                    "is lost, with the list of variables, module imports and skipped ones; "
                    "only the records before it were restored. Restore an intact copy of the "
                    "file, or take a new checkpoint", code=err.get("code"),
                    offset=err.get("offset"))


# Globals that rebuild a function from bytecode. CPython runs bytecode without checking it,
# and bytecode changes with every minor version: a function of another Python crashes the
# interpreter when called (a checkpoint of host CPython 3.11 in Pyodide's 3.14 did).
_BYTECODE = {("elastic_lite._rebuild", "make_function"), ("types", "CodeType"),
             ("types", "FunctionType")}
_BYTECODE_IN = {"cloudpickle": ("_make_function",), "dill": ("_create_code", "_create_function")}


def _minor_version(text):
    """(major, minor) of a header's "python" field ("3.11.7"), or None when it says less."""
    parts = str(text or "").split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def _other_python(rec, made_by, names):
    """A `needs` problem for a record that rebuilds functions (or classes with methods) from
    the bytecode of another Python minor version than this one, else None."""
    here = sys.version_info[:2]
    if made_by is None or made_by == here:
        return None
    for g in rec.get("globals") or ():
        module, name = (list(g) + [None, None])[:2]
        if not isinstance(module, str):
            continue
        package = module.split(".", 1)[0]
        if (module, name) in _BYTECODE or name in _BYTECODE_IN.get(package, ()):
            return _problem(
                "needs", f"it holds functions or classes compiled by Python "
                f"{made_by[0]}.{made_by[1]}, and this is Python {here[0]}.{here[1]}: bytecode "
                "of another Python version would crash the interpreter when it runs. Restore "
                f"it in Python {made_by[0]}.{made_by[1]}, or re-run the cells that define "
                "them here", names, rec.get("index"), code="needs-python",
                offset=rec.get("offset"))
    return None


# --- trust: provenance, modes, module bindings (see trust/rules.py) ------------------------------

def _refusal_code(mode):
    return "not-data" if mode == _trust.DATA else "denied"


def _trust_section(judgement, foreign, trust, data_only):
    """`report.trust`: how this restore was judged, and everything it would import."""
    return {
        "provenance": "foreign" if foreign else "yours",
        "foreign_reason": (foreign if isinstance(foreign, str) else
                           "it does not come from this store" if foreign else None),
        "confirmed": bool(trust),
        "mode": {"deny": "checked", "data": "data-only", "trust": "trusted"}[judgement.mode],
        "imports": judgement.listing(),
        "modules": judgement.bindings,
    }


def _unconfirmed(report, judgement, data_records, foreign):
    """A foreign checkpoint in the default mode loads nothing before the person confirmed:
    one `refused` problem (code `foreign`) naming every variable, after a `damaged` problem
    for each damaged record (it would not load even if confirmed); True when so."""
    if not foreign or judgement.mode != _trust.DENY:
        return False
    why = foreign if isinstance(foreign, str) else "it does not come from this store"
    for rec in data_records:
        if not rec.get("ok"):
            p = record_problem(rec)
            report.failed.append(dict(p, reason=p["message"]))
    names = [n for rec in data_records if rec.get("ok") for n in rec.get("names") or []]
    dangerous = [r for r in judgement.listing() if r["danger"] is not None]
    p = _problem(
        "refused",
        f"not restored: this checkpoint is foreign ({why}), and restoring it would import "
        f"{len(judgement.listing())} globals"
        + (f", {len(dangerous)} of them able to run code" if dangerous else "")
        + ". Nothing was unpickled. Look at what it would import (inspect), then restore it "
        "with trust=True (CLI: restore --trust) only if you trust where it comes from, or "
        "with data_only=True (CLI: --data-only) to load its plain data alone",
        names, code="foreign", calls=[r["target"] for r in dangerous])
    report.failed.append(dict(p, reason=p["message"]))
    for b in judgement.bindings:
        report.modules.append({"name": b["name"], "module": b["module"], "attr": b["attr"],
                               "ok": False, "refused": True,
                               "error": "not imported: the checkpoint is foreign"})
    return True


def _import_modules(report, judgement, ns):
    """Re-import the manifest's module bindings, except those the mode refuses."""
    for i, b in enumerate(judgement.bindings):
        entry = {"name": b["name"], "module": b["module"], "attr": b["attr"], "ok": True,
                 "error": None}
        if _trust.refuses_binding(b, judgement.mode):
            entry.update(ok=False, refused=True, error=(
                f"refused: it would bind {b['name']} to {b['target']} ({b['why']})"))
            report.modules.append(entry)
            continue
        try:
            mod = importlib.import_module(b["module"])
            ns[b["name"]] = getattr(mod, b["attr"]) if b["attr"] else mod
        except Exception as exc:
            entry.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        report.modules.append(entry)


def _load_judged(rec, payload, buffers, judgement):
    """Unpickle one record: plainly when trusted, else through the guarded unpickler that
    hands out only the imports judged beforehand."""
    if judgement.mode == _trust.TRUST:
        return load(rec.get("serializer"), payload, buffers)
    return _trust.guarded_load(rec.get("serializer"), payload, buffers, judgement.mode,
                               judgement.accepted(rec), judgement.seen)
