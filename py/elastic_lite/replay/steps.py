"""Replay wired into checkpoint and restore: what the kernel session calls around the snapshot
loop and after unpickling (docs/INTERFACES.md, "Session history and replay").

Checkpoint (`prepare`, before the snapshot loop runs):
1. the session recorder of the namespace gives its history (`Recorder.checkpoint_json`:
   names a running cell wrote, or that changed outside recorded cells, count as unknown);
2. values pickle gets wrong or cannot save at all — open files, database connections and
   cursors, sockets, generators and other iterators (`replay_first`) — are left out of the
   pickled state when the recorded cells can recreate them from the other variables;
3. once the loop has written every group (its manifest phase, `CheckpointReplay.manifest`),
   the final plan is made over what really was saved, for those left out and for every
   variable no serializer could save; it goes into the manifest as "replay" (with the list of
   what stays skipped), and the history becomes the checkpoint's history record.

Restore (`replay_after_restore`, after load_snapshot): if the person's trust decision lets
the checkpoint's code run (their own checkpoint, or trust confirmed), the plan's cells are
re-run in the restored namespace (`replay.engine.replay`); then the namespace's recorder continues
the checkpoint's history, so the next checkpoint can still recompute what this one could.
`restore_fields` turns the outcome into the restore report's fields (one report schema).
"""

import array
import io
import time

from ..capture.selection import capture
from ..capture.groups import find_groups, is_notebook_def
from .engine import PlanError, _label_list, choose_recompute, plan_replay, replay
from .._report import problem, type_name
from .recorder import HistoryError, is_stateful, recorder_for

SECTION = "replay"  # the manifest field holding {"plan", "types"}


def replay_first(value):
    """Values left out of the pickled state when replay can recreate them: database
    connections and cursors, sockets, generators and iterators (an iterator's position is
    what the recorded `next()` calls made). In-memory buffers (StringIO, BytesIO) pickle
    exactly and stay pickled."""
    return is_stateful(value) and not isinstance(value, (io.StringIO, io.BytesIO))


def is_file(value):
    """A real file: never pickled while the session is recorded — cloudpickle would save a
    StringIO copy of its contents, dill a handle that restore refuses (io.open)."""
    return isinstance(value, io.IOBase) and not isinstance(value, (io.StringIO, io.BytesIO))


class CheckpointReplay:
    """The replay side of one checkpoint: `names` for the snapshot loop (None: all), the
    `history` record, the `manifest` callback, and afterwards `report()`."""

    def __init__(self, history, enabled, allow, left_out, names):
        self.history = history
        self.enabled = enabled
        self.allow = allow
        self.left_out = left_out  # name -> (type name, "file" | "closed file" | "replay" | "cost")
        self.choices = []  # the cost model's decisions (prepare(cost=...)), with reasons
        self.names = names
        self.plan = None
        self.types = {}
        self.ms = 0.0

    def manifest(self, groups, skipped, modules):
        """(the manifest's "replay" field, what stays skipped), once every group is written:
        the plan for what was left out and what no serializer could save, over what really
        was saved. Of `skipped` (what the snapshot did not save), the variables the plan
        recreates leave; those left out that it cannot recreate join."""
        t0 = time.perf_counter()
        saved = {n for g in groups for n in g.names} | {m["name"] for m in modules}
        targets = {n: "cost" if why == "cost" else "unsaveable"
                   for n, (_, why) in self.left_out.items() if why != "closed file"}
        self.types = {n: t for n, (t, _) in self.left_out.items()}
        why_not_saved = {n: _NOT_SAVED.get(why, "left out to be recomputed by replay")
                         for n, (_, why) in self.left_out.items()}
        for s in skipped:
            targets.setdefault(s["name"], "unsaveable")
            self.types.setdefault(s["name"], s.get("type"))
            why_not_saved.setdefault(s["name"], s.get("reason"))
        plan = self.plan = plan_replay(self.history, saved, targets, enabled=self.enabled,
                                       allow=self.allow)
        plan.choices = self.choices
        kept = [s for s in skipped if s["name"] not in plan.targets]
        for name, (type_, why) in self.left_out.items():
            if name in plan.targets:
                continue
            if why == "closed file":
                reason = "a closed file: nothing to save"
            else:
                what = ("an open file is never pickled (its contents would be saved, not the "
                        "file)" if why == "file" else why_not_saved[name])
                reason = f"{what}; it cannot be recomputed: {plan.skipped.get(name)}"
            kept.append({"name": name, "type": type_, "reason": reason})
        self.ms += (time.perf_counter() - t0) * 1000.0
        return {SECTION: {"plan": plan.to_json(), "types": self.types,
                          "left_out": sorted(self.left_out),
                          "not_saved": {n: why_not_saved[n] for n in plan.targets}}}, kept

    def report(self):
        """The checkpoint report's "replay" field (docs/INTERFACES.md, "Report schema")."""
        plan = self.plan
        if plan is None:  # the snapshot did not get as far as its manifest
            return None
        return {
            "enabled": plan.enabled,
            "left_out": sorted(self.left_out),
            "recompute": [{"name": n, "type": self.types.get(n), "cells": t["counts"],
                           "why": t["why"],
                           "message": f"will be recomputed by re-running {_label_list(t['counts'])}"}
                          for n, t in plan.targets.items()],
            "skipped": [{"name": n, "type": self.types.get(n), "reason": r,
                         "message": f"stays skipped: {r}"} for n, r in plan.skipped.items()],
            "flagged": [{"cell": s["count"], "effects": sorted({k for k, _, _ in s["effects"]}),
                         "message": f"cell [{s['count']}] has side effects ("
                                    + ", ".join(sorted({k for k, _, _ in s["effects"]}))
                                    + "): it will be re-run on restore and reported"}
                        for s in plan.flagged],
            "choices": list(plan.choices),
            "ms": self.ms,
        }


_NOT_SAVED = {"file": "an open file is never pickled",
              "cost": "not stored: cheaper to recompute than to store (cost model)"}


def estimated_bytes(value):
    """What storing `value` costs, seen cheaply: the buffers that make state large (bytes,
    arrays, numpy and pandas objects), one level into lists, tuples and dicts; 0 for anything
    else (small objects are never worth recomputing)."""
    if isinstance(value, (bytes, bytearray, memoryview, array.array)):
        return memoryview(value).nbytes
    module = type(value).__module__ or ""
    if module.startswith(("numpy", "pandas")):
        try:
            usage = getattr(value, "memory_usage", None)
            if module.startswith("pandas") and callable(usage) and hasattr(value, "columns"):
                return int(usage(index=True, deep=False).sum())  # a DataFrame
            nbytes = getattr(value, "nbytes", 0)
            return int(nbytes) if isinstance(nbytes, int) or hasattr(nbytes, "__index__") else 0
        except Exception:  # an object whose size cannot be read cheaply: never chosen
            return 0
    if type(value) in (list, tuple):
        return sum(estimated_bytes(v) for v in value if type(v) not in (list, tuple, dict))
    if type(value) is dict:
        return sum(estimated_bytes(v) for v in value.values()
                   if type(v) not in (list, tuple, dict))
    return 0


def _cost_choices(history, cap, namespace, left_out, cost, allow):
    """The cost model over the groups the snapshot loop will write (a second grouping walk:
    the price of the option): groups large to store and cheap to recompute are left out."""
    options = {} if cost is True else dict(cost)
    variables = {n: v for n, v in cap.variables.items() if n not in left_out}
    defs = {id(v): n for n, v in variables.items() if is_notebook_def(v, namespace)}
    groups = [{"names": list(g), "bytes": sum(estimated_bytes(variables[n]) for n in g)}
              for g in find_groups(variables, namespace, defs).groups]
    saved = set(variables) | {m["name"] for m in cap.modules}
    targets = [n for n, (_, why) in left_out.items() if why != "closed file"]
    _, choices = choose_recompute(history, groups, saved, targets, allow=allow, **options)
    return choices


def prepare(namespace, names=None, *, enabled=True, allow=None, cost=None):
    """The replay side of a checkpoint of `namespace`, or None when no recorder follows it
    (nothing was recorded: the checkpoint is as before, with no history record). `cost`:
    True (or choose_recompute's options: bytes_per_ms, min_bytes, factor) to also leave out
    groups that are large to store and cheap to recompute."""
    rec = recorder_for(namespace)
    if rec is None:
        return None
    t0 = time.perf_counter()
    history = rec.checkpoint_json()
    if not history["cells"]:
        return None
    cap = capture(namespace, names)
    candidates = {n: v for n, v in cap.variables.items() if replay_first(v)}
    left_out = {}
    for n, v in candidates.items():
        if is_file(v):  # left out whether or not replay can recreate it
            closed = getattr(v, "closed", False) is True
            left_out[n] = (type_name(v), "closed file" if closed else "file")
    if enabled and candidates:
        saved = (set(cap.variables) - set(candidates)) | {m["name"] for m in cap.modules}
        first = plan_replay(history, saved, list(candidates), allow=allow)
        for n in first.targets:
            left_out.setdefault(n, (type_name(candidates[n]), "replay"))
    choices = []
    if enabled and cost:
        choices = _cost_choices(history, cap, namespace, left_out, cost, allow)
        for choice in choices:
            if choice["chosen"]:
                for n in choice["names"]:
                    left_out[n] = (type_name(cap.variables[n]), "cost")
    take = None
    if left_out:  # the names the snapshot loop takes: everything capture took but those
        take = [n for n in [*cap.variables, *(m["name"] for m in cap.modules),
                            *(s["name"] for s in cap.skipped)] if n not in left_out]
    prep = CheckpointReplay(history, enabled, allow, left_out, take)
    prep.choices = choices
    prep.ms = (time.perf_counter() - t0) * 1000.0
    return prep


def replay_permission(trust, foreign=None, data_only=False):
    """(permitted, why not): replay runs code saved in the checkpoint, so only after the same
    trust decision as unpickling: a foreign checkpoint (`foreign`: why it is, as the restore
    decided, store.signing.foreign_reason: an unsigned import is foreign, one a person adopted is
    not) replays nothing unless trusted; a
    data-only restore runs no code at all."""
    if data_only:
        return False, ("replay runs code saved in the checkpoint and this is a data-only "
                       "restore, which runs none")
    if trust:
        return True, None
    where = foreign
    if where is None:
        return True, None
    return False, (f"replay runs code saved in the checkpoint and {where}; restore "
                   "with trust=True (CLI: --trust) if you trust it")


async def replay_after_restore(manifest, history, namespace, *, permitted=True, why_not=None,
                               enabled=True, allow=None):
    """Replay the plan of a restored checkpoint in `namespace` (`permitted`: the trust
    decision allows running the checkpoint's code; `why_not` says why it does not) and let
    the namespace's recorder continue its history (only then: a later checkpoint of this
    session must not carry, and replay, code the person never trusted). Returns (ReplayReport or None, section,
    warnings): `section` is the manifest's "replay" field ({} if none). Never raises."""
    warnings = []
    section = _mapping(manifest.get(SECTION)) if isinstance(manifest, dict) else {}
    outcome = None
    if section and history is not None:
        try:
            outcome = await replay(section.get("plan"), history, namespace,
                                   enabled=enabled and permitted, allow=allow,
                                   off_reason=None if permitted else why_not)
        except (PlanError, HistoryError, ValueError) as exc:
            warnings.append(f"the checkpoint's replay plan could not be used ({exc}); "
                            "nothing was recomputed")
    if history is not None and permitted:  # (a foreign history's code never becomes ours)
        try:
            recorder_for(namespace, create=True).load(history)
        except HistoryError as exc:
            warnings.append(f"the checkpoint's session history could not be read ({exc}); "
                            "recording starts afresh")
    return outcome, section, warnings


def restore_fields(report, outcome, section, namespace):
    """Merge a replay's outcome into a host restore report: `recomputed`, `replay`, a
    `failed` problem (code "replay") per variable that could not be recomputed, a `skipped`
    entry for each planned one that was not (replay off, or not trusted), a warning per
    re-run cell with side effects. `section`: the manifest's "replay" field."""
    if outcome is None:
        return report
    d = outcome.to_dict()
    report["replay"] = d
    report["recomputed"] = [{"name": r["name"], "type": type_name(namespace.get(r["name"])),
                             "cells": r["cells"], "message": r["message"]}
                            for r in d["recomputed"]]
    types = _mapping(section.get("types"))
    not_saved = _mapping(section.get("not_saved"))
    left_out = section.get("left_out") if isinstance(section.get("left_out"), list) else []
    done = {r["name"] for r in d["recomputed"]} | {f["name"] for f in d["failed"]}
    skipped = [s for s in report.get("skipped") or [] if s["name"] not in done]
    listed = {s["name"]: s for s in skipped}
    for s in d["skipped"]:
        entry = listed.get(s["name"])
        if entry is None:  # planned, but not run: replay off, or not trusted
            why = not_saved.get(s["name"]) or "not saved"
            skipped.append({"name": s["name"], "type": types.get(s["name"]) or "?",
                            "reason": f"{why}; not recomputed: {s['reason']}"})
        elif s["name"] not in left_out:  # (a left-out one's reason says it already)
            entry["reason"] = f"{entry['reason']}; not recomputed: {s['reason']}"
    report["skipped"] = skipped
    for f in d["failed"]:
        report["problems"].append(problem("failed", f"not recomputed: {f['reason']}",
                                          names=[f["name"]], code="replay"))
        report["ok"] = False
    for c in d["cells"]:
        if c["ran"] and c["effects"]:
            kinds = ", ".join(sorted({e[0] for e in c["effects"]}))
            report["warnings"].append(f"cell [{c['count']}] was re-run to recompute variables; "
                                      f"it has side effects ({kinds})")
    report["warnings"].extend(d["warnings"])
    report["timings"]["replay_ms"] = d["ms"]
    return report


def _mapping(value):
    return value if isinstance(value, dict) else {}
