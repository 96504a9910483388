"""snapshot(): the namespace -> one checkpoint container, group by group.

Per group: `begin_record` marks the core's sink, cloudpickle streams into it; if it raises
part-way, `abort_record` rewinds the sink to the mark (the partial bytes are gone, not
copied around) and dill writes the group instead. If dill fails too, the group is split
into single variables (each tried the same way, so one bad variable does not take its
neighbours down; aliasing between them is then lost and the report says so), and what
still fails is skipped with its type and the exception message. Nothing here aborts the
checkpoint except a bug in the core itself.
"""

import platform
import time

from . import _core
from ._capture import capture, default_namespace
from ._groups import find_groups, is_notebook_def
from ._pickling import CloudPickler, DillPickler, Sink, dump_plain
from ._report import GroupReport, Snapshot, type_name
from ._version import __version__

MANIFEST = "__elastic_lite_manifest__"
MANIFEST_VERSION = 1

_SERIALIZERS = ("cloudpickle", "dill")


def _reason(exc):
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


class _Picklers:
    """One CloudPickler for the whole snapshot (a new one only after a failure, whose
    half-done state we do not trust); dill's pickler is made when a group needs it."""

    def __init__(self, writer, namespace):
        self.sink = Sink(writer)
        self.namespace = namespace
        self.cloud = None

    def get(self, serializer, refs):
        if serializer == "dill":
            return DillPickler(self.sink, self.namespace, refs)
        if self.cloud is None:
            self.cloud = CloudPickler(self.sink, self.namespace, refs)
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
    failures = []
    rewound = 0
    t0 = time.perf_counter()
    for serializer in _SERIALIZERS:
        writer.begin_record(names)
        try:
            picklers.get(serializer, refs).dump(values)
        except Exception as exc:  # any failure of a serializer is a reason to try the next
            picklers.failed(serializer)
            rewound += writer.record_bytes
            writer.abort_record()
            failures.append(f"{serializer}: {_reason(exc)}")
            continue
        size = writer.record_bytes
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


def snapshot(namespace=None, names=None, progress=None):
    """Serialize the user namespace into checkpoint bytes. See Snapshot for the report.

    progress: optional callable(done_groups, total_groups, names) called before each group.
    """
    ns = default_namespace() if namespace is None else namespace
    t_start = time.perf_counter()
    cap = capture(ns, names)
    defs = {}
    for name, value in cap.variables.items():
        if is_notebook_def(value, ns):
            defs.setdefault(id(value), name)
    grouping = find_groups(cap.variables, ns, defs)
    writer = _core.Writer(producer=f"elastic-lite {__version__}",
                          python=platform.python_version(),
                          created_ms=int(time.time() * 1000))
    groups, skipped = [], list(cap.skipped)
    picklers = _Picklers(writer, ns)
    try:
        total = len(grouping.groups)
        for done, group in enumerate(grouping.groups):
            if progress is not None:
                progress(done, total, list(group))
            report, failed = _write_group(writer, picklers, group, cap.variables, defs)
            if report is None and len(group) > 1:
                # Split: save what can be saved, each variable alone.
                for name in group:
                    single, single_failed = _write_group(writer, picklers, [name], cap.variables,
                                                         defs)
                    if single is not None:
                        single.note = (f"saved alone: its group {group} failed as a whole, "
                                       "so aliasing with the others is not kept")
                        groups.append(single)
                    skipped.extend(single_failed)
                continue
            if report is not None:
                groups.append(report)
            skipped.extend(failed)
        if progress is not None:
            progress(total, total, [])
        manifest = {
            "version": MANIFEST_VERSION,
            "modules": cap.modules,
            "skipped": [{k: s[k] for k in ("name", "type", "reason")} for s in skipped],
            "types": {n: t for g in groups for n, t in zip(g.names, g.types)},
            "groups": [{"names": g.names, "serializer": g.serializer} for g in groups],
        }
        writer.begin_record([MANIFEST])
        writer.write(dump_plain(manifest))
        writer.end_record("pickle")
        data = writer.finish()
    finally:
        picklers.cloud = None
        writer.free()
    return Snapshot(data=data, groups=groups, skipped=skipped, modules=cap.modules,
                    walk=grouping, ms=(time.perf_counter() - t_start) * 1000.0)
