"""load_snapshot(bytes) takes bytes as the person's own only when snapshot() made them in this
process (_made_here); anything else is foreign until trust=True. The hostile corpus through
the same door, here and in a new process: test_trust_corpus.py."""

import subprocess
import sys

import pytest

import elastic_lite as el
from elastic_lite.trust import made_here as _made_here
from elastic_lite.capture.container import SnapshotStream

from fresh_kernel import ROOT

CELL = "big = bytes(range(256)) * 512\nsmall = {'k': [1, 2]}\ndef f(x):\n    return x + 1\n"


def fresh():
    return {"__name__": "__main__"}


def state():
    ns = fresh()
    exec(CELL, ns)
    return ns


def own(rep):
    return rep.trust["provenance"] == "yours"


def test_what_snapshot_made_here_is_yours_however_it_is_handed_over():
    snap = el.snapshot(state())
    for data in (snap.data, snap, bytearray(snap.data), memoryview(snap.data)):
        out = fresh()
        rep = el.load_snapshot(data, out)
        assert own(rep) and rep.ok and out["f"](1) == 2, type(data).__name__
    assert el.load_snapshot(bytes(bytearray(snap.data)), fresh()).ok  # an equal copy


def test_the_same_state_written_by_other_code_is_foreign():
    """The very same records, laid out by the snapshot loop but joined by other code (not
    snapshot()), and bytes of another process: foreign, nothing loaded, the way on said."""
    ns = state()
    stream = SnapshotStream(ns)
    data = b"".join(b"".join(map(bytes, p[1])) if p[0] == "record" else p[1] for p in stream)
    assert el.load.loader.inspect(data)["ok"]
    out = fresh()
    rep = el.load_snapshot(data, out)
    assert not own(rep) and rep.restored == [] and set(out) <= {"__name__", "__builtins__"}
    [prob] = rep.failed
    assert prob["code"] == "foreign" and prob["kind"] == "refused"
    assert "not made by snapshot() in this Python process" in prob["message"]
    assert "trust=True" in prob["message"] and "inspect" in prob["message"]
    # every import listed for the person, the function's marked
    marks = {r["target"]: r["danger"] for r in rep.trust["imports"]}
    assert marks["elastic_lite._rebuild.make_function"] == "builds-code"
    assert "builds code" in rep.table() and "trust=True" in rep.table()
    # the person says it is theirs: everything loads
    rep = el.load_snapshot(data, out, trust=True)
    assert rep.ok and out["f"](1) == 2 and not own(rep) and rep.trust["confirmed"]


def test_bytes_made_by_another_process_are_foreign_here():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import elastic_lite as el\n"
            f"ns = {{'__name__': '__main__'}}; exec({CELL!r}, ns)\n"
            "sys.stdout.buffer.write(el.snapshot(ns).data)")
    data = subprocess.run([sys.executable, "-c", code, ROOT + "/py"], capture_output=True,
                          check=True, timeout=120).stdout
    rep = el.load_snapshot(data, fresh())
    assert not own(rep) and rep.restored == [] and [f["code"] for f in rep.failed] == ["foreign"]
    assert el.load_snapshot(data, fresh(), data_only=True).restored == ["big", "small"]


def test_a_changed_header_makes_own_bytes_foreign_a_changed_payload_is_damage():
    snap = el.snapshot(state())
    info = el.load.loader.inspect(snap.data)
    rec = next(r for r in info["records"] if r["names"] == ["small"])
    # created_ms in the file header (wasm/FORMAT.md), its CRC32C made right again: a whole
    # container, not ours
    head = bytearray(snap.data)
    head[16] ^= 1
    size = int.from_bytes(head[12:16], "little")
    head[size - 4:size] = _crc32c(bytes(head[:size - 4])).to_bytes(4, "little")
    assert el.load.loader.inspect(bytes(head))["ok"]
    rep = el.load_snapshot(bytes(head), fresh())
    assert not own(rep) and rep.restored == []
    # a payload byte: the structure is still this process's, the record's CRC-32 catches it
    bad = bytearray(snap.data)
    bad[rec["payload_offset"] + 1] ^= 0x40
    out = fresh()
    rep = el.load_snapshot(bytes(bad), out)
    assert own(rep) and "small" not in out and out["f"](1) == 2
    [prob] = rep.failed
    assert prob["kind"] == "damaged" and prob["code"] == "checksum" and prob["names"] == ["small"]


def test_a_damaged_header_or_a_cut_file_is_foreign_and_the_damage_is_named():
    snap = el.snapshot(state())
    info = el.load.loader.inspect(snap.data)
    rec = next(r for r in info["records"] if r["names"] == ["small"])
    bad = bytearray(snap.data)
    bad[rec["offset"] + 9] ^= 0x10  # inside the record header (its names are not trusted then)
    rep = el.load_snapshot(bytes(bad), fresh())
    assert not own(rep) and rep.restored == []
    first, last = rep.failed[0], rep.failed[-1]
    assert first["kind"] == "damaged" and first["record"] == rec["index"] and first["code"]
    assert last["code"] == "foreign"
    cut = snap.data[: rec["payload_offset"] + 2]
    rep = el.load_snapshot(cut, fresh())
    assert not own(rep) and rep.restored == []
    assert [f["code"] for f in rep.failed] == ["truncated", "foreign"]
    assert rep.failed[0]["names"] == ["small"]
    rep = el.load_snapshot(cut, fresh(), trust=True)  # the person says it is theirs
    assert rep.restored == ["big"]


def test_only_the_most_recent_snapshots_are_remembered(monkeypatch):
    monkeypatch.setattr(_made_here, "MAX_TAGS", 2)
    ns = state()
    first = el.snapshot(ns)
    ns["x"] = 1
    el.snapshot(ns)
    ns["x"] = 2
    last = el.snapshot(ns)
    assert own(el.load_snapshot(last.data, fresh()))
    assert not own(el.load_snapshot(first.data, fresh()))


def test_a_snapshot_streamed_into_a_store_has_no_bytes_to_load():
    snap = el.snapshot(state())
    snap.data = None
    with pytest.raises(ValueError, match="restore it from the store"):
        el.load_snapshot(snap, fresh())


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
