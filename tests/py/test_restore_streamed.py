"""Restore in bounded memory (_streamed): a large checkpoint is read from its store record by
record, each out-of-band buffer in a bytearray of its own, and never assembled whole; and a
checkpoint whose state would not fit Pyodide's heap says so when it is taken.

In host CPython with the in-memory store, the streaming threshold lowered (the Pyodide side,
with a JS store and a fresh interpreter: tests/node/pyodide-restore-streamed.test.mjs)."""

import asyncio
import os

import pytest

import elastic_lite as el
from elastic_lite.load import streamed as _streamed
from elastic_lite.store import stores as _stores
from elastic_lite.session.kernel import SESSION
from elastic_lite._report import checkpoint_text
from elastic_lite.load.loader import load_snapshot


@pytest.fixture
def store(monkeypatch):
    monkeypatch.setattr(_streamed, "STREAM_FROM", 1 << 20)
    s = _stores.MemoryStore()
    el.set_store(s)
    yield s
    el.set_store(None)


def _state():
    ns = {"__name__": "__main__"}
    ns.update(blob=os.urandom(3 << 20), arr=bytearray(os.urandom(2 << 20)),
              small={"k": list(range(100))}, view=memoryview(bytearray(b"xyz" * 50000)))
    ns["again"] = ns["blob"]
    return ns


NAMES = ["blob", "arr", "small", "view", "again"]


def test_a_large_checkpoint_restores_streamed_with_every_value(store):
    ns = _state()
    assert asyncio.run(SESSION.checkpoint("big", namespace=ns, names=NAMES))["ok"]
    back = {"__name__": "__main__"}
    rep = asyncio.run(SESSION.restore("big", namespace=back))
    assert (rep["ok"], rep["streamed"], rep["problems"]) == (True, True, [])
    assert all(back[n] == ns[n] for n in NAMES)
    assert back["again"] is back["blob"] and type(back["arr"]) is bytearray
    assert back["view"].obj is not None and not back["view"].readonly


def test_each_buffer_is_its_own_memory_and_let_go_once_loaded(store):
    ns = _state()
    asyncio.run(SESSION.checkpoint("big", namespace=ns, names=NAMES))
    got = _streamed.Streamed(store, asyncio.run(store.get_entry("big")))
    info = asyncio.run(got.inspect())
    blob = next(r for r in info["records"] if "blob" in (r.get("names") or []))
    [buf] = got.buffers(blob)
    assert type(buf) is bytes and len(buf) == 3 << 20  # the value's own memory (see below)
    arr = next(r for r in info["records"] if "arr" in (r.get("names") or []))
    [buf] = got.buffers(arr)
    assert type(buf.obj) is bytearray and buf.nbytes == len(buf.obj) == 2 << 20
    rep = load_snapshot(got, {}, foreign=False)
    assert rep.ok
    held = [i for i in got._pieces if 0 <= i < len(got.records)]
    assert all(sum(len(p) for _, p in got._pieces[i]) < 1 << 20 for i in held)  # only small ones


def test_a_damaged_record_is_read_whole_and_named(store):
    ns = _state()
    asyncio.run(SESSION.checkpoint("big", namespace=ns, names=NAMES))
    entry = asyncio.run(store.get_entry("big"))
    key = max(entry["records"], key=lambda r: r["length"])["key"]
    bad = bytearray(store._records[key][0])
    bad[-1000] ^= 1
    store._records[key][0] = bytes(bad)
    rep = asyncio.run(SESSION.restore("big", namespace={"__name__": "__main__"}))
    assert (rep["ok"], rep["streamed"]) == (False, False)
    assert [sorted(p["names"]) for p in rep["problems"]] == [["again", "blob"]]


def test_a_damaged_checkpoint_too_large_to_read_whole_fails_clearly(store, monkeypatch):
    ns = _state()
    asyncio.run(SESSION.checkpoint("big", namespace=ns, names=NAMES))
    key = max(asyncio.run(store.get_entry("big"))["records"], key=lambda r: r["length"])["key"]
    store._records[key][0] = store._records[key][0][:-1] + b"?"
    monkeypatch.setattr(_streamed, "WHOLE_LIMIT", 1 << 20)  # as Pyodide at 2 GiB
    rep = asyncio.run(SESSION.restore("big", namespace={"__name__": "__main__"}))
    assert (rep["ok"], rep["restored"]) == (False, [])
    [p] = rep["problems"]
    assert p["message"].startswith('checkpoint "big" could not be read: record ')
    assert "too large to be read whole here" in p["message"]


def test_a_small_checkpoint_is_read_whole(store):
    assert asyncio.run(SESSION.checkpoint("small", namespace={"x": 1}, names=["x"]))["ok"]
    rep = asyncio.run(SESSION.restore("small", namespace={}))
    assert (rep["ok"], rep["streamed"]) == (True, False)


def test_a_state_too_large_for_the_heap_says_so_when_checkpointed(store, monkeypatch):
    ns = _state()
    rep = asyncio.run(SESSION.checkpoint("fits", namespace=ns, names=NAMES))
    assert rep["warnings"] == []  # host CPython: no heap limit
    monkeypatch.setattr(_streamed, "HEAP_LIMIT", _streamed.KERNEL_HEAP + (64 << 20) + (4 << 20))
    rep = asyncio.run(SESSION.checkpoint("too-big", namespace=ns, names=NAMES))
    assert rep["ok"]
    [w] = rep["warnings"]
    assert w.startswith("this checkpoint cannot be restored in this browser")
    assert "warning: " + w in checkpoint_text(rep)


def test_a_bytes_value_is_the_memory_its_buffer_was_read_into(store, monkeypatch):
    """A `bytes` variable's out-of-band buffer (its stream loads it read-only) is read into a
    bytes object of its size, which pickle's bytes(buffer) gives back as the value itself: no
    second copy of it while it loads. A bytearray's stays a bytearray (writable)."""
    handed = []
    buffers = _streamed.Streamed.buffers
    monkeypatch.setattr(_streamed.Streamed, "buffers",
                        lambda self, rec: handed.extend(out := buffers(self, rec)) or out)
    ns = _state()
    assert asyncio.run(SESSION.checkpoint("big", namespace=ns, names=NAMES))["ok"]
    back = {}
    rep = asyncio.run(SESSION.restore("big", namespace=back))
    assert (rep["ok"], rep["streamed"]) == (True, True)
    assert back["blob"] == ns["blob"] and back["again"] is back["blob"]
    assert any(b is back["blob"] for b in handed), [type(b) for b in handed]
    assert type(back["arr"]) is bytearray and back["arr"] == ns["arr"]
    assert not any(type(b) is bytes and b == ns["arr"] for b in handed)
    back["arr"][0] ^= 1  # writable, its own memory


def test_a_checkpoint_holding_a_large_record_is_streamed(monkeypatch):
    """Below STREAM_FROM, a checkpoint holding a record of STREAM_RECORD_FROM bytes or more
    restores through the stream (its large buffers read straight into their memory); one of
    small records only is read whole."""
    monkeypatch.setattr(_streamed, "STREAM_RECORD_FROM", 2 << 20)  # the same rule, smaller
    s = _stores.MemoryStore()
    el.set_store(s)
    try:
        ns = {"__name__": "__main__", "blob": os.urandom(3 << 20), "small": list(range(10)),
              **{f"part{i}": os.urandom(1 << 20) for i in range(3)}}
        for name, names, streamed in (("one", ["blob", "small"], True),
                                      ("many", ["part0", "part1", "part2"], False)):
            assert asyncio.run(SESSION.checkpoint(name, namespace=ns, names=names))["size"] < _streamed.STREAM_FROM
            back = {}
            rep = asyncio.run(SESSION.restore(name, namespace=back))
            assert (rep["ok"], rep["streamed"]) == (True, streamed), name
            assert all(back[n] == ns[n] for n in names)
    finally:
        el.set_store(None)
