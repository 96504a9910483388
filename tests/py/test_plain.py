"""The plain pickler and the pool of small plain data (_picklers.PlainPickler / PlainCheck,
_container._Pool): which groups take them, that everything the plain pickler cannot save the
notebook's way falls back to cloudpickle, and that every checkpoint restores exactly, here and
in a new process (fresh_kernel)."""

import asyncio
import datetime
import decimal

import cloudpickle
import pytest

import elastic_lite as el
from elastic_lite.capture import container as _container
from fresh_kernel import restore_elsewhere

from change_detection_cases import checkpoint, reused, written

LIBRARY = """
import collections, datetime, decimal, fractions, math, pathlib, uuid
when = [datetime.date(2024, 1, d) for d in range(1, 29)]
money = {'a': decimal.Decimal('1.10'), 'b': fractions.Fraction(1, 3)}
counts = collections.Counter('mississippi')
ordered = collections.OrderedDict(b=2, a=1)
queue = collections.deque([1, 2, 3], maxlen=5)
ids = [uuid.UUID(int=7), pathlib.PurePosixPath('/a/b')]
fn = math.sqrt
"""


@pytest.fixture(autouse=True)
def without_numpy(monkeypatch):
    """Other tests of this session import numpy, which turns the plain pickler off (its view
    rules live in reducer_override); no value here is an array, so act as if it were not."""
    from elastic_lite.capture import picklers as _picklers
    monkeypatch.setattr(_picklers, "numpy_ndarray", lambda: None)


def serializers(snap):
    return {n: g.serializer for g in snap.groups for n in g.names}


def fresh():
    return {"__name__": "__main__"}


def restored(snap):
    out = fresh()
    rep = el.load_snapshot(snap.data, out)
    assert rep.ok, rep.table()
    return out


def test_library_objects_are_written_by_the_plain_pickler(nb):
    ns = nb(LIBRARY)
    snap = el.snapshot(ns)
    assert set(serializers(snap).values()) == {"pickle"}, snap.table()
    assert all(g.fallback is None for g in snap.groups)
    out = restored(snap)
    for name in ("when", "money", "counts", "ordered", "queue", "ids"):
        assert out[name] == ns[name] and type(out[name]) is type(ns[name]), name
    assert out["queue"].maxlen == 5 and out["fn"] is ns["fn"]
    restore_elsewhere(snap.data, """
import datetime, decimal, math
assert restore_report["ok"], restore_report
assert when[3] == datetime.date(2024, 1, 4) and money['a'] == decimal.Decimal('1.10')
assert counts['s'] == 4 and list(ordered) == ['b', 'a'] and queue.maxlen == 5
assert fn is math.sqrt and str(ids[1]) == '/a/b'
""")


FALLBACKS = {
    # each group starts with a library object (so the plain pickler is tried first), then
    # holds what only cloudpickle saves the notebook's way
    "lambda": ("x = [datetime.date(2024, 1, 1), lambda v: v + 1]", "x[1](1) == 2"),
    "local class": ("def make():\n    class L:\n        k = 5\n    return L()\n"
                    "x = [datetime.date(2024, 1, 1), make()]", "x[1].k == 5"),
    "redefined class": ("class K:\n    k = 1\nold = K()\nclass K:\n    k = 2\n"
                        "x = [datetime.date(2024, 1, 1), old]", "x[1].k == 1"),
    "module": ("import math\nx = [datetime.date(2024, 1, 1), math]", "x[1].sqrt(4) == 2"),
    "code object": ("def g():\n    return 3\nx = [datetime.date(2024, 1, 1), g.__code__]",
                    "x[1].co_name == 'g'"),
    "instance of a class of its own group": (
        "class P:\n    def __init__(self): self.v = 9\nP.seen = [datetime.date(2024, 1, 1), P()]\n"
        "x = P.seen", "type(x[1]) is P and x[1].v == 9 and P.seen is x"),
    "a def and a lambda": ("def f(v):\n    return v * 2\n"
                           "x = [datetime.date(2024, 1, 1), f, lambda v: v + 1]",
                           "x[1] is f and x[2](1) == 2"),
}


def written_by(nb, case, serializer):
    """Snapshot of the case's cell: `x`'s group is written by `serializer` and restores (here
    and in a new process) with `check` true."""
    setup, check = case
    ns = nb("import datetime\n" + setup)
    snap = el.snapshot(ns)
    group = next(g for g in snap.groups if "x" in g.names)
    assert group.serializer == serializer and group.fallback is None, snap.table()
    out = restored(snap)
    assert eval(check, out), case
    restore_elsewhere(snap.data, f"assert restore_report['ok'], restore_report\nassert {check}")
    return out


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_what_plain_pickle_cannot_save_our_way_goes_to_cloudpickle(nb, case):
    out = written_by(nb, FALLBACKS[case], "cloudpickle")
    assert out["x"][0] == datetime.date(2024, 1, 1)


SEEDED = {
    # a def of ANOTHER group (or an instance of one): the plain pickler refers to it by name,
    # as cloudpickle with our rules does (PlainPickler's seeds)
    "notebook function": ("def f(v):\n    return v * 2\nx = [datetime.date(2024, 1, 1), {'f': f}]",
                          "x[1]['f'] is f and f(2) == 4"),
    "notebook class instance": ("class P:\n    def __init__(self): self.v = 9\n"
                                "x = [datetime.date(2024, 1, 1), P()]",
                                "type(x[1]) is P and x[1].v == 9"),
    "instances only, shared": ("class P:\n    def __init__(self, v): self.v = v\n"
                               "class Q(P):\n    pass\n"
                               "p = P(1)\nx = [p, Q(2), p, P, {'q': Q}]",
                               "type(x[0]) is P and x[0] is x[2] and type(x[1]) is Q "
                               "and isinstance(x[1], P) and x[3] is P and x[4]['q'] is Q"),
}


@pytest.mark.parametrize("case", sorted(SEEDED))
def test_defs_of_other_groups_are_written_by_the_plain_pickler_by_name(nb, case):
    written_by(nb, SEEDED[case], "pickle")


def test_no_plain_pickler_when_numpy_is_imported_or_a_module_goes_by_value(nb, monkeypatch):
    ns = nb(LIBRARY)
    from elastic_lite.capture import picklers as _picklers
    fake_ndarray = type("ndarray", (), {})  # as if numpy were here (a class no value is an instance of)
    monkeypatch.setattr(_picklers, "numpy_ndarray", lambda: fake_ndarray)
    assert set(serializers(el.snapshot(ns)).values()) == {"cloudpickle"}
    monkeypatch.setattr(_picklers, "numpy_ndarray", lambda: None)
    cloudpickle.register_pickle_by_value(decimal)
    try:
        assert "pickle" not in set(serializers(el.snapshot(ns)).values())
    finally:
        cloudpickle.unregister_pickle_by_value(decimal)
    assert set(serializers(el.snapshot(ns)).values()) == {"pickle"}


MANY = """
shared = [1, 2]
holder = {'s': shared}                 # one group with `shared` (aliasing)
""" + "".join(f"v{i} = {{'i': {i}, 'l': list(range({i}))}}\n" for i in range(40)) + """
big = list(range(100000))              # long: a record of its own
class Point:
    def __init__(self, x): self.x = x
pts = [Point(i) for i in range(3)]     # the notebook's own: cloudpickle, its own record
def f(v):
    return v + 1
"""


def test_small_plain_groups_share_records_first_in_the_file(nb):
    ns = nb(MANY)
    snap = el.snapshot(ns)
    pools = [g for g in snap.groups if g.serializer == "pickle" and len(g.names) > 1]
    pooled = [n for g in pools for n in g.names]
    assert sorted(pooled) == sorted(["shared", "holder"] + [f"v{i}" for i in range(40)])
    assert len(pools) == 2  # 41 groups, 32 a record
    sers = serializers(snap)
    assert sers["big"] == "cloudpickle" and sers["f"] == "cloudpickle"
    assert sers["pts"] == "pickle"  # instances of a def of another group: by name, its own record
    info = el.load.loader.inspect(snap.data)
    records = [r for r in info["records"] if r["kind"] == "data"]
    assert [r["names"] for r in records[:2]] == [g.names for g in pools]  # first in the file
    assert all(r["imports"] == [] for r in records[:2]), "a pool imports nothing"
    out = restored(snap)
    assert out["holder"]["s"] is out["shared"] and out["v39"] == ns["v39"]
    assert out["big"] == ns["big"] and out["pts"][2].x == 2 and out["f"](1) == 2
    restore_elsewhere(snap.data, """
assert restore_report['ok'], restore_report
assert holder['s'] is shared and v7 == {'i': 7, 'l': list(range(7))}
assert pts[1].x == 1 and isinstance(pts[0], Point) and f(1) == 2
""")


def test_few_small_groups_keep_records_of_their_own(nb):
    ns = nb("a = [1]\nb = {'k': 2}\nc = 'x'")
    snap = el.snapshot(ns)
    assert [g.names for g in snap.groups] == [["a"], ["b"], ["c"]]
    assert set(serializers(snap).values()) == {"cloudpickle"}


def test_a_pool_that_fails_is_written_group_by_group(nb, monkeypatch):
    ns = nb(MANY)
    get = _container._Picklers.get

    def failing(self, serializer, refs):
        if serializer == "pickle":
            raise RuntimeError("no plain pickler today")
        return get(self, serializer, refs)
    monkeypatch.setattr(_container._Picklers, "get", failing)
    snap = el.snapshot(ns)
    holder = next(g for g in snap.groups if "holder" in g.names)
    assert sorted(holder.names) == ["holder", "shared"]  # its group, aliasing kept
    assert holder.serializer == "cloudpickle"
    out = restored(snap)
    assert out["holder"]["s"] is out["shared"] and out["v3"] == ns["v3"]


def test_change_detection_with_pools():
    ns = {"__name__": "__main__"}
    exec(compile(MANY, "<cell>", "exec"), ns)
    store = el.MemoryStore()
    asyncio.run(checkpoint(store, "c1", ns))
    same = asyncio.run(checkpoint(store, "c2", ns))
    assert written(same) == ["Point"], same.table()  # a class is pickled again (as before)
    ns["v3"]["i"] = -3  # one pooled variable changes: its pool is written again, nothing else
    after = asyncio.run(checkpoint(store, "c3", ns))
    pool = next(g for g in after.groups if "v3" in g.names)
    assert sorted(written(after)) == sorted(pool.names)
    assert "v39" in reused(after) and "big" in reused(after) and "pts" in reused(after)
    out = fresh()
    entry = asyncio.run(store.get("c3"))
    assert el.load_snapshot(entry["bytes"], out, foreign=False).ok  # this store's own entry
    assert out["v3"]["i"] == -3 and out["v39"] == ns["v39"]


def test_in_a_kernel_namespace_the_notebook_module_is_never_imported_by_name(monkeypatch):
    # A kernel's namespace IS sys.modules['__main__'].__dict__: pickle could then save the
    # notebook's own functions and classes by reference (`__main__.P`), which a new kernel
    # does not have. The plain pickler is stopped before that reaches a record.
    import sys
    import types
    saved = sys.modules["__main__"]
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    ns = main.__dict__
    exec(compile("import datetime\nclass P:\n    def __init__(self): self.v = 9\n"
                 "def f(v):\n    return v * 2\n"
                 "x = [datetime.date(2024, 1, 1), P(), {'f': f}]\n"
                 "class K:\n    pass\nold = K()\nclass K:\n    pass\n"
                 "y = [datetime.date(2024, 1, 1), old]", "<cell>", "exec"), ns)
    snap = el.snapshot(ns)
    # defs of other groups by name (the plain pickler's seeds); an instance of a class no
    # name holds any more: the guard stops the plain pickler, cloudpickle writes it
    group = next(g for g in snap.groups if "x" in g.names)
    assert group.serializer == "pickle" and group.fallback is None, snap.table()
    group = next(g for g in snap.groups if "y" in g.names)
    assert group.serializer == "cloudpickle" and group.fallback is None, snap.table()
    assert all(i["module"] != "__main__" for r in el.load.loader.inspect(snap.data)["records"]
               for i in r.get("imports") or []), "no record imports from __main__"
    monkeypatch.setitem(sys.modules, "__main__", saved)
    restore_elsewhere(snap.data, """
assert restore_report['ok'], restore_report
assert type(x[1]) is P and x[1].v == 9 and x[2]['f'] is f and f(2) == 4
assert type(y[1]).__name__ == 'K' and type(y[1]) is not K
""")
