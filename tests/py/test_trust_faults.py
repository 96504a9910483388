"""Fault injection at the restore level: one bit flipped in each region of a real format 2.0
file (file header, each record's header, pickle stream, buffer table, zero padding, an
out-of-band buffer, the manifest and history records, the index, the footer). Whatever is hit,
restore never crashes and never unpickles what it cannot vouch for: a damaged record is a
`damaged` problem naming its variables (with the core's code), every other variable comes back
equal, and when nothing can be read, one clear CheckpointError says why. The format 1.0
fixture still restores, imported (foreign) and confirmed too."""

import asyncio
import os

import pytest

import elastic_lite as el
from elastic_lite import host
from elastic_lite.load.loader import CheckpointError

from fresh_kernel import ROOT

FIXTURE_1_0 = os.path.join(ROOT, "wasm", "tests", "fixtures", "format-1.0", "cpython-3.11.elc")

STATE = """
big = bytes(range(256)) * 512          # 128 KiB: an out-of-band buffer
small = {"k": [1, 2, 3], "s": "text"}
def f(x):
    return x + 1
nums = list(range(50))
"""


@pytest.fixture(scope="module")
def original():
    ns = {"__name__": "__main__"}
    exec(STATE, ns)
    snap = el.snapshot(ns, history=[{"n": 1, "code": "big = ..."}])
    data = snap.data
    info = el.load.loader.inspect(data)
    assert info["ok"] and any(r.get("buffers") for r in info["records"])
    return ns, data, info


def regions(info):
    """(label, offset, the record the flip damages or None for the container) per region."""
    out = [("file header", 8, None)]
    for rec in info["records"]:
        names = rec
        what = {"manifest": "manifest", "history": "history"}.get(rec["kind"], "data")
        label = rec["names"]
        out.append((f"{what} record header {label}", rec["offset"] + 4, names))
        out.append((f"{what} stream {label}", rec["payload_offset"] + rec["length"] // 2, names))
        for b in rec.get("buffers") or []:
            out.append((f"buffer table {label}", rec["payload_offset"] + rec["length"] + 4, names))
            out.append((f"out-of-band buffer {label}", b["offset"] + b["length"] // 2, names))
            end = b["offset"] + b["length"]
            if end < rec["offset"] + rec["record_length"]:
                out.append((f"zero padding {label}", end, names))
        pad = rec["payload_offset"] + rec["length"]
        if not rec.get("buffers") and pad < rec["offset"] + rec["record_length"]:
            out.append((f"zero padding {label}", pad, names))
    out.append(("index", info["index_offset"] + 4, None))
    out.append(("footer", info["size"] - 8, None))
    return out


def flipped(data, at, bit=3):
    b = bytearray(data)
    b[at] ^= 1 << bit
    return bytes(b)


def test_a_flipped_bit_in_each_region(original):
    ns, data, info = original
    seen = set()
    for label, at, rec in regions(info):
        bad = flipped(data, at)
        out = {"__name__": "__main__"}
        try:
            rep = el.load_snapshot(bad, out, trust=True)  # the person's own file, damaged
        except CheckpointError as exc:  # nothing readable: one clear sentence, with its code
            assert rec is None, (label, str(exc))
            assert exc.inspection["error"]["code"] and "Nothing was restored" in str(exc), label
            seen.add(label.split(" [")[0])
            continue
        problems = rep.problems()
        if rec is not None and rec["kind"] == "data":
            # that record is damaged (by its names, or by its index when its header is what
            # broke), with the core's code; none of its variables is restored
            hit = [p for p in problems if p["kind"] == "damaged" and p["record"] == rec["index"]]
            assert hit and all(p["code"] for p in hit), (label, problems)
            assert not set(rec["names"]) & set(rep.restored), (label, rep.restored)
        elif rec is not None:  # the manifest or history record: said so, the data restores
            said = any("record is damaged" in w or "no manifest" in w for w in rep.warnings) or \
                any(p["record"] == rec["index"] for p in problems)
            assert said, (label, rep.warnings, problems)
        else:  # index or footer: the records are still found (or one clear error above)
            assert not rep.ok or rep.warnings, label
        for name in rep.restored:  # whatever came back is exactly what was saved
            if name == "f":
                assert out["f"](1) == 2, label
            else:
                assert out[name] == ns[name], (label, name)
        seen.add(label.split(" [")[0])
    assert {"file header", "data record header", "data stream", "buffer table", "out-of-band buffer",
            "zero padding", "manifest stream", "history stream", "index", "footer"} <= seen, seen


def test_a_flipped_bit_given_as_a_file_is_still_foreign_and_still_damaged(original):
    """Trust does not make damage load: confirmed, a damaged record is still refused. Foreign,
    the damaged record is named as damaged and the rest is not loaded unconfirmed."""
    ns, data, info = original
    rec = next(r for r in info["records"] if r["names"] == ["nums"])
    bad = flipped(data, rec["payload_offset"] + 2)
    rep = asyncio.run(host.restore(data=bad, namespace={"__name__": "__main__"}))
    assert [p["code"] for p in rep["problems"]] == ["checksum", "foreign"]
    assert rep["problems"][0]["names"] == ["nums"] and "nums" not in rep["problems"][1]["names"]
    out = {"__name__": "__main__"}
    rep = asyncio.run(host.restore(data=bad, namespace=out, trust=True))
    [prob] = rep["problems"]
    assert prob["kind"] == "damaged" and prob["names"] == ["nums"] and prob["code"] == "checksum"
    assert "nums" not in out and out["small"] == ns["small"]


def test_the_format_1_0_fixture_restores_imported_and_confirmed():
    with open(FIXTURE_1_0, "rb") as f:
        data = f.read()
    el.set_store(el.MemoryStore())
    try:
        imp = asyncio.run(host.import_checkpoint(data, "old", source="cpython-3.11.elc"))
        assert imp["stored"], imp
        out = {"__name__": "__main__"}
        rep = asyncio.run(host.restore("old", namespace=out))
        assert rep["problems"][0]["code"] == "foreign" and rep["restored"] == []
        rep = asyncio.run(host.restore("old", namespace=out, trust=True))
        assert rep["ok"], rep["problems"]
        assert out["triple"](2) == 6 and out["alias"]["list"] is out["shared"]
    finally:
        el.set_store(None)
