"""Where the plain pickler's seeds must NOT apply (capture.picklers.PlainPickler: instances of
a def of another group written by the C pickler, the def by name): each case is red if the
shortcut took it. What it does apply to is in test_plain.py (SEEDED)."""

import pytest

import elastic_lite as el
from elastic_lite.capture import container as _container
from elastic_lite.capture import groups as _groups
from fresh_kernel import restore_elsewhere

CLASS = "class P:\n    def __init__(self, v): self.v = v\n"


@pytest.fixture(autouse=True)
def without_numpy(monkeypatch):
    """numpy (imported by other tests of the session) turns the plain pickler off."""
    from elastic_lite.capture import picklers as _picklers
    monkeypatch.setattr(_picklers, "numpy_ndarray", lambda: None)


def by_name(snap):
    return {n: g for g in snap.groups for n in g.names}


def test_a_type_a_checked_restore_refuses_is_skipped_not_written_plain(nb):
    # code.InteractiveInterpreter pickles fine, and a checked restore refuses it (deny-list:
    # code.*): only our reducer_override says so. With a notebook instance first (the seeded
    # route) or a library object first (the plain route), the group must still be skipped.
    ns = nb("import code, datetime\n" + CLASS
            + "x = [P(1), code.InteractiveInterpreter({})]\n"
            + "y = [datetime.date(2024, 1, 1), code.InteractiveInterpreter({})]\n"
            + "z = [P(2)]\n")
    snap = el.snapshot(ns)
    skipped = {s["name"]: s["reason"] for s in snap.skipped}
    assert set(skipped) == {"x", "y"}, snap.table()
    assert all("checked restore would refuse" in r for r in skipped.values()), skipped
    assert by_name(snap)["z"].serializer == "cloudpickle", snap.table()  # no plain pickler
    out = {"__name__": "__main__"}
    assert el.load_snapshot(snap.data, out).ok and out["z"][0].v == 2


def test_a_variable_proven_without_its_walk_has_no_seeds(nb):
    # the largest variable is not walked when the others are closed (Grouping.unwalked): its
    # edges to defs are a guess (every def), so it goes to cloudpickle as before
    ns = nb("class P:\n    pass\nbig = [float(i) for i in range(20000)]\nsmall = [1, [2]]\n")
    variables = {n: ns[n] for n in ("big", "small")}
    grouping = _groups.find_groups(variables, ns, {id(ns["P"]): "P"})
    assert grouping.unwalked == "big" and grouping.refs["big"] == {"P"}  # every def: a guess
    assert _container._Seeds(grouping, ns).of(["big"]) == ()


def test_a_truncated_walk_has_no_seeds(nb):
    ns = nb(CLASS + "a = [P(1)]\nb = [P(2)]\n")
    variables = {n: ns[n] for n in ("a", "b")}
    defs = {id(ns["P"]): "P"}
    whole = _container._Seeds(_groups.find_groups(variables, ns, defs), ns)
    assert whole.of(["a"]) == (("P", ns["P"]),)
    cut = _groups.find_groups(variables, ns, defs, max_objects=1)
    assert cut.truncated and cut.refs["a"] == {"P"}  # every def: a guess
    assert _container._Seeds(cut, ns).of(["a", "b"]) == ()


def test_the_seeds_are_the_defs_the_group_reaches(nb):
    # two defs in the namespace, the group reaches one: only that one is referred to (a ref
    # to the other would make its record a needless dependency of this one on restore)
    ns = nb(CLASS + "class Q:\n    pass\nx = [P(1), P(2)]\n")
    snap = el.snapshot(ns)
    assert by_name(snap)["x"].serializer == "pickle", snap.table()
    info = el.load.loader.inspect(snap.data)
    rec = next(r for r in info["records"] if r["names"] == ["x"])
    assert [(i["module"], i["name"]) for i in rec["imports"]] == [
        ("elastic_lite._rebuild", "ref")], rec["imports"]
    payload = snap.data[rec["payload_offset"]:rec["payload_offset"] + rec["length"]]
    assert b"\x8c\x01P" in payload and b"\x8c\x01Q" not in payload
