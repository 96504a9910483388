"""elastic_lite._core, the Python side of the C core: the format-2.0 writer (buffer protocol,
out-of-band buffers, parts), inspect and the committed format-1.0 fixtures.

Runs on host CPython (pytest, ctypes backend) AND, unchanged, in a fresh Pyodide (the wasm
backend): tests/node/core-pyodide.test.mjs loads this file and calls every test_* function.
So: plain asserts, no pytest fixtures, nothing host-only unless guarded.
"""

import json
import os
import pickle
import sys
import zlib

from elastic_lite import _core

HERE = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else "."
FIXTURES = os.environ.get("EL_FIXTURES") or os.path.join(HERE, "..", "..", "wasm", "tests",
                                                         "fixtures")


class Blob:
    """A pure-Python stand-in for an array: pickles its memory out of band (protocol 5)."""

    def __init__(self, data):
        self.data = bytearray(data)

    def __reduce_ex__(self, protocol):
        return (Blob, (pickle.PickleBuffer(self.data),))


def _file(parts):
    out = bytearray()
    for p in parts:
        assert p.offset == len(out), (p, len(out))
        out += p.data
    return bytes(out)


def _stream(data, rec):
    return data[rec["payload_offset"]:rec["payload_offset"] + rec["length"]]


def test_writer_round_trip_with_out_of_band_buffers_and_a_manifest():
    big, small = Blob(range(256)) , Blob(b"tiny")
    values = ({"k": big}, small, [1, 2, 3])
    w = _core.Writer(producer="elastic-lite test", python="3", created_ms=7)
    try:
        w.begin_record(["a", "b", "c"])
        pickle.Pickler(w, protocol=5, buffer_callback=w.add_buffer).dump(values)
        assert w.end_record("cloudpickle") == 0
        w.begin_record([], kind="manifest")
        w.write(json.dumps({"version": 2}).encode())
        assert w.end_record() == 1
        assert w.record_count == 2 and w.size == w.record_offset(1) + w.record_length(1)
        data = w.finish()
    finally:
        w.free()
    info = _core.inspect(data)
    assert info["ok"], info["error"]
    assert info["format_version"] == 2
    rec, man = info["records"]
    assert (rec["kind"], rec["names"], rec["serializer"]) == ("data", ["a", "b", "c"], "cloudpickle")
    assert (man["kind"], man["serializer"]) == ("manifest", None)
    assert json.loads(_stream(data, man)) == {"version": 2}
    assert rec["crc32"] == format(zlib.crc32(_stream(data, rec)), "08x")
    assert [b["length"] for b in rec["buffers"]] == [256, 4]
    assert all(b["offset"] % 64 == 0 and b["ok"] for b in rec["buffers"])
    assert all(r["offset"] % 64 == 0 and r["record_length"] % 64 == 0 for r in info["records"])
    bufs = [memoryview(data)[b["offset"]:b["offset"] + b["length"]] for b in rec["buffers"]]
    got = pickle.loads(_stream(data, rec), buffers=bufs)
    assert bytes(got[0]["k"].data) == bytes(range(256)) and bytes(got[1].data) == b"tiny"
    assert got[2] == [1, 2, 3]


def test_write_takes_any_buffer_and_copies_only_into_the_core():
    import array
    w = _core.Writer(producer="p", python="3", created_ms=0)
    try:
        w.begin_record(["x"])
        stream = pickle.dumps(list(range(50)), protocol=5)
        pieces = [stream[:3], bytearray(stream[3:10]), memoryview(stream)[10:20],
                  pickle.PickleBuffer(bytearray(stream[20:30]))]
        n = sum(w.write(p) for p in pieces)
        rest = array.array("B", stream[30:])
        n += w.write(memoryview(rest))
        assert n == len(stream) == w.record_bytes
        w.end_record("pickle")
        data = w.finish()
    finally:
        w.free()
    info = _core.inspect(data)
    assert info["ok"] and _stream(data, info["records"][0]) == stream
    assert info["records"][0]["crc32"] == format(zlib.crc32(stream), "08x")


def test_parts_are_handed_out_as_written_and_buffers_are_never_copied():
    src = bytearray(b"B" * 1000)
    w = _core.Writer(producer="p", python="3", created_ms=0)
    try:
        w.begin_record(["v"])
        pickle.Pickler(w, protocol=5, buffer_callback=w.add_buffer).dump(Blob(b""))
        w.abort_record()  # a failed attempt: its registered buffer is forgotten too
        w.begin_record(["v"])
        w.write(pickle.dumps(pickle.PickleBuffer(src), protocol=5, buffer_callback=lambda b: False))
        assert w.add_buffer(pickle.PickleBuffer(src)) is False  # pickle: "out of band"
        w.end_record("pickle")
        parts = w.take()
        assert [(p.kind, p.record) for p in parts] == [
            ("bytes", "head"), ("bytes", 0), ("buffer", 0), ("bytes", 0)]
        buf = parts[2]
        src[0] = ord("Z")  # the part IS the registered memory
        assert buf.data[0] == ord("Z") and buf.length == 1000 and buf.offset % 64 == 0
        src[0] = ord("B")
        assert w.take() == []
        tail = w.finish(join=False)
        assert [p.record for p in tail] == ["tail"]
    finally:
        w.free()
    data = _file(parts + tail)
    info = _core.inspect(data)
    assert info["ok"], info["error"]
    assert info["records"][0]["buffers"][0]["length"] == 1000


def test_stored_record_by_length():
    w1 = _core.Writer(producer="p", python="3", created_ms=0)
    w1.begin_record(["x"])
    w1.write(pickle.dumps(42, protocol=5))
    w1.end_record("pickle")
    one = w1.finish()
    w1.free()
    rec = _core.inspect(one)["records"][0]
    stored = one[rec["offset"]:rec["offset"] + rec["record_length"]]
    w2 = _core.Writer(producer="a much longer producer, so the record lands elsewhere", python="3",
                      created_ms=0)
    try:
        assert w2.add_stored_record(len(stored)) == 0
        try:
            w2.add_stored_record(10)
            raise AssertionError("a length that is not a multiple of 64 was accepted")
        except _core.CoreError as e:
            assert "multiple of 64" in str(e)
        try:
            w2.finish()
            raise AssertionError("finish() joined a part it does not hold")
        except _core.CoreError as e:
            assert "finish(join=False)" in str(e)
    finally:
        w2.free()
    w3 = _core.Writer(producer="a much longer producer, so the record lands elsewhere", python="3",
                      created_ms=0)
    w3.add_stored_record(len(stored))
    parts = w3.finish(join=False)
    w3.free()
    assert [p.kind for p in parts] == ["bytes", "stored", "bytes"]
    parts[1] = parts[1]._replace(data=stored)
    data = _file(parts)
    info = _core.inspect(data)
    assert info["ok"] and info["records"][0]["names"] == ["x"]
    assert info["records"][0]["offset"] != rec["offset"]
    assert pickle.loads(_stream(data, info["records"][0])) == 42


def test_misuse_is_a_clear_error():
    w = _core.Writer(producer="p", python="3", created_ms=0)
    try:
        for call, words in [(lambda: w.write(b"x"), "no record is open"),
                            (lambda: w.end_record("pickle"), "no record is open to end"),
                            (lambda: w.begin_record(["x"], kind="notes"), "unknown record kind")]:
            try:
                call()
                raise AssertionError(f"accepted: {words}")
            except _core.CoreError as e:
                assert words in str(e), str(e)
        w.begin_record([], kind="history")
        try:
            w.add_buffer(b"abc")
            raise AssertionError("a buffer in a history record was accepted")
        except _core.CoreError as e:
            assert "only data records" in str(e)
        w.write(b"\xff")
        try:
            w.end_record()
            raise AssertionError("a history record that is not UTF-8 was accepted")
        except _core.CoreError as e:
            assert "UTF-8" in str(e)
        w.abort_record()
        w.begin_record(["x"])
        strided = memoryview(bytearray(10))[::2]
        try:
            w.add_buffer(strided)
            raise AssertionError("a non-contiguous out-of-band buffer was accepted")
        except BufferError as e:
            assert "contiguous" in str(e)
        assert w.write(strided) == 5  # in-band: copied once, as pickle would
    finally:
        w.free()


def test_crc32_is_zlibs():
    assert _core.crc32(b"123456789") == 0xCBF43926


def test_format_1_0_fixtures_still_read():
    for name in ("cpython-3.11.elc", "pyodide-3.14.elc"):
        with open(os.path.join(FIXTURES, "format-1.0", name), "rb") as f:
            data = f.read()
        info = _core.inspect(data)
        assert info["ok"], (name, info["error"])
        assert info["format_version"] == 1
        assert [r["names"] for r in info["records"]][-2:] == [["lock"], ["__elastic_lite_manifest__"]]
        assert info["records"][5]["globals"] == [["dill._dill", "_create_lock"]]


def test_damage_is_reported_with_a_code():
    w = _core.Writer(producer="p", python="3", created_ms=0)
    w.begin_record(["x"])
    w.write(pickle.dumps("hello", protocol=5))
    w.end_record("pickle")
    data = bytearray(w.finish())
    w.free()
    rec = _core.inspect(bytes(data))["records"][0]
    data[rec["payload_offset"] + 3] ^= 1
    info = _core.inspect(bytes(data))
    assert not info["ok"] and info["error"]["code"] == "checksum"
    assert _core.inspect(b"nothing")["error"]["code"] == "not-checkpoint"


def test_wasm_instance_is_replaced_after_memory_grew_past_64_mib():
    if sys.platform != "emscripten":
        return  # native memory goes back to the system on free(); nothing to replace
    before = _core.backend()
    w = _core.Writer(producer="p", python="3", created_ms=0)
    w.begin_record(["big"])
    w.write(pickle.dumps(b"x" * (80 << 20), protocol=5))
    w.end_record("pickle")
    assert before.memory_size() > 64 << 20
    data = w.finish()
    assert _core.backend() is before  # still in use by w
    w.free()
    after = _core.backend()
    assert after is not before and after.memory_size() < 64 << 20
    assert _core.inspect(data, validate=False)["ok"]


def _corpus_files():
    dirs = [os.path.join(FIXTURES, "format-1.0"),
            os.path.join(FIXTURES, "..", "..", "fuzz", "corpus", "container")]
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".elc") or name.startswith("checkpoint-"):
                with open(os.path.join(d, name), "rb") as f:
                    yield name, f.read()


def test_pull_reader_gives_the_whole_buffer_report():
    seen = 0
    for name, data in _corpus_files():
        for kw in ({}, {"validate": False}, {"validate": False, "headers_only": True}):
            whole = _core.inspect(data, **kw)
            for chunk in (64, 1000):
                assert _core.read(data, chunk=chunk, **kw) == whole, (name, kw, chunk)
                damaged = bytearray(data)
                damaged[len(data) // 2] ^= 0x20
                assert _core.read(damaged, chunk=chunk, **kw) == _core.inspect(bytes(damaged), **kw)
        seen += 1
    assert seen >= 2  # the 1.0 fixtures at least (the fuzz corpus is not in Pyodide's FS)


def test_imports_tell_module_name_prefixes_opcode_protocol_and_calls():
    rep = _core.validate_pickle(b"\x80\x04\x8c\x02os\x8c\x0epath.os.system\x93\x8c\x02ls\x85R.")
    assert rep["imports"] == [{"module": "os", "name": "path.os.system",
                               "prefixes": ["path", "path.os", "path.os.system"], "ext": None,
                               "opcode": "STACK_GLOBAL", "protocol": 4, "calls": ["REDUCE"]}]
    assert _core.validate_pickle(b"\x80\x02ccPickle\nloads\n.")["imports"][0]["protocol"] == 2
    ext = _core.validate_pickle(b"\x80\x02\x83\xef\xbe)R.")["imports"]
    assert ext == [{"module": None, "name": None, "prefixes": [], "ext": 48879, "opcode": "EXT2",
                    "protocol": 2, "calls": ["REDUCE"]}]
