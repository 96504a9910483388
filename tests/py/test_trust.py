"""Restore refuses records that would call deny-listed globals (os.system, ...), on the real
writer and the real native core; legitimate checkpoints of real notebooks are never refused."""

import json
import os
import pathlib

import pytest

import elastic_lite as el
from elastic_lite import _core
from elastic_lite.trust import rules as _trust

ROOT = pathlib.Path(__file__).resolve().parents[2]

# A pickle.dumps-style stream: GLOBAL 'os' 'system', ("true",), REDUCE, wrapped in a 1-tuple
# (a record holds a tuple of its names' values).
EVIL_OS = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R\x85."
EVIL_POSIX = b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00true\x85R\x85."


def crafted(extra):
    """A real checkpoint (record by record copied from el.snapshot) plus hostile records
    written with the C core's Writer: extra = [(names, serializer, payload bytes)]."""
    ns = {"__name__": "__main__"}
    exec("import math\nkept = {'a': [1, 2]}\ndef f(x):\n    return x + 1\n", ns)
    src = el.snapshot(ns).data
    info = el.load.loader.inspect(src)
    w = _core.Writer(producer="elastic-lite test", python="3", created_ms=0)
    try:
        for names, serializer, payload in extra:
            w.begin_record(names)
            w.write(payload)
            w.end_record(serializer)
        for rec in info["records"]:
            w.begin_record(rec["names"], kind=rec["kind"])  # data, or the JSON manifest
            w.write(src[rec["payload_offset"]:rec["payload_offset"] + rec["length"]])
            w.end_record(rec["serializer"])
        return w.finish()
    finally:
        w.free()


@pytest.fixture
def spy(monkeypatch):
    """os.system replaced: pickle's GLOBAL os system finds it, so every call is seen."""
    calls = []
    real = os.system

    def system(cmd):
        calls.append(cmd)
        return real(cmd) if cmd == "true" else 1

    monkeypatch.setattr(os, "system", system)
    import posix
    monkeypatch.setattr(posix, "system", system)
    return calls


def test_the_core_lists_the_attack_and_the_deny_list_names_it():
    data = crafted([(["evil"], "pickle", EVIL_OS)])
    rec = next(r for r in el.load.loader.inspect(data)["records"] if r["names"] == ["evil"])
    assert rec["ok"] and rec["globals"] == [["os", "system"]]
    [hit] = _trust.Judgement({"records": [rec]}).refused(rec)
    assert hit["target"] == "posix.system" and hit["danger"] == _trust.RUNS_CODE
    assert _trust.why_denied("builtins", "getattr") is None


@pytest.mark.parametrize("payload,call", [(EVIL_OS, "os.system"), (EVIL_POSIX, "posix.system")],
                         ids=["os", "posix"])
def test_a_record_calling_system_is_refused_and_the_others_restore(spy, payload, call):
    data = crafted([(["evil"], "pickle", payload)])
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(data, out, foreign=False)  # as a store entry this store signed
    assert spy == []                                  # nothing ran
    assert "evil" not in out and rep.restored and set(rep.restored) == {"kept", "f"}
    assert out["kept"] == {"a": [1, 2]} and out["f"](1) == 2 and out["math"].sqrt(4) == 2
    [failed] = rep.failed
    assert failed["names"] == ["evil"]
    assert failed["reason"].startswith(f"would call {call}")
    assert "refused" in failed["reason"] and "trust=True" in failed["reason"]


def test_trust_true_loads_it(spy):
    data = crafted([(["evil"], "pickle", EVIL_OS)])
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(data, out, trust=True)
    assert spy == ["true"] and out["evil"] == 0 and rep.failed == []


def test_builtins_eval_and_js_are_refused_too():
    evil_eval = b"\x80\x02cbuiltins\neval\nX\x05\x00\x00\x001+1+1\x85R\x85."
    evil_js = b"\x80\x02cjs\neval\nX\x01\x00\x00\x001\x85R\x85."
    rep = el.load_snapshot(crafted([(["e"], "pickle", evil_eval), (["j"], "pickle", evil_js)]),
                           {"__name__": "__main__"}, foreign=False)  # the lists alone
    reasons = {tuple(f["names"]): f["reason"] for f in rep.failed}
    assert reasons[("e",)].startswith("would call builtins.eval")
    assert reasons[("j",)].startswith("would call js.eval")


def _cells(notebook):
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            # IPython magics are not Python; the rest runs as the kernel would run it.
            yield "\n".join(line for line in "".join(cell["source"]).splitlines()
                            if not line.lstrip().startswith("%"))


BROAD = """
import collections, dataclasses, datetime, decimal, enum, fractions, functools, operator
import os, pathlib, re, threading, types, array
@dataclasses.dataclass
class Row:
    a: int
    b: str = "x"
class Color(enum.Enum):
    RED = 1
Pair = collections.namedtuple("Pair", "x y")
def outer(k):
    def inner(v):
        return v * k
    return inner
@functools.lru_cache(maxsize=None)
def cached(n):
    return n
varied = {
    "dt": datetime.datetime(2024, 1, 2, 3, 4, 5), "d": decimal.Decimal("1.5"),
    "fr": fractions.Fraction(1, 3), "path": pathlib.PurePosixPath("/tmp/x"),
    "rx": re.compile("a+b"), "part": functools.partial(max, 3), "od": collections.OrderedDict(a=1),
    "dq": collections.deque([1]), "dd": collections.defaultdict(list), "pair": Pair(1, 2),
    "row": Row(1), "color": Color.RED, "closure": outer(3), "join": os.path.join,
    "getter": operator.itemgetter(0), "arr": array.array("i", [1, 2]), "rng": range(3),
    "sl": slice(1, 2), "c": 1 + 2j, "ba": bytearray(b"x"), "fs": frozenset({1}),
    "sn": types.SimpleNamespace(a=1), "exc": ValueError("boom"), "lam": lambda q: q + 1,
}
locks = {"rlock": threading.RLock(), "event": threading.Event(), "cond": threading.Condition()}
"""


def _notebook_sources():
    yield "basic.ipynb", list(_cells(ROOT / "tests" / "notebooks" / "basic.ipynb"))
    yield "failing.ipynb", list(_cells(ROOT / "tests" / "notebooks" / "failing.ipynb"))[:1]
    yield "elastic-lite-demo.ipynb", list(_cells(ROOT / "lite" / "files" / "elastic-lite-demo.ipynb"))[:1]
    yield "broad", [BROAD]


@pytest.mark.parametrize("label,cells", list(_notebook_sources()), ids=lambda v: v if isinstance(v, str) else "")
def test_legitimate_checkpoints_are_never_refused(nb, label, cells):
    for cell in cells:
        nb(cell)
    snap = el.snapshot(nb.ns)
    assert snap.groups, label
    info = el.load.loader.inspect(snap.data)
    assert info["ok"]
    judged = _trust.Judgement(info)
    for rec in info["records"]:
        assert judged.refused(rec) == [], (label, rec["names"], judged.records[rec["index"]])
    rep = el.load_snapshot(snap.data, {"__name__": "__main__"})
    assert rep.failed == [] and set(rep.restored) == {n for g in snap.groups for n in g.names}


def test_the_deny_list_file_is_well_formed():
    data = json.loads((ROOT / "py" / "elastic_lite" / "denylist.json").read_text())
    assert data["version"] == 2 and data["entries"]
    for e in data["entries"]:
        assert set(e) - {"on_import"} == {"module", "why", "names"} and e["names"] and e["why"]
    # the patterns: '*' spans dots; nothing else is special
    assert _trust.why_denied("importlib.util", "spec_from_file_location")
    assert _trust.why_denied("pathlib", "Path.write_text")
    assert _trust.why_denied("os", "execvp") and not _trust.why_denied("os", "stat_result")
    assert not _trust.why_denied("posixpath", "join") and not _trust.why_denied("os.", "system")


def test_async_restore_and_the_magic_refuse_unless_trusted(spy):
    """`await restore(name, trust=...)` and `%restore NAME [--trust]` pass trust through."""
    import asyncio
    from IPython.core.interactiveshell import InteractiveShell

    el.set_store(el.MemoryStore())
    try:
        store = asyncio.run(el.get_store())
        asyncio.run(store.put("hostile", crafted([(["evil"], "pickle", EVIL_OS)]), {}, sign=True))
        out = {"__name__": "__main__"}
        rep = asyncio.run(el.restore("hostile", namespace=out))
        assert spy == [] and "evil" not in out and rep.failed[0]["names"] == ["evil"]
        rep = asyncio.run(el.restore("hostile", namespace=out, trust=True))
        assert spy == ["true"] and out["evil"] == 0 and rep.failed == []

        sh = InteractiveShell.instance()
        sh.run_cell("%load_ext elastic_lite", store_history=False)
        sh.run_cell("%restore hostile", store_history=False).raise_error()
        assert spy == ["true"] and "evil" not in sh.user_ns and sh.user_ns["kept"] == {"a": [1, 2]}
        sh.run_cell("%restore hostile --trust", store_history=False).raise_error()
        assert spy == ["true", "true"] and sh.user_ns["evil"] == 0
        sh.reset()
    finally:
        el.set_store(None)
