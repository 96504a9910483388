"""elastic_lite.host: the one API every host calls, and the one report shape it answers with.

The CLI (`elastic-lite`), the demo page's worker, the JupyterLite extension and the IPython
magics do not orchestrate anything themselves: they call these coroutines and render the
report. Each returns ONE JSON-able dict (docs/INTERFACES.md, "Report schema"):

    {"op": "checkpoint" | "restore" | "list" | "delete" | "import" | "export" | "inspect"
           | "run_cell",
     "ok": bool, "problems": [problem...], "warnings": [str...], "timings": {"..._ms": float},
     ...fields of the operation}

A problem is {kind, names, record, message, code, calls, offset} (_report.problem): kinds
damaged / refused / needs / failed, decided from structure (the core's record state and error
code, the deny-list, an exception's type), never from message text. Hosts never re-validate:
restore reports the inspection load_snapshot validated with.

Policies that live here and nowhere else:
- import validates before it stores: a file that is not whole (any damaged record, or no
  checkpoint at all) is refused and nothing is stored; a whole file whose records would call
  code-running globals is stored, and the report lists those records as `refused` problems;
  an imported checkpoint stays foreign: restore loads nothing of it until trusted;
- provenance: bytes given to restore, and store entries that were imported, are foreign
  (`_foreign_reason`); inspect and restore report `trust`: provenance and every import
  resolved and judged (_trust), what a person must see before confirming;
- the metadata of a store entry comes from `_report.checkpoint_meta`;
- `run_cell` is how hosts without IPython run a notebook cell (top-level await, the final
  expression's repr, a traceback from the cell's own frame, %time-style magics), and
  `observers` is where a session recorder hooks in.

JS hosts go through `call(op, kwargs_json, data, progress)`: JSON in, JSON text out, bytes as
a Uint8Array, progress as a JS function receiving JSON text.
"""

import ast
import inspect as _pyinspect
import json
import linecache
import sys
import time
import traceback

from . import _checkpoint_replay, _history, _jsbytes, _session, _signing, _store, _trust
from ._capture import default_namespace
from ._report import checkpoint_meta, describe_error, inspection_problems, problem, type_name
from ._restore import CheckpointError, inspect as _inspect, load_snapshot, read_manifest
from ._snapshot import MANIFEST

# run_cell observers: objects with optional `before(source, raw=None)` and `after(ok,
# error=None)` methods, called around every cell run_cell executes (after the session
# recorder of the namespace, which run_cell feeds itself).
observers = []

_EMPTY = "empty (0 bytes): not an Elastic Lite checkpoint"

# Store error codes (a JS error's `code` or `name`) that mean "no space left".
_QUOTA_CODES = ("quota", "QuotaExceededError", "ENOSPC", "EDQUOT")


def _now():
    return time.perf_counter()


def _ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def _new(op, **fields):
    report = {"op": op, "ok": True, "problems": [], "warnings": [], "timings": {}}
    report.update(fields)
    return report


def _fail(report, kind, message, **detail):
    report["ok"] = False
    report["problems"].append(problem(kind, message, **detail))
    return report


def _store_failure(report, exc, names=()):
    code = getattr(exc, "code", None)
    return _fail(report, "failed", str(exc), names=names,
                 code="quota" if code in _QUOTA_CODES else "store")


_as_bytes = _jsbytes.as_buffer  # a JS Uint8Array (JsProxy) is copied in once


def _emit(progress, **event):
    if progress is not None:
        progress(event)


def _bad_name(report, name):
    """A problem for a name no store accepts (checked before any work), else None."""
    try:
        _store._check_name(name)
    except _store.StoreError as exc:
        return _fail(report, "failed", str(exc), code="invalid-name")
    return None


async def _store_or_fail(report):
    try:
        return await _store.get_store()
    except Exception as exc:
        _store_failure(report, exc)
        return None


def _of(notebook):
    return f" of {notebook}" if notebook is not None else ""


def _is_manifest(rec):
    return rec.get("kind") == "manifest" or rec.get("names") == [MANIFEST]


def _data_records(info):
    """The records holding variables (not the manifest, not a session history)."""
    return [r for r in info.get("records") or []
            if r.get("kind") in ("data", None) and not _is_manifest(r)]


# --- checkpoint ---------------------------------------------------------------------------

async def checkpoint(name=None, *, namespace=None, names=None, notebook=None, progress=None,
                     replay=True, recompute_large=False, cell=None, auto=False):
    """Snapshot the namespace into the store as `name`. progress(event): {"phase":
    "serialize", "done", "total", "names"} before each group, then {"phase": "store"}.
    With a recorded session, the history goes along and what cannot (or should not) be
    pickled is planned for replay on restore (`replay=False`: planned for nothing);
    `recompute_large` (True, or the cost model's options) also leaves out variables that are
    large to store and cheap to recompute by deterministic cells (report: replay.choices).

    cell: the cell that led to this state ({executionCount, firstLine, timeMs}), kept as
    `meta.cell` (the history timeline shows it). auto: an automatic checkpoint after a cell
    (the JupyterLite extension's): named `<notebook> [<count>] <time>` when no name is given,
    and nothing is done while this kernel has them turned off (`%autocheckpoint off`): the
    report then says `off`. Groups unchanged since this kernel's previous checkpoint to the
    store are not written again (`reuse` in the report)."""
    t0 = _now()
    notebook = _store.get_notebook() if notebook is None else notebook
    if auto and name is None:
        cell_ = cell or {}
        name = _history.point_name(notebook, cell_.get("executionCount"), cell_.get("timeMs"))
    name = name or _store.DEFAULT_NAME
    report = _new("checkpoint", name=name, notebook=notebook, size=0, variables=[], skipped=[],
                  modules=[], walk=None, replay=None, reuse=None, off=False)
    if _bad_name(report, name):
        return report
    if auto and not _history.auto_enabled():
        report["off"] = True
        report["warnings"].append("automatic checkpoints are off in this kernel "
                                  "(%autocheckpoint on turns them on again)")
        return report

    def on_group(done, total, group):
        _emit(progress, phase="serialize", done=done, total=total, names=[*group])
        if done == total:
            _emit(progress, phase="store")

    try:
        snap = await _store.checkpoint(
            name, namespace=namespace, names=names, notebook=notebook, progress=on_group,
            cell=cell, extra_meta={"auto": True} if auto else None, replay=replay,
            recompute_large=recompute_large)
    except _store.StoreError as exc:
        return _store_failure(report, exc)
    report["replay"] = snap.replay
    if auto:  # one of this kernel's own points: never what a restore without a name picks
        _history.took_point(name, namespace)
    total = _ms(t0)
    d = snap.to_dict()
    report.update(size=snap.size, skipped=d["skipped"], modules=d["modules"],
                  walk=d["walk"], variables=snap.variable_rows(),
                  reuse=getattr(snap, "reuse", None))
    report["timings"] = {"serialize_ms": snap.ms, "store_ms": max(0.0, total - snap.ms),
                         "total_ms": total}
    return report


# --- restore ------------------------------------------------------------------------------

async def restore(name=None, *, data=None, namespace=None, trust=False, notebook=None,
                  progress=None, replay=True, data_only=False, at=None, adopt=False):
    """Restore checkpoint `name` from the store (default: of `notebook` when given, the
    newest that is not one of this kernel's own automatic points, nor empty: a checkpoint a
    person saved, or the last state of the previous kernel — never the point a fresh kernel
    took after its first cell; with `at`, the newest of `notebook` taken after the cell
    executed as `In [at]`),
    or the container bytes `data`, into the namespace (default: the user's).
    A foreign checkpoint (bytes given, or a store entry this store did not sign: an import,
    another browser's) restores nothing unless `trust` (the person saw
    report["trust"]["imports"] and confirmed) or `data_only` (plain data types only);
    `adopt` with `trust` then signs that store entry as this store's own (report "adopted").
    Records that are damaged, refused (deny-listed or unknown globals, unless `trust`) or
    that need one of those are problems; the others restore. Then what the checkpoint
    planned for replay is recomputed by re-running its cells (`replay=False`: not; a
    checkpoint from elsewhere only with `trust`; never with `data_only`, which runs no
    code). `ok` is true when everything came back."""
    t0 = _now()
    ns = default_namespace() if namespace is None else namespace
    report = _new("restore", name=name, source="data" if data is not None else "store",
                  size=0, restored=[], recomputed=[], modules=[], skipped=[], inspection=None,
                  replay=None, trust=None, adopted=False)
    meta = {}
    foreign = _foreign_reason("data") if data is not None else None
    if data is None:
        _emit(progress, phase="read")
        if at is not None:
            name = report["name"] = await _point(report, notebook, at)
            if name is None:
                return report
        data, meta, signature = await _read_entry(report, name, notebook, ns)
        if data is None:
            return report
        foreign = _foreign_reason("store", meta, signature)
    data = _as_bytes(data)
    report["size"] = len(data)
    report["timings"]["read_ms"] = _ms(t0)
    _emit(progress, phase="load")
    t1 = _now()
    try:
        rep = load_snapshot(data, namespace=ns, trust=trust, data_only=data_only,
                            foreign=foreign or False)
    except CheckpointError as exc:
        info = exc.inspection or {}
        err = info.get("error") or {}
        report["inspection"] = exc.inspection
        report["timings"].update(load_ms=_ms(t1), total_ms=_ms(t0))
        return _fail(report, "damaged", str(exc), names=meta.get("names") or (),
                     code=err.get("code"), offset=err.get("offset"))
    report["timings"].update(load_ms=_ms(t1), total_ms=_ms(t0))
    info = rep.inspection or {}
    where = {n: (r, i == 0) for r in info.get("records") or [] for i, n in enumerate(r["names"])}
    report["restored"] = [
        {"name": n, "type": type_name(ns.get(n)), "serializer": where[n][0].get("serializer"),
         "record": where[n][0].get("index"),
         "bytes": where[n][0].get("length") if where[n][1] else None}
        if n in where else {"name": n, "type": type_name(ns.get(n))}
        for n in rep.restored]
    report["problems"] = rep.problems()
    if report["source"] == "store":  # damage inside the store: marked, repaired by the next checkpoint
        await _store.check_damage(await _store.get_store(), report["name"], rep)
    report.update(ok=rep.ok, modules=rep.modules, skipped=rep.skipped, inspection=info,
                  warnings=[*rep.warnings], trust=rep.trust)
    if foreign and trust and adopt and report["source"] == "store":
        await _adopt(report)
    permitted, why_not = _checkpoint_replay.replay_permission(trust, foreign, meta, data_only)
    outcome, section, warnings = await _checkpoint_replay.replay_after_restore(
        rep.manifest, rep.history, ns, permitted=permitted, why_not=why_not,
        enabled=bool(replay))
    report["warnings"].extend(warnings)
    _checkpoint_replay.restore_fields(report, outcome, section, ns)
    report["timings"]["total_ms"] = _ms(t0)
    return report


def _foreign_reason(source, meta=None, signature=None):
    """Why a checkpoint is foreign (restore loads nothing of it unconfirmed), or None when it
    is this store's own: bytes handed over (a file) always are; a store entry is when it does
    not carry the store's signature (_signing.foreign_reason)."""
    if source == "data":
        return "it was read from a file, not from this store"
    return _signing.foreign_reason(signature, meta)


async def _adopt(report):
    """Sign the restored store entry as this store's own (the person confirmed it)."""
    store = await _store_or_fail(report)
    if store is None or not callable(getattr(store, "sign", None)):
        report["warnings"].append("this checkpoint store cannot sign checkpoints: it stays foreign")
        return
    try:
        report["adopted"] = bool(await store.sign(report["name"]))
    except _store.StoreError as exc:
        report["warnings"].append(f"could not sign the checkpoint as this store's own: {exc}")


async def _point(report, notebook, at):
    """The name of the newest checkpoint (of `notebook`) taken after cell `In [at]`, or None
    with a `not-found` problem."""
    store = await _store_or_fail(report)
    if store is None:
        return None
    try:
        entry = _history.find_point(await store.list(notebook=notebook), at)
    except _store.StoreError as exc:
        _store_failure(report, exc)
        return None
    if entry is None:
        _fail(report, "failed", f"no checkpoint{_of(notebook)} was taken after cell [{at}]",
              code="not-found")
        return None
    return entry["name"]


async def _read_entry(report, name, notebook, namespace=None):
    """(bytes, meta, signature) of the named checkpoint — without a name, of the one
    `_history.restore_choice` picks for `namespace` (the newest that is not one of this
    kernel's own automatic points, nor empty) — or (None, {}, None) with a problem.
    signature: what the store says of it, None when it cannot tell."""
    store = await _store_or_fail(report)
    if store is None:
        return None, {}, None
    try:
        if name is None:
            entries = await store.list(notebook=notebook)
            if not entries:
                _fail(report, "failed", f"there is no checkpoint{_of(notebook)} to restore yet; "
                      "take one first", code="not-found")
                return None, {}, None
            name = report["name"] = _history.restore_choice(entries, namespace)["name"]
        elif _bad_name(report, name):
            return None, {}, None
        entry = await store.get(name)
    except _store.StoreError as exc:
        _store_failure(report, exc)
        return None, {}, None
    if entry is None:
        _fail(report, "failed", f"no checkpoint named {name!r}", code="not-found")
        return None, {}, None
    return entry["bytes"], entry.get("meta") or {}, entry.get("signature")


# --- list, delete, export ---------------------------------------------------------------------

# The operation's name shadows the builtin in this module: nothing here calls list().
async def list(notebook=None):  # noqa: A001
    """The checkpoints in the store (of `notebook` when given), newest first."""
    t0 = _now()
    report = _new("list", notebook=notebook, checkpoints=[])
    store = await _store_or_fail(report)
    if store is None:
        return report
    try:
        report["checkpoints"] = await store.list(notebook=notebook)
    except _store.StoreError as exc:
        return _store_failure(report, exc)
    report["timings"]["total_ms"] = _ms(t0)
    return report


async def delete(name):
    """Delete checkpoint `name`; a name that is not stored is a `not-found` problem."""
    report = _new("delete", name=name, deleted=False)
    if _bad_name(report, name):
        return report
    store = await _store_or_fail(report)
    if store is None:
        return report
    try:
        report["deleted"] = bool(await store.delete(name))
    except _store.StoreError as exc:
        return _store_failure(report, exc)
    if not report["deleted"]:
        _fail(report, "failed", f"no checkpoint named {name!r}", code="not-found")
    return report


async def export(name):
    """The stored container of `name` as report["data"] (bytes: the one field that is not
    JSON; `call` leaves it out) with its size and metadata."""
    report = _new("export", name=name, size=0, meta=None)
    data, meta, _ = await _read_entry(report, name, None)
    if data is None:
        return report
    report.update(size=len(data), meta=meta, data=bytes(_as_bytes(data)))
    return report


# --- inspect and import -------------------------------------------------------------------

def _inspection(data):
    """The core's validated report of `data`, its judgement (_trust: every import resolved,
    manifest module bindings included) and what the hosts show of each record."""
    info = _inspect(data)
    judgement = _trust.Judgement(info, read_manifest(data, info))
    records = []
    for r in info.get("records") or []:
        rec = {k: r.get(k) for k in ("index", "kind", "names", "serializer", "offset", "length",
                                     "ok", "error", "globals")}
        rec["manifest"] = _is_manifest(r)
        rec["crc"] = r.get("crc32") or r.get("crc32c")  # format 2 | format 1
        rec["buffers"] = len(r.get("buffers") or [])
        rec["imports"] = judgement.records.get(r.get("index"), [])
        records.append(rec)
    return info, records, judgement


async def inspect(name=None, *, data=None):
    """What a checkpoint holds, from the C core's validator alone (nothing is unpickled):
    header fields, every record (names, serializer, offsets, state, the globals it would
    import) and the problems in file order: damaged records, and records restore would
    refuse (`calls`). `ok`: the checkpoint is whole."""
    t0 = _now()
    report = _new("inspect", name=name, source="data" if data is not None else "store",
                  size=0, whole=False, header={}, records=[], meta=None)
    signature = None
    if data is None:
        data, meta, signature = await _read_entry(report, name, None)
        if data is None:
            return report
        report["meta"] = meta
    data = _as_bytes(data)
    if len(data) == 0:
        return _fail(report, "damaged", _EMPTY, code="empty")
    info, records, judgement = _inspection(data)
    report.update(size=len(data), whole=bool(info.get("ok")), records=records,
                  header={k: info.get(k) for k in ("format_version", "format_minor", "producer",
                                                   "python", "created_ms", "size")})
    foreign = _foreign_reason(report["source"], report["meta"], signature)
    report["trust"] = {"provenance": "foreign" if foreign else "yours",
                       "foreign_reason": foreign, "imports": judgement.listing(),
                       "modules": judgement.bindings}
    report["problems"] = inspection_problems(info, judgement=judgement)
    report["ok"] = report["whole"]
    report["timings"]["total_ms"] = _ms(t0)
    return report


async def import_checkpoint(data, name=None, *, notebook=None, replace=False, unique=False,
                            source=None, trust=False):
    """Validate container bytes from elsewhere, then store them as `name`.

    A file that is not whole is refused and nothing is stored. A whole file is stored even
    when some records would call code-running globals: those are listed as `refused`
    problems (`ok` stays true), because restore refuses them unless trusted. A name already
    in the store is a problem unless `replace` (overwrite) or `unique` (store as "name (2)"...).
    `source`: where the bytes came from (a file name), kept in the metadata as `imported`.
    It is stored unsigned, so restore treats it as foreign (loads nothing unconfirmed) —
    unless `trust`: the person looked at what it would import and vouches for it; it is then
    signed as this store's own.
    """
    t0 = _now()
    name = name or "imported"
    report = _new("import", name=name, size=0, stored=False, variables=[], meta=None)
    data = _as_bytes(data)
    report["size"] = len(data)
    if len(data) == 0:
        return _fail(report, "damaged", _EMPTY, code="empty")
    if _bad_name(report, name):
        return report
    info, _, judgement = _inspection(data)
    report["timings"]["validate_ms"] = _ms(t0)
    found = inspection_problems(info, judgement=judgement)
    damaged = [p for p in found if p["kind"] == "damaged"]
    if damaged or not info.get("ok"):
        report["problems"] = damaged or found
        report["ok"] = False
        report["warnings"].append("nothing was imported")
        return report
    report["problems"] = found  # refused records only: stored, restore refuses them
    names = [n for r in _data_records(info) for n in r.get("names") or []]
    report["variables"] = names
    store = await _store_or_fail(report)
    if store is None:
        return report
    try:
        taken = {e["name"] for e in await store.list()}
        if name in taken and unique:
            base, i = name, 2
            while name in taken:
                name, i = f"{base} ({i})", i + 1
            report["name"] = name
        elif name in taken and not replace:
            return _fail(report, "failed", f"a checkpoint named {name!r} already exists; "
                         "choose another name or replace it", code="exists")
        meta = checkpoint_meta(names, [], len(data), notebook=notebook,
                               imported=source or True, keep=True,
                               originalCreatedMs=info.get("created_ms"),
                               producer=info.get("producer"), python=info.get("python"))
        t1 = _now()
        if trust:
            await store.put(name, data, meta, sign=True)
        else:
            await store.put(name, data, meta)
    except _store.StoreError as exc:
        return _store_failure(report, exc)
    report["timings"].update(store_ms=_ms(t1), total_ms=_ms(t0))
    report.update(stored=True, meta=meta, signed=bool(trust))
    return report


# --- run_cell -----------------------------------------------------------------------------

_TIMING = ("time", "timeit")
_TIMEIT_VALUE_OPTIONS = ("-n", "-r", "-p")


def _timeit_statement(text):
    """The statement of `%timeit [options] STATEMENT` (options dropped)."""
    words = text.split(" ")
    i = 0
    while i < len(words) and (words[i].startswith("-") or words[i] == ""):
        if words[i] in _TIMEIT_VALUE_OPTIONS:
            i += 1  # "-n 100": the value is its own word
        i += 1
    return " ".join(words[i:]).strip()


def _ipython_shell(namespace):
    """IPython's shell when IPython runs this kernel and `namespace` is its user namespace."""
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython is not None else None
    except Exception:
        return None
    return shell if shell is not None and getattr(shell, "user_ns", None) is namespace else None


def _without_magics(code, label):
    """Plain Python for a cell that may hold IPython syntax, and a warning per changed line.

    `%time STMT`, `%timeit [options] STMT` and `%%time` / `%%timeit` cells run their statement
    once (untimed: they define names the next cells use); any other magic or `!shell` line
    becomes `pass`; another cell magic skips the cell. Line numbers are kept. Code that parses
    as Python is left alone (a `%` line inside a string stays as it is)."""
    try:
        ast.parse(code)
        return code, []
    except SyntaxError:
        pass
    lines = code.split("\n")
    warnings = []
    head = lines[0].strip()
    if head.startswith("%%"):
        magic, _, rest = head[2:].partition(" ")
        if magic not in _TIMING:
            warnings.append(f'{label}: skipped, it is an IPython cell magic ("{head}") and this '
                            "kernel has no IPython")
            return "pass", warnings
        setup = _timeit_statement(rest) if magic == "timeit" else ""
        warnings.append(f'{label}, line 1: ran the cell of "%%{magic}" once, without timing it')
        lines[0] = setup
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = line[:len(line) - len(stripped)]
        if stripped.startswith("%") and not stripped.startswith("%%"):
            magic, _, rest = stripped[1:].partition(" ")
            stmt = rest.strip() if magic == "time" else _timeit_statement(rest)
            if magic in _TIMING and stmt:
                lines[i] = indent + stmt
                warnings.append(f'{label}, line {i + 1}: ran the statement of "{stripped}" once, '
                                "without timing it")
                continue
        elif not stripped.startswith("!"):
            continue
        lines[i] = indent + "pass"
        warnings.append(f'{label}, line {i + 1}: skipped IPython line "{stripped}" (this kernel '
                        "has no IPython)")
    return "\n".join(lines), warnings


def _cell_traceback(exc, filename):
    """The traceback from the first frame of the cell itself onwards."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if tb is None:  # e.g. a SyntaxError: raised while compiling, before any cell frame
        return "".join(traceback.format_exception_only(type(exc), exc))
    return "".join(traceback.format_exception(type(exc), exc, tb))


async def _execute(source, filename, ns):
    """Runs `source` in `ns` like a notebook cell; returns the final expression's value."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(source, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    for node, mode in ((tree, "exec"), (last, "eval")):
        if node is None:
            continue
        code = compile(node, filename, mode, flags=flags)
        value = eval(code, ns)
        if code.co_flags & _pyinspect.CO_COROUTINE:  # the cell itself awaits something
            value = await value
    return value if last is not None else None


def _notify(watchers, method, report, *args, **kwargs):
    for obs in watchers:
        fn = getattr(obs, method, None)
        if fn is None:
            continue
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # a broken observer must not break the person's cell
            report["warnings"].append(f"cell observer {obs!r}.{method} failed: "
                                      f"{type(exc).__name__}: {exc}")


async def run_cell(code, label=None, *, namespace=None, count=None):
    """Run `code` as the next notebook cell: in the user namespace, top-level `await` allowed,
    the final expression's repr as `value` (and bound to `_`, as IPython does), a failure as
    `traceback` starting at the cell's own frame. IPython syntax: see _without_magics (where
    IPython runs the kernel, IPython transforms the cell instead). The session recorder of
    the namespace records it (as `In [count]`; default: the next number), then observers."""
    t0 = _now()
    label = label or "cell"
    ns = default_namespace() if namespace is None else namespace
    report = _new("run_cell", label=label, value=None, traceback=None, error=None)
    filename = f"<{label}>"
    shell = _ipython_shell(ns)
    if shell is not None:
        source = shell.transform_cell(code)
    else:
        source, report["warnings"] = _without_magics(code, label)
    # Tracebacks show the cell's lines, as in a notebook (one entry per cell label).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    watchers = [_session.recorder_for(ns, create=True), *observers]
    raw = code if code != source else None
    _notify(watchers[:1], "before", report, source, raw=raw, count=count)
    _notify(watchers[1:], "before", report, source, raw=raw)
    error = None
    try:
        value = await _execute(source, filename, ns)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are failures of the cell too
        error = exc
        report.update(ok=False, traceback=_cell_traceback(exc, filename),
                      error={"type": type(exc).__name__, "message": str(exc)})
        report["problems"].append(problem("failed", f"{type(exc).__name__}: {exc}",
                                          code="exception"))
        value = None
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    if value is not None:
        ns["_"] = value  # like IPython; names starting with "_" are never checkpointed
        try:
            report["value"] = repr(value)
        except Exception as exc:  # a broken __repr__ must not turn success into failure
            report["value"] = f"<repr() failed: {type(exc).__name__}: {exc}>"
    _notify(watchers, "after", report, report["ok"], error=error)
    report["timings"]["run_ms"] = _ms(t0)
    return report


# --- the JS hosts' entry point ----------------------------------------------------------------

_OPS = {"checkpoint": checkpoint, "restore": restore, "list": list, "delete": delete,
        "import": import_checkpoint, "export": export, "inspect": inspect, "run_cell": run_cell}


async def call(op, kwargs_json="{}", data=None, progress=None):
    """Run operation `op` with keyword arguments from JSON text; returns the report as JSON
    text. `data`: container bytes (a JS Uint8Array) for restore / inspect / import;
    `progress`: a JS function called with each progress event as JSON text."""
    fn = _OPS.get(op)
    if fn is None:
        raise ValueError(f"unknown operation {op!r}; one of {', '.join(_OPS)}")
    kwargs = json.loads(kwargs_json or "{}")
    if not _store._is_nullish(data):
        kwargs["data"] = _as_bytes(data)
    if not _store._is_nullish(progress) and op in ("checkpoint", "restore"):
        kwargs["progress"] = lambda event: progress(json.dumps(event))
    report = await fn(**kwargs)
    report.pop("data", None)
    return json.dumps(report, default=str)


__all__ = ["checkpoint", "restore", "list", "delete", "import_checkpoint", "export", "inspect",
           "run_cell", "call", "observers", "describe_error"]
