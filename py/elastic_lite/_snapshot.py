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

Afterwards `.snapshot` is the report (a Snapshot whose `.data` is None). `snapshot()` drives
it into memory; `_store.checkpoint()` drives it into a store record by record.
"""

import gc
import json
import pickle
import platform
import time

from . import _core
from ._capture import capture, default_namespace
from ._groups import find_groups, is_notebook_def
from ._pickling import CloudPickler, DillPickler
from ._report import GroupReport, Snapshot, type_name
from ._version import __version__

MANIFEST = "__elastic_lite_manifest__"
HISTORY = "__elastic_lite_history__"
MANIFEST_VERSION = 2  # 2: a JSON record of kind "manifest" (1: a plain pickle, format 1.0)
BUFFER_THRESHOLD = 64 * 1024  # smaller buffers stay in the stream (see benchmarks)
TAKE_BYTES = 4 << 20  # hand records out once this much has been written since last time

_SERIALIZERS = ("cloudpickle", "dill")
_OURS = frozenset({"version", "modules", "skipped", "types", "groups", "writable_buffers"})


def _reason(exc):
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


class _Picklers:
    """One CloudPickler for the whole snapshot (a new one only after a failure, whose
    half-done state we do not trust); dill's pickler is made when a group needs it. Both
    send buffers of at least `threshold` bytes out of band."""

    def __init__(self, writer, namespace, threshold):
        self.writer = writer
        self.namespace = namespace
        self.threshold = threshold
        self.cloud = None
        self.buffer_bytes = 0  # out-of-band bytes of the record being written
        self.writable = 0  # out-of-band buffers restore must hand back writable (arrays)

    def buffer_callback(self, buf):
        """pickle's buffer_callback: False = out of band (the writer records it)."""
        try:
            raw = buf.raw()
        except BufferError:  # not contiguous: pickle writes it in the stream
            return True
        if raw.nbytes < self.threshold:
            return True
        self.writer.add_buffer(raw)
        self.buffer_bytes += raw.nbytes
        self.writable += not raw.readonly
        return False

    def get(self, serializer, refs):
        self.buffer_bytes = 0
        if serializer == "dill":
            return DillPickler(self.writer, self.namespace, refs,
                               buffer_callback=self.buffer_callback)
        if self.cloud is None:
            self.cloud = CloudPickler(self.writer, self.namespace, refs,
                                      buffer_callback=self.buffer_callback)
        else:
            self.cloud.begin_group(refs)
        return self.cloud

    def failed(self, serializer):
        if serializer == "cloudpickle":
            self.cloud = None


def _write_group(writer, picklers, names, variables, defs):
    """Write one group; returns (GroupReport or None, [skipped entries])."""
    own = set(names)
    refs = {i: n for i, n in defs.items() if n not in own}
    values = tuple(variables[n] for n in names)
    blobs = {}
    stream_values = tuple(_out_of_band(v, picklers.threshold, blobs) for v in values)
    failures = []
    rewound = 0
    t0 = time.perf_counter()
    for serializer in _SERIALIZERS:
        writer.begin_record(names)
        try:
            picklers.get(serializer, refs).dump(stream_values)
        except Exception as exc:  # any failure of a serializer is a reason to try the next
            picklers.failed(serializer)
            rewound += writer.record_bytes + picklers.buffer_bytes
            writer.abort_record()
            failures.append(f"{serializer}: {_reason(exc)}")
            continue
        size = writer.record_bytes + picklers.buffer_bytes
        writer.end_record(serializer)
        return GroupReport(
            names=list(names),
            types=[type_name(v) for v in values],
            serializer=serializer,
            bytes=size,
            ms=(time.perf_counter() - t0) * 1000.0,
            fallback="; ".join(failures) or None,
            rewound_bytes=rewound,
        ), []
    reason = failures[-1].split(": ", 1)[1] if failures else "unknown"
    return None, [{"name": n, "type": type_name(v), "reason": reason,
                   "attempts": list(failures)} for n, v in zip(names, values)]


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
    version/modules/skipped/types/groups are ours). buffer_threshold: bytes from which a
    PickleBuffer goes out of band."""

    def __init__(self, namespace=None, names=None, progress=None, history=None, manifest=None,
                 buffer_threshold=BUFFER_THRESHOLD):
        self.namespace = default_namespace() if namespace is None else namespace
        self.names = names
        self.progress = progress
        self.history = None if history is None else _json_payload(history, "history")
        extra = dict(manifest or {})
        clash = sorted(_OURS & set(extra))
        if clash:
            raise ValueError(f"manifest fields {clash} are written by snapshot itself; "
                             "choose other names")
        self.extra = extra
        _json_payload(extra, "manifest")  # fail now, before any work
        self.buffer_threshold = buffer_threshold
        self.snapshot = None
        self._started = False

    def __iter__(self):
        if self._started:
            raise RuntimeError("a SnapshotStream is iterated once; make a new one")
        self._started = True
        return self._run()

    def _run(self):
        ns = self.namespace
        t_start = time.perf_counter()
        cap = capture(ns, self.names)
        defs = {}
        for name, value in cap.variables.items():
            if is_notebook_def(value, ns):
                defs.setdefault(id(value), name)
        grouping = find_groups(cap.variables, ns, defs)
        writer = _core.Writer(producer=f"elastic-lite {__version__}",
                              python=platform.python_version(),
                              created_ms=int(time.time() * 1000))
        groups, skipped = [], list(cap.skipped)
        picklers = _Picklers(writer, ns, self.buffer_threshold)
        parts = _Parts()
        size = 0
        # The cyclic GC is paused while groups are written (pickling makes no cyclic
        # garbage; a full collection would rescan the notebook's whole heap), and running
        # whenever the stream hands parts out (the consumer's code runs then).
        gc_was_enabled = gc.isenabled()
        try:
            total = len(grouping.groups)
            pending = 0  # bytes written since the last take (counted here: asking the
            # core costs a call across to WebAssembly per group)
            for done, group in enumerate(grouping.groups):
                if self.progress is not None:
                    self.progress(done, total, list(group))
                gc.disable()
                try:
                    for report, failed in _write_or_split(writer, picklers, group,
                                                           cap.variables, defs):
                        if report is not None:
                            groups.append(report)
                            pending += report.bytes
                        skipped.extend(failed)
                finally:
                    if gc_was_enabled:
                        gc.enable()
                if pending >= TAKE_BYTES:
                    pending = 0
                    yield from parts.feed(writer.take())
            if self.progress is not None:
                self.progress(total, total, [])
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
            })
            _json_record(writer, [MANIFEST], "manifest", _json_payload(manifest, "manifest"))
            if self.history is not None:
                _json_record(writer, [HISTORY], "history", self.history)
            picklers.cloud = None
            yield from parts.feed(writer.finish(join=False), last=True)
            size = writer.size
        finally:
            picklers.cloud = None
            writer.free()
        self.snapshot = Snapshot(data=None, groups=groups, skipped=skipped,
                                 modules=cap.modules, walk=grouping,
                                 ms=(time.perf_counter() - t_start) * 1000.0)
        self.snapshot.size = size


def _write_or_split(writer, picklers, group, variables, defs):
    """(report, skipped) of a group; if it fails as a whole, of each variable alone."""
    report, failed = _write_group(writer, picklers, group, variables, defs)
    if report is not None or len(group) == 1:
        yield report, failed
        return
    for name in group:  # split: save what can be saved, each variable alone
        single, single_failed = _write_group(writer, picklers, [name], variables, defs)
        if single is not None:
            single.note = (f"saved alone: its group {group} failed as a whole, "
                           "so aliasing with the others is not kept")
        yield single, single_failed


def _json_record(writer, names, kind, payload):
    writer.begin_record(names, kind=kind)
    writer.write(payload)
    writer.end_record(None)


class _Parts:
    """Turns the writer's parts (Part: kind, record, data...) into the stream's tuples:
    one ("record", pieces) per record, once all its parts have come."""

    def __init__(self):
        self.record = None
        self.pieces = []

    def feed(self, parts, last=False):
        for p in parts:
            if p.kind == "stored":
                raise _core.CoreError("a stored record has no bytes to hand out here")
            if p.record != self.record and self.pieces:
                yield self._flush()
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
    return snap
