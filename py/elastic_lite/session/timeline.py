"""The timeline of a notebook's checkpoints: the names and labels of automatic points, and
which checkpoint a restore without a name brings back. The same rules in JS
(js/shared/report.mjs), kept in step by golden vectors (tests/vectors/point-labels.json,
restore-choice.json). The kernel session keeps the state (its own points); this module
only decides."""

import datetime
import time


# ---- the timeline: automatic checkpoints after cells, and points of it ----

def point_name(notebook, count=None, time_ms=None, auto=True, stamp=True):
    """The name of an automatic checkpoint: `<notebook> [<count>] <UTC time, ms>`; of one taken
    for a notebook without a name (`auto=False`): `<notebook> <UTC time, ms>`; without the
    time when not `stamp` (a run's points: a second run replaces the first one's)."""
    ms = int(time.time() * 1000) if time_ms is None else int(time_ms)
    when = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    when = when.strftime(" %Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z" if stamp else ""
    count = f" [{'?' if count is None else count}]" if auto else ""
    return f"{notebook or 'untitled'}{count}{when}"


def cell_of(meta):
    """The cell that led to a checkpoint ({executionCount, firstLine, timeMs}) or {}."""
    cell = (meta or {}).get("cell")
    return cell if isinstance(cell, dict) else {}


def point_label(meta):
    """`[7] df = load()` for a checkpoint taken after a cell (`[?]` when its count is not
    known), else ''. The same words in JS (tests/vectors/point-labels.json)."""
    cell = (meta or {}).get("cell")
    if not isinstance(cell, dict):
        return ""
    count = cell.get("executionCount")
    head = f"[{count}]" if count is not None else "[?]"
    line = cell.get("firstLine") or ""
    return f"{head} {line}".rstrip()


def find_point(entries, count):
    """The newest of `entries` (store.list(): newest first) taken after the cell executed as
    `count` (`In [count]`), or None."""
    for entry in entries:
        if cell_of(entry.get("meta")).get("executionCount") == count:
            return entry
    return None


# ---- which checkpoint a restore without a name brings back ----
#
# After a kernel restart or a page reload the first cell a person runs leaves an automatic
# point of the new, near-empty kernel; it must not become what "Restore" (the toolbar, the
# restore offer, a bare %restore or elastic_lite.restore()) brings back: that is the state
# that was lost. So a restore without a name never picks one of the restoring kernel's own
# automatic points (they are its undo history: the sidebar, %restore @N, a name), nor a
# point that holds nothing at all; it takes the newest other checkpoint: one a person saved,
# or the last point of the previous kernel.

def holds_nothing(meta):
    """True for a checkpoint with no variable saved and none listed as skipped (e.g. the point
    after `1+1` in a fresh kernel): restoring it brings nothing back."""
    meta = meta or {}
    return not meta.get("variables") and not meta.get("names") and not meta.get("skipped")


def restore_choice(entries, own=frozenset()):
    """The entry (of store.list(): newest first) a restore without a name brings back: the
    newest that is neither one of the restoring kernel's own automatic points (`own`: their
    names) nor empty nor lost (its data removed by the browser: `lost`); failing that the newest not its own; failing that the newest; None when
    there is none. The same rule in JS: js/shared/report.mjs restoreChoice."""
    others = [e for e in entries if e.get("name") not in own]
    for entry in others:
        if not holds_nothing(entry.get("meta")) and not entry.get("lost"):
            return entry
    if others:
        return others[0]
    return entries[0] if entries else None
