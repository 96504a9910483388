"""Provenance in host CPython: Python's MemoryStore signs what checkpoint() commits with a
per-process key; an imported checkpoint (or one whose entry changed, or that another process
signed) is foreign: restore, el.restore and the magics load nothing of it until the person
confirms (trust=True); confirming with adopt=True, or importing with trust=True, signs it as
this store's own. The hostile corpus imported into the store runs nothing until confirmed."""

import asyncio

import pytest

import elastic_lite as el
from elastic_lite import host
from elastic_lite.store import signing as _signing

import hostile_corpus as corpus


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where hostile payloads would leave their sentinels
    corpus.clear()
    s = el.MemoryStore()
    el.set_store(s)
    yield s
    el.set_store(None)
    corpus.clear()


def notebook():
    ns = {"__name__": "__main__"}
    exec("import math\nscale = 3\ndef f(x):\n    return x * scale\nkept = {'a': [1, 2]}\n", ns)
    return ns


def fresh():
    return {"__name__": "__main__"}


def test_own_checkpoints_are_signed_and_restore_without_asking(store):
    run(host.checkpoint("mine", namespace=notebook()))
    entry = run(store.get("mine"))
    assert entry["signature"]["state"] == "valid"
    ns = fresh()
    rep = run(host.restore("mine", namespace=ns))
    assert rep["ok"] and rep["trust"]["provenance"] == "yours" and ns["f"](2) == 6


def test_an_import_is_foreign_until_confirmed_and_adopt_signs_it(store):
    data = el.snapshot(notebook()).data
    imp = run(host.import_checkpoint(data, "theirs", source="theirs.elc"))
    assert imp["stored"] and not imp["signed"]
    assert run(store.get("theirs"))["signature"]["state"] == "unsigned"
    ns = fresh()
    rep = run(host.restore("theirs", namespace=ns))
    [prob] = rep["problems"]
    assert prob["code"] == "foreign" and rep["restored"] == [] and "scale" not in ns
    assert "imported from theirs.elc" in prob["message"]
    assert rep["trust"]["provenance"] == "foreign"
    assert any(r["target"] == "elastic_lite._rebuild.make_function" and r["danger"] == "builds-code"
               for r in rep["trust"]["imports"])
    # the public coroutine and the magic decide the same
    assert run(el.restore("theirs", namespace=fresh())).failed[0]["code"] == "foreign"
    # confirmed once: restored, still foreign afterwards
    rep = run(host.restore("theirs", namespace=fresh(), trust=True))
    assert rep["ok"] and not rep["adopted"]
    assert run(host.restore("theirs", namespace=fresh()))["problems"][0]["code"] == "foreign"
    # confirmed and adopted: signed, restores without asking from then on
    rep = run(host.restore("theirs", namespace=fresh(), trust=True, adopt=True))
    assert rep["ok"] and rep["adopted"]
    rep = run(host.restore("theirs", namespace=fresh()))
    assert rep["ok"] and rep["trust"]["provenance"] == "yours"


def test_import_with_trust_signs_it(store):
    data = el.snapshot(notebook()).data
    imp = run(host.import_checkpoint(data, "vouched", trust=True))
    assert imp["signed"] and run(store.get("vouched"))["signature"]["state"] == "valid"
    assert run(host.restore("vouched", namespace=fresh()))["ok"]


def test_a_changed_entry_and_another_processes_signature_are_foreign(store):
    run(host.checkpoint("mine", namespace=notebook()))
    entry = store._entries["mine"]
    entry["meta"] = dict(entry["meta"], notebook="elsewhere.ipynb")  # changed after signing
    rep = run(host.restore("mine", namespace=fresh()))
    assert rep["problems"][0]["code"] == "foreign" and "changed after it was saved" in \
        rep["problems"][0]["message"]
    entry["sig"] = dict(entry["sig"], keyId="0123456789abcdef")  # signed by another process
    rep = run(host.restore("mine", namespace=fresh()))
    assert "signed by another browser, store or key" in rep["problems"][0]["message"]
    assert run(store.sign("mine")) and run(host.restore("mine", namespace=fresh()))["ok"]


def test_inspect_says_whether_a_stored_checkpoint_is_foreign(store):
    data = el.snapshot(notebook()).data
    run(host.import_checkpoint(data, "theirs"))
    run(host.checkpoint("mine", namespace=notebook()))
    assert run(host.inspect("theirs"))["trust"]["provenance"] == "foreign"
    assert run(host.inspect("mine"))["trust"]["provenance"] == "yours"


def test_signed_bytes_match_the_js_stores_layout():
    """The same netstring layout as js/store/indexeddb.mjs signedBytes (checked there too)."""
    got = _signing.signed_bytes("n", b"\x01", [{"key": "a" * 64, "length": 5}], b"\x02",
                                {"b": 1, "a": [2, {"d": 3, "c": 4}]})
    assert got == (b"30:elastic-lite entry signature 1,1:n,1:\x01,"
                   + b"67:" + b"a" * 64 + b" 5\n," + b"1:\x02,"
                   + b'29:{"a":[2,{"c":4,"d":3}],"b":1},')


@pytest.mark.parametrize("item", corpus.build(), ids=lambda i: i["id"])
def test_the_hostile_corpus_imported_runs_nothing_until_confirmed(store, item):
    run(host.import_checkpoint(item["data"], "hostile", replace=True))
    ns = fresh()
    rep = run(host.restore("hostile", namespace=ns))
    corpus.poke_print(ns)
    assert corpus.sentinels() == [] and rep["restored"] == []
    assert rep["problems"][0]["code"] == "foreign"
    if item["live"]:
        ns = fresh()
        run(host.restore("hostile", namespace=ns, trust=True))
        corpus.poke_print(ns)
        assert corpus.sentinels() == [item["id"]]


def test_the_magic_shows_what_a_foreign_checkpoint_would_import(store, capsys):
    from IPython.core.interactiveshell import InteractiveShell
    data = corpus.container([(["evil"], corpus.record(corpus.call(
        corpus.stack_global("cloudpickle", "builtins.exec"), corpus._str("1")), 4))])
    run(host.import_checkpoint(data, "theirs"))
    sh = InteractiveShell.instance()
    try:
        sh.run_cell("%load_ext elastic_lite", store_history=False)
        sh.run_cell("%restore theirs", store_history=False).raise_error()
        out = capsys.readouterr().out
        assert "this checkpoint is foreign" in out and "evil" not in sh.user_ns
        assert "! runs code  builtins.exec" in out and "%restore NAME --trust" in out
    finally:
        sh.reset()


def test_an_adopted_import_replays_like_an_own_checkpoint(store):
    """Replay follows the same decision as unpickling: unsigned import, no replay unless
    trusted; once adopted (signed), it replays without asking."""
    from elastic_lite.replay import steps as _replay_steps
    assert _replay_steps.replay_permission(False, "it was imported from x")[0] is False
    assert _replay_steps.replay_permission(False, None) == (True, None)
    assert _replay_steps.replay_permission(True, "it was imported from x")[0] is True
    assert _replay_steps.replay_permission(True, None, data_only=True)[0] is False


def test_a_rolled_back_entry_is_foreign_and_says_why():
    """A JS store reports an own entry older than its signed counter as state 'rollback'."""
    from elastic_lite.store import signing as _signing
    why = _signing.foreign_reason({"state": "rollback", "keyId": "0123456789abcdef"})
    assert why.startswith("it is an older copy of a checkpoint this store has since saved again")
