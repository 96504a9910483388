"""What snapshot(), load_snapshot() and the host API tell the person: plain objects, short
tables, and the pieces every host report is made of (docs/INTERFACES.md, "Report schema"):

- `problem()`: one typed problem {kind, names, record, message, code, calls, offset}. The kind
  is decided here or where the failure happens, from structure (the core's record state, the
  deny-list, the exception's type), never by reading message text.
- `record_problem()`: why one inspected record must not be unpickled (damaged / refused), the
  one decision restore, import and inspect share.
- `checkpoint_meta()`: the one builder of a store entry's metadata.
"""

import re
import time

from .trust import rules as _trust

# Text from a file (variable, type and module names, reasons quoting them) is shown, never
# interpreted: C0 controls, DEL and C1 controls as \xNN; the bidirectional controls (marks,
# embeddings, overrides, isolates) and the line/paragraph separators as \uNNNN. Everything
# else, backslashes included, stays, so showing twice changes nothing. The JS hosts do the
# same (js/shared/report.mjs shownText): tests/vectors/escape-text.json holds the rule.
_UNSAFE_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape(match):
    c = ord(match.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown_text(text):
    """`text` (any value: str() of it) made safe to print on a terminal or a page."""
    return _UNSAFE_TEXT.sub(_escape, "" if text is None else str(text))


def _shown_lines(text):
    """Text of several lines (a cell's output) with each line shown safe."""
    return "\n".join(shown_text(line) for line in str(text).split("\n"))

# What went wrong, as hosts show it:
#   damaged  the bytes are not whole (a CRC, the structure or a pickle stream is bad)
#   refused  whole, but not loaded: it would call code-running or unknown globals (the
#            deny-list; `calls`), it is not plain data (data-only mode), or the checkpoint is
#            foreign and not confirmed (code `foreign`)
#   needs    it depends on something absent here: another record that failed, a module
#   failed   anything else (a store error, an exception while unpickling, a missing name)
KINDS = ("damaged", "refused", "needs", "failed")


def type_name(value):
    t = type(value)
    mod = getattr(t, "__module__", "builtins")
    qual = getattr(t, "__qualname__", t.__name__)
    return qual if mod in ("builtins", "__main__") else f"{mod}.{qual}"


def human_size(n):
    """'512 B', '3.4 MiB': binary units, one decimal rounded half up (the rule of JS's
    storage-status.mjs sizeText; tests/vectors/storage-line.json)."""
    n = int(n)
    if n < 1024:
        return f"{n} B"
    unit, name = 1024, "KiB"
    for next_name in ("MiB", "GiB", "TiB"):
        if n < unit * 1024:
            break
        unit, name = unit * 1024, next_name
    tenths = (n * 10 + unit // 2) // unit
    return f"{tenths // 10}.{tenths % 10} {name}"


def problem(kind, message, names=(), record=None, code=None, calls=(), offset=None):
    """One problem of a host report (JSON-able). `code`: the C core's error code for damage,
    else one of ours (docs/INTERFACES.md lists them)."""
    if kind not in KINDS:
        raise ValueError(f"problem kind must be one of {KINDS}, not {kind!r}")
    return {"kind": kind, "names": [str(n) for n in names], "record": record,
            "message": str(message), "code": code, "calls": list(calls), "offset": offset}


def describe_error(err):
    """The core's error object as one phrase: its message and, when known, the byte offset."""
    if not err:
        return "damaged"
    msg = err.get("message") or "damaged"
    if err.get("offset") is not None:
        msg += f" (byte offset {err['offset']})"
    return msg


def core_damage(err, names=(), record=None, offset=None):
    """Damage the C core found, as a `damaged` problem: its error object's own message (which
    names the record and the byte offsets), code and offset, nothing reworded; the hosts that
    check a file without Python map the same fields the same way (js/cli/integrity.mjs)."""
    return problem("damaged", err.get("message") or "damaged", names, record,
                   code=err.get("code"), offset=offset)


def record_problem(rec, judgement=None):
    """Why the inspected record `rec` (an entry of the core's report, validated) must not be
    unpickled: a `damaged` or `refused` problem, or None when it may be. `judgement`: the
    `_trust.Judgement` of its container (its mode decides; default: the deny-list)."""
    names = list(rec.get("names") or [])
    idx = rec.get("index")
    if not rec.get("ok"):
        err = rec.get("error") or {}
        return core_damage(err, names, idx, err.get("offset", rec.get("offset")))
    if judgement is None:
        judgement = _trust.Judgement({"records": [rec]})
    hits = judgement.refused(rec)
    if hits:
        return problem("refused", _trust.refusal(hits, judgement.mode), names, idx,
                       code="not-data" if judgement.mode == _trust.DATA else "denied",
                       calls=[_trust.label(h) for h in hits], offset=rec.get("offset"))
    return None


def inspection_problems(info, judgement=None):
    """Every problem an inspection report shows, in file order: each record's (damaged or
    refused) and the container's own error (index, footer, header) when no record names it."""
    found = [p for p in (record_problem(r, judgement) for r in info.get("records") or []) if p]
    err = info.get("error")
    if err and not any(p["kind"] == "damaged" for p in found):
        found.append(core_damage(err, record=err.get("record"), offset=err.get("offset")))
    at = lambda p: p["offset"] if isinstance(p["offset"], int) else float("inf")  # noqa: E731
    return sorted(found, key=at)


def checkpoint_meta(names, skipped, size, notebook=None, created_ms=None, **extra):
    """The metadata of a store entry (docs/INTERFACES.md, "Stores"): the one place it is built,
    for checkpoints and imports alike. `extra` adds host-specific keys (e.g. `imported`)."""
    meta = {
        "notebook": notebook,
        "createdMs": int(time.time() * 1000) if created_ms is None else int(created_ms),
        "size": int(size),
        "variables": len(names),
        "names": list(names),
        "skipped": [{"name": s["name"], "type": s["type"], "reason": s["reason"]}
                    for s in skipped],
    }
    meta.update(extra)
    return meta


def _table(header, rows):
    if not rows:
        return ""
    rows = [[shown_text(c) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


class GroupReport:
    """One record: the variables written together, how, how big, how long."""

    def __init__(self, names, types, serializer, bytes, ms, fallback=None, rewound_bytes=0):
        self.names = names
        self.types = types
        self.serializer = serializer
        self.bytes = bytes
        self.ms = ms
        self.fallback = fallback  # why the serializer(s) before this one failed
        self.rewound_bytes = rewound_bytes  # bytes a failed attempt wrote, then rewound
        self.note = None
        self.reused = False  # unchanged since the previous checkpoint: the stored record reused

    def to_dict(self):
        return dict(self.__dict__)

    def __repr__(self):
        return f"<group {self.names} {self.serializer} {self.bytes} B {self.ms:.1f} ms>"


class Snapshot:
    """Result of snapshot(): `.data` (container bytes), `.size` (their length), `.groups`,
    `.skipped`, `.modules`. A snapshot streamed into a store (checkpoint()) has `.data` None."""

    def __init__(self, data, groups, skipped, modules, walk, ms):
        self.data = data
        self.size = None if data is None else len(data)
        self.groups = groups
        self.skipped = skipped
        self.modules = modules
        self.walk = walk  # the grouping walk: .objects, .seconds, .truncated
        self.ms = ms
        self.replay = None  # checkpoint(): the replay plan's report (host's "replay" field)
        self.random_state = []  # the global generators saved ("random", "numpy.random")

    @property
    def names(self):
        return [n for g in self.groups for n in g.names]

    def variable_rows(self):
        """One dict per saved variable (the host report's `variables`); a group's size, time,
        fallback and note are on its first variable, `record` is the group's record index."""
        rows = []
        for index, g in enumerate(self.groups):
            for i, (n, t) in enumerate(zip(g.names, g.types)):
                first = i == 0
                rows.append({"name": n, "type": t, "serializer": g.serializer, "record": index,
                             "bytes": g.bytes if first else None, "ms": g.ms if first else None,
                             "fallback": g.fallback if first else None,
                             "note": g.note if first else None,
                             "reused": g.reused if first else None})
        return rows

    def table(self):
        d = self.to_dict()
        return checkpoint_text({"variables": self.variable_rows(), "skipped": d["skipped"],
                                "modules": d["modules"], "walk": d["walk"],
                                "size": self.size, "timings": {"total_ms": self.ms},
                                "replay": self.replay, "random_state": self.random_state})

    def to_dict(self):
        return {
            "size": self.size,
            "groups": [g.to_dict() for g in self.groups],
            "skipped": list(self.skipped),
            "modules": list(self.modules),
            "ms": self.ms,
            "random_state": list(self.random_state),
            "walk": None if self.walk is None else {
                "objects": self.walk.objects, "seconds": self.walk.seconds,
                "truncated": self.walk.truncated},
        }

    def __repr__(self):
        return self.table()


def checkpoint_text(rep):
    """A checkpoint report (host.checkpoint's fields) as the table a person reads."""
    rows = rep["variables"]
    parts = [_table(["variable", "type", "serializer", "size", "time"],
                    [[v["name"], v["type"], v["serializer"],
                      '"' if v["bytes"] is None else human_size(v["bytes"]),
                      '"' if v["ms"] is None else f"{v['ms']:.1f} ms"] for v in rows])]
    if rep["modules"]:
        parts.append("modules: " + ", ".join(shown_text(
            f"{m['name']} = {m['module']}" + ("." + m["attr"] if m["attr"] else ""))
            for m in rep["modules"]))
    if rep["skipped"]:
        parts.append("skipped:\n" + _table(
            ["variable", "type", "reason"],
            [[s["name"], s["type"], s["reason"]] for s in rep["skipped"]]))
    replay = rep.get("replay") or {}
    planned = [f"{r['name']}: {r['message']}" for r in replay.get("recompute") or []]
    planned += [f"{r['name']}: {r['message']}" for r in replay.get("skipped") or []]
    planned += [f["message"] for f in replay.get("flagged") or []]
    planned += [f"{', '.join(c['names'])}: {c['reason']}" for c in replay.get("choices") or []]
    if planned:
        parts.append("replay on restore:\n  " + "\n  ".join(map(shown_text, planned)))
    firsts = [v for v in rows if v["bytes"] is not None]
    names = {v["record"]: [w["name"] for w in rows if w["record"] == v["record"]] for v in firsts}
    notes = [f"{names[v['record']]}: {v['fallback']} -> {v['serializer']}"
             for v in firsts if v["fallback"]]
    notes += [f"{names[v['record']]}: {v['note']}" for v in firsts if v["note"]]
    if rep.get("walk") and rep["walk"].get("truncated"):
        notes.append(rep["walk"]["truncated"])
    notes += filter(None, [_random_state_line(rep.get("random_state"))])
    if notes:
        parts.append("notes:\n  " + "\n  ".join(map(shown_text, notes)))
    parts += ["warning: " + shown_text(w) for w in rep.get("warnings") or []]
    parts.append(f"{len(rows)} variables in {len(firsts)} records, "
                 f"{human_size(rep['size'])}, {rep['timings']['total_ms']:.0f} ms")
    return "\n".join(p for p in parts if p)


_MARKS = {"runs-code": "! runs code", "unknown": "? unknown", "not-data": "x not data",
          "builds-code": "f builds code"}


def foreign_text(trust, limit=20):
    """What a foreign checkpoint would import (the marked imports first), as the magics and
    the Python API show it before a person decides (the JS hosts: report.mjs importRows)."""
    rows = (trust or {}).get("imports") or []
    shown = [[_MARKS.get(r["danger"], ""), r["target"],
              ", ".join([*r.get("names", []), *(f"{b} =" for b in r.get("bindings", []))])]
             for r in rows[:limit]]
    more = f"\n  ... and {len(rows) - limit} more" if len(rows) > limit else ""
    return ("what restoring it would import (look before trusting it: %restore NAME --trust, "
            "trust=True; or data_only=True for its plain data):\n"
            + _table(["check", "import", "used by"], shown) + more)


def restore_text(rep):
    """A restore report (host.restore's fields) as the text a person reads."""
    modules = rep.get("modules") or []
    ok_modules = [m for m in modules if m["ok"]]
    names = [r["name"] for r in rep["restored"]]
    parts = [f"restored {len(names)} variables"
             + (f" and {len(ok_modules)} imports" if modules else "")
             + f" in {rep['timings'].get('load_ms', 0):.0f} ms"]
    if names:
        parts.append("  " + ", ".join(map(shown_text, names)))
    if ok_modules:
        parts.append("  imports: " + ", ".join(
            shown_text(_trust.binding_text(m)) for m in ok_modules))
    if rep.get("recomputed"):
        parts.append("recomputed by replay:\n  " + "\n  ".join(
            shown_text(f"{r['name']}: {r['message']}") for r in rep["recomputed"]))
    for c in (rep.get("replay") or {}).get("cells") or []:
        if c.get("output"):
            parts.append(f"output of cell [{shown_text(c['count'])}] (re-run):\n  "
                         + _shown_lines(c["output"].rstrip()).replace("\n", "\n  "))
    bad = [[", ".join(p["names"]), p["message"]] for p in rep["problems"]]
    if bad:
        parts.append("NOT restored:\n" + _table(["variable", "reason"], bad))
    if any(p.get("code") == "foreign" for p in rep["problems"]):
        parts.append(foreign_text(rep.get("trust")))
    if rep["skipped"]:
        parts.append("not in the checkpoint (skipped when it was taken):\n" + _table(
            ["variable", "type", "reason"],
            [[s["name"], s["type"], s["reason"]] for s in rep["skipped"]]))
    parts += filter(None, [_random_state_line(rep.get("random_state"), restored=True)])
    for w in rep["warnings"]:
        parts.append("warning: " + shown_text(w))
    return "\n".join(parts)


def _random_state_line(names, restored=False):
    """What the reports say of the global random generators' state (_random_state)."""
    if not names:
        return None
    what = " and ".join(names)
    return (f"random state: {what} put back (the next draws continue the saved sequence)"
            if restored else f"random state of {what} saved (a restore continues the sequence)")


class RestoreReport:
    """Result of load_snapshot(): what came back, what did not and why."""

    def __init__(self):
        self.restored = []  # names now in the namespace
        # records that could not be restored: problem() dicts (kind, names, record, message,
        # code, calls, offset) plus "reason" (= message, the field's older name)
        self.failed = []
        self.modules = []  # [{"name", "module", "attr", "ok", "error"}]
        self.skipped = []  # what the checkpoint itself had skipped, with reasons
        self.warnings = []
        self.ms = 0.0
        self.inspection = None  # the core's inspection report load_snapshot validated with
        # how it was judged: provenance, mode, every import (load.loader._trust_section)
        self.trust = None
        self.replay = None  # restore(): the replay's ReplayReport (_replay), when it ran
        self.random_state = []  # the global generators put back ("random", "numpy.random")

    @property
    def ok(self):
        return (not self.failed and all(m["ok"] for m in self.modules)
                and (self.replay is None or self.replay.ok))

    @property
    def failed_names(self):
        return [n for f in self.failed for n in f["names"]]

    def problems(self):
        """Every failure as a problem(): the records not restored, the imports that failed."""
        out = [{k: v for k, v in f.items() if k != "reason"} for f in self.failed]
        out += [problem("refused", m["error"], names=[m["name"]], code="denied",
                        calls=[c for c in [".".join(str(p) for p in (m.get("module"), m.get("attr"))
                                                    if p)] if c])
                if m.get("refused") else
                problem("needs", f"import {m['module']} failed: {m['error']}", names=[m["name"]],
                        code="needs-module")
                for m in self.modules if not m["ok"] and not (m.get("refused") and any(
                    f.get("code") == "foreign" for f in self.failed))]
        return out

    def table(self):
        text = restore_text({"restored": [{"name": n} for n in self.restored],
                             "modules": self.modules, "problems": self.problems(),
                             "skipped": self.skipped, "warnings": self.warnings,
                             "timings": {"load_ms": self.ms}, "trust": self.trust,
                             "random_state": self.random_state})
        replay = self.replay
        if replay is not None and (replay.recomputed or replay.failed or replay.skipped):
            text += "\nreplay:\n  " + _shown_lines(replay.table()).replace("\n", "\n  ")
        return text

    def to_dict(self):
        return {"restored": self.restored, "failed": self.failed, "modules": self.modules,
                "skipped": self.skipped, "warnings": self.warnings, "ms": self.ms,
                "ok": self.ok, "trust": self.trust, "random_state": self.random_state,
                "replay": None if self.replay is None else self.replay.to_dict()}

    def __repr__(self):
        return self.table()
