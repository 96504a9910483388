"""The rules Elastic Lite implements in Python and in JS, checked against the golden vectors of
tests/vectors/*.json, which tests/node/golden-vectors.test.mjs checks the JS side against too:
a change to one language's copy without the other turns one of the two red."""

import json
import os

import pytest

from elastic_lite import _report
from elastic_lite.session import timeline as _timeline
from elastic_lite.store import signing as _signing, stores as _stores

VECTORS = os.path.join(os.path.dirname(__file__), "..", "vectors")


def vectors(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)


def piece_bytes(piece):
    if "hex" in piece:
        return bytes.fromhex(piece["hex"])
    start, n = piece["start"], piece["counter"]
    return (bytes(range(251)) * (n // 251 + 2))[start % 251:start % 251 + n]


def ids(cases, key="why"):
    return [str(c.get(key, i)) for i, c in enumerate(cases)]


@pytest.mark.parametrize("case", vectors("record-keys.json")["cases"])
def test_record_key(case):
    pieces = [piece_bytes(p) for p in case["pieces"]]
    assert _stores.record_key(pieces) == case["key"]
    assert _stores.record_key(b"".join(pieces)) == case["key"]


_SPLIT = vectors("container-split.json")["cases"]


@pytest.mark.parametrize("case", _SPLIT, ids=ids(_SPLIT))
def test_split_container(case):
    data = bytes.fromhex(case["hex"])
    head, records, tail = _stores.split_container(data)
    assert (head.nbytes, [r.nbytes for r in records], tail.nbytes) == \
        (case["head"], case["records"], case["tail"])
    assert bytes(head) + b"".join(bytes(r) for r in records) + bytes(tail) == data


_RETENTION = vectors("retention.json")["cases"]


@pytest.mark.parametrize("case", _RETENTION, ids=ids(_RETENTION))
def test_retention(case):
    entries = [(e["name"], e["createdMs"], e["fixedBytes"], [tuple(r) for r in e["records"]])
               for e in case["entries"]]
    exempt = {e["name"] for e in case["entries"] if e["exempt"]}
    assert _stores.expired_by_retention(entries, case["keep"], case["policy"], exempt) == case["expired"]


_SIGNED = vectors("signed-bytes.json")


@pytest.mark.parametrize("case", _SIGNED["cases"], ids=ids(_SIGNED["cases"], "name"))
def test_signed_bytes(case):
    assert _signing.canonical_json(case["meta"]) == case["canonical"]
    got = _signing.signed_bytes(case["name"], bytes.fromhex(case["head"]), case["records"],
                                bytes.fromhex(case["tail"]), case["meta"])
    assert got.hex() == case["signed"]


@pytest.mark.parametrize("case", _SIGNED["canonical"])
def test_canonical_json(case):
    assert _signing.canonical_json(case["value"]) == case["text"]


_CHOICE = vectors("restore-choice.json")["cases"]


@pytest.mark.parametrize("case", _CHOICE, ids=ids(_CHOICE))
def test_restore_choice(case):
    choice = _timeline.restore_choice(case["entries"], own=frozenset(case["own"]))
    assert (choice and choice["name"]) == case["choice"]


_LABELS = vectors("point-labels.json")["cases"]


@pytest.mark.parametrize("case", _LABELS, ids=[json.dumps(c["meta"]) for c in _LABELS])
def test_point_label(case):
    assert _timeline.point_label(case["meta"]) == case["label"]


_ESCAPES = vectors("escape-text.json")["vectors"]


@pytest.mark.parametrize("case", _ESCAPES, ids=[repr(c["input"]) for c in _ESCAPES])
def test_shown_text(case):
    assert _report.shown_text(case["input"]) == case["shown"]


_WORDS = vectors("host-words.json")


@pytest.mark.parametrize("case", _WORDS["not_found"], ids=ids(_WORDS["not_found"], "name"))
def test_host_words(case):
    from elastic_lite.session import kernel as _kernel
    assert _kernel.DEFAULT_NAME == _WORDS["default_name"]
    assert _kernel.EMPTY == _WORDS["empty"]
    assert _kernel.not_found(case["name"]) == case["message"]
