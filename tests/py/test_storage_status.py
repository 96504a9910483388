"""The browser storage line and lost checkpoints in %checkpoints and %restore
(py/elastic_lite/session/storage_status.py), against the golden vectors the JS copy
(js/shared/storage-status.mjs, tests/node/storage-status.test.mjs) is checked against too.
The browser's store is stood in for by a MemoryStore with a `proxy` that answers
storageStatus() and lists some checkpoints as lost, as js/store/indexeddb.mjs does."""

import asyncio
import json
import os

import pytest
from test_magics import run, shell  # noqa: F401 (the shell fixture)

import elastic_lite as el
from elastic_lite.session import storage_status as _storage_status
from elastic_lite.store.stores import StoreError

VECTORS = json.load(open(os.path.join(os.path.dirname(__file__), "..", "vectors",
                                      "storage-line.json"), encoding="utf-8"))


@pytest.mark.parametrize("n,text", VECTORS["sizes"])
def test_size_text(n, text):
    assert _storage_status.size_text(n) == text


@pytest.mark.parametrize("case", VECTORS["lines"], ids=[c["why"] for c in VECTORS["lines"]])
def test_storage_line(case):
    assert _storage_status.storage_line(case["status"]) == case["line"]


@pytest.mark.parametrize("case", VECTORS["lost"])
def test_lost_text(case):
    assert _storage_status.lost_text(case["lost"]) == case["text"]


class _Proxy:
    def __init__(self, status):
        self.status = status

    async def storageStatus(self):  # noqa: N802 (the JS store's name)
        return self.status


class BrowserLike(el.MemoryStore):
    """A MemoryStore that says what the browser's store says: its storage, lost entries."""

    def __init__(self, status, lost=()):
        super().__init__()
        self.proxy = _Proxy(status)
        self.lost = set(lost)

    async def list(self, notebook=None):
        return [{**e, "lost": {"missing": 1, "records": 2}} if e["name"] in self.lost else e
                for e in await super().list(notebook)]


def test_checkpoints_shows_storage_and_lost(shell, capsys):
    store = BrowserLike({"persistent": False, "used": 1536, "quota": 1048576})
    el.set_store(store)
    out = run(shell, "%checkpoints", capsys)
    assert out.endswith("yet (take one with %checkpoint [name])\nBrowser storage: not persistent (the "
                        "browser may remove checkpoints when space runs low) · 1.5 KiB used, "
                        "1022.5 KiB left\n"), out
    run(shell, "a = 1\n%checkpoint one\n%checkpoint two", capsys)
    store.lost = {"one"}
    out = run(shell, "%checkpoints", capsys)
    assert "one (lost)" in out and "two (lost)" not in out
    assert "one: lost: its data was removed by the browser (1 of 2 records gone)\n" in out
    assert "await elastic_lite.delete_checkpoint(NAME)" in out
    assert "Browser storage: not persistent" in out
    assert out.endswith('a bare %restore brings back "two"\n'), out  # still the last line
    # the list report carries the storage; a store that is not the browser's has none
    el.set_store(el.MemoryStore())
    out = run(shell, "%checkpoints", capsys)
    assert "Browser storage" not in out and "lost" not in out


def test_checkpoints_of_a_folder_store_name_lost_ones_in_its_words(shell, capsys, tmp_path):
    """A folder store (the directory store here) whose record files were deleted by hand:
    %checkpoints marks the checkpoint lost in the folder's words, and advises keeping the
    folder whole (not the browser's Export advice)."""
    from elastic_lite.store.directory import DirectoryStore
    store = DirectoryStore(tmp_path)
    el.set_store(store)
    run(shell, "c = list(range(30))\n%checkpoint kept\n%checkpoint gone", capsys)
    for f in os.listdir(tmp_path / "records"):
        os.remove(tmp_path / "records" / f)
    out = run(shell, "%checkpoints", capsys)
    assert "gone: lost: its data was removed from the folder (" in out, out
    assert "keep the store's folder whole" in out and "Export" not in out, out
    assert "Browser storage" not in out


def test_restore_of_lost_checkpoint_says_so(shell, capsys):
    exc = StoreError("the checkpoint store failed to read records: 2 record(s) are not in the "
                     "store: ab, cd (removed by the browser or cleared, or deleted meanwhile).",
                     "missing-record")
    lost = _storage_status.as_lost(exc, "nb [3]", BrowserLike(None))
    assert lost.code == "lost"
    assert str(lost).startswith('checkpoint "nb [3]" is lost: its data is no longer in this '
                                "browser's storage; it was removed by the browser or cleared")
    assert "damaged" not in str(lost)
    # a store in memory, or another error: unchanged
    assert _storage_status.as_lost(exc, "nb [3]", el.MemoryStore()) is exc
    # a folder store (the browser's folder, a JS or Python directory store): the folder's words

    class FolderProxy:
        dir = 'the folder "ckpts"'

    folder = el.MemoryStore()
    folder.proxy = FolderProxy()
    lost = _storage_status.as_lost(exc, "nb [3]", folder)
    assert lost.code == "lost"
    assert str(lost).startswith('checkpoint "nb [3]" is lost: its records are no longer in the '
                                "folder \"ckpts\"; they were deleted from it"), str(lost)
    other = StoreError("busy", "busy")
    assert _storage_status.as_lost(other, "nb [3]", BrowserLike(None)) is other

    class Gone(BrowserLike):
        async def read_records(self, keys):
            raise exc

    store = Gone(None)
    el.set_store(store)
    run(shell, "b = 2\n%checkpoint gone", capsys)
    out = run(shell, "%restore gone", capsys)
    assert out.startswith('elastic_lite: checkpoint "gone" is lost: its data is no longer in this '
                          "browser's storage; it was removed by the browser or cleared"), out
    assert "Traceback" not in out


def test_a_checkpoint_too_large_to_restore_here_keeps_its_warning(shell, capsys, monkeypatch):
    """The heap warning a checkpoint report gives is kept in the entry's metadata
    (meta.restoreWarning, from the kernel), so list and %checkpoints say it later, not only
    %checkpoint when it was saved."""
    from elastic_lite.load import streamed as _streamed
    run(shell, "blob = bytes(range(256)) * 64", capsys)
    run(shell, "%checkpoint fits", capsys)
    monkeypatch.setattr(_streamed, "HEAP_LIMIT", _streamed.KERNEL_HEAP + _streamed.RESTORE_MARGIN + 1024)
    out = run(shell, "%checkpoint too-big", capsys)
    assert "warning: this checkpoint cannot be restored in this browser" in out
    monkeypatch.setattr(_streamed, "HEAP_LIMIT", None)  # a later kernel need not be the saving one
    from elastic_lite.session.kernel import SESSION
    report = asyncio.run(SESSION.list())
    metas = {e["name"]: e["meta"] for e in report["checkpoints"]}
    assert "restoreWarning" not in metas["fits"]
    assert metas["too-big"]["restoreWarning"].startswith("this checkpoint cannot be restored in this browser: ")
    out = run(shell, "%checkpoints", capsys)
    # the words stored at save time, as they were (the size depends on what else the shell holds)
    assert f"too-big: warning: {metas['too-big']['restoreWarning']}" in out, out
    assert "restoring its " in metas["too-big"]["restoreWarning"]
    assert "fits: warning" not in out
    assert out.endswith('a bare %restore brings back "too-big"\n'), out
