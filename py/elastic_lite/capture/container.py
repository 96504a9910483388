"""snapshot(): the namespace -> one checkpoint container, group by group, streamed.

Per group: `begin_record` marks the core's sink, cloudpickle streams into it; if it raises
part-way, `abort_record` rewinds the sink to the mark (the partial bytes are gone, not
copied around) and dill writes the group instead. If dill fails too, the group is split
into single variables (each tried the same way, so one bad variable does not take its
neighbours down; aliasing between them is then lost and the report says so), and what
still fails is skipped with its type and the exception message. Nothing here aborts the
checkpoint except a bug in the core itself.

Large contiguous buffers (numpy arrays, pandas blocks, any PickleBuffer of at least
`BUFFER_THRESHOLD` bytes, and bytes/bytearray variables that large) go out of band (pickle
protocol 5's `buffer_callback`): the core records their length and CRC-32, their bytes stay
where they are and are handed on as memoryviews, never copied into the core.

`SnapshotStream` is the loop itself: iterating it yields the checkpoint file in parts, in
file order, as records are committed (the core keeps only what was not handed out yet):

    ("head", bytes)                      the file header
    ("record", [piece, ...])             one record: bytes-like pieces to write one after
                                         the other (the core's bytes, and memoryviews of
                                         out-of-band buffers: do not hold them past use)
    ("tail", bytes)                      index and footer

With `reuse` (change detection into a store, see changes/tracker.py) a group unchanged since the
previous checkpoint comes out as ("stored", key, length) instead of its bytes: the record the
store already holds. Its stream is then first written into a _Draft (hashed, kept out of the
core) and only copied into the core when it turns out new.

Afterwards `.snapshot` is the report (a Snapshot whose `.data` is None). `snapshot()` drives
it into memory; the kernel session drives it into a store record by record.
"""

import gc
import itertools
import json
import pickle
import platform
import time

from .. import _core
from . import random_state as _random_state
from ..changes import fast_path as _fast_path
from ..trust import made_here as _made_here
from ..changes.tracker import (NO_SHADOW_ROOM, KnownRecord, check_content, proof_of, match_key,
                               stream_hasher)
from .selection import capture, default_namespace
from .groups import DEEP_LEVELS, PICKLE_DEPTH, find_groups, is_notebook_def
from .picklers import (CloudPickler, DillPickler, Discard, NotPlain, PlainCheck,
                       PlainPickler, RefusedOnRestore, plain_allowed, refused_type, too_deep)
from .._report import GroupReport, Snapshot, type_name
from .._version import __version__

MANIFEST = "__elastic_lite_manifest__"
HISTORY = "__elastic_lite_history__"
MANIFEST_VERSION = 2  # 2: a JSON record of kind "manifest" (1: a plain pickle, format 1.0)
BUFFER_THRESHOLD = 64 * 1024  # smaller buffers stay in the stream (see benchmarks)
TAKE_BYTES = 4 << 20  # hand records out once this much has been written since last time

_SERIALIZERS = ("cloudpickle", "dill")
_PLAIN_FIRST = ("pickle",) + _SERIALIZERS  # "pickle" declining is not a failure (_pickling)
POOL_BYTES = 16 * 1024  # plain-data groups up to this size share one record (see _Pool)
POOL_MIN = 8  # ... when there are at least this many of them
POOL_GROUPS = 32  # groups per shared record (what a change to one of them rewrites)
_OURS = frozenset({"version", "modules", "skipped", "types", "groups", "writable_buffers",
                   "random"})


def _reason(exc):
    msg = str(exc).strip().splitlines()
    if isinstance(exc, RefusedOnRestore) and msg:  # says itself what and why
        return msg[0]
    return f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


class _Draft:
    """The file every pickler of a snapshot writes a record's stream into.

    Without change detection it forwards everything to the writer's open record, as it comes.
    With it (`hashing`), it also digests the stream (BLAKE2b-128) and keeps the record out of
    the core until it is known to be new: the stream's first HOLD_BYTES stay here (past that
    they stream into the core: memory stays bounded) and out-of-band buffers are only listed,
    each compared with what the previous record's same buffer held (changes.tracker.check_content).
    A record found unchanged then costs no copy into the core at all (an aborted one, if it
    was long), and a new one is written as before."""

    HOLD_BYTES = 4 << 20

    def __init__(self, writer, hashing):
        self.writer = writer
        self.hashing = hashing
        self.begin(())

    def begin(self, names, previous=(), room=NO_SHADOW_ROOM):
        """A new attempt at the record of `names`; `previous`: the Content of each buffer of
        the previous record of that group, `room`: the shadow budget new copies may take."""
        self.names = names
        self.previous = previous
        self.room = room
        self.size = 0  # stream bytes of this attempt
        self.buffer_bytes = 0
        self.writable = 0  # buffers restore must hand back writable (arrays, not bytes)
        self.buffers = []  # (memoryview, same as the previous record's, Content) when hashing
        self.chunks = []
        self.held = 0
        self.open = False
        self.hash = None
        if self.hashing:
            self.hash = stream_hasher()
        elif names:
            self._open()

    def _open(self):
        self.writer.begin_record(self.names)
        self.open = True
        for chunk in self.chunks:
            self.writer.write(chunk)
        self.chunks = []

    def write(self, buf):
        if self.hash is None:
            n = self.writer.write(buf)
        else:
            mv = memoryview(buf).cast("B")
            n = mv.nbytes
            self.hash.update(mv)
            if self.open:
                self.writer.write(mv)
            else:  # a copy unless immutable: a __reduce__ later in this dump may change it
                self.chunks.append(buf if type(buf) is bytes else bytes(mv))
                self.held += n
                if self.held > self.HOLD_BYTES:
                    self._open()
        self.size += n
        return n

    def add_buffer(self, raw):
        if self.hash is None:
            self.writer.add_buffer(raw)
        else:
            i = len(self.buffers)
            same, content = check_content(
                raw, self.previous[i] if i < len(self.previous) else None, self.room)
            self.buffers.append((raw, same, content))
        self.buffer_bytes += raw.nbytes
        self.writable += not raw.readonly

    def match_key(self, serializer):
        return match_key(serializer, self.size, self.hash.digest(),
                         [raw.nbytes for raw, _, _ in self.buffers])

    def same_buffers(self):
        """Every buffer holds what the previous record's same buffer held (and no more)."""
        return len(self.buffers) == len(self.previous) and all(s for _, s, _ in self.buffers)

    def contents(self):
        return tuple(c for _, _, c in self.buffers)

    def commit(self, serializer):
        """Writes the record into the core (what is not there yet); returns its index."""
        if not self.open:
            self._open()
        for raw, _, _ in self.buffers:
            self.writer.add_buffer(raw)
        index = self.writer.end_record(serializer)
        self.begin(())
        return index

    def abort(self, keep_contents=False):
        """Drops the attempt (a failed serializer, or a record found unchanged: then the
        contents it looked at stay counted, they are remembered)."""
        if self.open:
            self.writer.abort_record()
        if not keep_contents:
            for _, _, content in self.buffers:
                self.room.give_back(content)
        self.begin(())


class _Picklers:
    """One CloudPickler for the whole snapshot (a new one only after a failure, whose
    half-done state we do not trust); dill's pickler is made when a group needs it. Both
    write into one _Draft and send buffers of at least `threshold` bytes out of band."""

    def __init__(self, writer, namespace, threshold, hashing=False):
        self.writer = writer
        self.namespace = namespace
        self.threshold = threshold
        self.draft = _Draft(writer, hashing)
        self.cloud = None
        self.plain = None
        self.seeds = _Seeds(None, {})  # the defs each group refers to (the plain pickler's)
        self.writable = 0  # out-of-band buffers restore must hand back writable (arrays)

    def buffer_callback(self, buf):
        """pickle's buffer_callback: False = out of band (the writer records it)."""
        try:
            raw = buf.raw()
        except BufferError:  # not contiguous: pickle writes it in the stream
            return True
        if raw.nbytes < self.threshold:
            return True
        self.draft.add_buffer(raw)
        return False

    def get(self, serializer, refs):
        if serializer == "pickle":
            if self.plain is None:
                self.plain = PlainPickler(self.draft, self.namespace,
                                          buffer_callback=self.buffer_callback)
            self.plain.begin_group(refs, self.seeds.of(self.draft.names))
            return self.plain
        if serializer == "dill":
            return DillPickler(self.draft, self.namespace, refs,
                               buffer_callback=self.buffer_callback)
        if self.cloud is None:
            self.cloud = CloudPickler(self.draft, self.namespace, refs,
                                      buffer_callback=self.buffer_callback)
        else:
            self.cloud.begin_group(refs)
        return self.cloud

    def close(self):
        """Drops the picklers: their memo holds the last group's objects (and a pickler is
        held in a reference cycle, through the out-of-band stand-in each group sets on it),
        which would otherwise stay referenced until the cyclic GC runs: memory kept, and a
        next walk reading them as shared (see groups' refcount shortcuts)."""
        self.cloud = self.plain = None

    def failed(self, serializer):
        if serializer == "cloudpickle":
            self.cloud = None
        elif serializer == "pickle":
            self.plain = None


def _write_group(writer, picklers, names, variables, defs, reuse=None,
                 serializers=_SERIALIZERS):
    """Write one group; returns (GroupReport or None, [skipped entries]).

    With `reuse` (change detection, see _history), a group unchanged since the previous
    checkpoint is added as a stored record instead: without pickling when proof_of proves
    it, else after pickling when the record's match_key is the previous one."""
    own = set(names)
    refs = {i: n for i, n in defs.items() if n not in own}
    values = tuple(variables[n] for n in names)
    t0 = time.perf_counter()
    prev = proof = held = content = None
    if reuse is not None:
        prev = reuse.previous(names)
        proof, held, content, same = proof_of(values, prev, reuse.room)
        if same:
            return _reuse(writer, picklers, reuse, prev, proof, held, values, t0, True,
                          content=content), []
    blobs = {}
    stream_values = tuple(_out_of_band(v, picklers.threshold, blobs) for v in values)
    draft = picklers.draft
    # the buffers of a group with a proof are not copied: the proof looks at its values
    room = reuse.room if reuse is not None and proof is None else NO_SHADOW_ROOM
    failures = []
    rewound = 0
    for serializer in serializers:
        draft.begin(names, prev.buffers if prev is not None else (), room)
        try:
            pickler = picklers.get(serializer, refs)
            pickler.el_out_of_band = lambda v: _out_of_band(v, picklers.threshold, blobs)
            pickler.dump(stream_values)
        except Exception as exc:  # any failure of a serializer is a reason to try the next
            picklers.failed(serializer)
            rewound += draft.size + draft.buffer_bytes
            draft.abort()
            if serializer != "pickle":  # the plain pickler declining is no failure
                failures.append(f"{serializer}: {_reason(exc)}")
            continue
        size, writable = draft.size + draft.buffer_bytes, draft.writable
        sig = draft.match_key(serializer) if reuse is not None else None
        if prev is not None and sig == prev.match_key and draft.same_buffers():
            buffers = draft.contents()
            draft.abort(keep_contents=True)
            return _reuse(writer, picklers, reuse, prev, proof, held, values, t0, False,
                          buffers=buffers, content=content), []
        buffers = draft.contents() if reuse is not None else ()
        index = draft.commit(serializer)
        picklers.writable += writable
        report = GroupReport(
            names=list(names),
            types=[type_name(v) for v in values],
            serializer=serializer,
            bytes=size,
            ms=(time.perf_counter() - t0) * 1000.0,
            fallback="; ".join(failures) or None,
            rewound_bytes=rewound,
        )
        if getattr(pickler, "el_copied_views", None):
            report.note = _copied_views_note(pickler.el_copied_views)
        if reuse is not None:
            reuse.wrote(index, KnownRecord(tuple(names), sig, proof, held, report, writable,
                                    buffers=buffers, content=content))
        return report, []
    reason = failures[-1].split(": ", 1)[1] if failures else "unknown"
    return None, [{"name": n, "type": type_name(v), "reason": reason,
                   "attempts": list(failures)} for n, v in zip(names, values)]


def _copied_views_note(types):
    """The report's note for ndarray-subclass views saved as copies (_pickling)."""
    return (f"a view through {', '.join(sorted(set(types)))} (a type with its own pickling) is "
            "saved as a copy: after restore, writes to it no longer show in the array it views, "
            "nor the other way round")


def _reuse(writer, picklers, reuse, prev, proof, held, values, t0, proven, buffers=None,
           content=None):
    """Adds `prev`'s stored record in place of the group; its report says so."""
    index = writer.add_stored_record(prev.length)
    reuse.reused(index, prev, proof, held, proven, buffers, content)
    picklers.writable += prev.writable
    old = prev.report
    report = GroupReport(names=list(old.names), types=list(old.types) if proven == "untouched"
                         else [type_name(v) for v in values],  # untouched: the same objects
                         serializer=old.serializer, bytes=old.bytes,
                         ms=(time.perf_counter() - t0) * 1000.0)
    report.reused = True
    how = {"untouched": "(no code named it since)", True: "(proven without pickling)",
           False: "(same bytes)"}[proven]
    report.note = f"unchanged since the previous checkpoint {how}: not written again"
    return report


class _Blob:
    """A large bytes/bytearray variable, pickled as `bytes(buffer)` with its buffer out of
    band: pickle never offers bytes objects to buffer_callback, and copying 50 MiB into the
    core and out again is most of what saving them costs."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __reduce_ex__(self, protocol):
        return (type(self.value), (pickle.PickleBuffer(self.value),))


def _out_of_band(value, threshold, blobs):
    """`value`, or a _Blob for a large bytes/bytearray (one per object: names bound to the
    same bytes stay one object)."""
    if type(value) not in (bytes, bytearray) or len(value) < threshold:
        return value
    blob = blobs.get(id(value))
    if blob is None:
        blob = blobs[id(value)] = _Blob(value)
    return blob


def _json_payload(value, what):
    """UTF-8 JSON bytes of `value` (already JSON text or bytes are taken as they are)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        raw.decode("utf-8")  # a clear UnicodeDecodeError rather than a record restore refuses
        return raw
    if isinstance(value, str):
        return value.encode("utf-8")
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON (dicts, lists, strings, numbers): {exc}") from None


class SnapshotStream:
    """The snapshot loop as an iterable of file parts (see the module docstring).

    history: the session's cells (JSON-able, or JSON text/bytes), saved as a record of kind
    "history". manifest: extra fields for the manifest (a JSON-able dict; the keys
    version/modules/skipped/types/groups are ours), or a function `manifest(groups, skipped,
    modules)` returning (them, the list of what stays skipped) once every group is written
    (the replay plan needs to know what was saved). buffer_threshold: bytes from which a PickleBuffer goes
    out of band. reuse: a changes.tracker.Reuse (change detection: groups unchanged since the
    previous checkpoint to the same store come out as ("stored", key, length) parts;
    `changes.tracker.prepare()` makes it), or None (every record written)."""

    def __init__(self, namespace=None, names=None, progress=None, history=None, manifest=None,
                 buffer_threshold=BUFFER_THRESHOLD, reuse=None):
        self.namespace = default_namespace() if namespace is None else namespace
        self.names = names
        self.progress = progress
        self.history = None if history is None else _json_payload(history, "history")
        self.extra = manifest if callable(manifest) else _manifest_fields(manifest)
        self.buffer_threshold = buffer_threshold
        self.reuse = reuse
        self.record_count = 0  # records in the container, once iterated
        self.snapshot = None
        self._started = False

    def __iter__(self):
        if self._started:
            raise RuntimeError("a SnapshotStream is iterated once; make a new one")
        self._started = True
        return _quietly(self._run())

    def _run(self):
        ns = self.namespace
        t_start = time.perf_counter()
        cap = capture(ns, self.names)
        random_state = _random_state.capture()
        defs = {}
        for name, value in cap.variables.items():
            if is_notebook_def(value, ns):
                defs.setdefault(id(value), name)
        value = None  # no reference of ours for the walk's refcount check (closed_except) to see
        reuse = self.reuse
        kept, variables = [], cap.variables
        if reuse is not None:  # the fast path: records no code touched since last time
            reuse.begin(ns, cap.variables)
            kept, reuse.slow_reason = reuse.untouched(ns)
            if kept:
                kept_names = {n for m in kept for n in m.names}
                variables = {n: v for n, v in cap.variables.items() if n not in kept_names}
        grouping = find_groups(variables, ns, defs, holders=(cap.variables,))
        if reuse is not None:
            reuse.def_refs = grouping.refs
        for group in grouping.winding:  # pickle may go deeper than the walk's levels
            own = set(group)
            if too_deep(tuple(cap.variables[n] for n in group), ns,
                        {i: n for i, n in defs.items() if n not in own}, PICKLE_DEPTH):
                grouping.deep.update(group)
        deep_skipped = _too_deep(grouping, cap.variables)
        writer = _core.Writer(producer=f"elastic-lite {__version__}",
                              python=platform.python_version(),
                              created_ms=int(time.time() * 1000))
        groups, skipped = [], list(cap.skipped) + deep_skipped
        picklers = _Picklers(writer, ns, self.buffer_threshold, hashing=reuse is not None)
        picklers.seeds = _Seeds(grouping, cap.variables)
        parts = _Parts(reuse)
        size = 0
        # The cyclic GC is paused while groups are written (pickling makes no cyclic
        # garbage; a full collection would rescan the notebook's whole heap), and running
        # whenever the stream hands parts out (the consumer's code runs then).
        gc_was_enabled = gc.isenabled()
        try:
            total = len(grouping.groups)
            pending = 0  # bytes written since the last take (counted here: asking the
            # core costs a call across to WebAssembly per group)
            gc.disable()
            try:  # the pooled plain-data groups first (one record), then the others
                pool = _Pool(ns, grouping.groups, cap.variables, defs, seeds=picklers.seeds)
            finally:
                if gc_was_enabled:
                    gc.enable()
            total += len(kept)
            done = 0
            for memo in kept:  # untouched: the stored record as it is
                if self.progress is not None:
                    self.progress(done, total, list(memo.names))
                done += 1
                gc.disable()
                try:
                    groups.append(_reuse(writer, picklers, reuse, memo, memo.proof, memo.held,
                                         [cap.variables[n] for n in memo.names],
                                         time.perf_counter(), "untouched"))
                finally:
                    if gc_was_enabled:
                        gc.enable()
            for group, serializers, pooled in pool.plan:
                if self.progress is not None:
                    self.progress(done, total, list(group))
                done += len(pooled) if pooled else 1
                gc.disable()
                try:
                    if pooled:
                        written = _write_pool(writer, picklers, pooled, cap.variables, defs,
                                              reuse)
                    else:
                        written = _write_or_split(writer, picklers, group, cap.variables, defs,
                                                  reuse, serializers)
                    for report, failed in written:
                        if report is not None:
                            groups.append(report)
                            pending += 0 if report.reused else report.bytes
                        skipped.extend(failed)
                finally:
                    if gc_was_enabled:
                        gc.enable()
                if pending >= TAKE_BYTES:
                    pending = 0
                    yield from parts.feed(writer.take())
            if self.progress is not None:
                self.progress(total, total, [])
            if callable(self.extra):  # the caller's fields, and what stays skipped
                fields, skipped = self.extra(groups, tuple(skipped), cap.modules)
                manifest = _manifest_fields(fields)
            else:
                manifest = dict(self.extra)
            manifest.update({
                "version": MANIFEST_VERSION,
                "modules": cap.modules,
                "skipped": [{k: s[k] for k in ("name", "type", "reason")} for s in skipped],
                "types": {n: t for g in groups for n, t in zip(g.names, g.types)},
                "groups": [{"names": g.names, "serializer": g.serializer} for g in groups],
                # restore copies a read-only container once only if some buffer must be
                # writable (an array); bytes values are copied out of it anyway
                "writable_buffers": picklers.writable,
                "random": random_state,  # the global generators' state (_random_state)
            })
            _json_record(writer, [MANIFEST], "manifest", _json_payload(manifest, "manifest"))
            if self.history is not None:
                _json_record(writer, [HISTORY], "history", self.history)
            picklers.close()
            yield from parts.feed(writer.finish(join=False), last=True)
            size = writer.size
            self.record_count = writer.record_count
        finally:
            picklers.close()
            writer.free()
        self.snapshot = Snapshot(data=None, groups=groups, skipped=skipped,
                                 modules=cap.modules, walk=grouping,
                                 ms=(time.perf_counter() - t_start) * 1000.0)
        self.snapshot.size = size
        self.snapshot.random_state = [_random_state.LABELS[k] for k in random_state]
        self.snapshot.reuse = None if reuse is None else dict(reuse.stats)


def _quietly(parts):
    """The parts of `parts`, computed with change tracking deaf (_fast_path.quiet): the code
    that runs meanwhile is ours (pickling may call a notebook's __reduce__), not a cell's;
    while the consumer has a part, it listens again."""
    while True:
        with _fast_path.quiet():
            try:
                part = next(parts)
            except StopIteration:
                return
        yield part


def _too_deep(grouping, variables):
    """Skipped entries for the groups holding a variable nested past DEEP_LEVELS levels
    (taken out of `grouping.groups`): pickling them would overflow the stack."""
    if not grouping.deep:
        return []
    deep = [g for g in grouping.groups if grouping.deep.intersection(g)]
    grouping.groups = [g for g in grouping.groups if not grouping.deep.intersection(g)]
    return [{"name": n, "type": type_name(variables[n]), "attempts": [],
             "reason": f"nested more than {DEEP_LEVELS} levels deep (a long chain of objects "
                       "such as a linked list, or lists within lists): pickling recurses once "
                       "per level and would overflow the stack (in Pyodide a fatal error that "
                       "ends the kernel). Store it flat (say, a list of nodes and the indices "
                       "they link to) to have it saved"
                       + ("" if n in grouping.deep else f"; it shares objects with "
                          f"{', '.join(sorted(grouping.deep.intersection(g)))}")}
            for g in deep for n in g]


def _manifest_fields(extra):
    """The caller's extra manifest fields, checked (JSON, none of ours)."""
    extra = dict(extra or {})
    clash = sorted(_OURS & set(extra))
    if clash:
        raise ValueError(f"manifest fields {clash} are written by snapshot itself; "
                         "choose other names")
    _json_payload(extra, "manifest")  # fail now, before any work
    return extra


def _write_or_split(writer, picklers, group, variables, defs, reuse=None,
                    serializers=_SERIALIZERS):
    """(report, skipped) of a group; if it fails as a whole, of each variable alone."""
    report, failed = _write_group(writer, picklers, group, variables, defs, reuse, serializers)
    if report is not None or len(group) == 1:
        yield report, failed
        return
    refused = _refused_members(picklers, group, variables, defs)
    rest = [n for n in group if n not in refused]
    if refused and rest:  # what a checked restore refuses, out; the others stay one group
        report, failed = _write_group(writer, picklers, rest, variables, defs, reuse,
                                      serializers)
        if report is not None:
            report.note = (f"saved without {sorted(refused)}, which a checked restore would "
                           "refuse (skipped): aliasing with them is not kept")
            yield report, failed
            yield None, [{"name": n, "type": type_name(variables[n]), "reason": why,
                          "attempts": []} for n, why in refused.items()]
            return
    for name in group:  # split: save what can be saved, each variable alone
        single, single_failed = _write_group(writer, picklers, [name], variables, defs, reuse,
                                             serializers)
        if single is not None:
            single.note = (f"saved alone: its group {group} failed as a whole, "
                           "so aliasing with the others is not kept")
        yield single, single_failed


def _refused_members(picklers, group, variables, defs):
    """{name: reason} of the variables of a failed group that hold an instance of a type a
    checked restore refuses (capture.picklers.RefusedOnRestore), found by pickling each alone into
    nothing (large buffers out of band: not copied)."""
    out = {}
    for name in group:
        refs = {i: n for i, n in defs.items() if n != name}
        pickler = CloudPickler(Discard(), picklers.namespace, refs,
                               buffer_callback=lambda buf: False)
        try:
            pickler.dump((variables[name],))
        except RefusedOnRestore as exc:
            out[name] = str(exc)
        except Exception:  # fails for another reason: the split below reports it
            pass
    return out


class _Pool:
    """Plain-data groups (builtin containers of atomic values: streams that import nothing)
    of at most POOL_BYTES, written as ONE record instead of one record each: a record costs
    calls into the core, and in a store a key and rows, whatever its size, and a notebook has
    many small variables. Only when there are POOL_MIN of them or more: below that the
    records saved cost little, and apart each keeps change detection per group. The pool
    comes first in the file (a truncated file keeps the small variables). Nothing is lost by
    pooling: the walk made groups that share nothing with each other, so one stream changes
    no aliasing; and a stream that imports nothing cannot be refused or miss a module on
    restore, so one record costs no isolation. `route` sends every other group on as before,
    to the plain pickler first (see _pickling) when that is allowed and the group holds
    nothing of the notebook's own."""

    def __init__(self, namespace, groups, variables, defs, limit=POOL_BYTES, seeds=None):
        self.limit = limit
        self.check = PlainCheck(namespace, limit)
        self.seeds = _Seeds(None, variables) if seeds is None else seeds
        # the plain pickler never raises RefusedOnRestore (reducer_override does): not when
        # the walk met a type a checked restore refuses
        self.plain = plain_allowed() and not self.seeds.refused
        routes = [(group, self.route(group, variables, defs)) for group in groups]
        pooled = [list(g) for g, serializers in routes if serializers is None]
        # what to write, in order: (names, serializers, pooled groups or None)
        if len(pooled) < POOL_MIN:  # too few to pay: each plain group its own record
            self.plan = [(g, r or _SERIALIZERS, None) for g, r in routes]
            return
        pools = [pooled[i:i + POOL_GROUPS] for i in range(0, len(pooled), POOL_GROUPS)]
        self.plan = ([([n for g in pool for n in g], ("pickle",), pool) for pool in pools]
                     + [(g, r, None) for g, r in routes if r is not None])

    def route(self, group, variables, defs):
        """None when the group is plain data small enough to pool, else the serializers to
        write it with."""
        values = tuple(variables[n] for n in group)
        if any(id(v) in defs for v in values):
            return _SERIALIZERS
        long = any(type(v) in _SIZED and len(v) > self.limit for v in values) or \
            self._too_big(values)
        try:  # a long container (never pooled) is judged by its first items
            self.check.size(tuple(_head(v) for v in values) if long else values)
        except NotPlain as exc:  # stopped at the first object that needs a reducer: the
            # plain pickler spares that call per object, unless the notebook's own are there
            # (but for a def of another group, or an instance of one: see PlainPickler)
            if not self.plain:
                return _SERIALIZERS
            return _PLAIN_FIRST if not exc.notebook or self.seeds.covers(group, exc.obj) \
                else _SERIALIZERS
        except Exception:  # plain data too big for the pool (or odd): as before (the plain
            return _SERIALIZERS  # pickler would spare nothing: builtins need no reducer)
        return _SERIALIZERS if long else None


    def _too_big(self, values):
        """True when the group's containers of more than _HEAD items, judged by their first
        items scaled to their lengths, would pickle to more than twice the pool's limit:
        never pooled, and not pickled whole (up to a 64 KiB frame) only to find that out. A
        wrong guess costs a record of its own, nothing else; below twice the limit the whole
        group is measured."""
        est = 0
        for v in values:
            if type(v) in _CONTAINERS and len(v) > _HEAD:
                head = _head(v)
                try:
                    est += self.check.size(head) * len(v) / len(head)
                except Exception:  # not plain data, or its head alone is too big: the full
                    return False  # check says which
                if est > 2 * self.limit:
                    return True
        return False


class _Seeds:
    """Which defs (notebook functions and classes bound to a top-level name) each group
    refers to by name, from the walk's edges (`Grouping.refs`): the plain pickler writes them
    as `_rebuild.ref(name)` without a Python call per object (capture.picklers.PlainPickler).
    None when the walk did not go to the end (truncated, or a variable proven without being
    walked): its edges are then a guess, and the group goes to cloudpickle as before.
    `refused`: the walk met a type a checked restore refuses (then no plain pickler at all:
    only our reducer_override says so, by raising RefusedOnRestore)."""

    def __init__(self, grouping, variables):
        self.grouping = grouping
        self.variables = variables
        self.refused = grouping is not None and any(
            refused_type(t) is not None for t in grouping.types)

    def of(self, names):
        """((def name, def), ...) the group `names` reaches in other groups; () if unknown."""
        g = self.grouping
        if g is None or g.truncated is not None or g.unwalked in names:
            return ()
        own = set(names)
        wanted = set()
        for n in names:
            wanted.update(g.refs.get(n, ()))
        return tuple((d, self.variables[d]) for d in sorted(wanted - own))

    def covers(self, names, obj):
        """True when `obj` (what stopped the plain check) is a def the group reaches in
        another group, or an instance of one."""
        seeded = {id(v) for _, v in self.of(names)}
        return id(obj) in seeded or id(type(obj)) in seeded


# Containers (and atomic values) longer than the pool's limit in bytes are never pooled
# (each item takes a byte at least): their first items say which pickler to try.
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_HEAD = 64


def _head(value):
    t = type(value)
    if t in (list, tuple):
        return value[:_HEAD]
    if t is dict:
        return list(itertools.islice(value.items(), _HEAD))
    if t in (set, frozenset):
        return list(itertools.islice(value, _HEAD))
    return value if t not in _SIZED else b""  # str, bytes, bytearray: atomic


def _write_pool(writer, picklers, pool, variables, defs, reuse):
    """(report, skipped) of pooled groups: one record, or (should it fail) one each."""
    if len(pool) > 1:
        names = [n for g in pool for n in g]
        report, failed = _write_group(writer, picklers, names, variables, defs, reuse,
                                      ("pickle",))
        if report is not None:
            report.note = report.note or f"{len(pool)} groups of small plain data in one record"
            yield report, failed
            return
    for group in pool:
        yield from _write_or_split(writer, picklers, group, variables, defs, reuse)


def _json_record(writer, names, kind, payload):
    writer.begin_record(names, kind=kind)
    writer.write(payload)
    writer.end_record(None)


class _Parts:
    """Turns the writer's parts (Part: kind, record, data...) into the stream's tuples:
    one ("record", pieces) per record, once all its parts have come, and ("stored", key,
    length) for a record reused from the store (its key from `reuse`)."""

    def __init__(self, reuse=None):
        self.reuse = reuse
        self.record = None
        self.pieces = []

    def feed(self, parts, last=False):
        for p in parts:
            if p.record != self.record and self.pieces:
                yield self._flush()
            if p.kind == "stored":
                if self.reuse is None:
                    raise _core.CoreError("a stored record has no bytes to hand out here")
                yield ("stored", self.reuse.key(p.record), p.length)
                continue
            if p.record in ("head", "tail"):
                yield (p.record, p.data)
                continue
            self.record = p.record
            self.pieces.append(p.data)
        if last and self.pieces:
            yield self._flush()

    def _flush(self):
        out = ("record", self.pieces)
        self.record, self.pieces = None, []
        return out


def snapshot(namespace=None, names=None, progress=None, history=None, manifest=None):
    """Serialize the user namespace into checkpoint bytes. See Snapshot for the report.

    progress: optional callable(done_groups, total_groups, names) called before each group.
    history / manifest: see SnapshotStream.
    """
    stream = SnapshotStream(namespace, names, progress, history, manifest)
    chunks = []
    for part in stream:
        if part[0] == "record":
            chunks.extend(part[1])
        else:
            chunks.append(part[1])
    snap = stream.snapshot
    snap.data = b"".join(chunks)  # out-of-band buffers are copied here, once
    _made_here.remember(snap.data)  # load_snapshot takes these bytes as this process's own
    return snap
