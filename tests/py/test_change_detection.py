"""Change detection between checkpoints (elastic_lite.changes): an unchanged group is stored by
reference (and, when proven, not pickled), and a changed object is never taken for unchanged.

Every mutation test takes a checkpoint, mutates one thing, takes another, and then restores
the second checkpoint from the store's bytes into a NEW namespace: the mutation must be there
(the proof that no stale record was reused), and the group's record must have been written,
not reused. The unchanged cases check the opposite, so each assertion can fail both ways."""

import asyncio

import pytest

import elastic_lite as el
from elastic_lite.session.kernel import SESSION

from elastic_lite.changes import fast_path as _fast_path

from change_detection_cases import FAST, GIVE_UP, MUTATIONS, UNSTABLE, checkpoint, reused, run_case, written


class Session:
    """A notebook namespace, a store, and checkpoints c1, c2, ... taken with change detection."""

    def __init__(self, code=""):
        self.ns = {"__name__": "__main__"}
        self.store = el.MemoryStore()
        self.count = 0
        if code:
            self.run(code)

    def run(self, code):
        exec(compile(code, "<cell>", "exec"), self.ns)

    def checkpoint(self):
        self.count += 1
        return asyncio.run(checkpoint(self.store, f"c{self.count}", self.ns))

    def restored(self, name=None):
        """A new namespace restored from checkpoint `name` (default: the last)."""
        entry = asyncio.run(self.store.get(name or f"c{self.count}"))
        ns = {"__name__": "__main__"}
        report = el.load_snapshot(entry["bytes"], ns, foreign=False)  # this store's own entry
        assert report.ok, report.to_dict()
        return ns

    def stats(self):
        return asyncio.run(self.store.stats())


def group(snap, name):
    return next(g for g in snap.groups if name in g.names)


def test_unchanged_groups_are_stored_once_and_the_checkpoint_restores_whole():
    s = Session("""
import array
big = bytes(range(256)) * 1024        # 256 KiB, immutable: proven by identity
arr = array.array('d', range(50000))  # 400 KB, mutable: proven by its CRC-32
t = (1, 'a', (2.5, None), frozenset({3}))
d = {'k': [1, 2, 3]}
""")
    first = s.checkpoint()
    assert first.reuse["reused"] == 0 and written(first) == ["arr", "big", "d", "t"]
    before = s.stats()["recordBytes"]
    s.run("big, arr, t, d")  # a cell naming them: looked at again (not the fast path)
    second = s.checkpoint()
    assert written(second) == [] and reused(second) == ["arr", "big", "d", "t"]
    assert second.reuse["proven"] == 3  # big, arr, t: not pickled; d: pickled, same bytes
    assert "proven without pickling" in group(second, "big").note
    assert "same bytes" in group(second, "d").note
    after = s.stats()
    # the second checkpoint added nothing to the store
    assert after["recordBytes"] == before, after
    ns = s.restored("c2")
    assert ns["big"] == bytes(range(256)) * 1024 and ns["arr"][49999] == 49999.0
    assert ns["t"] == (1, "a", (2.5, None), frozenset({3})) and ns["d"] == {"k": [1, 2, 3]}
    # what is reused is the very record the store holds: the same keys, in the same order
    keys = [[r["key"] for r in asyncio.run(s.store.get_entry(n))["records"]] for n in ("c1", "c2")]
    assert keys[0] == keys[1] and len(keys[0]) == 5  # 4 groups + the manifest (same too)


@pytest.mark.parametrize("budget", [None, 0], ids=["copies", "crc-only"])
@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_a_mutation_is_never_taken_for_unchanged(case, budget):
    r = asyncio.run(run_case(el.MemoryStore(), case, shadow_budget=budget))
    assert not r["skipped"]  # host CPython 3.11 saves every case (3.14 cannot save itertools)
    if case not in UNSTABLE or _fast_path.available():
        assert r["reused_unchanged"], f"{r['name']} was not reused while unchanged"
    assert r["written_changed"], f"{case}: the changed {r['name']} was taken for unchanged"
    assert r["other_reused"] and r["restored_ok"]
    assert r["shows_change"], f"{case}: the restored {r['name']} does not show the change"
    # where sys.monitoring exists (3.12+), the unrelated variable was not even looked at,
    # unless the cell reached a variable without naming it
    if case in FAST or case in GIVE_UP:
        assert r["other_untouched"] == (case in FAST and _fast_path.available()), case


def test_random_state_restores_exactly_after_a_reused_checkpoint():
    s = Session("import random\nr = random.Random(7)\nr.random()")
    s.checkpoint()
    s.run("r.random()")
    s.checkpoint()
    expected = s.ns["r"].random()
    assert s.restored()["r"].random() == expected
    assert s.restored("c1")["r"].random() != expected


def test_numpy_in_place_changes_are_seen():
    np = pytest.importorskip("numpy")
    s = Session("import numpy as np\na = np.arange(100000, dtype=np.float64)\n"
                "b = np.zeros((100, 100))\nv = a[10:20]\nother = np.ones(3)")
    s.checkpoint()
    same = s.checkpoint()
    assert reused(same) == ["a", "b", "other", "v"]
    s.run("v[0] = -1.0")  # through a view: the owner's buffer changes
    after = s.checkpoint()
    assert written(after) == ["a", "v"]
    s.run("b.shape = (10000,)")  # same bytes, another shape: the stream changes
    shaped = s.checkpoint()
    assert written(shaped) == ["b"]
    ns = s.restored()
    assert ns["a"][10] == -1.0 and ns["v"][0] == -1.0 and ns["b"].shape == (10000,)
    assert np.shares_memory(ns["a"], ns["v"])


def test_pandas_cell_change_is_seen():
    pd = pytest.importorskip("pandas")
    s = Session("import pandas as pd\ndf = pd.DataFrame({'x': range(20000), 'y': 1.5})")
    s.checkpoint()
    assert reused(s.checkpoint()) == ["df"]
    s.run("df.loc[5, 'y'] = 9.0")
    assert written(s.checkpoint()) == ["df"]
    assert s.restored()["df"].loc[5, "y"] == 9.0
    s.run("df = df.rename(columns={'x': 'z'})")
    assert written(s.checkpoint()) == ["df"]
    assert list(s.restored()["df"].columns) == ["z", "y"]
    assert pd is not None


def test_identity_proof_holds_its_objects_so_ids_cannot_be_reused():
    s = Session("t = tuple(range(1000))")
    s.checkpoint()
    old_id = id(s.ns["t"])
    s.run("del t")
    # the memo still holds the old tuple: a new object cannot take its id
    s.run("t = tuple(range(1, 1001))")
    assert id(s.ns["t"]) != old_id
    snap = s.checkpoint()
    assert written(snap) == ["t"]
    assert s.restored()["t"][0] == 1


def test_an_equal_new_object_is_reused_by_its_bytes_not_by_proof():
    s = Session("x = [1, 2, 3]\nt = (1, 2)")
    s.checkpoint()
    s.run("x = [1, 2, 3]\nt = tuple([1, 2])")
    snap = s.checkpoint()
    assert reused(snap) == ["t", "x"]
    assert "same bytes" in group(snap, "x").note and "same bytes" in group(snap, "t").note


def test_groups_that_change_shape_are_written():
    s = Session("a = [1]\nb = [2]")
    s.checkpoint()
    s.run("b = a")  # a and b now share an object: one group
    snap = s.checkpoint()
    assert [g.names for g in snap.groups] == [["a", "b"]] and written(snap) == ["a", "b"]
    ns = s.restored()
    assert ns["a"] is ns["b"]


def test_a_deleted_previous_checkpoint_is_not_referred_to():
    s = Session("big = bytes(200000)\nx = [1]")
    s.checkpoint()
    assert asyncio.run(s.store.delete("c1"))
    snap = s.checkpoint()  # c1's records are gone: everything is written again
    assert written(snap) == ["big", "x"]
    assert s.restored()["big"] == bytes(200000)


def test_forget_makes_the_next_checkpoint_whole():
    s = Session("x = [1]\nbig = bytes(100000)")
    s.checkpoint()
    SESSION.forget_changes(s.ns)
    assert written(s.checkpoint()) == ["big", "x"]
    assert reused(s.checkpoint()) == ["big", "x"]


def test_restore_into_the_namespace_makes_the_next_checkpoint_whole():
    s = Session("x = [1]\nbig = bytes(100000)")
    s.checkpoint()
    s.checkpoint()
    entry = asyncio.run(s.store.get("c1"))
    el.load_snapshot(entry["bytes"], s.ns, foreign=False)  # this store's own entry
    assert written(s.checkpoint()) == ["big", "x"]


def test_every_point_of_a_session_restores_its_own_state():
    s = Session("import array\nbig = array.array('d', [0.0]) * 100000\nlog = []")
    states = []
    for i in range(8):
        s.run(f"log.append({i})\nstep = {i}")
        if i % 3 == 0:
            s.run(f"big[{i}] = {i}.5")
        s.checkpoint()
        states.append((list(s.ns["log"]), s.ns["step"], s.ns["big"][i]))
    for k, (log, step, value) in enumerate(states, start=1):
        ns = s.restored(f"c{k}")
        assert (ns["log"], ns["step"], ns["big"][k - 1]) == (log, step, value)
    # the 800 KB array was stored once per distinct content (i = 0, 3, 6), not 8 times
    assert s.stats()["recordBytes"] < 4 * 800_000


def test_dill_groups_are_reused_and_their_changes_seen():
    s = Session("import threading\nlock = threading.Lock()\nbox = [lock, 1]")
    first = s.checkpoint()
    assert group(first, "box").serializer == "dill"
    assert reused(s.checkpoint()) == ["box", "lock"]
    s.run("box[1] = 2")
    assert written(s.checkpoint()) == ["box", "lock"]
    assert s.restored()["box"][1] == 2


def test_snapshot_without_a_store_never_reuses():
    ns = {"__name__": "__main__"}
    exec("x = [1]", ns)
    snap = el.snapshot(ns)
    assert snap.reuse is None and not any(g.reused for g in snap.groups)


def test_a_long_stream_goes_through_the_core_and_is_still_reused_or_rewritten():
    # past _Draft.HOLD_BYTES (4 MiB) the stream is streamed into the core while it is hashed;
    # unchanged, that open record is aborted and the stored one named instead
    s = Session("import pickle\n"
                "class Buf:\n"
                "    def __init__(self, data): self.data = data\n"
                "    def __reduce_ex__(self, protocol):\n"
                "        return (type(self), (pickle.PickleBuffer(self.data),))\n"
                "big = [str(i) for i in range(700000)]\n"
                "pair = [big, Buf(bytearray(100000))]")
    first = s.checkpoint()
    assert group(first, "big").bytes > 5 << 20
    assert reused(s.checkpoint()) == ["Buf", "big", "pair"]
    s.run("big[-1] = 'changed'")
    assert written(s.checkpoint()) == ["big", "pair"]
    ns = s.restored()
    assert ns["big"][-1] == "changed" and ns["pair"][0] is ns["big"]
    assert len(ns["pair"][1].data) == 100000


class _YieldingStore(el.MemoryStore):
    """A memory store whose record writes suspend, so two checkpoints interleave."""

    async def put_records(self, records):
        await asyncio.sleep(0)
        return await super().put_records(records)


def test_two_checkpoints_interleaved_keep_their_own_records():
    s = Session("first = bytearray(9 << 20)\nsmall = [1]\nlast = {'v': 0}")
    s.store = _YieldingStore()
    s.checkpoint()
    s.run("first[0] = 1")  # a new 9 MiB record: each stream stops half-way to send it

    async def both():
        return await asyncio.gather(checkpoint(s.store, "x", s.ns), checkpoint(s.store, "y", s.ns))

    x, y = asyncio.run(both())
    assert written(x) == written(y) == ["first"] and reused(x) == reused(y) == ["last", "small"]
    for name in ("x", "y"):
        ns = s.restored(name)
        assert ns["first"][0] == 1 and ns["small"] == [1] and ns["last"] == {"v": 0}
    s.run("small.append(2)")
    s.count = 9
    snap = s.checkpoint()  # after both: what the tracker remembers is still stored
    assert written(snap) == ["small"] and s.restored()["small"] == [1, 2]


def _shadows(store, ns):
    memos = SESSION.tracker(store, ns).memos.values()
    return sorted(len(c.shadow) for m in memos for c in (*m.buffers, m.content)
                  if c is not None and c.shadow is not None)


def test_big_buffers_are_compared_with_copies_within_the_budget():
    np = pytest.importorskip("numpy")
    old = SESSION.shadow_budget
    SESSION.shadow_budget = 5 << 20
    try:
        s = Session("import numpy as np\na = np.zeros(2 << 17)\nb = bytearray(2 << 20)\n"
                    "c = np.ones(2 << 17)\nsmall = np.ones(1000)")
        s.checkpoint()
        # a and b get copies (2 MiB each); c would pass the 5 MiB budget: CRC-32 only
        assert _shadows(s.store, s.ns) == [2 << 20, 2 << 20]
        assert reused(s.checkpoint()) == ["a", "b", "c", "small"]
        assert _shadows(s.store, s.ns) == [2 << 20, 2 << 20]
        s.run("a[-1] = 5\nc[0] = 7")
        assert written(s.checkpoint()) == ["a", "c"]
        ns = s.restored()
        assert ns["a"][-1] == 5 and ns["c"][0] == 7 and ns["b"] == bytearray(2 << 20)
    finally:
        SESSION.shadow_budget = old


def test_what_the_fast_path_reads_from_code():
    """_fast_path reads the names code may change from its bytecode (any Python: the analysis
    itself needs no sys.monitoring); the extension's command wrapper changes nothing."""
    def analyse(src):
        _fast_path._State.analysed.clear()
        return _fast_path._analyse(compile(src, "<cell>", "exec"))
    _, names, why, _ = analyse("a = b + 1\ndef f():\n    c.append(d)\n")
    assert why is None and {"a", "b", "f", "c", "d"} <= names
    for src, word in (("globals()['x'] = 1", "globals"), ("x.__class__.y = 1", "__class__"),
                      ("import os", "os"), ("y = _", "_"), ("getattr(x, 'y').z = 1", "getattr")):
        assert word in analyse(src)[2], src
    assert analyse("import math\nz = math.sqrt(2)")[2] is None
    wrapper = ("async def _elastic_lite_cmd():\n    import sys as _sys\n"
               "    import elastic_lite.host\n    return _sys.platform\n"
               "await _elastic_lite_cmd()\n")
    code = compile(wrapper, "<host>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
    _fast_path._State.analysed.clear()
    _, names, why, _ = _fast_path._analyse(code)
    assert why is None and names == {"_elastic_lite_cmd"}
