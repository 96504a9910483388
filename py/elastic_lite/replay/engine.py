"""Replay: recompute after a restore what a checkpoint could not (or chose not to) store.

At checkpoint time, `plan_replay(history, saved, targets)` decides, for each target variable
(one no serializer could save — a generator, an open file, a database connection — or one the
cost model chose not to store), the minimal set of recorded cells whose re-execution
recreates it. The walk is over *versions* (see `replay/recorder.py`): the target's current version
was written by some cell; that cell is replayed, and each version it read must be there too —
either restored (the checkpoint holds that variable and that is still its latest version) or
recreated by replaying the cell that wrote it, and so on back. A cell that advanced an
iterator after it was created wrote a new version of it, so it is part of the plan and `next()`
continues from the same item. A target whose chain needs something unavailable (a value from
before the recorded history, a cell that failed, a cell marked not to be replayed, a cell
whose side effects are not allowed) stays skipped, with that reason.

At restore time, `await replay(plan, history, namespace)` runs the planned cells in order in
the restored namespace itself, so functions, classes and generators they create have the real
namespace as their globals (a separate dict would give them a stale copy; a separate
`locals` mapping would hide names from comprehensions and from functions called in the same
cell). What the plan did not ask for is then put back: every name the replay rebound, added or
deleted gets its restored binding again, and only the planned targets keep their recomputed
values. Before each cell, the names it must read at their restored value are re-bound to it
(an earlier replayed cell may have bound an older version). Output is captured, each cell's
failure is reported, and nothing here raises into the restore.

Side effects (see `replay.effect_rules.SAFE_EFFECTS` / `UNSAFE_EFFECTS`): cells that print, display,
draw or use randomness are replayed and reported; cells that write files, use the network,
run commands, ask for input or run magics are not, unless allowed (`allow=`). Replay can be
turned off per checkpoint (`enabled=False`) and per cell (`# elastic-lite: no-replay`,
`Recorder.set_replay`, or `exclude=` here).
"""

import ast
import contextlib
import inspect
import io
import linecache
import time
import traceback

from .effect_rules import EFFECT_WORDS, SAFE_EFFECTS, UNSAFE_EFFECTS
from .recorder import RUNTIME_EFFECTS, Recorder
from .._words import quoted

PLAN_VERSION = 1
ALL_EFFECTS = SAFE_EFFECTS + UNSAFE_EFFECTS
# What a cost-based choice may depend on: the value must come back the same.
_COST_EFFECTS = ("prints", "displays", "draws")
# Storing a group costs writing it at the checkpoint and reading it at the restore. 100 MB/s
# (100,000 bytes per ms) for the two together is a conservative default for IndexedDB in a
# browser; the caller can pass what it measured.
DEFAULT_BYTES_PER_MS = 100_000
_MAX_OUTPUT = 4000


class PlanError(ValueError):
    """A saved replay plan that cannot be read."""


def _allowed(allow):
    if allow is None:
        return tuple(SAFE_EFFECTS)
    if allow == "all":
        return ALL_EFFECTS
    allow = tuple(allow)
    unknown = [a for a in allow if a not in ALL_EFFECTS]
    if unknown:
        raise ValueError(f"unknown side-effect kind(s) {unknown}; known: {list(ALL_EFFECTS)}")
    return allow


def _label_list(counts):
    labels = [f"[{c}]" for c in counts]
    return ("cell " if len(labels) == 1 else "cells ") + ", ".join(labels)


class _History:
    """The parts of a history the planner and replayer read, from a Recorder or its JSON."""

    def __init__(self, history):
        if isinstance(history, Recorder):
            rec = history
        elif isinstance(history, _History):
            self.__dict__.update(history.__dict__)
            return
        else:
            rec = Recorder(namespace={}).load(history)
        self.cells = {c.id: c for c in rec.cells}
        self.versions = dict(rec.versions)
        self.dropped_before = rec.dropped_before


def _unreplayable(cell, allow, exclude):
    """Why `cell` cannot be replayed under these settings, or None."""
    if not cell.replay:
        return "is marked not to be replayed" + (f" ({cell.note})" if cell.note else "")
    if cell.count in exclude:
        return "is excluded from replay"
    if cell.code is None:
        return cell.note or "has no code kept"
    if not cell.ok:
        return "raised an error when it ran" + (f" ({cell.error})" if cell.error else "")
    if cell.opaque:
        return f"cannot be replayed safely: {cell.opaque}"
    bad = [(k, d) for k, d, _ in cell.effects if k not in allow]
    if bad:
        kinds = sorted({k for k, _ in bad})
        return (", ".join(EFFECT_WORDS.get(k, k) for k in kinds) + " (" + bad[0][1] + "); "
                "allow it with allow=[" + ", ".join(repr(k) for k in kinds) + ", ...]")
    return None


class Plan:
    """Which cells to replay, for which variables, and what stays skipped (JSON: to_json)."""

    def __init__(self):
        self.enabled = True
        self.allow = tuple(SAFE_EFFECTS)
        self.steps = []  # [{"cell", "count", "targets", "rebind", "effects", "ms"}]
        self.targets = {}  # name -> {"cells": [ids], "counts": [...], "why": ...}
        self.skipped = {}  # name -> reason
        self.choices = []  # cost-model decisions (choose_recompute)

    @property
    def ms(self):
        """The recorded run time of the planned cells: what the replay should cost."""
        return sum(s["ms"] for s in self.steps)

    @property
    def flagged(self):
        """Planned cells with side effects (allowed ones: they will run, and be reported)."""
        return [s for s in self.steps if s["effects"]]

    def to_json(self):
        return {"version": PLAN_VERSION, "enabled": self.enabled, "allow": list(self.allow),
                "steps": [dict(s) for s in self.steps],
                "targets": {n: dict(t) for n, t in self.targets.items()},
                "skipped": dict(self.skipped), "choices": [dict(c) for c in self.choices]}

    @classmethod
    def from_json(cls, data):
        if isinstance(data, Plan):
            return data
        if not isinstance(data, dict) or data.get("version") != PLAN_VERSION:
            raise PlanError("this is not a replay plan this elastic-lite can read "
                            f"(expected version {PLAN_VERSION})")
        plan = cls()
        plan.enabled = bool(data.get("enabled", True))
        try:
            plan.allow = _allowed(data.get("allow"))
            plan.steps = [_check_step(s) for s in data.get("steps") or []]
            plan.targets = {str(n): _check_target(t) for n, t in
                            (data.get("targets") or {}).items()}
            plan.skipped = {str(n): str(r) for n, r in (data.get("skipped") or {}).items()}
            plan.choices = [dict(c) for c in data.get("choices") or []]
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise PlanError(f"the replay plan is malformed ({type(exc).__name__}: {exc})")
        return plan

    def lines(self):
        """Human-readable: what replay will recompute, flag, and skip."""
        out = []
        for name, t in self.targets.items():
            why = " (large to store, cheap to recompute)" if t.get("why") == "cost" else ""
            out.append(f"{name}: will be recomputed by re-running {_label_list(t['counts'])}{why}")
        for s in self.flagged:
            words = sorted({EFFECT_WORDS.get(k, k) for k, _, _ in s["effects"]})
            out.append(f"cell [{s['count']}] {', '.join(words)}: it will be re-run on restore "
                       "and its output reported")
        for name, reason in self.skipped.items():
            out.append(f"{name}: not recomputed: {reason}")
        return out


def _check_step(s):
    step = {"cell": int(s["cell"]), "count": s.get("count"),
            "targets": [str(n) for n in s["targets"]], "rebind": [str(n) for n in s["rebind"]],
            "effects": [tuple(str(x) for x in e) for e in s.get("effects") or []],
            "ms": float(s.get("ms") or 0.0)}
    if step["count"] is not None:
        step["count"] = int(step["count"])
    return step


def _check_target(t):
    return {"cells": [int(c) for c in t["cells"]],
            "counts": [None if c is None else int(c) for c in t["counts"]],
            "why": str(t.get("why") or "unsaveable")}


def plan_replay(history, saved, targets, *, enabled=True, allow=None, exclude=()):
    """The replay plan for `targets` (names, or {name: why}).

    history: a Recorder or its `to_json()` data. saved: the names the checkpoint restores
    (variables and module bindings). allow: side-effect kinds a planned cell may have
    (default SAFE_EFFECTS; "all" for any). exclude: execution counts never to replay.
    """
    hist = _History(history)
    allow = _allowed(allow)
    exclude = set(exclude)
    if not isinstance(targets, dict):
        targets = {n: "unsaveable" for n in targets}
    saved_now = set(saved) - set(targets)
    plan = Plan()
    plan.allow = allow
    chosen = {}  # cell id -> set of targets it serves
    rebind = {}  # cell id -> names it must read at their restored value
    for name in targets:
        cells, binds, reason = _closure(hist, name, saved_now, allow, exclude)
        if reason is not None:
            plan.skipped[name] = reason
            continue
        for cid in cells:
            chosen.setdefault(cid, set()).add(name)
        for cid, names in binds.items():
            rebind.setdefault(cid, set()).update(names)
        ordered = sorted(cells)
        plan.targets[name] = {"cells": ordered,
                              "counts": [hist.cells[c].count for c in ordered],
                              "why": targets[name]}
    for cid in sorted(chosen):
        cell = hist.cells[cid]
        plan.steps.append({"cell": cid, "count": cell.count,
                           "targets": sorted(chosen[cid]), "rebind": sorted(rebind.get(cid, ())),
                           "effects": [tuple(e) for e in cell.effects], "ms": cell.ms})
    if not enabled:
        plan.enabled = False
        for name, t in plan.targets.items():
            plan.skipped[name] = ("replay is turned off for this checkpoint (it would re-run "
                                  f"{_label_list(t['counts'])})")
        plan.targets, plan.steps = {}, []
    return plan


def _closure(hist, target, saved, allow, exclude):
    """(cell ids, {cell id: names to re-bind}, None) recreating `target`, or (.., reason)."""
    final = hist.versions
    version = final.get(target)
    if not version:
        return set(), {}, ("no recorded cell created it as it is now (it existed before "
                           "recording began, or was changed outside the recorded cells or by "
                           "the cell still running when the checkpoint was taken)")
    cells, binds = set(), {}
    via = {}  # cell id -> (name, reader cell id): how the walk reached it, for messages
    stack = [(target, version, None)]
    while stack:
        name, v, reader = stack.pop()
        if v == final.get(name) and name in saved:
            if reader is not None:
                binds.setdefault(reader, set()).add(name)
            continue
        if v in cells:
            continue
        if v == 0:
            what = (f"{quoted(name)} as it was before the recorded history began (the checkpoint "
                    "holds only its later value)" if name in saved else
                    f"{quoted(name)}, which no recorded cell created and the checkpoint does not hold")
            return cells, binds, "recreating it needs " + what + _chain(hist, via, reader)
        cell = hist.cells.get(v)
        if cell is None:
            why = ("was dropped from the history to bound its memory" if v < hist.dropped_before
                   else "is missing from the history")
            return cells, binds, (f"the cell that made {quoted(name)} {why}" + _chain(hist, via, reader))
        why = _unreplayable(cell, allow, exclude)
        if why:
            return cells, binds, (f"recreating it needs {cell.label} (`{cell.first_line}`), which "
                                  f"{why}" + _chain(hist, via, reader))
        cells.add(v)
        via[v] = (name, reader)
        for n2, v2 in cell.reads.items():
            stack.append((n2, v2, v))
    return cells, binds, None


def _chain(hist, via, reader):
    """' (for 'gen' made by cell [3])': the path from the target down to the failure."""
    parts = []
    while reader is not None and reader in via:
        name, nxt = via[reader]
        parts.append(f"{quoted(name)} made by {hist.cells[reader].label}")
        reader = nxt
    return f" (via {' <- '.join(reversed(parts))})" if len(parts) > 1 else ""


def choose_recompute(history, groups, saved, targets=(), *, bytes_per_ms=DEFAULT_BYTES_PER_MS,
                     min_bytes=1 << 20, factor=2.0, allow=None, exclude=()):
    """The cost model: which saved groups are cheaper to recompute than to store.

    groups: [{"names": [...], "bytes": N}] — the checkpoint's groups (a group is recomputed
    whole or not at all, so aliasing inside it holds). A group is chosen when every name in it
    can be recreated by deterministic cells with no side effects beyond output, every target
    planned before still is, and `factor` × the recorded run time of the cells it adds is at
    most its storing time (bytes / bytes_per_ms). Largest groups first.
    Returns (plan, choices): the plan including the chosen names (why "cost"), and one
    decision per candidate group with its reason (also in plan.choices).
    """
    hist = _History(history)
    if not isinstance(targets, dict):
        targets = {n: "unsaveable" for n in targets}
    saved = set(saved)
    current = plan_replay(hist, saved, targets, allow=allow, exclude=exclude)
    current_targets = dict(targets)
    choices = []
    for group in sorted(groups, key=lambda g: -g["bytes"]):
        names, size = list(group["names"]), int(group["bytes"])
        if size < min_bytes:
            continue
        store_ms = size / bytes_per_ms
        decision = {"names": names, "bytes": size, "store_ms": round(store_ms, 3),
                    "chosen": False}
        trial_targets = dict(current_targets, **{n: "cost" for n in names})
        trial = plan_replay(hist, saved - set(names), trial_targets, allow=allow,
                            exclude=exclude)
        lost = [n for n in current.targets if n not in trial.targets]
        missing = [n for n in names if n not in trial.targets]
        if missing:
            decision["reason"] = f"stored: {quoted(missing[0])} cannot be recomputed ({trial.skipped[missing[0]]})"
        elif lost:
            decision["reason"] = (f"stored: recomputing it would leave {quoted(lost[0])} unrecoverable")
        else:
            own = set().union(*(trial.targets[n]["cells"] for n in names))
            effects = sorted({k for cid in own for k, _, _ in hist.cells[cid].effects
                              if k not in _COST_EFFECTS})
            added = [cid for cid in own if cid not in {s["cell"] for s in current.steps}]
            replay_ms = sum(hist.cells[cid].ms for cid in added)
            decision["replay_ms"] = round(replay_ms, 3)
            decision["cells"] = [hist.cells[c].count for c in sorted(own)]
            if effects:
                decision["reason"] = ("stored: its cells " + ", ".join(
                    EFFECT_WORDS.get(k, k) for k in effects) + ", so a recomputed value could differ")
            elif replay_ms * factor > store_ms:
                decision["reason"] = (f"stored: re-running {_label_list(decision['cells'])} "
                                      f"({replay_ms:.0f} ms recorded) costs more than storing "
                                      f"{size} bytes (~{store_ms:.0f} ms)")
            else:
                decision["chosen"] = True
                decision["reason"] = (f"not stored: recomputed by re-running "
                                      f"{_label_list(decision['cells'])} ({replay_ms:.0f} ms "
                                      f"recorded) instead of storing {size} bytes "
                                      f"(~{store_ms:.0f} ms)")
                saved -= set(names)
                current_targets = trial_targets
                current = trial
        choices.append(decision)
    current.choices = choices
    return current, choices


# -- the replayer --------------------------------------------------------------------------

class ReplayReport:
    """What a replay recomputed, what failed and why, and what each cell did."""

    def __init__(self):
        self.enabled = True
        self.recomputed = []  # [{"name", "cells": [counts], "message"}]
        self.failed = []  # [{"name", "reason"}]: planned, but not recomputed
        self.skipped = []  # [{"name", "reason"}]: not planned (from the plan)
        self.cells = []  # [{"cell", "count", "ran", "ok", "ms", "output", "error", "effects"}]
        self.warnings = []
        self.ms = 0.0

    @property
    def ok(self):
        return not self.failed

    def to_dict(self):
        return {"enabled": self.enabled, "recomputed": self.recomputed, "failed": self.failed,
                "skipped": self.skipped, "cells": self.cells, "warnings": self.warnings,
                "ms": self.ms, "ok": self.ok}

    def table(self):
        parts = [f"{r['name']}: {r['message']}" for r in self.recomputed]
        parts += [f"{f['name']}: NOT recomputed: {f['reason']}" for f in self.failed]
        parts += [f"{s['name']}: not recomputed: {s['reason']}" for s in self.skipped]
        for c in self.cells:
            if c["ran"] and c["effects"]:
                words = sorted({EFFECT_WORDS.get(k, k) for k, _, _ in c["effects"]})
                parts.append(f"cell [{c['count']}] was re-run and {', '.join(words)}")
            if c["output"]:
                parts.append(f"output of cell [{c['count']}] (replayed):\n  " +
                             c["output"].rstrip().replace("\n", "\n  "))
        parts += ["warning: " + w for w in self.warnings]
        return "\n".join(parts) if parts else "nothing to recompute"

    def __repr__(self):
        return self.table()


class _Run:
    """One replay in progress; the async and the sync driver share it."""

    def __init__(self, plan, history, namespace, enabled, allow, exclude, off_reason=None):
        self.report = ReplayReport()
        self.off_reason = off_reason
        self.t0 = time.perf_counter()
        self.plan = Plan.from_json(plan)
        self.hist = _History(history)
        self.ns = namespace
        self.allow = self.plan.allow if allow is None else _allowed(allow)
        self.exclude = set(exclude)
        self.report.skipped = [{"name": n, "reason": r} for n, r in self.plan.skipped.items()]
        self.enabled = enabled and self.plan.enabled
        self.report.enabled = self.enabled
        self.viable = dict.fromkeys(self.plan.targets)  # targets not failed so far
        self.reasons = {}  # target -> why it failed
        self.stash = dict(namespace)

    def steps(self):
        """Yields (step, cell) for each cell to run now; the driver then calls ran()."""
        if not self.enabled:
            for name, t in self.plan.targets.items():
                self.report.skipped.append({"name": name, "reason": (
                    (self.off_reason or "replay is turned off for this restore") +
                    f" (it would re-run {_label_list(t['counts'])})")})
            self.viable = {}
            return
        for step in self.plan.steps:
            serves = [n for n in step["targets"] if n in self.viable]
            entry = {"cell": step["cell"], "count": step["count"], "ran": False, "ok": None,
                     "ms": 0.0, "output": "", "error": None, "effects": []}
            self.report.cells.append(entry)
            if not serves:
                entry["error"] = "not run: every variable it served already failed"
                continue
            cell = self.hist.cells.get(step["cell"])
            label = f"cell [{step['count']}]"
            if cell is None:
                self._fail(serves, f"{label} is not in the checkpoint's session history")
                entry["error"] = "missing from the history"
                continue
            why = _unreplayable(cell, self.allow, self.exclude)
            if why:
                self._fail(serves, f"{label} was not re-run: it {why}")
                entry["error"] = f"not run: it {why}"
                continue
            for name in step["rebind"]:
                if name in self.stash:
                    self.ns[name] = self.stash[name]
            yield entry, cell

    def _fail(self, names, reason):
        for n in names:
            if n in self.viable:
                del self.viable[n]
                self.reasons[n] = reason

    @contextlib.contextmanager
    def step(self, entry, cell):
        """Around one cell: yields its compiled code (None if it does not compile), captures
        its output and run-time side effects, and records how it went."""
        filename = f"<replay of {cell.label}>"
        src = cell.code
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        out, error, t0 = io.StringIO(), None, time.perf_counter()
        RUNTIME_EFFECTS.start()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    code = compile(src, filename, "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                                   dont_inherit=True)
                except (SyntaxError, ValueError) as exc:
                    code, error = None, f"{type(exc).__name__}: {exc}"
                try:
                    yield code
                except (Exception, SystemExit) as exc:  # a replayed `exit()` is a failure too
                    error = _error_text(exc, filename)
        finally:
            effects = RUNTIME_EFFECTS.stop()
        entry.update(ran=True, ok=error is None, ms=(time.perf_counter() - t0) * 1000.0,
                     output=out.getvalue()[:_MAX_OUTPUT], error=error,
                     effects=[[k, d, "code"] for k, d, _ in cell.effects] +
                     [[k, d, "run"] for k, d in effects])
        if error is not None:
            serves = [n for s in self.plan.steps if s["cell"] == cell.id for n in s["targets"]]
            self._fail(serves, f"{cell.label} raised {error} when re-run")

    def finish(self):
        ns, stash = self.ns, self.stash
        keep = {n for n in self.viable if n in ns}
        for name in list(ns):
            if name in keep:
                continue
            if name in stash:
                if ns[name] is not stash[name]:
                    ns[name] = stash[name]
            elif not (name.startswith("__") and name.endswith("__")):
                del ns[name]  # a temporary of the replayed cells
        for name, value in stash.items():
            if name not in ns:
                ns[name] = value
        for name, t in self.plan.targets.items():
            if name in keep:
                self.report.recomputed.append({
                    "name": name, "cells": t["counts"],
                    "message": f"recomputed by re-running {_label_list(t['counts'])}"})
            elif self.enabled:
                reason = self.reasons.get(name) or (
                    "the replayed cells did not create it (was it deleted?)")
                self.report.failed.append({"name": name, "reason": reason})
        self.report.ms = (time.perf_counter() - self.t0) * 1000.0
        return self.report


def _error_text(exc, filename):
    """'ZeroDivisionError: division by zero (line 2)', the line taken in the replayed cell."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    text = f"{type(exc).__name__}: {exc}"[:300]
    return text + (f" (line {line})" if line else "")


async def replay(plan, history, namespace, *, enabled=True, allow=None, exclude=(),
                 off_reason=None):
    """Run `plan` (a Plan or its JSON) with the cells of `history` (a Recorder or its JSON)
    in `namespace`, after a restore. Returns a ReplayReport; never raises for a cell's
    failure. allow=None takes the plan's allowed side effects; exclude: counts not to run;
    off_reason: why nothing runs when `enabled` is false (said per variable)."""
    run = _Run(plan, history, namespace, enabled, allow, exclude, off_reason)
    try:
        for entry, cell in run.steps():
            with run.step(entry, cell) as code:
                if code is not None and code.co_flags & inspect.CO_COROUTINE:
                    await eval(code, namespace)
                elif code is not None:
                    exec(code, namespace)
    finally:
        report = run.finish()
    return report


def replay_sync(plan, history, namespace, *, enabled=True, allow=None, exclude=(),
                off_reason=None):
    """`replay` for callers that cannot await: a cell whose top-level `await` really
    suspends fails (with a message saying to use `await replay(...)`)."""
    run = _Run(plan, history, namespace, enabled, allow, exclude, off_reason)
    try:
        for entry, cell in run.steps():
            with run.step(entry, cell) as code:
                if code is not None and code.co_flags & inspect.CO_COROUTINE:
                    _drive(eval(code, namespace))
                elif code is not None:
                    exec(code, namespace)
    finally:
        report = run.finish()
    return report


class _Suspended(RuntimeError):
    pass


def _drive(coro):
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise _Suspended("the cell awaits something that does not finish at once; replay it "
                     "with `await replay(...)`")


__all__ = ["Plan", "PlanError", "ReplayReport", "plan_replay", "choose_recompute", "replay",
           "replay_sync"]
