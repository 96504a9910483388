"""The kernel session: one object per kernel (this Python process) that owns every piece of
per-kernel state and runs checkpoint and restore as explicit phases. `elastic_lite.host` (what
the CLI, the demo, the JupyterLite extension and the magics call) and the public `el.*`
coroutines are thin adapters over it: one pipeline, one report (docs/INTERFACES.md, "Report
schema"), the same words whoever asks.

State (nothing of it lives anywhere else):
- the store (resolved once: `set_store()`, else IndexedDB in a browser, else in memory), the
  notebook later checkpoints belong to, whether automatic points are on, and the budget of
  private copies change detection may keep;
- per namespace (`Space`): the session recorder (the recorded cells), the change tracker of
  its last checkpoint (_tracker.Tracker), and the automatic points this kernel took of it.
  One registry, one rule: at most MAX_SPACES namespaces (the oldest not tied to an IPython
  shell is forgotten first); only the TRACKED newest keep a change tracker (it holds values
  and buffer copies).

Checkpoint: capture (what the recorded cells can recompute is left out: _replay_steps)
-> group and write groups (capture.container.SnapshotStream, unchanged groups reused from the store)
-> send records (batches to the store) -> plan replay and finish (manifest, recorded cells:
written by the stream; the entry's metadata here) -> commit (and the tracker learns the keys).

Restore: read (the entry, every record verified against its content key: _stores.read_verified)
-> judge (provenance: signed by this store or foreign) -> inspect, judge imports and load
(load_snapshot) -> replay (re-run recorded cells for what was not saved).
"""

import asyncio
import time
from collections import OrderedDict

from .. import _jsbytes
from ..changes import tracker as _tracker
from ..load import streamed as _streamed
from ..replay import steps as _replay_steps
from . import timeline as _timeline
from ..store import signing as _signing, stores as _stores
from ..trust import rules as _trust
from ..capture.selection import default_namespace
from .._words import quoted
from .._report import checkpoint_meta, inspection_problems, problem, record_problem, type_name
from ..load.loader import CheckpointError, inspect as core_inspect, load_snapshot, read_manifest
from ..capture.container import HISTORY, MANIFEST, SnapshotStream, snapshot

DEFAULT_NAME = "checkpoint"  # what a checkpoint without a name is called, in every host
MAX_SPACES = 32  # namespaces remembered at once (the session's, tests', hosts' scratch ones)
TRACKED = 4  # of them, the newest that keep a change tracker
EMPTY = "empty (0 bytes): not an Elastic Lite checkpoint"
_QUOTA_CODES = ("quota", "QuotaExceededError", "ENOSPC", "EDQUOT")  # a store's "no space left"


# ---- the report every operation answers with ----

class Report(dict):
    """A host report (docs/INTERFACES.md, "Report schema"): a JSON-able dict, whose fields
    also read as attributes (`rep.ok`, `rep.problems`), printed as the text a person reads.
    `detail`: the Python object behind it, when there is one (checkpoint: the Snapshot,
    restore: load_snapshot's RestoreReport); attributes not in the report are its."""

    detail = None

    def __getattr__(self, key):
        if key in self:
            return self[key]
        if self.detail is not None and not key.startswith("_"):
            return getattr(self.detail, key)
        raise AttributeError(key)

    def to_dict(self):
        return dict(self)

    def table(self):
        from .._report import checkpoint_text, restore_text
        if not self["ok"] and not self.get("restored"):
            return "; ".join(p["message"] for p in self["problems"])
        if self["op"] == "checkpoint":
            return checkpoint_text(self)
        if self["op"] == "restore":
            return restore_text(self)
        return repr(dict(self))

    def __repr__(self):
        return self.table()


def new_report(op, **fields):
    report = Report(op=op, ok=True, problems=[], warnings=[], timings={})
    report.update(fields)
    return report


def fail(report, kind, message, **detail):
    report["ok"] = False
    report["problems"].append(problem(kind, message, **detail))
    return report


async def _lock_meanwhile(store, name):
    """The writer lock of `name` being taken while the caller goes on: a task to await for
    it, for a JS store (its lock is a round trip to the browser). A Python store's is taken
    first, without suspending (a magic runs a checkpoint that never suspends to its end at
    once), as it is where no event loop runs (a kernel driving the coroutine by hand)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _Taken(await store.lock(name))
    if not isinstance(store, _stores.JsStore):
        return _Taken(await store.lock(name))
    return asyncio.ensure_future(store.lock(name))


class _Taken:
    """A lock already taken, awaitable like the task of _lock_meanwhile."""

    def __init__(self, held):
        self.held = held

    def __await__(self):
        return self.held
        yield  # (a generator: `await` gives the lock at once)


async def _release_when_taken(locking):
    """Releases the writer lock `locking` (a task taking it) once it is taken; nothing when
    taking it failed."""
    try:
        held = await locking
    except Exception:
        return
    await held.release()


def store_failure(report, exc, names=()):
    """A store error as a `failed` problem: code `quota` (no space left), `busy` (another
    writer holds the name), `changed` (a buffer written to while it was saved) or `store`."""
    code = getattr(exc, "code", None)
    code = "quota" if code in _QUOTA_CODES else code if code in ("busy", "changed", "lost") else "store"
    return fail(report, "failed", str(exc), names=names, code=code)


def not_found(name):
    """The words for a name the store does not hold (the CLI says the same without Python)."""
    return f"no checkpoint named {quoted(name)}"


def bad_name(report, name):
    """A problem for a name no store accepts (checked before any work), else None."""
    try:
        _stores.check_name(name)
    except _stores.StoreError as exc:
        return fail(report, "failed", str(exc), code="invalid-name")
    return None


def _ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def _emit(progress, **event):
    if progress is not None:
        progress(event)


def _of(notebook):
    return f" of {SESSION.label_of(notebook)}" if notebook is not None else ""


def key_problems(problems, mismatched):
    """`problems` with each record whose bytes did not match their content key
    (_stores.read_verified, which zeroed them) reported as what it is: damage the core found in
    those bytes, else a `content-key` problem (whole bytes, but not the ones saved)."""
    out = list(problems)
    for m in mismatched:
        def covers(p):
            at = p.get("offset")
            return p.get("record") == m["index"] or (
                isinstance(at, int) and m["start"] <= at < m["start"] + m["length"])
        lost = [n for p in out if covers(p) for n in p["names"]]  # the core's word for them
        out = [p for p in out if not covers(p)]
        names = [n for n in m["names"] or dict.fromkeys(lost) if n not in (MANIFEST, HISTORY)]
        what = ("the manifest" if MANIFEST in m["names"] else "the recorded cells"
                if HISTORY in m["names"] else ", ".join(names) or "names unreadable")
        if m["core"] is not None:  # damage the core sees: in its words, as any reader says it
            found = record_problem(m["core"])
            found["names"] = names
            out.append(found)
            continue
        out.append(problem(
            "damaged", f"record {m['index']} ({what}) does not match its content key: its "
            "bytes in the store changed after it was saved, and nothing of it was loaded. "
            "Restore another checkpoint, or take a new one to replace it",
            names, m["index"], code="content-key", offset=m["start"]))
    return out


def is_manifest(rec):
    return rec.get("kind") == "manifest" or rec.get("names") == [MANIFEST]


def inspection(data):
    """The core's validated report of `data`, its judgement (_trust: every import resolved,
    manifest module bindings included) and what the hosts show of each record."""
    info = core_inspect(data)
    judgement = _trust.Judgement(info, read_manifest(data, info))
    records = []
    for r in info.get("records") or []:
        rec = {k: r.get(k) for k in ("index", "kind", "names", "serializer", "offset", "length",
                                     "ok", "error", "globals")}
        rec["manifest"] = is_manifest(r)
        rec["crc"] = r.get("crc32") or r.get("crc32c")  # format 2 | format 1
        rec["buffers"] = len(r.get("buffers") or [])
        rec["imports"] = judgement.records.get(r.get("index"), [])
        records.append(rec)
    return info, records, judgement


def foreign_reason(source, meta=None, signature=None):
    """Why a checkpoint is foreign (restore loads nothing of it unconfirmed), or None when it
    is this store's own: bytes handed over (a file) always are; a store entry is when it does
    not carry the store's signature (_signing.foreign_reason)."""
    if source == "data":
        return "it was read from a file, not from this store"
    return _signing.foreign_reason(signature, meta)


def _restore_room(snap):
    """The warning of a checkpoint whose state would not restore in this interpreter's heap
    (load.streamed.restore_room over its size and largest group), else None."""
    return _streamed.restore_room(snap.size, max((g.bytes or 0 for g in snap.groups), default=0))


def _cell_meta(cell):
    """The cell that led to a checkpoint, as stored in meta.cell."""
    if not isinstance(cell, dict):
        raise TypeError(f"cell= takes a dict like {{'executionCount': 7, 'firstLine': 'df = load()', "
                        f"'timeMs': 1700000000000}}; got {cell!r}")
    out = {}
    if cell.get("executionCount") is not None:
        out["executionCount"] = int(cell["executionCount"])
    if cell.get("firstLine") is not None:  # given its first line or its source: the first that says something
        out["firstLine"] = next((s.strip() for s in str(cell["firstLine"]).splitlines() if s.strip()), "")[:200]
    out["timeMs"] = int(cell["timeMs"]) if cell.get("timeMs") is not None else int(time.time() * 1000)
    return out


# ---- per-namespace state ----

class Space:
    """What the kernel keeps of one namespace: its recorder, the change tracker of its last
    checkpoint (and the store it went to), and the names of the automatic points it took."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.recorder = None
        self.tracker = None
        self.tracker_store = None
        self.own_points = []

    def attached(self):
        return self.recorder is not None and self.recorder._shell is not None


class KernelSession:
    """This kernel's state and its two pipelines (see the module docstring)."""

    OWN_POINTS = 10_000  # names of own points remembered per namespace: far more than retention keeps

    def __init__(self):
        self.store = None
        self.notebook = self.notebook_label = None
        self.auto = True
        self.shadow_budget = 256 << 20
        self._spaces = OrderedDict()  # id(namespace) -> Space, least recently used first

    # -- state --

    def space(self, namespace=None, create=True):
        """The Space of `namespace` (default: the user namespace); None if unknown and not
        `create`."""
        ns = default_namespace() if namespace is None else namespace
        found = self._spaces.get(id(ns))
        if found is not None and found.namespace is ns:
            self._spaces.move_to_end(id(ns))
            return found
        if not create:
            return None
        if len(self._spaces) >= MAX_SPACES:
            old = next((k for k, s in self._spaces.items() if not s.attached()), None)
            if old is not None:
                del self._spaces[old]
        made = self._spaces[id(ns)] = Space(ns)
        return made

    def tracker(self, store, namespace=None):
        """The change tracker of this namespace's checkpoints into `store` (made on first use;
        only the TRACKED namespaces used last keep theirs)."""
        space = self.space(namespace)
        if space.tracker is None or space.tracker_store is not store:
            space.tracker, space.tracker_store = _tracker.Tracker(), store
        for old in [s for s in self._spaces.values() if s.tracker is not None][:-TRACKED]:
            old.tracker = old.tracker_store = None
        return space.tracker

    def forget_changes(self, namespace=None):
        """The next checkpoint of `namespace` writes every record (restore calls it)."""
        space = self.space(namespace, create=False)
        if space is not None:
            space.tracker = space.tracker_store = None

    def took_point(self, name, namespace=None):
        names = self.space(namespace).own_points
        names.append(name)
        del names[:-self.OWN_POINTS]

    def own_points(self, namespace=None):
        space = self.space(namespace, create=False)
        return frozenset(space.own_points if space is not None else ())

    def restore_choice(self, entries, namespace=None):
        return _timeline.restore_choice(entries, self.own_points(namespace))

    def set_store(self, store):
        """Use `store` for checkpoint()/restore()/...: a JS store (JsProxy), a Python object
        with the same async methods, or None to go back to the default."""
        self.store = _stores.as_store(store)
        return self.store

    async def get_store(self):
        """The store in use (resolving the default on first call)."""
        if self.store is None:
            self.store = await _stores.default_store()
        return self.store

    def set_notebook(self, path, label=None):
        """Tie later checkpoints to the notebook at `path` (None: to no notebook): checkpoint()
        without `notebook=` and the magics use it; `meta.notebook` is what the JupyterLite
        sidebar and its restore offer select by (the extension sets it when a kernel starts, to
        the notebook's id, which survives renames). `label`: what a person calls the notebook
        (its path), which the magics and the messages show instead of an id (default: `path`)."""
        if path is not None and (not isinstance(path, str) or not path):
            raise TypeError(f"set_notebook() takes a notebook path (a non-empty str) or None; "
                            f"got {path!r}")
        self.notebook, self.notebook_label = path, path if label is None else str(label)
        return path

    def label_of(self, notebook):
        """How a person knows `notebook`: its label when it is the one set, else itself."""
        return self.notebook_label if notebook is not None and notebook == self.notebook else notebook

    def get_notebook(self):
        """The notebook path set by set_notebook(), or None."""
        return self.notebook

    async def _store_or_fail(self, report):
        try:
            return await self.get_store()
        except Exception as exc:
            store_failure(report, exc)
            return None

    # -- checkpoint --

    async def checkpoint(self, name=None, *, namespace=None, names=None, notebook=None,
                         progress=None, replay=True, recompute_large=False, cell=None,
                         auto=False, incremental=True, series=None):
        """Snapshot the namespace into the store as `name`. Without a name the kernel names it:
        `<notebook> <UTC time>` when it is tied to a notebook (its label: the path), an
        automatic point `<notebook> [<count>] <time>`, or `<series> [<count>]` after a cell of
        a run named `series` (the CLI's run --history), else "checkpoint". progress(event):
        {"phase": "serialize", "done", "total", "names"} before each group, then {"phase":
        "store"}.
        With a recorded session, the history goes along and what cannot (or should not) be
        pickled is planned for replay on restore (`replay=False`: planned for nothing);
        `recompute_large` (True, or the cost model's options) also leaves out variables that are
        large to store and cheap to recompute by deterministic cells (report: replay.choices).

        cell: the cell that led to this state ({executionCount, firstLine, timeMs}), kept as
        `meta.cell` (the history timeline shows it). auto: an automatic checkpoint after a cell;
        nothing is done while this kernel has them turned off (`%autocheckpoint off`): the
        report then says `off`. Groups unchanged since this kernel's previous checkpoint to the
        store are not written again (`reuse` in the report; `incremental=False`: all are)."""
        t0 = time.perf_counter()
        notebook = self.notebook if notebook is None else notebook
        cell_meta = _cell_meta(cell) if cell is not None else None
        if name is None and (auto or notebook is not None or series):  # named after the notebook
            c = cell_meta or {}
            name = _timeline.point_name(series or self.label_of(notebook), c.get("executionCount"),
                                       c.get("timeMs") if auto else None, auto=auto or bool(series),
                                       stamp=not series)
        name = name or DEFAULT_NAME
        report = new_report("checkpoint", name=name, notebook=notebook, size=0, variables=[],
                            skipped=[], modules=[], walk=None, replay=None, reuse=None, off=False,
                            label=_timeline.point_label({"cell": cell_meta}))
        if bad_name(report, name):
            return report
        if auto and not self.auto:
            report["off"] = True
            report["warnings"].append("automatic checkpoints are off in this kernel "
                                      "(%autocheckpoint on turns them on again)")
            return report
        ns = default_namespace() if namespace is None else namespace

        def on_group(done, total, group):
            _emit(progress, phase="serialize", done=done, total=total, names=[*group])
            if done == total:
                _emit(progress, phase="store")
        if progress is None:  # nobody listens: no call per group (a point has a hundred)
            on_group = None

        # capture: the replay side decides what is left out, and brings the recorded cells
        plan = _replay_steps.prepare(ns, names, enabled=bool(replay), cost=recompute_large)
        history = manifest = None
        if plan is not None:
            history, manifest, names = plan.history, plan.manifest, (
                names if plan.names is None else plan.names)
        try:
            store = await self.get_store()
            if not _stores.has_record_api(store):  # a store with put/get/list/delete only
                snap = snapshot(namespace=ns, names=names, progress=on_group, history=history,
                                manifest=manifest)
                await store.put(name, snap.data, self._meta(snap, notebook, cell_meta, auto))
            else:
                snap = await self._write(store, name, ns, names=names, progress=on_group,
                                         history=history, manifest=manifest, notebook=notebook,
                                         cell_meta=cell_meta, auto=auto, incremental=incremental)
        except _stores.StoreError as exc:
            return store_failure(report, exc)
        if auto:  # one of this kernel's own points: never what a restore without a name picks
            self.took_point(name, ns)
        total = _ms(t0)
        d = snap.to_dict()
        report.update(size=snap.size, skipped=d["skipped"], modules=d["modules"], walk=d["walk"],
                      random_state=list(getattr(snap, "random_state", [])),
                      variables=snap.variable_rows(), reuse=getattr(snap, "reuse", None),
                      replay=None if plan is None else plan.report())
        room = _restore_room(snap)  # a state too large for this heap says so now
        if room is not None:
            report["warnings"].append(room)
        report["timings"] = {"serialize_ms": snap.ms, "store_ms": max(0.0, total - snap.ms),
                             "total_ms": total}
        report.detail = snap
        return report

    async def _write(self, store, name, ns, *, names=None, progress=None, history=None,
                     manifest=None, notebook=None, cell_meta=None, auto=False, incremental=True):
        """Group, write and send the records, finish the entry, commit: the commit under the
        writer lock of `name`, so two kernels saving one name save one after the other. The
        lock is taken while the records are made (they are content-addressed: only the commit
        needs it). A store that checks at its commit the records an entry names
        (checks_at_commit: the IndexedDB store) is not asked first which remembered ones it
        still holds, and writes the last new records in the commit's own transaction: a point
        is one transaction. If one it was not asked about is gone, the point is made again
        once, after asking."""
        locking = await _lock_meanwhile(store, name)
        at_commit = getattr(store, "checks_at_commit", False) is True
        try:
            reuse = await self._reuse(store, ns, ask=not at_commit) if incremental else None
            for attempt in (1, 2):
                stream = SnapshotStream(ns, names, progress, history, manifest, reuse=reuse)
                head, records, tail, sent, *held_back = await _stores.send_records(
                    store, stream, hold=at_commit)
                snap = stream.snapshot
                entry = {"head": head, "records": records, "tail": tail,
                         "meta": self._meta(snap, notebook, cell_meta, auto)}
                try:
                    await locking  # (a task: awaited again, it gives its result again)
                    if at_commit:
                        batch, at = held_back[0]
                        keys = await store.commit(name, entry, records=batch)
                        for i, key in zip(at, keys):
                            records[i]["key"] = key
                    else:
                        await store.commit(name, entry)
                except _stores.StoreError as exc:
                    await _stores.give_back(store, sent)
                    if not (at_commit and reuse is not None and attempt == 1
                            and exc.code == "missing-record"):
                        raise
                    # a remembered record is gone (deleted elsewhere, evicted, damaged): ask
                    reuse = await self._reuse(store, ns, ask=True)
                    continue
                except BaseException:
                    await _stores.give_back(store, sent)
                    raise
                break
            if reuse is not None:
                await reuse.committed(store, name, stream.record_count, records)
        finally:
            await _release_when_taken(locking)
        return snap

    async def _reuse(self, store, ns, ask=True):
        """Change detection for this checkpoint (None when the store cannot take part).
        `ask`: the store is asked which remembered records it still holds (and pins them)."""
        if not all(callable(getattr(store, m, None)) for m in ("has_records", "get_entry")):
            return None
        # a delete since the last checkpoint (here or in a page of this origin) may have freed
        # remembered records: the store is asked first, instead of finding one gone at the commit
        # and the checkpoint being made again
        deleted = getattr(store, "take_deleted", None)
        ask = ask or (deleted is not None and deleted())
        return await _tracker.prepare(store, self.tracker(store, ns), self.shadow_budget, ask=ask)

    @staticmethod
    def _meta(snap, notebook, cell_meta, auto):
        """The entry's metadata, from the finished snapshot. Unless it is an automatic point,
        `keep`: retention never removes a checkpoint a person asked for."""
        meta = checkpoint_meta(snap.names, snap.skipped, snap.size, notebook=notebook)
        room = _restore_room(snap)  # kept with it: list, %checkpoints and hosts say it later
        if room is not None:
            meta["restoreWarning"] = room
        if cell_meta is not None:
            meta["cell"] = cell_meta
        if auto:
            meta["auto"] = True
        else:
            meta["keep"] = True
        return meta

    # -- restore --

    async def restore(self, name=None, *, data=None, namespace=None, trust=False,
                      notebook=None, progress=None, replay=True, data_only=False, at=None,
                      adopt=False):
        """Restore checkpoint `name` from the store (default: of `notebook` when given, the
        newest that is not one of this kernel's own automatic points, nor empty: a checkpoint a
        person saved, or the last state of the previous kernel — never the point a fresh kernel
        took after its first cell; with `at`, the newest of `notebook` taken after the cell
        executed as `In [at]`), or the container bytes `data`, into the namespace (default: the
        user's). Every record read from the store is checked against its content key first.
        A foreign checkpoint (bytes given, or a store entry this store did not sign: an import,
        another browser's) restores nothing unless `trust` (the person saw
        report["trust"]["imports"] and confirmed) or `data_only` (plain data types only);
        `adopt` with `trust` then signs that store entry as this store's own (report "adopted").
        Records that are damaged, refused (deny-listed or unknown globals, unless `trust`) or
        that need one of those are problems; the others restore. Then what the checkpoint
        planned for replay is recomputed by re-running its cells (`replay=False`: not; a
        checkpoint from elsewhere only with `trust`; never with `data_only`, which runs no
        code). `ok` is true when everything came back."""
        t0 = time.perf_counter()
        ns = default_namespace() if namespace is None else namespace
        report = new_report("restore", name=name, source="data" if data is not None else "store",
                            size=0, restored=[], recomputed=[], modules=[], skipped=[],
                            inspection=None, replay=None, trust=None, adopted=False,
                            streamed=False)
        meta, mismatched = {}, []
        foreign = foreign_reason("data") if data is not None else None
        if data is None:  # read
            _emit(progress, phase="read")
            if at is not None:
                name = report["name"] = await self._point(report, notebook, at)
                if name is None:
                    return report
            entry = await self._read(report, name, notebook, ns, stream=True)
            if entry is None:
                return report
            data, meta, mismatched = entry["bytes"], entry["meta"], entry["mismatched"]
            report["streamed"] = isinstance(data, _streamed.Streamed)
            foreign = foreign_reason("store", meta, entry["signature"])  # judge provenance
        data = _jsbytes.as_buffer(data)
        # (len() of a Streamed could not say 2 GiB and more: Pyodide's sizes are 32-bit)
        report["size"] = data.size if report["streamed"] else len(data)
        report["timings"]["read_ms"] = _ms(t0)
        _emit(progress, phase="load")
        t1 = time.perf_counter()
        self.forget_changes(ns)  # the next checkpoint is written whole
        try:  # inspect, judge the imports, load
            rep = load_snapshot(data, namespace=ns, trust=trust, data_only=data_only,
                                foreign=foreign or False)
        except CheckpointError as exc:
            info = exc.inspection or {}
            err = info.get("error") or {}
            report["inspection"] = exc.inspection
            report["timings"].update(load_ms=_ms(t1), total_ms=_ms(t0))
            return fail(report, "damaged", str(exc), names=meta.get("names") or (),
                        code=err.get("code"), offset=err.get("offset"))
        report["timings"].update(load_ms=_ms(t1), total_ms=_ms(t0))
        report.detail = rep
        info = rep.inspection or {}
        where = {n: (r, i == 0) for r in info.get("records") or [] for i, n in enumerate(r["names"])}
        report["restored"] = [
            {"name": n, "type": type_name(ns.get(n)), "serializer": where[n][0].get("serializer"),
             "record": where[n][0].get("index"),
             "bytes": where[n][0].get("length") if where[n][1] else None}
            if n in where else {"name": n, "type": type_name(ns.get(n))}
            for n in rep.restored]
        report["problems"] = key_problems(rep.problems(), mismatched)
        # damage inside the store: marked, repaired by the next checkpoint of the same values
        await _stores.mark_damaged(self.store, [m["key"] for m in mismatched])
        report.update(ok=rep.ok and not mismatched, modules=rep.modules, skipped=rep.skipped,
                      random_state=list(getattr(rep, "random_state", [])),
                      inspection=info, warnings=[*rep.warnings], trust=rep.trust)
        if foreign and trust and adopt and report["source"] == "store":
            await self._adopt(report)
        # replay: only under the same trust decision as unpickling
        permitted, why_not = _replay_steps.replay_permission(trust, foreign,
                                                                  data_only=data_only)
        outcome, section, warnings = await _replay_steps.replay_after_restore(
            rep.manifest, rep.history, ns, permitted=permitted, why_not=why_not,
            enabled=bool(replay))
        report["warnings"].extend(warnings)
        _replay_steps.restore_fields(report, outcome, section, ns)
        report["timings"]["total_ms"] = _ms(t0)
        return report

    def recorder(self, namespace=None, create=False):
        """The session recorder of `namespace` (None if there is none and not `create`)."""
        from ..replay.recorder import Recorder
        space = self.space(namespace, create=create)
        if space is None:
            return None
        if space.recorder is None and create:
            space.recorder = Recorder(space.namespace)
        return space.recorder

    def stop_recording(self, namespace=None):
        space = self.space(namespace, create=False)
        rec = None if space is None else space.recorder
        if rec is not None:
            rec.detach()
            space.recorder = None
        return rec is not None

    async def _adopt(self, report):
        """Sign the restored store entry as this store's own (the person confirmed it)."""
        store = await self._store_or_fail(report)
        if store is None or not callable(getattr(store, "sign", None)):
            report["warnings"].append("this checkpoint store cannot sign checkpoints: it stays foreign")
            return
        try:
            report["adopted"] = bool(await store.sign(report["name"]))
        except _stores.StoreError as exc:
            report["warnings"].append(f"could not sign the checkpoint as this store's own: {exc}")

    async def _point(self, report, notebook, at):
        """The name of the newest checkpoint (of `notebook`) taken after cell `In [at]`, or
        None with a `not-found` problem."""
        store = await self._store_or_fail(report)
        if store is None:
            return None
        try:
            entry = _timeline.find_point(await store.list(notebook=notebook), at)
        except _stores.StoreError as exc:
            store_failure(report, exc)
            return None
        if entry is None:
            fail(report, "failed", f"no checkpoint{_of(notebook)} was taken after cell [{at}]",
                 code="not-found")
            return None
        return entry["name"]

    async def _read(self, report, name, notebook, namespace=None, zero=True, stream=False):
        """The named checkpoint as _stores.read_verified gives it — without a name, the one
        the restore choice picks for `namespace` — or None with a problem. `stream`: a large
        checkpoint comes as a _streamed.Streamed in "bytes", read and inspected record by
        record (restore in bounded memory); one that cannot be read that way (a record
        damaged or missing) is read whole, which reports it."""
        store = await self._store_or_fail(report)
        if store is None:
            return None
        try:
            if name is None:
                entries = await store.list(notebook=notebook)
                if not entries:
                    fail(report, "failed", f"there is no checkpoint{_of(notebook)} to restore yet; "
                         "take one first", code="not-found")
                    return None
                name = report["name"] = self.restore_choice(entries, namespace)["name"]
            elif bad_name(report, name):
                return None
            entry = await self._read_streamed(store, name) if stream else None
            if not isinstance(entry, dict) or "bytes" not in entry:  # the entry, or None
                entry = await _stores.read_verified(store, name, zero, entry=entry)
        except _stores.StoreError as exc:
            from .storage_status import as_lost  # records gone from the browser's storage
            store_failure(report, as_lost(exc, name, store))
            return None
        if entry is None:
            fail(report, "failed", not_found(name), code="not-found")
        return entry

    @staticmethod
    async def _read_streamed(store, name):
        """read_verified's answer with a _streamed.Streamed as "bytes" (inspected); else the
        store's entry already read (small, or not readable that way: damaged, missing a
        record), for read_verified, or None."""
        if not _stores._reads_records(store):
            return None
        entry = await store.get_entry(name)
        if entry is None or not _streamed.streams(store, entry.get("size") or 0, entry.get("records") or ()):
            return entry
        got = _streamed.Streamed(store, entry)
        try:
            await got.inspect()
        except _streamed.Unread as exc:
            if got.size > _streamed.WHOLE_LIMIT:  # (Pyodide: 2 GiB and more)
                raise _streamed.unreadable(name, got.size, exc) from None
            return entry
        return {"bytes": got, "meta": got.meta, "signature": got.signature, "mismatched": []}

    # -- list, delete, export, inspect --

    async def list(self, notebook=None, namespace=None):
        """The checkpoints in the store (of `notebook` when given), newest first, each with its
        point `label` ("[7] df = load()"); `restore_choice`: the name a restore without a name
        brings back into `namespace` (the user's by default); `default_name`: what a
        checkpoint without a name is called."""
        t0 = time.perf_counter()
        report = new_report("list", notebook=notebook, checkpoints=[], restore_choice=None,
                            default_name=DEFAULT_NAME)
        store = await self._store_or_fail(report)
        if store is None:
            return report
        try:
            entries = await store.list(notebook=notebook)
        except _stores.StoreError as exc:
            return store_failure(report, exc)
        report["checkpoints"] = [{**e, "label": _timeline.point_label(e.get("meta"))}
                                 for e in entries]
        from .storage_status import storage_status  # the browser's storage only
        if (storage := await storage_status(store)) is not None:
            report["storage"] = storage
        choice = self.restore_choice(entries, namespace)
        report["restore_choice"] = None if choice is None else choice["name"]
        report["timings"]["total_ms"] = _ms(t0)
        return report

    async def delete(self, name=None, *, names=None):
        """Delete checkpoint `name`, or each of `names` (a host deleting several: the CLI's
        `rm A B`); each name that is not stored is a `not-found` problem. `deleted`: true
        when every name asked was deleted; `names`: the names asked."""
        names = [name] if names is None else [*names]
        report = new_report("delete", name=names[0] if names else None, names=names,
                            deleted=False)
        if not names or any(bad_name(report, n) for n in names):
            return report if names else fail(report, "failed", "no checkpoint name given",
                                             code="invalid-name")
        store = await self._store_or_fail(report)
        if store is None:
            return report
        for n in names:
            try:
                if not await store.delete(n):
                    fail(report, "failed", not_found(n), code="not-found")
            except _stores.StoreError as exc:
                return store_failure(report, exc, names=[n])
        report["deleted"] = report["ok"]
        return report

    async def export(self, name):
        """The stored container of `name` as report["data"] (bytes: the one field that is not
        JSON; `call` leaves it out) with its size and metadata; a record that does not match its
        content key is a problem and nothing is exported."""
        report = new_report("export", name=name, size=0, meta=None)
        entry = await self._read(report, name, None)
        if entry is None:
            return report
        if entry["mismatched"]:
            report["problems"] = key_problems([], entry["mismatched"])
            report["ok"] = False
            return report
        report.update(size=len(entry["bytes"]), meta=entry["meta"], data=bytes(entry["bytes"]))
        return report

    async def inspect(self, name=None, *, data=None):
        """What a checkpoint holds, from the C core's validator alone (nothing is unpickled):
        header fields, every record (names, serializer, offsets, state, the globals it would
        import) and the problems in file order: damaged records, and records restore would
        refuse (`calls`). `ok`: the checkpoint is whole."""
        t0 = time.perf_counter()
        report = new_report("inspect", name=name, source="data" if data is not None else "store",
                            size=0, whole=False, header={}, records=[], meta=None)
        signature, mismatched = None, []
        if data is None:
            entry = await self._read(report, name, None, zero=False)  # the bytes as read
            if entry is None:
                return report
            data, signature, mismatched = entry["bytes"], entry["signature"], entry["mismatched"]
            report["meta"] = entry["meta"]
        data = _jsbytes.as_buffer(data)
        if len(data) == 0:
            return fail(report, "damaged", EMPTY, code="empty")
        info, records, judgement = inspection(data)
        report.update(size=len(data), whole=bool(info.get("ok")) and not mismatched,
                      records=records,
                      header={k: info.get(k) for k in ("format_version", "format_minor", "producer",
                                                       "python", "created_ms", "size")})
        foreign = foreign_reason(report["source"], report["meta"], signature)
        report["trust"] = {"provenance": "foreign" if foreign else "yours",
                           "foreign_reason": foreign, "imports": judgement.listing(),
                           "modules": judgement.bindings}
        report["problems"] = key_problems(inspection_problems(info, judgement=judgement),
                                                 mismatched)
        report["ok"] = report["whole"]
        report["timings"]["total_ms"] = _ms(t0)
        return report


SESSION = KernelSession()
