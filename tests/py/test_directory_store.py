"""The Python DirectoryStore (py/elastic_lite/store/directory.py): the Node store's layout,
locking, signing and verification, on host CPython. Both ways through the real CLI:
tests/node/store-directory-python-interop.test.mjs."""

import asyncio
import json
import os
import shutil
import subprocess

import pytest

import elastic_lite as el
from elastic_lite import host
from elastic_lite.store.directory import DirectoryStore, canonical_json, name_to_stem, stem_to_name
from elastic_lite.store.stores import StoreError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(coro):
    return asyncio.run(coro)


def save(store, name, ns_code="x = [1, 2]\n", **kw):
    ns = {"__name__": "__main__"}
    exec(ns_code, ns)
    el.set_store(store)
    report = run(host.checkpoint(name, namespace=ns, **kw))
    assert report["ok"], report["problems"]
    return report


def test_canonical_json_is_the_js_one():
    """Signatures cover canonical metadata: Python must write exactly JS canonicalJson's text."""
    values = [{"b": 1.0, "a": [1e21, 1.5e-7, 0.1, 123456789012.5, -0.0, 1e-6, 2 ** 53 - 1, 5e-324]},
              {"é": "\x01\x1f\x7f\u2028\ud800 \"\\", "\U0001F600": 1, "\uffff": 2, "Z": None, "y": True},
              [[], {}, "", 1e300, 123e-20, 0.5]]
    script = ("import { canonicalJson } from './js/store/common.mjs';"
              "const v = JSON.parse(process.argv[1]);"
              "console.log(JSON.stringify(v.map(canonicalJson)));")
    text = json.dumps(values)  # \ud800 travels escaped
    out = subprocess.run(["node", "--input-type=module", "-e", script, text], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [canonical_json(v) for v in json.loads(text)]


def test_stems_round_trip():
    for name in ["plain", "a b/c", ".hidden", "x.y", "é%", "nb.ipynb [3] 10:00"]:
        stem = name_to_stem(name)
        assert "/" not in stem and not stem.startswith(".")
        assert stem_to_name(stem) == name
    assert stem_to_name("a%2f") is None  # lowercase hex is not what the store writes


def test_layout_modes_under_umask_000(tmp_path):
    old = os.umask(0)
    try:
        store = DirectoryStore(tmp_path / "s")
        save(store, "one")
    finally:
        os.umask(old)
    d = tmp_path / "s"
    for sub in ["", "entries", "records", "locks"]:
        assert (d / sub).stat().st_mode & 0o777 == 0o700, sub
    files = ["signing-key", "counter.json", "entries/one.json"] + [f"records/{f}" for f in os.listdir(d / "records")]
    for f in files:
        assert (d / f).stat().st_mode & 0o777 == 0o600, f


def test_changed_record_is_damage_and_rewritten(tmp_path):
    store = DirectoryStore(tmp_path)
    save(store, "one", "data = list(range(50))\n")
    entry = run(store.get_entry("one"))
    key = entry["records"][0]["key"]
    path = tmp_path / "records" / key
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF
    path.write_bytes(bytes(raw))
    got = run(store.get("one"))
    assert got["damaged"] == [{"key": key, "record": 0}]
    assert (tmp_path / "records" / f"{key}.damaged").exists()
    assert run(store.has_records([key])) == [False]
    ns = {"__name__": "__main__"}
    report = run(host.restore("one", namespace=ns))
    assert "data" not in ns and not report["ok"]
    save(store, "two", "data = list(range(50))\n")  # the same value: its true bytes written again
    assert not (tmp_path / "records" / f"{key}.damaged").exists()
    assert run(store.get("one"))["damaged"] == []


def test_checkpoint_whose_record_files_are_gone_is_listed_lost(tmp_path):
    """Record files deleted behind the store's back (by hand, a sync tool): list marks the
    checkpoint lost (as the browser's store does), restore and get say it is lost and where,
    a restore without a name passes over it, and it can be deleted."""
    store = DirectoryStore(tmp_path)
    save(store, "old", "a = 1\n")
    save(store, "one", "data = list(range(50))\nb = 'x' * 100\n")
    entry = run(store.get_entry("one"))
    keys = list(dict.fromkeys(r["key"] for r in entry["records"]))
    assert len(keys) >= 2
    os.remove(tmp_path / "records" / keys[0])
    listed = {e["name"]: e for e in run(store.list())}
    assert listed["one"]["lost"] == {"missing": 1, "records": len(keys), "store": "folder"}
    assert "lost" not in listed["old"]
    report = run(host.list())
    assert report["restore_choice"] == "old"  # the lost one is passed over
    ns = {"__name__": "__main__"}
    report = run(host.restore("one", namespace=ns))
    assert not report["ok"] and report["problems"][0]["code"] == "lost", report["problems"]
    message = report["problems"][0]["message"]
    assert '"one" is lost: its records are no longer in ' + str(tmp_path) in message, message
    assert "deleted from it (by hand, or by a sync or cleanup tool)" in message
    with pytest.raises(StoreError, match=r'"one" is lost: 1 of its \d+ records are no longer in ') as got:
        run(store.get("one"))
    assert got.value.code == "lost"
    assert run(store.delete("one")) is True
    assert [e["name"] for e in run(store.list())] == ["old"]


def test_links_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    store = DirectoryStore(tmp_path / "s")
    save(store, "one")
    key = run(store.get_entry("one"))["records"][0]["key"]
    rec = tmp_path / "s" / "records" / key
    rec.unlink()
    rec.symlink_to(outside)
    with pytest.raises(StoreError) as err:
        run(store.read_records([key]))
    assert err.value.code == "unsafe"
    shutil.rmtree(tmp_path / "s" / "records")
    (tmp_path / "s" / "records").symlink_to(tmp_path)
    with pytest.raises(StoreError) as err:
        run(store.get("one"))
    assert err.value.code == "unsafe"
    assert outside.read_bytes() == b"secret"


def test_key_file_must_be_private(tmp_path):
    store = DirectoryStore(tmp_path)
    save(store, "one")
    os.chmod(tmp_path / "signing-key", 0o644)
    with pytest.raises(StoreError, match="chmod 600"):
        run(DirectoryStore(tmp_path).get_entry("one"))


def test_rollback_and_conflict(tmp_path):
    store = DirectoryStore(tmp_path)
    save(store, "one", "x = 1\n")
    old = (tmp_path / "entries" / "one.json").read_bytes()
    gen = run(store.generation("one"))
    save(store, "one", "x = 2\n")
    assert run(store.get_entry("one"))["signature"]["state"] == "valid"
    (tmp_path / "entries" / "one.json").write_bytes(old)  # an old signed entry put back
    state = run(DirectoryStore(tmp_path).get_entry("one"))["signature"]
    assert state["state"] == "rollback" and state["generation"] == gen
    other = DirectoryStore(tmp_path)
    other.expect("one", run(other.generation("one")))
    save(store, "one", "x = 3\n")  # another writer saved meanwhile
    entry = run(other.get_entry("one"))
    with pytest.raises(StoreError) as err:
        run(other.commit("one", {"head": entry["head"], "records": entry["records"],
                                 "tail": entry["tail"], "meta": {}}))
    assert err.value.code == "conflict"


def test_busy_lock_names_the_holder(tmp_path):
    store = DirectoryStore(tmp_path, lock_timeout=0.2)
    held = run(store.lock("one"))
    try:
        with pytest.raises(StoreError) as err:
            run(DirectoryStore(tmp_path, lock_timeout=0.2).lock("one"))
        assert err.value.code == "busy" and f"process {os.getpid()}" in str(err.value)
    finally:
        run(held.release())
    run(store.lock("one"))  # released: free again


def test_dead_writers_lock_and_temp_files_are_swept(tmp_path):
    store = DirectoryStore(tmp_path)
    save(store, "one")
    dead = 2 ** 30  # above any pid_max: no such process
    lock = tmp_path / "locks" / "one.lock"
    lock.write_text(json.dumps({"pid": dead, "host": os.uname().nodename, "token": "t-1",
                                "sinceMs": 0}))
    tmp = tmp_path / "records" / f".tmp-{dead}-abc"
    tmp.write_bytes(b"x")
    run(DirectoryStore(tmp_path).sweep())
    assert not lock.exists() and not tmp.exists()


def test_retention_keeps_what_a_person_asked_for(tmp_path):
    store = DirectoryStore(tmp_path, keep_last=2)
    for i in range(4):
        save(store, f"auto {i}", f"x = {i}\n", notebook="nb.ipynb", auto=True)
    names = [e["name"] for e in run(store.list("nb.ipynb"))]
    assert names == ["auto 3", "auto 2"]


# ---- the default store of a desktop kernel (_default_store) ----

def test_default_store_path(tmp_path, monkeypatch):
    from elastic_lite.ipython.desktop import default_store_path
    monkeypatch.delenv("ELASTIC_LITE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert default_store_path(None) == str(tmp_path / "data" / "elastic-lite")
    assert default_store_path("/srv/nb/analysis.ipynb") == "/srv/nb/.elastic-lite"
    # relative to the server's root: the kernel runs in the notebook's folder
    assert default_store_path("work/analysis.ipynb") == str(tmp_path / ".elastic-lite")
    monkeypatch.setenv("ELASTIC_LITE_STORE", "~/ckpt")
    assert default_store_path("/srv/nb/analysis.ipynb") == os.path.expanduser("~/ckpt")


def test_attach_in_a_kernel_shell_only(tmp_path, monkeypatch, capsys):
    """A shell with .kernel (ipykernel) gets the directory store beside its notebook and a
    point after each cell; a plain IPython shell keeps the in-memory default."""
    from IPython.core.interactiveshell import InteractiveShell
    from elastic_lite.ipython.desktop import attach
    from elastic_lite.session.kernel import SESSION
    monkeypatch.delenv("ELASTIC_LITE_STORE", raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "nb.ipynb"))
    sh = InteractiveShell.instance()
    el.set_store(None)
    try:
        attach(sh)
        assert SESSION.store is None  # plain shell: nothing chosen here
        sh.kernel = object()
        el.load_ipython_extension(sh)
        el.load_ipython_extension(sh)  # loading twice registers one automatic point
        assert SESSION.notebook == str(tmp_path / "nb.ipynb")
        assert SESSION.store.dir == str(tmp_path / ".elastic-lite")
        sh.run_cell("v = 1", store_history=True)
        points = run(SESSION.store.list(SESSION.notebook))
        assert len(points) == 1 and points[0]["meta"]["cell"]["firstLine"] == "v = 1", points
        sh.run_cell("%checkpoint", store_history=True)  # the magics' own cells make no point
        listed = run(SESSION.store.list(SESSION.notebook))
        assert len(listed) == 2
        asked = [e["name"] for e in listed if not e["meta"].get("auto")]  # named by the kernel
        assert len(asked) == 1, listed
        for i in range(31):  # the history is bounded (HISTORY: the newest 30 points)
            sh.run_cell(f"v = {i}", store_history=True)
        kept = run(SESSION.store.list(SESSION.notebook))
        assert sum(1 for e in kept if e["meta"].get("auto")) == 30 and asked[0] in [e["name"] for e in kept]
        capsys.readouterr()
        sh.run_cell(f"%elastic_lite store {tmp_path / 'other'}", store_history=False)
        assert f"checkpoints are kept in {tmp_path / 'other'}" in capsys.readouterr().out
    finally:
        from elastic_lite.ipython.desktop import _AutoPoint
        for cb in [c for c in sh.events.callbacks["post_run_cell"] if isinstance(c, _AutoPoint)]:
            sh.events.unregister("post_run_cell", cb)
        del sh.kernel
        sh.reset()
        el.set_store(None)
        el.set_notebook(None)


def test_files_of_earlier_versions_are_read_listed_deleted(tmp_path):
    """<stem>.elc + <stem>.meta.json, as the Node store wrote them before entries existed:
    listed with their metadata when it matches the file (size, mtime), read whole and
    unsigned (foreign), deleted; a sidecar that does not match gives derived metadata."""
    data = el.snapshot(namespace={"__name__": "__main__", "v": [1, 2]}).data
    elc = tmp_path / "old%20one.elc"
    elc.write_bytes(data)
    st = os.stat(elc)
    mtime_ms = (st.st_mtime_ns // 10 ** 9) * 1e3 + (st.st_mtime_ns % 10 ** 9) / 1e6
    (tmp_path / "old%20one.meta.json").write_text(json.dumps(
        {"name": "old one", "size": len(data), "mtimeMs": mtime_ms, "meta": {"notebook": "nb.ipynb", "createdMs": 5}}))
    (tmp_path / "stale.elc").write_bytes(data)
    store = DirectoryStore(tmp_path)
    listed = {e["name"]: e["meta"] for e in run(store.list())}
    assert listed["old one"] == {"notebook": "nb.ipynb", "createdMs": 5, "size": len(data)}
    assert listed["stale"]["metadataMissing"] is True and listed["stale"]["notebook"] is None
    got = run(store.get("old one"))
    assert bytes(got["bytes"]) == data and got["signature"]["state"] == "unsigned"
    el.set_store(store)
    ns = {"__name__": "__main__"}
    report = run(host.restore("old one", namespace=ns, trust=True))
    assert report["ok"] and ns["v"] == [1, 2], report["problems"]
    assert run(store.delete("old one")) is True
    assert not elc.exists() and not (tmp_path / "old%20one.meta.json").exists()
