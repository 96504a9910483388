"""Writes the golden vectors of the rules Elastic Lite implements twice, in Python and in JS:
record keys, container splitting, retention, signed bytes (with canonical JSON) and the
restore choice. (escape-text.json and point-labels.json are written by hand.)

The expected values are computed from each rule's definition here, not by calling the
product: a record key with hashlib, a container cut from the index the writer reports, the
retention and restore-choice cases written out by hand. Both test suites then read the files:
tests/py/test_golden_vectors.py and tests/node/golden-vectors.test.mjs. Rerun with
`.venv/bin/python tests/vectors/make_vectors.py` after changing a rule ON PURPOSE, in both
languages, in one commit.
"""

import hashlib
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "py"))

LEAF = 4 * 1024 * 1024


def counter_bytes(length, start=0):
    """bytes[i] = (start + i) % 251: the generated content a vector names as {"counter": n}."""
    return bytes((start + i) % 251 for i in range(length)) if length < 4096 else \
        (bytes(range(251)) * (length // 251 + 2))[start % 251:start % 251 + length]


def key_of(data):
    """The record key by its definition: SHA-256(u64le(length) || SHA-256(each 4 MiB leaf))."""
    top = hashlib.sha256(struct.pack("<Q", len(data)))
    for at in range(0, len(data), LEAF):
        top.update(hashlib.sha256(data[at:at + LEAF]).digest())
    return top.hexdigest()


def write(name, doc):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=True)
        f.write("\n")


def record_keys():
    cases = []
    for hexdata in ["", "00", "616263", "ff" * 64]:
        data = bytes.fromhex(hexdata)
        cases.append({"pieces": [{"hex": hexdata}], "key": key_of(data)})
    cases.append({"pieces": [{"hex": "6162"}, {"hex": ""}, {"hex": "63"}], "key": key_of(b"abc")})
    for length, cuts in [(LEAF, []), (LEAF + 1, []), (LEAF + 1, [LEAF - 3]), (2 * LEAF + 7, [5, LEAF + 2])]:
        data = counter_bytes(length)
        pieces, at = [], 0
        for cut in cuts + [length]:
            pieces.append({"counter": cut - at, "start": at})
            at = cut
        cases.append({"pieces": pieces, "key": key_of(data)})
    write("record-keys.json", {
        "about": ["The content key of a record: lowercase hex of SHA-256(u64 little-endian length || "
                  "SHA-256(leaf 0) || SHA-256(leaf 1) || ...), the leaves being consecutive 4 MiB "
                  "(4194304-byte) slices of the record's bytes (the last one shorter; none for an "
                  "empty record). A record may be given in pieces: the key is that of their "
                  "concatenation. Python: elastic_lite.store.stores.record_key; JS: "
                  "js/store/indexeddb.mjs recordKey.",
                  "A piece is {\"hex\": bytes} or {\"counter\": n, \"start\": s}: n bytes, byte i "
                  "being (s + i) % 251."],
        "cases": cases})


def container(records, oob=()):
    from elastic_lite import _core
    w = _core.Writer("elastic-lite vectors", "3.14.0", 1764720000000)
    for names, stream in records:
        w.begin_record(names)
        w.write(stream)
        w.end_record("pickle")
    for names in oob:
        w.begin_record(names)
        w.write(b"\x80\x05\x95\x05\x00\x00\x00\x00\x00\x00\x00\x97\x98.")  # NEXT_BUFFER, READONLY
        w.add_buffer(counter_bytes(300))
        w.end_record("pickle")
    data = w.finish()
    starts = [w.record_offset(i) for i in range(w.record_count)]
    ends = [w.record_offset(i) + w.record_length(i) for i in range(w.record_count)]
    return bytes(data), starts, ends


def container_split():
    cases = []
    stream = b"\x80\x04K\x01."
    for records, oob, why in [
        ([(["x"], stream)], (), "one record"),
        ([(["a"], stream), (["b", "c"], b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x02K\x03\x86."),
          (["d"], stream)], (), "three records"),
        ([], (), "no record"),
        ([(["small"], stream)], (["big"],), "an out-of-band buffer inside its record"),
    ]:
        data, starts, ends = container(records, oob)
        index_at = struct.unpack_from("<Q", data, len(data) - 32 + 8)[0]
        # each record reaches the next one's start (the padding belongs to it), the last the index
        cuts = [(s, (starts[i + 1] if i + 1 < len(starts) else index_at)) for i, s in enumerate(starts)]
        head = starts[0] if starts else index_at
        cases.append({"why": why, "hex": data.hex(), "head": head,
                      "records": [b - a for a, b in cuts], "tail": len(data) - index_at})
    good = bytes.fromhex(cases[1]["hex"])
    broken_index = bytearray(good)
    index_at = struct.unpack_from("<Q", good, len(good) - 32 + 8)[0]
    broken_index[index_at] ^= 0xFF
    for data, why in [(b"", "empty"), (b"not a checkpoint at all, just forty bytes", "not a container"),
                      (bytes(broken_index), "the index magic changed: not cut"),
                      (good[:-1], "cut short: not cut")]:
        cases.append({"why": why, "hex": data.hex(), "head": 0,
                      "records": [len(data)] if data else [], "tail": 0})
    write("container-split.json", {
        "about": ["How a checkpoint file is cut into head, records and tail for a content-addressed "
                  "store: a format-2 file whose footer and index are in bounds and in order is cut "
                  "at the record offsets of its index (each record up to the next one's start, the "
                  "last up to the index; the head before the first record, the tail from the index "
                  "on); anything else is one record with an empty head and tail (nothing for an "
                  "empty file). The pieces always reassemble the file. Python: "
                  "elastic_lite.store.stores.split_container; JS: js/store/indexeddb.mjs splitContainer.",
                  "Each case: the file (hex) and the lengths of head, records and tail."],
        "cases": cases})


def retention():
    H = 3600 * 1000
    def e(name, t, fixed=100, records=(), exempt=False):
        return {"name": name, "createdMs": t, "fixedBytes": fixed,
                "records": [list(r) for r in records], "exempt": exempt}
    base = [e("p1", 1 * H + 10), e("p2", 1 * H + 20), e("p3", 2 * H + 5), e("p4", 3 * H + 1),
            e("p5", 3 * H + 2)]
    cases = [
        {"why": "no policy: nothing expires", "entries": base, "keep": "p5", "policy": None, "expired": []},
        {"why": "keepLast 2", "entries": base, "keep": "p5", "policy": {"keepLast": 2},
         "expired": ["p3", "p2", "p1"]},
        {"why": "keepLast 1 keeps the one just committed too", "entries": base, "keep": "p1",
         "policy": {"keepLast": 1}, "expired": ["p4", "p3", "p2"]},
        {"why": "keepHourly 2: the newest of the two newest hours", "entries": base, "keep": "p5",
         "policy": {"keepHourly": 2}, "expired": ["p4", "p2", "p1"]},
        {"why": "keepLast 1 and keepHourly 3", "entries": base, "keep": "p5",
         "policy": {"keepLast": 1, "keepHourly": 3}, "expired": ["p4", "p1"]},
        {"why": "an exempt point (a checkpoint a person asked for) never expires",
         "entries": [dict(x, exempt=(x["name"] == "p1")) for x in base], "keep": "p5",
         "policy": {"keepLast": 2}, "expired": ["p3", "p2"]},
        {"why": "the same createdMs: ordered by name", "entries": [e("b", 5), e("a", 5), e("c", 4)],
         "keep": "a", "policy": {"keepLast": 1}, "expired": ["b", "c"]},
        {"why": "maxBytes counts shared records once, newest first; the first over it and all older go",
         "entries": [e("n1", 1, 10, [("k1", 100)]), e("n2", 2, 10, [("k1", 100), ("k2", 50)]),
                     e("n3", 3, 10, [("k2", 50), ("k3", 500)])],
         "keep": "n3", "policy": {"maxBytes": 600}, "expired": ["n2", "n1"]},
        {"why": "maxBytes: shared records make the older fit",
         "entries": [e("n1", 1, 10, [("k1", 100)]), e("n2", 2, 10, [("k1", 100), ("k2", 50)]),
                     e("n3", 3, 10, [("k2", 50), ("k3", 500)])],
         "keep": "n3", "policy": {"maxBytes": 675}, "expired": ["n1"]},
        {"why": "maxBytes never removes the one just committed, even over the budget",
         "entries": [e("n1", 1, 10, [("k1", 100)]), e("n2", 2, 10, [("k2", 900)])],
         "keep": "n2", "policy": {"maxBytes": 50}, "expired": ["n1"]},
        {"why": "an exempt point still counts against maxBytes",
         "entries": [e("n1", 1, 10, [("k1", 100)]), e("n2", 2, 10, [("k2", 100)], exempt=True),
                     e("n3", 3, 10, [("k3", 100)])],
         "keep": "n3", "policy": {"maxBytes": 230}, "expired": ["n1"]},
    ]
    write("retention.json", {
        "about": "Which checkpoints of one notebook a retention policy {keepLast, keepHourly, maxBytes} "
                 "removes once `keep` is committed (rule: js/store/indexeddb.mjs, Retention). Entries: "
                 "name, createdMs, fixedBytes (head + tail), records [[key, length]...], exempt (meta.keep). "
                 "`expired`: the names removed, newest first. Python: elastic_lite.store.stores."
                 "expired_by_retention; JS: js/store/indexeddb.mjs expiredByRetention.",
        "cases": cases})


def signed_bytes():
    def netstrings(fields):
        return b"".join(b"%d:%s," % (len(f), f) for f in fields)
    cases = []
    key = "ab" * 32
    for name, head, records, tail, meta, canonical in [
        ("demo", "00010203", [{"key": key, "length": 128}], "ff", {"notebook": "a.ipynb", "createdMs": 1764720000000,
         "size": 133, "variables": 1, "names": ["x"], "skipped": []},
         '{"createdMs":1764720000000,"names":["x"],"notebook":"a.ipynb","size":133,"skipped":[],"variables":1}'),
        ("nb.ipynb [3]", "", [{"key": key, "length": 64}, {"key": "cd" * 32, "length": 192}, {"key": key, "length": 64}],
         "", {"z": {"b": [1, None, True], "a": "é\u2028\"\\"}, "auto": True, "cell": {"executionCount": 3, "firstLine": "x = 1"}},
         '{"auto":true,"cell":{"executionCount":3,"firstLine":"x = 1"},"z":{"a":"é\u2028\\"\\\\","b":[1,null,true]}}'),
        ("données ✓", "", [], "", {}, "{}"),
    ]:
        fields = [b"elastic-lite entry signature 1", name.encode(), bytes.fromhex(head),
                  "".join(f"{r['key']} {r['length']}\n" for r in records).encode(), bytes.fromhex(tail),
                  canonical.encode()]
        cases.append({"name": name, "head": head, "records": records, "tail": tail, "meta": meta,
                      "canonical": canonical, "signed": netstrings(fields).hex()})
    canon = [
        {"value": {"b": 1, "a": [1, 2, {"d": None, "c": "x"}]}, "text": '{"a":[1,2,{"c":"x","d":null}],"b":1}'},
        {"value": {"é": 1, "e": 2, "Z": 3}, "text": '{"Z":3,"e":2,"é":1}'},
        {"value": "a\u0000\u001f\"\\/\u2028\U0001F600", "text": '"a\\u0000\\u001f\\"\\\\/\u2028\U0001F600"'},
        {"value": [0.5, 100.25, -3, 0], "text": "[0.5,100.25,-3,0]"},
        {"value": 9007199254740991, "text": "9007199254740991"},
        # JS has one number type: 1.0 IS 1, and keys sort by UTF-16 code units (U+1F600 is
        # D83D DE00, before U+E000). Python must write the same text to verify JS's entries.
        {"value": [1.0, 3e5, 1e-7, 1e21], "text": "[1,300000,1e-7,1e+21]"},
        {"value": {"\ue000": 1, "\U0001F600": 2}, "text": '{"\U0001F600":2,"\ue000":1}'},
    ]
    write("signed-bytes.json", {
        "about": ["What an entry's signature covers: netstrings (`<decimal length>:<bytes>,`) of the "
                  "line `elastic-lite entry signature 1`, the name (UTF-8), the head, one "
                  "`<key> <length>\\n` line per record, the tail, and the canonical JSON of the "
                  "metadata. Python: elastic_lite.store.signing.signed_bytes / canonical_json; JS: "
                  "js/store/indexeddb.mjs signedBytes / canonicalJson. Each case: hex of the signed bytes.",
                  "Canonical JSON: object keys sorted (by UTF-16 code units, as JS sorts), no spaces, "
                  "non-ASCII as it is, numbers as JS writes them (1.0 as 1, 1e-07 as 1e-7, -0.0 as 0); "
                  "`undefined` members dropped."],
        "cases": cases, "canonical": canon})


def restore_choice():
    def entry(name, created, auto=False, variables=1, skipped=(), lost=False):
        out = {"name": name, "meta": {"createdMs": created, "auto": auto, "variables": variables,
                                      "names": [f"v{i}" for i in range(variables)],
                                      "skipped": [{"name": s, "type": "generator", "reason": "r"} for s in skipped]}}
        if lost:  # the browser store lists an entry whose records are gone with `lost`
            out["lost"] = {"missing": 1, "records": 2}
        return out
    cases = [
        {"why": "nothing stored", "entries": [], "own": [], "choice": None},
        {"why": "the newest, when none is this kernel's own",
         "entries": [entry("b", 900, True), entry("a", 800)], "own": [], "choice": "b"},
        {"why": "this kernel's own automatic points are passed over",
         "entries": [entry("k2", 1200, True), entry("k1", 1100, True), entry("old", 900, True)],
         "own": ["k2", "k1"], "choice": "old"},
        {"why": "a checkpoint a person saved in this kernel is not its own point",
         "entries": [entry("mine", 1300), entry("k1", 1100, True), entry("old", 900, True)],
         "own": ["k1"], "choice": "mine"},
        {"why": "an empty point (nothing saved, nothing skipped) is passed over",
         "entries": [entry("empty", 950, True, variables=0), entry("full", 900, True)], "own": [],
         "choice": "full"},
        {"why": "a point of skipped variables only is not empty",
         "entries": [entry("skips", 950, True, variables=0, skipped=["g"]), entry("full", 900, True)],
         "own": [], "choice": "skips"},
        {"why": "only empty ones: the newest not its own",
         "entries": [entry("k1", 1100, True, variables=0), entry("e2", 950, variables=0), entry("e1", 940, variables=0)],
         "own": ["k1"], "choice": "e2"},
        {"why": "a lost checkpoint (its data removed by the browser) is passed over",
         "entries": [entry("gone", 950, True, lost=True), entry("kept", 900, True)], "own": [],
         "choice": "kept"},
        {"why": "only its own points: the newest",
         "entries": [entry("k2", 1200, True), entry("k1", 1100, True)], "own": ["k2", "k1"], "choice": "k2"},
    ]
    write("restore-choice.json", {
        "about": "Which checkpoint a restore without a name brings back (entries newest first): the "
                 "newest that is neither one of the restoring kernel's own automatic points nor empty "
                 "(no variable saved and none skipped) nor lost (`lost`: its data was removed by the "
                 "browser); failing that the newest not its own; failing "
                 "that the newest; none when there is none. `own`: the names of the kernel's own "
                 "automatic points (the JupyterLite page knows them as the names the kernel gave the "
                 "points it asked for). Python: elastic_lite.session.timeline.restore_choice; JS: "
                 "js/shared/report.mjs restoreChoice.",
        "cases": cases})


if __name__ == "__main__":
    record_keys()
    container_split()
    retention()
    signed_bytes()
    restore_choice()
