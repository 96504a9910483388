"""What snapshot() and load_snapshot() tell the person: plain objects and short tables."""


def type_name(value):
    t = type(value)
    mod = getattr(t, "__module__", "builtins")
    qual = getattr(t, "__qualname__", t.__name__)
    return qual if mod in ("builtins", "__main__") else f"{mod}.{qual}"


def human_size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n} B"


def _table(header, rows):
    if not rows:
        return ""
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

    def to_dict(self):
        return dict(self.__dict__)

    def __repr__(self):
        return f"<group {self.names} {self.serializer} {self.bytes} B {self.ms:.1f} ms>"


class Snapshot:
    """Result of snapshot(): `.data` (container bytes), `.groups`, `.skipped`, `.modules`."""

    def __init__(self, data, groups, skipped, modules, walk, ms):
        self.data = data
        self.groups = groups
        self.skipped = skipped
        self.modules = modules
        self.walk = walk  # the grouping walk: .objects, .seconds, .truncated
        self.ms = ms

    @property
    def names(self):
        return [n for g in self.groups for n in g.names]

    def rows(self):
        rows = []
        for g in self.groups:
            for i, (name, typ) in enumerate(zip(g.names, g.types)):
                first = i == 0
                rows.append([name, typ, g.serializer,
                             human_size(g.bytes) if first else '"',
                             f"{g.ms:.1f} ms" if first else '"'])
        return rows

    def table(self):
        parts = [_table(["variable", "type", "serializer", "size", "time"], self.rows())]
        if self.modules:
            parts.append("modules: " + ", ".join(
                m["name"] + " = " + m["module"] + ("." + m["attr"] if m["attr"] else "")
                for m in self.modules))
        if self.skipped:
            parts.append("skipped:\n" + _table(
                ["variable", "type", "reason"],
                [[s["name"], s["type"], s["reason"]] for s in self.skipped]))
        notes = [f"{g.names}: {g.fallback} -> {g.serializer}" for g in self.groups if g.fallback]
        notes += [f"{g.names}: {g.note}" for g in self.groups if g.note]
        if self.walk is not None and self.walk.truncated:
            notes.append(self.walk.truncated)
        if notes:
            parts.append("notes:\n  " + "\n  ".join(notes))
        parts.append(f"{len(self.names)} variables in {len(self.groups)} records, "
                     f"{human_size(len(self.data))}, {self.ms:.0f} ms")
        return "\n".join(p for p in parts if p)

    def to_dict(self):
        return {
            "size": len(self.data),
            "groups": [g.to_dict() for g in self.groups],
            "skipped": list(self.skipped),
            "modules": list(self.modules),
            "ms": self.ms,
            "walk": None if self.walk is None else {
                "objects": self.walk.objects, "seconds": self.walk.seconds,
                "truncated": self.walk.truncated},
        }

    def __repr__(self):
        return self.table()


class RestoreReport:
    """Result of load_snapshot(): what came back, what did not and why."""

    def __init__(self):
        self.restored = []  # names now in the namespace
        self.failed = []  # [{"names", "reason"}] records that could not be restored
        self.modules = []  # [{"name", "module", "attr", "ok", "error"}]
        self.skipped = []  # what the checkpoint itself had skipped, with reasons
        self.warnings = []
        self.ms = 0.0

    @property
    def ok(self):
        return not self.failed and all(m["ok"] for m in self.modules)

    @property
    def failed_names(self):
        return [n for f in self.failed for n in f["names"]]

    def table(self):
        parts = [f"restored {len(self.restored)} variables"
                 + (f" and {sum(m['ok'] for m in self.modules)} imports" if self.modules else "")
                 + f" in {self.ms:.0f} ms"]
        if self.restored:
            parts.append("  " + ", ".join(self.restored))
        bad = [[", ".join(f["names"]), f["reason"]] for f in self.failed]
        bad += [[m["name"], f"import {m['module']} failed: {m['error']}"]
                for m in self.modules if not m["ok"]]
        if bad:
            parts.append("NOT restored:\n" + _table(["variable", "reason"], bad))
        if self.skipped:
            parts.append("not in the checkpoint (skipped when it was taken):\n" + _table(
                ["variable", "type", "reason"],
                [[s["name"], s["type"], s["reason"]] for s in self.skipped]))
        for w in self.warnings:
            parts.append("warning: " + w)
        return "\n".join(parts)

    def to_dict(self):
        return {"restored": self.restored, "failed": self.failed, "modules": self.modules,
                "skipped": self.skipped, "warnings": self.warnings, "ms": self.ms,
                "ok": self.ok}

    def __repr__(self):
        return self.table()
