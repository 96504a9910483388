"""The shortcuts that make a checkpoint of many ordinary variables cheap, each at its boundary
(where it must NOT apply)."""

import asyncio
import math
import sys

import pytest

import elastic_lite as el
from elastic_lite.changes import fast_path as _fast_path
from elastic_lite.capture.selection import capture
from elastic_lite.capture.groups import find_groups
from elastic_lite.session.kernel import SESSION
from elastic_lite.store.stores import MemoryStore, StoreError, _check_key


def test_plain_data_is_captured_without_the_binding_checks_unless_it_is_a_module():
    # Values of builtin data types go straight to the variables; the boundary: the very
    # object registered in sys.modules (something a library can do) is a module binding,
    # and a name no checkpoint can hold is still refused whatever its value.
    odd = ["a module that is a list"]
    sys.modules["el_test_list_module"] = odd
    try:
        ns = {"__name__": "__main__", "data": [1, 2], "table": {"k": 1.5}, "n": 3,
              "alias": odd, "a\0b": [9], "\ud800": (1,)}
        cap = capture(ns)
    finally:
        del sys.modules["el_test_list_module"]
    assert list(cap.variables) == ["data", "table", "n"]
    assert cap.modules == [{"name": "alias", "module": "el_test_list_module", "attr": None}]
    assert sorted(s["name"] for s in cap.skipped) == ["\\ud800", "a\0b"]


def test_a_walk_of_nothing_shared_never_lists_the_modules_but_one_that_meets_them_stops():
    # The module dicts the walk must not descend into are listed only when the walk meets
    # an object held twice. The boundary: two variables holding a module's dict (or the
    # namespace itself) share nothing through it.
    ns = {"__name__": "__main__"}
    ns.update(a={"ns": vars(math)}, b=[vars(math)], c=[ns], d=[ns], e=[1.0] * 100)
    variables = capture(ns).variables
    grouping = find_groups(variables, ns, {})
    assert sorted(grouping.groups) == [["a"], ["b"], ["c"], ["d"], ["e"]]


def test_record_keys_are_checked_in_one_pass():
    good = "0123456789abcdef" * 4
    assert _check_key(good) is good
    for bad in (good.upper(), good[:-1], good + "0", "g" * 64, good[:-1] + "\u0661", None, 64):
        with pytest.raises(StoreError, match="not a record key"):
            _check_key(bad)


class _CountingStore(MemoryStore):
    def __init__(self):
        super().__init__()
        self.entries_read = 0

    async def get_entry(self, name):
        self.entries_read += 1
        return await super().get_entry(name)


def test_a_point_learns_its_record_keys_without_reading_its_entry_back():
    # The keys the store gave for the records just sent are what the entry holds: reading
    # the entry back (a store round trip, a signature check) only to learn them again was
    # most of an automatic point's store time. What is remembered still works: the next
    # point reuses the unchanged records and writes the changed one.
    store = _CountingStore()
    ns = {"__name__": "__main__"}
    _fast_path.cells_run_in(ns)
    exec("a = [1.5] * 1000\nb = {'k': list(range(100))}\nc = 'text' * 100", ns)
    SESSION.forget_changes(ns)
    try:
        first = asyncio.run(SESSION._write(store, "p1", ns))
        exec("a[0] = 2.5", ns)
        second = asyncio.run(SESSION._write(store, "p2", ns))
    finally:
        SESSION.forget_changes(ns)
    assert store.entries_read == 0
    assert first.reuse["written"] == 3
    assert second.reuse["written"] == 1 and second.reuse["reused"] == 2
    entry = asyncio.run(store.get("p2"))
    fresh = {"__name__": "__main__"}
    assert el.load_snapshot(entry["bytes"], fresh, foreign=False).ok
    assert fresh["a"][0] == 2.5 and fresh["b"] == {"k": list(range(100))}


def test_the_pool_judges_long_containers_by_their_first_items_but_measures_the_rest():
    # A container of more than 64 items whose first items, scaled to its length, pickle to
    # more than twice the pool's limit is not pickled whole to find out (a record of its
    # own). The boundary: long containers of small items (a list of 1,500 small ints, a dict
    # of 100 short entries: a few KiB) are measured whole and still share a record.
    from elastic_lite.capture import container as _container
    ns = {"__name__": "__main__"}
    ns.update({f"small{i}": list(range(1500)) for i in range(8)})
    ns.update({f"table{i}": {f"k{j}": j for j in range(100)} for i in range(4)})
    ns.update(big=[float(i) for i in range(6000)], words=[f"a longer word {i}" for i in range(3000)])
    variables = capture(ns).variables
    checked = []
    size = _container.PlainCheck.size

    def counting(self, values):
        checked.append(values)
        return size(self, values)
    groups = [[n] for n in variables]
    try:
        _container.PlainCheck.size = counting
        pool = _container._Pool(ns, groups, variables, {})
    finally:
        _container.PlainCheck.size = size
    pooled = {n for names, _, members in pool.plan if members for n in names}
    assert pooled == {f"small{i}" for i in range(8)} | {f"table{i}" for i in range(4)}
    # big and words were judged by 64 items each, never pickled whole
    assert max(len(v[0]) for v in checked if len(v) == 1 and type(v[0]) is list
               and type(v[0][0]) is not int) == 64
