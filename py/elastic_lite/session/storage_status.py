"""The browser storage a checkpoint store lives in, and checkpoints whose data it lost.

A browser keeps an origin's IndexedDB as best-effort storage unless the page was granted
persistence (`navigator.storage.persist()`, which only a page can ask for): it may evict it
whole under storage pressure, Safari after days without a visit, and a person can clear it.
`storage_status` asks the JS store (js/store/indexeddb.mjs `storageStatus`, which works in the
kernel's worker too) for {persistent, used, quota}; stores that are not the browser's have no
such thing (None). `storage_line` is the one line %checkpoints prints, the same words as the
sidebar and the demo (js/shared/storage-status.mjs; tests/vectors/storage-line.json keeps the
two in step). A listed checkpoint whose records are gone carries `lost` (the JS store's list);
`as_lost` turns the store's "records not in the store" into a sentence naming the checkpoint.
"""

from .._report import human_size, shown_text
from ..store.stores import StoreError, _plain
from .._words import quoted


async def storage_status(store):
    """{persistent, used, quota} of the browser storage `store` lives in, or None (not a
    browser store, or the browser does not say)."""
    proxy = getattr(store, "proxy", None)
    if proxy is None or not hasattr(proxy, "storageStatus"):
        return None
    try:
        res = await proxy.storageStatus()
        status = res if isinstance(res, dict) else _plain(res)  # a JS object from the store
    except Exception:
        return None
    if not isinstance(status, dict):
        return None
    return {k: status.get(k) for k in ("persistent", "used", "quota")}


size_text = human_size  # the one byte size rule of every Python message


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v >= 0


def storage_line(status):
    """The one line saying whether the browser keeps the checkpoints and how much room is
    used and left; '' when there is no status (not a browser store)."""
    if not status:
        return ""
    persistent = status.get("persistent")
    words = {True: "persistent (the browser keeps checkpoints until you delete them)",
             False: "not persistent (the browser may remove checkpoints when space runs low)",
             None: "persistence unknown"}[persistent if isinstance(persistent, bool) else None]
    line = f"Browser storage: {words}"
    used, quota = status.get("used"), status.get("quota")
    if _number(used) and _number(quota):
        line += f" · {size_text(used)} used, {size_text(max(0, quota - used))} left"
    elif _number(used):
        line += f" · {size_text(used)} used"
    return line


def lost_text(lost):
    """The mark of a listed checkpoint whose data is gone (`lost` as the store lists it;
    `store: "folder"` when its record files are gone from a folder store)."""
    if not lost:
        return ""
    missing, records = lost.get("missing"), lost.get("records")
    how = f" ({missing} of {records} records gone)" if records else ""
    by = "from the folder" if lost.get("store") == "folder" else "by the browser"
    return f"lost: its data was removed {by}{how}"


def restore_warnings(entries):
    """%checkpoints' lines for listed checkpoints saved with a warning that they would not
    restore in this browser (`meta.restoreWarning`, kept by the kernel when it saved them)."""
    lines = []
    for e in entries:
        warning = (e.get("meta") or {}).get("restoreWarning")
        if isinstance(warning, str) and warning:
            lines.append(f"{shown_text(e.get('name'))}: warning: {shown_text(warning)}")
    return lines


def _folder_of(store):
    """The folder a folder store keeps its files in (the directory store's path, a browser
    folder's 'the folder "name"'), else None."""
    where = getattr(store, "dir", None)
    if not isinstance(where, str):
        where = getattr(getattr(store, "proxy", None), "dir", None)
    return where if isinstance(where, str) and where else None


def as_lost(exc, name, store):
    """A StoreError saying checkpoint `name` is lost when `exc` is a browser or folder
    store's 'missing-record' (its records gone behind its back), else `exc` as it is."""
    if getattr(exc, "code", None) != "missing-record" or name is None:
        return exc
    if not hasattr(getattr(store, "proxy", None), "storageStatus"):
        folder = _folder_of(store)
        if folder is None:
            return exc
        return StoreError(
            f"checkpoint {quoted(name)} is lost: its records are no longer in {folder}; they were "
            "deleted from it (by hand, or by a sync or cleanup tool). Delete it (Delete in the "
            f"checkpoints panel, or await elastic_lite.delete_checkpoint({quoted(name)})), and keep "
            "the folder whole: a record file is shared by every checkpoint that holds its bytes",
            "lost")
    return StoreError(
        f"checkpoint {quoted(name)} is lost: its data is no longer in this browser's storage; it was "
        "removed by the browser or cleared (browsers may evict site data when storage runs low, "
        "Safari after days without a visit, or the site's data was cleared). Delete it (Delete "
        f"in the checkpoints panel, or await elastic_lite.delete_checkpoint({quoted(name)})); keep "
        "copies outside the browser with Export or a folder store", "lost")
