"""The container snapshot() writes (format 2.0) and what load_snapshot() reads: out-of-band
buffers, JSON manifest and history records, the streaming loop, and the committed format 1.0
fixture (a checkpoint written before 2.0 existed) restoring in a new process."""

import json
import os
import threading

import pytest

import elastic_lite as el
from elastic_lite.capture.container import BUFFER_THRESHOLD, SnapshotStream

from fresh_kernel import ROOT, restore_elsewhere

FIXTURES = os.path.join(ROOT, "wasm", "tests", "fixtures", "format-1.0")


def fresh():
    return {"__name__": "__main__"}


def records(data):
    info = el.load.loader.inspect(data)
    assert info["ok"], info["error"]
    return info["records"]


def test_format_1_0_fixture_restores_in_a_new_process():
    with open(os.path.join(FIXTURES, "cpython-3.11.elc"), "rb") as f:
        data = f.read()
    info = el.load.loader.inspect(data)
    assert info["format_version"] == 1 and info["ok"]
    restore_elsewhere(data, r"""
assert restore_report["ok"], restore_report
assert triple(2) == 6 and p.norm2() == 25 and isinstance(p, Point)
assert alias["list"] is shared and shared == [1, 2, 3] and lock.acquire(False)
assert [s["name"] for s in restore_report["skipped"]] == ["gen"]
scale = 10
assert triple(2) == 20
""")


def test_manifest_is_a_json_record_and_history_and_extra_fields_travel(nb):
    ns = nb("x = [1, 2]\ny = {'k': x}")
    cells = [{"n": 1, "code": "x = [1, 2]"}, {"n": 2, "code": "y = {'k': x}"}]
    snap = el.snapshot(ns, history=cells, manifest={"replay": {"plan": []}})
    recs = records(snap.data)
    kinds = {tuple(r["names"]): r["kind"] for r in recs}
    assert kinds[("__elastic_lite_manifest__",)] == "manifest"
    assert kinds[("__elastic_lite_history__",)] == "history"
    man = next(r for r in recs if r["kind"] == "manifest")
    body = json.loads(snap.data[man["payload_offset"]:man["payload_offset"] + man["length"]])
    assert body["version"] == 2 and body["replay"] == {"plan": []} and man["globals"] is None
    out = fresh()
    rep = el.load_snapshot(snap.data, out)
    assert rep.ok and out["y"]["k"] is out["x"]
    assert rep.history == cells and rep.manifest["replay"] == {"plan": []}
    assert el.load_snapshot(el.snapshot(ns).data, fresh()).history is None


def test_bad_history_or_manifest_is_refused_before_any_work(nb):
    ns = nb("x = 1")
    with pytest.raises(ValueError, match="written by snapshot itself"):
        el.snapshot(ns, manifest={"modules": []})
    with pytest.raises(TypeError, match="must be JSON"):
        el.snapshot(ns, history=[object()])
    with pytest.raises(UnicodeDecodeError):
        el.snapshot(ns, history=b"\xff")


def test_large_buffers_go_out_of_band_aligned_small_ones_stay_in_the_stream(nb):
    np = pytest.importorskip("numpy")
    ns = nb(f"""
import numpy as np
big = np.arange(1_000_000, dtype=np.float64)
fortran = np.asfortranarray(np.ones((300, 400), dtype=np.float32))
small = np.arange({BUFFER_THRESHOLD // 8 - 1}, dtype=np.float64)
""")
    snap = el.snapshot(ns)
    recs = {tuple(r["names"]): r for r in records(snap.data)}
    big = recs[("big",)]
    assert [b["length"] for b in big["buffers"]] == [8_000_000]
    assert big["length"] < 1000  # the stream only says NEXT_BUFFER
    assert all(b["offset"] % 64 == 0 for r in recs.values() for b in r["buffers"])
    assert len(recs[("fortran",)]["buffers"]) == 1
    assert recs[("small",)]["buffers"] == [] and recs[("small",)]["length"] > BUFFER_THRESHOLD - 64
    group = next(g for g in snap.groups if g.names == ["big"])
    assert group.bytes >= 8_000_000

    # From bytes: the container is copied once into a bytearray; arrays are writable views
    # of it (no second copy).
    out = fresh()
    assert el.load_snapshot(snap.data, out).ok
    assert out["big"].flags.writeable and out["fortran"].flags.f_contiguous
    out["big"][7] = -1.0
    assert out["big"][7] == -1.0 and float(out["big"][8]) == 8.0
    # From a bytearray: used in place.
    container = bytearray(snap.data)
    out = fresh()
    el.load_snapshot(container, out)
    at = big["buffers"][0]["offset"]
    container[at:at + 8] = np.array([42.0]).tobytes()
    assert out["big"][0] == 42.0, "the restored array is the container's memory"


def test_dill_gets_out_of_band_buffers_too(nb):
    np = pytest.importorskip("numpy")
    ns = nb("import numpy as np, threading\n"
            "mixed = {'lock': threading.Lock(), 'data': np.ones(100_000)}")
    snap = el.snapshot(ns)
    group = next(g for g in snap.groups if g.names == ["mixed"])
    assert group.serializer == "dill" and group.bytes >= 800_000
    rec = next(r for r in records(snap.data) if r["names"] == ["mixed"])
    assert rec["serializer"] == "dill" and [b["length"] for b in rec["buffers"]] == [800_000]
    out = fresh()
    assert el.load_snapshot(snap.data, out).ok
    assert out["mixed"]["data"].sum() == 100_000 and out["mixed"]["lock"].acquire(False)


def test_the_stream_hands_records_out_while_it_works(nb):
    ns = nb("\n".join(f"blob{i} = bytes([{i}]) * (3 << 20)" for i in range(6)) +
            "\nlast = [1]")
    seen = []
    stream = SnapshotStream(ns, progress=lambda done, total, names: seen.append(done))
    kinds, first_record_after = [], None
    for part in stream:
        kinds.append(part[0])
        if part[0] == "record" and first_record_after is None:
            first_record_after = len(seen)
    assert kinds[0] == "head" and kinds[-1] == "tail" and kinds.count("record") == 8
    assert first_record_after < 6, "records came out before the last group was written"
    assert stream.snapshot.data is None and len(stream.snapshot.groups) == 7
    with pytest.raises(RuntimeError, match="iterated once"):
        iter(stream)


def test_the_stream_concatenated_is_the_checkpoint(nb):
    ns = nb("import threading\na = list(range(1000))\nb = {'a': a}\nc = threading.Lock()")
    stream = SnapshotStream(ns)
    data = b"".join(b"".join(map(bytes, p[1])) if p[0] == "record" else p[1] for p in stream)
    info = el.load.loader.inspect(data)
    assert info["ok"] and len(info["records"]) == 3
    out = fresh()
    # joined here, not by snapshot(): foreign unless the person says they are theirs
    assert el.load_snapshot(data, out, trust=True).ok and out["b"]["a"] is out["a"]


def test_an_abandoned_stream_frees_the_writer(nb):
    ns = nb("\n".join(f"blob{i} = bytes([{i}]) * (5 << 20)" for i in range(3)))
    it = iter(SnapshotStream(ns))
    assert next(it)[0] == "head"
    it.close()  # a store that failed half-way: the generator's finally frees the core writer
    assert threading.active_count() >= 1


def test_large_bytes_values_go_out_of_band_and_stay_one_object(nb):
    ns = nb("blob = bytes(range(256)) * 4096\nsame = blob\nmutable = bytearray(b'ab') * 100_000\n"
            "small = b'x' * 100")
    snap = el.snapshot(ns)
    recs = {tuple(sorted(r["names"])): r for r in records(snap.data)}
    assert [b["length"] for b in recs[("blob", "same")]["buffers"]] == [1 << 20]
    assert [b["length"] for b in recs[("mutable",)]["buffers"]] == [200_000]
    assert recs[("small",)]["buffers"] == []
    out = fresh()
    assert el.load_snapshot(snap.data, out).ok
    assert type(out["blob"]) is bytes and out["same"] is out["blob"] and out["blob"] == ns["blob"]
    assert type(out["mutable"]) is bytearray and out["mutable"] == ns["mutable"]
    out["mutable"][0] = 0  # its own memory, not the container's
    assert out["mutable"][0] == 0 and el.load_snapshot(snap.data, fresh()).ok
