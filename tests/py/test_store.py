"""The Python side of the stores (py/elastic_lite/store/stores.py) on host CPython: record keys and
cutting a file the same way as the JS stores, MemoryStore's records and reference counts,
retention, writer locks, and checkpoint() going through them."""

import asyncio
import hashlib
import struct
import time
from pathlib import Path

import pytest

import elastic_lite as el
from elastic_lite.store import stores as _stores
from elastic_lite.store.stores import MemoryStore, StoreError, record_key, split_container


FIXTURES = Path(__file__).resolve().parents[2] / "wasm" / "tests" / "fixtures"


def payload(size, seed=1):
    """Deterministic bytes, different per seed (the same generator as tests/node/store-contract.mjs)."""
    out = bytearray(size)
    x = (seed * 2654435761) & 0xFFFFFFFF
    for i in range(size):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out[i] = x >> 24
    return bytes(out)


def format_two(records, seed=0):
    """A file with the layout of checkpoint format 2 around `records` (only what stores cut by)."""
    def pad(b):
        return b + bytes(-len(b) % 64)
    head = bytearray(64)
    head[:12] = b"\x89ELCKPT\n\x02\x00\x00\x00"
    head[40] = seed
    bodies = [pad(r) for r in records]
    starts, at = [], 64
    for b in bodies:
        starts.append(at)
        at += len(b)
    index = b"ELIX" + struct.pack("<I", len(bodies)) + b"".join(
        struct.pack("<QQ", s, len(b)) for s, b in zip(starts, bodies)) + bytes(4)
    footer = b"ELFT" + struct.pack("<IQQHH", len(bodies), at, at + len(index) + 32, 2, 0) + bytes(4)
    return bytes(head) + b"".join(bodies) + index + footer, bodies


def run(coro):
    return asyncio.run(coro)


def test_record_key_is_the_documented_tree_of_sha256_and_ignores_how_the_bytes_are_cut():
    big = payload(9 * 1024 * 1024 + 5, 3)
    leaves = [hashlib.sha256(big[i:i + 4 * 1024 * 1024]).digest() for i in range(0, len(big), 4 * 1024 * 1024)]
    expected = hashlib.sha256(struct.pack("<Q", len(big)) + b"".join(leaves)).hexdigest()
    assert record_key(big) == expected
    assert record_key([big[:10], memoryview(big)[10:5_000_000], bytearray(big[5_000_000:])]) == expected
    assert record_key(b"") == hashlib.sha256(bytes(8)).hexdigest()
    # The same figure as tests/node/store-contract.mjs computes for payload(1000, 1).
    assert record_key(payload(1000, 1)) == hashlib.sha256(
        struct.pack("<Q", 1000) + hashlib.sha256(payload(1000, 1)).digest()).hexdigest()


def test_split_cuts_format_two_by_its_index_and_keeps_anything_else_whole():
    data, bodies = format_two([payload(100, 1), payload(700, 2)])
    head, records, tail = split_container(data)
    assert bytes(head) == data[:64]
    assert [bytes(r) for r in records] == bodies
    assert bytes(head) + b"".join(map(bytes, records)) + bytes(tail) == data
    # A real checkpoint: cut exactly where the core's reader says its records are.
    real = el.snapshot(namespace={"x": 1, "y": [1, 2], "f": payload}).data
    head, records, tail = split_container(real)
    listed = el.load.loader.inspect(real)["records"]
    assert [r.nbytes for r in records] == [r["record_length"] for r in listed]
    assert len(head) == listed[0]["offset"]
    assert bytes(head) + b"".join(map(bytes, records)) + bytes(tail) == real
    # A format-1 file: its records carry their own index, it is kept as one record.
    v1 = (FIXTURES / "format-1.0" / "cpython-3.11.elc").read_bytes()
    head, records, tail = split_container(v1)
    assert (len(head), len(records), len(tail)) == (0, 1, 0)
    assert split_container(b"")[1] == []
    broken = bytearray(data)
    broken[-24:-16] = struct.pack("<Q", 10 ** 12)  # index offset far outside the file
    assert len(split_container(bytes(broken))[1]) == 1


def test_memory_store_keeps_shared_records_once_and_frees_only_unused_ones():
    store = MemoryStore()
    shared = payload(3000, 1)
    a, _ = format_two([shared, payload(10, 2)], seed=1)
    b, _ = format_two([shared, payload(20, 3)], seed=2)
    run(store.put("a", a, {"notebook": "n", "createdMs": 1}))
    run(store.put("b", b, {"notebook": "n", "createdMs": 2}))
    assert run(store.get("a"))["bytes"] == a and run(store.get("b"))["bytes"] == b
    assert run(store.stats())["records"] == 3
    entry = run(store.get_entry("a"))
    assert entry["records"][0] == {"key": record_key(format_two([shared])[1][0]), "length": 3008}
    assert run(store.delete("a")) is True
    assert run(store.stats())["records"] == 2
    assert run(store.get("b"))["bytes"] == b
    assert run(store.delete("b")) is True and run(store.delete("b")) is False
    assert run(store.stats()) == {"checkpoints": 0, "records": 0, "recordBytes": 0}


def test_commit_refuses_missing_records_and_changes_nothing():
    store = MemoryStore()
    run(store.put("keep", b"old bytes", {}))
    [key] = run(store.put_records([b"x" * 64]))
    with pytest.raises(StoreError) as err:
        run(store.commit("keep", {"records": [{"key": key, "length": 64}, {"key": "a" * 64, "length": 1}]}))
    assert err.value.code == "missing-record"
    assert run(store.get("keep"))["bytes"] == b"old bytes"
    with pytest.raises(StoreError, match="not a record key"):
        run(store.commit("keep", {"records": [{"key": "nothex", "length": 1}]}))


def test_a_pinned_record_survives_a_delete_until_its_writer_commits():
    store = MemoryStore()
    data, bodies = format_two([payload(1000, 1)])
    run(store.put("old", data, {}))
    [key] = run(store.put_records([bodies[0]]))   # found: pinned
    run(store.delete("old"))
    assert run(store.has_records([key])) == [True]
    run(store.commit("new", {"records": [{"key": key, "length": 1024}]}))
    run(store.delete("new"))
    assert run(store.stats())["records"] == 0
    unpinned = MemoryStore(orphan_grace=0)
    run(unpinned.put_records([b"orphan"]))
    assert run(unpinned.sweep()) == 1


def test_retention_last_hourly_and_budget_per_notebook():
    hour = 3600 * 1000
    store = MemoryStore(keep_last=2)
    for i in range(1, 5):
        run(store.put(f"a{i}", payload(10, i), {"notebook": "a", "createdMs": i}))
    run(store.put("manual", b"m", {"createdMs": 0}))
    assert [e["name"] for e in run(store.list())] == ["a4", "a3", "manual"]
    run(store.set_retention("h", {"keepLast": 1, "keepHourly": 2}))
    for name, t in {"h1a": 10 * hour + 1, "h1b": 10 * hour + 2, "h2a": 11 * hour + 1, "h2b": 11 * hour + 5,
                    "h3a": 12 * hour + 1}.items():
        run(store.put(name, payload(10, t % 97), {"notebook": "h", "createdMs": t}))
    assert [e["name"] for e in run(store.list(notebook="h"))] == ["h3a", "h2b"]
    shared = payload(4096, 1)
    run(store.set_retention("budget", {"maxBytes": 4096 + 2 * (128 + 64 + 76)}))
    for i in range(1, 4):
        run(store.put(f"m{i}", format_two([shared, payload(100, i)], seed=i)[0], {"notebook": "budget", "createdMs": i}))
    assert [e["name"] for e in run(store.list(notebook="budget"))] == ["m3", "m2"]
    with pytest.raises(StoreError, match="keepLast must be a whole number >= 1"):
        run(store.set_retention("h", {"keepLast": 0}))
    with pytest.raises(StoreError, match="unknown retention setting keepDaily"):
        run(store.set_retention("h", {"keepDaily": 1}))


def test_the_same_retention_rules_as_js():
    # The example of INTERFACES.md: newest 1, plus the newest of each of the 2 latest hours.
    hour = 3600 * 1000
    entries = [("a", 10 * hour, 0, []), ("b", 11 * hour, 0, []), ("c", 11 * hour + 5, 0, []), ("d", 12 * hour, 0, [])]
    assert _stores.expired_by_retention(entries, "d", {"keepLast": 1, "keepHourly": 2}) == ["b", "a"]
    assert _stores.expired_by_retention(entries, "a", {"keepLast": 1}) == ["c", "b"]  # the new one is kept
    sized = [("x", 3, 10, [("k1", 100), ("k2", 50)]), ("y", 2, 10, [("k1", 100)]), ("z", 1, 10, [("k3", 5)])]
    assert _stores.expired_by_retention(sized, "x", {"maxBytes": 170}) == ["z"]
    # exempt (meta.keep): never removed
    assert _stores.expired_by_retention(entries, "d", {"keepLast": 1}, exempt=["b"]) == ["c", "a"]


def test_checkpoints_a_person_asked_for_are_kept_by_retention():
    store = MemoryStore(keep_last=1)
    el.set_store(store)
    try:
        ns = {"__name__": "__main__", "x": 1}
        run(el.checkpoint("by hand", namespace=ns, notebook="k"))
        for i in range(3):
            ns["x"] = i
            time.sleep(0.002)  # newer by createdMs (retention orders by it)
            run(el.checkpoint(f"auto{i}", namespace=ns, notebook="k", auto=True))
        entries = {e["name"]: e["meta"] for e in run(store.list(notebook="k"))}
        assert sorted(entries) == ["auto2", "by hand"]
        assert entries["by hand"]["keep"] is True and "keep" not in entries["auto2"]
        assert entries["auto2"]["auto"] is True
    finally:
        el.set_store(None)


def test_a_second_writer_of_one_name_waits_or_is_told_plainly():
    async def scenario():
        store = MemoryStore(lock_timeout=0.05)
        held = await store.lock("nb")
        with pytest.raises(StoreError) as err:
            await store.put("nb", b"second", {})
        assert err.value.code == "busy"
        assert "is being saved by another writer right now; waited 0.05 s" in str(err.value)
        waiter = asyncio.ensure_future(store.put("nb", b"third", {}))
        await asyncio.sleep(0.01)
        assert not waiter.done()
        await held.release()
        await asyncio.wait_for(waiter, 1)
        return (await store.get("nb"))["bytes"]
    assert run(scenario()) == b"third"


def test_checkpoint_holds_the_lock_sends_records_and_keeps_the_cell():
    store = MemoryStore()
    el.set_store(store)
    try:
        ns = {"x": list(range(100)), "word": "hello"}
        snap = run(el.checkpoint("cp", namespace=ns, notebook="nb.ipynb",
                                 cell={"executionCount": 3, "firstLine": "x = list(range(100))\ny = 2", "timeMs": 5}))
        [entry] = run(el.list_checkpoints(notebook="nb.ipynb")).checkpoints
        assert entry["name"] == "cp"
        assert entry["meta"]["cell"] == {"executionCount": 3, "firstLine": "x = list(range(100))", "timeMs": 5}
        assert snap.data is None, "streamed into the store, never whole in memory"
        stored = run(store.get("cp"))["bytes"]
        assert entry["meta"]["size"] == snap.size == len(stored)
        assert el.load.loader.inspect(stored)["ok"]
        assert run(store.stats())["records"] == len(el.load.loader.inspect(stored)["records"])
        fresh = {}
        assert run(el.restore("cp", namespace=fresh)).ok
        assert fresh["x"] == list(range(100)) and fresh["word"] == "hello"

        async def while_locked():
            held = await store.lock("cp")
            store.lock_timeout = 0.02
            try:
                return await el.checkpoint("cp", namespace=ns)
            finally:
                await held.release()
        busy = run(while_locked())
        assert not busy.ok and "being saved by another writer" in busy.problems[0]["message"]
        with pytest.raises(TypeError, match="cell= takes a dict"):
            run(el.checkpoint("cp", namespace=ns, cell="cell 3"))
    finally:
        el.set_store(None)


def test_send_records_streams_batches_reuses_stored_records_and_gives_back_on_failure():
    store = MemoryStore()
    data, bodies = format_two([payload(5000, 1), payload(300, 2), payload(70, 3)])
    run(store.put("first", data, {}))
    calls = []
    real = store.put_records

    async def counting(records):
        calls.append(len(records))
        return await real(records)
    store.put_records = counting
    first = run(store.get_entry("first"))
    new = payload(200, 4)
    head, records, tail = split_container(format_two([payload(5000, 1), new, payload(70, 3)])[0])
    parts = [("head", head), ("stored", first["records"][0]["key"], first["records"][0]["length"]),
             ("record", [records[1][:7], records[1][7:]]), ("stored", first["records"][2]["key"], 128), ("tail", tail)]
    head_, entries, tail_, sent = run(_stores.send_records(store, parts))
    assert calls == [1] and len(sent) == 1, "only the changed record was sent"
    run(store.commit("second", {"head": head_, "records": entries, "tail": tail_, "meta": {}}))
    assert run(store.get("second"))["bytes"] == bytes(head) + b"".join(map(bytes, records)) + bytes(tail)

    def failing():
        yield "head", b""
        yield "record", bytes(_stores.BATCH_BYTES)  # a full batch: sent at once
        raise RuntimeError("snapshot failed half-way")
    with pytest.raises(RuntimeError):
        run(_stores.send_records(store, failing()))
    assert run(store.stats())["records"] == 4, "the abandoned record was given back"


def test_a_second_checkpoint_stores_only_what_changed():
    store = MemoryStore()
    el.set_store(store)
    try:
        ns = {"big": bytes(range(256)) * 8000, "small": 1}
        run(el.checkpoint("a", namespace=ns))
        first = run(store.stats())["recordBytes"]
        ns["small"] = 2
        run(el.checkpoint("b", namespace=ns))
        added = run(store.stats())["recordBytes"] - first
        assert first > 2_048_000
        assert added < 4096, f"{added} bytes stored again for one changed int"
        fresh = {}
        assert run(el.restore("a", namespace=fresh)).ok and fresh["small"] == 1 and fresh["big"] == ns["big"]
    finally:
        el.set_store(None)


def test_checkpoint_does_not_send_an_unchanged_group_again():
    store = MemoryStore()
    sent = []
    real = store.put_records

    async def counting(records):
        sent.append(sum(sum(memoryview(p).nbytes for p in (r if isinstance(r, (list, tuple)) else [r])) for r in records))
        return await real(records)
    store.put_records = counting
    el.set_store(store)
    try:
        ns = {"big": bytearray(3_000_000), "small": [1, 2]}
        first = run(el.checkpoint("a", namespace=ns))
        assert sum(sent) > 3_000_000
        sent.clear()
        ns["small"].append(3)
        second = run(el.checkpoint("b", namespace=ns))
        assert sum(sent) < 100_000, f"{sum(sent)} bytes sent for a change of one list"
        assert second.reuse["reused_bytes"] >= 3_000_000
        ns["big"][1_234_567] = 1  # one byte of the big buffer: seen, written again
        run(el.checkpoint("c", namespace=ns))
        assert sum(sent) > 3_000_000
        for name, small, byte in (("a", [1, 2], 0), ("b", [1, 2, 3], 0), ("c", [1, 2, 3], 1)):
            fresh = {}
            assert run(el.restore(name, namespace=fresh)).ok
            assert fresh["small"] == small and fresh["big"][1_234_567] == byte
        assert first.reuse["reused_bytes"] == 0
        sent.clear()
        run(el.checkpoint("d", namespace=ns, incremental=False))
        assert sum(sent) > 3_000_000, "incremental=False writes every record"
    finally:
        el.set_store(None)


def test_a_restore_that_finds_damage_gets_the_record_rewritten_by_the_next_checkpoint():
    store = MemoryStore()
    el.set_store(store)
    try:
        ns = {"data": bytes(range(256)) * 1000, "n": 1}
        run(el.checkpoint("a", namespace=ns))
        entry = run(store.get_entry("a"))
        big = max(entry["records"], key=lambda r: r["length"])
        rec = store._records[big["key"]]
        rec[0] = rec[0][:200] + bytes([rec[0][200] ^ 1]) + rec[0][201:]  # damage inside the store
        report = run(el.restore("a", namespace={}))
        [bad] = [p for p in report.problems if p["code"] == "checksum"]
        assert not report.ok and bad["names"] == ["data"] and bad["kind"] == "damaged"
        assert run(store.has_records([big["key"]])) == [False], "marked: not offered for reuse"
        run(el.checkpoint("b", namespace=ns))  # the same values: the record is sent and rewritten
        for name in ("a", "b"):
            fresh = {}
            assert run(el.restore(name, namespace=fresh)).ok, name
            assert fresh["data"] == ns["data"]
    finally:
        el.set_store(None)
