"""Data-only means data (issue 19, findings 3, 4, 5 and 8): a foreign file restored with
data_only=True binds no module under another name, builds no array over pointers it chose,
reaches no module and changes nothing it imported, and makes nothing orders of magnitude
larger than its bytes. What could crash or hang the interpreter runs in a child process, so
a regression fails the test instead of killing it."""

import json
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import elastic_lite as el
from elastic_lite import _report
from elastic_lite.trust import rules as _trust

import hostile_corpus as corpus

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))


def data_only(data):
    ns = {"__name__": "__main__"}
    return el.load_snapshot(data, ns, data_only=True, foreign=True), ns


def one(stream, name="x", modules=()):
    return corpus.container([([name], stream)], modules)


def child(code, timeout=120):
    """Run `code` in a new interpreter with the package and the corpus importable; its
    (returncode, stdout, stderr)."""
    prelude = (f"import sys; sys.path[:0] = [{os.path.join(ROOT, 'py')!r}, {HERE!r}]\n"
               "import pickle, elastic_lite as el, hostile_corpus as corpus\n"
               "def data_only(stream, name='x'):\n"
               "    ns = {'__name__': '__main__'}\n"
               "    rep = el.load_snapshot(corpus.container([([name], stream)]), ns,\n"
               "                           data_only=True, foreign=True)\n"
               "    return rep, ns\n")
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


# --- finding 3: manifest bindings ------------------------------------------------------------

HOSTILE_BINDINGS = [{"name": "json", "module": "pickle", "attr": None},
                    {"name": "np", "module": "os", "attr": None},
                    {"name": "re", "module": "subprocess", "attr": None},
                    {"name": "OrderedDict", "module": "collections", "attr": "Counter"}]


def test_data_only_binds_no_module_under_another_name():
    rep, ns = data_only(one(corpus.record(b"K\x01", 4), modules=HOSTILE_BINDINGS))
    assert not {"json", "np", "re", "OrderedDict"} & set(ns), sorted(ns)
    assert [m["ok"] for m in rep.modules] == [False] * 4
    by_name = {m["name"]: m["error"] for m in rep.modules}
    assert "json is not the name of pickle" in by_name["json"]
    assert "np is not the name of os" in by_name["np"]
    assert "only under its own name Counter" in by_name["OrderedDict"]
    table = rep.table()
    assert "it would bind json to pickle" in table and "re to subprocess" in table


def test_data_only_binds_a_module_under_its_own_name_or_a_well_known_alias():
    pytest.importorskip("numpy")
    good = [{"name": "json", "module": "json", "attr": None},
            {"name": "np", "module": "numpy", "attr": None},
            {"name": "path", "module": "os.path", "attr": None},
            {"name": "OrderedDict", "module": "collections", "attr": "OrderedDict"}]
    rep, ns = data_only(one(corpus.record(b"K\x01", 4), modules=good))
    import collections, json as json_module, numpy, os.path
    assert ns["json"] is json_module and ns["np"] is numpy and ns["path"] is os.path
    assert ns["OrderedDict"] is collections.OrderedDict
    assert all(m["ok"] for m in rep.modules), rep.modules
    # shown as bound: the alias with its module, an own name alone
    assert "imports: json, np \u2192 numpy, path \u2192 os.path, OrderedDict" in rep.table()


BINDING_VECTORS = json.load(open(os.path.join(ROOT, "tests", "vectors", "binding-text.json"),
                                 encoding="utf-8"))["vectors"]


@pytest.mark.parametrize("vector", BINDING_VECTORS, ids=lambda v: v["shown"])
def test_binding_text_never_hides_the_target(vector):
    assert _trust.binding_text(vector["binding"]) == vector["shown"]


# --- finding 4: no pointers from the file ----------------------------------------------------

ISSUE_STREAM = (b"\x80\x04" b"cnumpy\nndarray\n" b"((J\x01\x00\x00\x00t" b"cnumpy\ndtype\n"
                b"X\x01\x00\x00\x00O\x85R" b"cbuiltins\nbytearray\nC\x08AAAAAAAA\x85R" b"tR\x85.")

POINTER_CASES = r'''
import numpy as np
from numpy._core.multiarray import _reconstruct
from elastic_lite import _rebuild

class R:
    def __init__(self, *r): self.r = r
    def __reduce__(self): return self.r

forged = R(np.dtype, ("V8", False, True),
           (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 1, 0))  # flags say no object
cases = {
    "issue": ISSUE,
    "object-field": pickle.dumps((R(np.ndarray, ((1,), np.dtype([("a", "O")]),
                                                 bytearray(b"AAAAAAAA"))),), protocol=4),
    "stringdtype": pickle.dumps((R(np.ndarray, ((1,), np.dtypes.StringDType(),
                                                bytearray(16))),), protocol=4),
    "array_view": pickle.dumps((R(_rebuild.array_view, (bytearray(b"AAAAAAAA"), 0, (1,), (8,),
                                                         np.dtype("O"), True)),), protocol=4),
    "forged-flags": pickle.dumps((R(_reconstruct, (np.ndarray, (0,), b"b"),
                                    (1, (1,), forged, False, b"AAAAAAAA")),), protocol=4),
    "object-dtype-class": pickle.dumps((R(np.ndarray, ((1,), np.dtypes.ObjectDType(),
                                                       bytearray(8))),), protocol=4),
}
for name, stream in cases.items():
    rep, ns = data_only(stream)
    print(name, repr(ns.get("x")), rep.restored, [f["code"] for f in rep.failed],
          [f["message"] for f in rep.failed], flush=True)
print("all done")
'''


def test_no_array_over_pointers_the_file_chose():
    pytest.importorskip("numpy")
    rc, out, err = child(f"ISSUE = {ISSUE_STREAM!r}\n" + POINTER_CASES)
    assert rc == 0 and "all done" in out, (rc, out, err[-2000:])
    lines = {line.split(" ", 1)[0]: line for line in out.splitlines()}
    for case in ("issue", "object-field", "stringdtype", "array_view", "forged-flags",
                 "object-dtype-class"):
        assert f"{case} None ['kept'] ['not-data']" in lines[case], lines[case]
    assert "pointers" in lines["issue"] and "pointers" in lines["forged-flags"]
    assert "pointers" in lines["array_view"]


def test_array_view_refuses_pointers_and_stays_inside_its_owner():
    np = pytest.importorskip("numpy")
    from elastic_lite import _rebuild
    with pytest.raises(ValueError, match="pointers"):
        _rebuild.array_view(bytearray(8), 0, (1,), (8,), np.dtype("O"), True)
    with pytest.raises(ValueError, match="pointers"):
        _rebuild.array_view(bytearray(8), 0, (1,), (8,), np.dtype([("a", "O")]), True)
    with pytest.raises(ValueError):
        _rebuild.array_view(bytearray(8), -8, (1,), (8,), np.dtype("u8"), True)
    with pytest.raises(ValueError):  # numpy's own bound check: a negative stride reaching out
        _rebuild.array_view(bytearray(8), 0, (2,), (-8,), np.dtype("u8"), True)
    good = _rebuild.array_view(bytearray(16), 8, (1,), (8,), np.dtype("u8"), True)
    assert good.tolist() == [0]


def test_real_numpy_and_pandas_values_still_load_data_only(nb):
    pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    ns = nb("import numpy as np, pandas as pd\n"
            "obj = np.array(['a', 1, None], dtype=object)\n"
            "rec = np.zeros(3, dtype=[('a', 'i4'), ('b', 'f8')])\n"
            "s = np.array(['x', 'yy'], dtype=np.dtypes.StringDType())\n"
            "big = np.arange(300_000, dtype=np.float64)\n"
            "df = pd.DataFrame({'a': [1, 2], 's': ['x', 'y'], 't': pd.to_datetime(['2024-01-01', None]),"
            " 'c': pd.Categorical(['u', 'v']), 'n': pd.array([1, None], dtype='Int64')},"
            " index=pd.date_range('2024', periods=2, freq='D'))\n"
            "off = pd.offsets.BDay(3)\nmonth = pd.offsets.MonthEnd()\n")
    rep, out = data_only(el.snapshot(ns).data)
    assert not rep.failed, rep.failed
    assert out["obj"].tolist() == ["a", 1, None] and out["rec"].dtype == ns["rec"].dtype
    assert out["s"].tolist() == ["x", "yy"] and (out["big"] == ns["big"]).all()
    assert out["df"].equals(ns["df"]) and out["off"] == ns["off"] and out["month"] == ns["month"]


PANDAS_CASES = r'''
import numpy as np, pandas as pd
from copyreg import _reconstructor
from pandas._libs.arrays import __pyx_unpickle_NDArrayBacked as backed

class R:
    def __init__(self, *r): self.r = r
    def __reduce__(self): return self.r

def nd(cls, dtype, values):
    return R(backed, (cls, 82904607, None), (dtype, values))

cases = {  # the first three crashed the interpreter when used (SIGSEGV), the next did not
    "datetime-of-int64": nd(pd.arrays.DatetimeArray, np.dtype("M8[ns]"), np.arange(2)),
    "datetimetz-of-int64": nd(pd.arrays.DatetimeArray, pd.DatetimeTZDtype("ns", "UTC"), np.arange(2)),
    "timedelta-of-int64": nd(pd.arrays.TimedeltaArray, np.dtype("m8[ns]"), np.arange(2)),
    "datetime-other-unit": nd(pd.arrays.DatetimeArray, np.dtype("M8[ns]"), np.arange(2).astype("M8[s]")),
    "period-of-float": nd(pd.arrays.PeriodArray, pd.PeriodDtype("M"), np.array([1.5])),
    "categorical-of-float": nd(pd.Categorical, pd.Categorical(["a"]).dtype, np.array([0.5])),
    "string-of-int64": nd(pd.arrays.StringArray, pd.StringDtype(), np.arange(1)),
    "masked-short-mask": R(_reconstructor, (pd.arrays.BooleanArray, object, None),
                           {"_data": np.ones(1, dtype=bool), "_mask": np.zeros(9, dtype=bool)}),
    "integer-of-float": R(_reconstructor, (pd.arrays.IntegerArray, object, None),
                          {"_data": np.array([1.5]), "_mask": np.zeros(1, dtype=bool)}),
}
from pandas._libs.internals import _unpickle_block
from pandas.core.internals.managers import BlockManager
for where in (100000000, -100000000, 5):  # a block placed outside its 2 columns (SIGSEGV)
    block = R(_unpickle_block, (np.arange(4).reshape(2, 2), np.array([where, 0]), 2))
    cases[f"block-at-{where}"] = R(BlockManager, ((block,), [pd.Index(["a", "b"]), pd.RangeIndex(2)]))
from pandas.core.indexes.base import _new_Index
cases["multiindex-codes-outside"] = R(_new_Index, (pd.MultiIndex, {  # SIGSEGV
    "levels": [pd.Index(["a"]), pd.Index([1])], "codes": [np.array([5, 0]), np.array([0, 100])],
    "sortorder": None, "names": [None, None]}))
for name, value in cases.items():
    rep, ns = data_only(pickle.dumps((value,), protocol=4))
    if "x" in ns and isinstance(ns["x"], BlockManager):
        ns["x"] = pd.DataFrame._from_mgr(ns["x"], axes=ns["x"].axes)
    if "x" in ns:  # what a person does next
        repr(ns["x"]); ns["x"].copy(); ns["x"].sort_values() if hasattr(ns["x"], "sort_values") else 0
    print(name, "x" in ns, [f["code"] for f in rep.failed], flush=True)
print("all done")
'''


def test_pandas_arrays_whose_values_are_not_their_dtype_are_refused():
    pytest.importorskip("pandas")
    rc, out, err = child(PANDAS_CASES)
    assert rc == 0 and "all done" in out, (rc, out, err[-2000:])
    for line in out.splitlines()[:-1]:
        assert line.endswith("False ['not-data']"), line


# --- finding 5: the allow-list names data constructors only -----------------------------------

def _allow_entries():
    data = json.loads(open(_trust.ALLOWLIST.path, encoding="utf-8").read())
    return [(e["module"], n) for e in data["allow"] for n in e["names"]]


def test_the_allow_list_has_no_wildcard_and_no_module():
    import importlib
    import types
    for module, name in _allow_entries():
        assert "*" not in module and "*" not in name, (module, name)
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue  # (numpy 1.x names, optional libraries)
        res = _trust.resolve(module, name, protocol=3)
        if res["state"] == "missing":
            continue
        obj = res["object"] if res["state"] == "resolved" else getattr(mod, name)
        assert not isinstance(obj, types.ModuleType), (module, name)
        assert isinstance(obj, type) or callable(obj) or type(obj).__name__ in (
            "NAType", "NaTType", "ellipsis", "NotImplementedType"), (module, name, obj)


@pytest.mark.parametrize("name", ["re", "builtins", "numpy", "time", "warnings", "set_module"])
def test_what_the_offsets_wildcard_handed_out_is_refused(name):
    pytest.importorskip("pandas")
    j = _trust.judge_import({"module": "pandas._libs.tslibs.offsets", "name": name,
                             "protocol": 2}, None, _trust.DATA)
    assert j["danger"] is not None, j


def test_build_on_a_module_changes_nothing():
    pytest.importorskip("pandas")
    import re
    stream = corpus.record(corpus.global_("pandas._libs.tslibs.offsets", "re")
                           + b"}" + corpus._unicode("el_poisoned") + b"K\x01s" + b"b", 2)
    rep, ns = data_only(one(stream))
    assert not hasattr(re, "el_poisoned") and rep.failed_names == ["x"]


@pytest.mark.parametrize("target", [
    corpus.global_("pathlib", "PurePath"),                          # a class it imported
    corpus.call(corpus.global_("re", "RegexFlag"), b"K\x02"),       # an enum singleton
    corpus.global_("uuid", "UUID"),                                 # a Python class
])
def test_build_on_what_the_file_imported_is_refused(target):
    import pathlib
    import re
    import uuid
    # BUILD with (None, {"el_poisoned": 1}): setattr on the target
    stream = corpus.record(target + b"N}" + corpus._unicode("el_poisoned") + b"K\x01s\x86b", 2)
    rep, _ = data_only(one(stream))
    assert rep.failed_names == ["x"], rep.to_dict()
    assert "would change" in rep.failed[0]["message"]
    assert not hasattr(pathlib.PurePath, "el_poisoned")
    assert not hasattr(re.RegexFlag.IGNORECASE, "el_poisoned")
    assert not hasattr(uuid.UUID, "el_poisoned")


HOSTILE_ARGS = {"int": b"\x8a\x06\x00\x10\xa5\xd4\xe8\x00",  # 10**12 (LONG1)
                "range": corpus.call(corpus.global_("builtins", "range"),
                                     b"\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40"),  # range(2**62)
                "decimal": corpus.call(corpus.global_("decimal", "Decimal"),
                                       corpus._unicode("1e999999999")),
                "text": corpus._unicode("1e999999999")}


@pytest.mark.parametrize("entry", _allow_entries(), ids=lambda e: ".".join(e))
def test_each_allowed_constructor_with_hostile_arguments(entry):
    """Called with each hostile argument, every entry is refused or fails cleanly, fast:
    nothing hangs, nothing huge is made (each case would take minutes or gigabytes)."""
    module, name = entry
    for arg in HOSTILE_ARGS.values():
        stream = corpus.record(corpus.call(corpus.global_(module, name), arg), 2)
        rep, ns = data_only(one(stream))
        value = ns.get("x")
        size = getattr(value, "nbytes", None)  # numpy, pandas (a RangeIndex stays lazy)
        if size is None:
            size = len(value) if isinstance(value, (list, tuple, set, frozenset, dict, str,
                                                    bytes, bytearray)) else 0
        assert size < 1 << 20, (entry, arg)


# --- finding 8: budgets ----------------------------------------------------------------------

BUDGET_CASES = r'''
import collections, decimal, fractions
class R:
    def __init__(self, *r): self.r = r
    def __reduce__(self): return self.r
cases = {
    "deque": R(collections.deque, (range(2**62), 0)),
    "tuple": R(tuple, (range(3 * 10**8),)),
    "int-of-decimal": R(int, (decimal.Decimal("1e999999999"),)),
    "fraction-of-text": R(fractions.Fraction, ("1e999999999",)),
    "fraction-of-decimal": R(fractions.Fraction, (decimal.Decimal("1e999999999"),)),
    "bytearray": R(bytearray, (10**12,)),
    "set": R(frozenset, (range(10**9),)),
}
try:
    import numpy as np
    cases["ndarray"] = R(np.ndarray, ((10**6, 10**6),))
    cases["void"] = R(np.void, (10**12,))
    view = R(np.ndarray, ((10**9,), "u1", bytearray(8), 0, (0,)))  # 8 bytes, seen 10**9 times
    cases["list-of-view"] = R(list, (view,))
    # SETITEM on an array: the value is consumed (numpy materializes a range to assign it)
    cases["setitem-on-array"] = R(np.ndarray, ((2,), "f8"), None, None,
                                  iter([(slice(None), range(2**40))]))
except ImportError:
    pass
for name, value in cases.items():
    rep, ns = data_only(pickle.dumps((value,), protocol=4))
    print(name, "x" in ns, [f["code"] for f in rep.failed], flush=True)
print("all done")
'''


def test_budgets_refuse_what_is_orders_of_magnitude_larger_than_the_file():
    rc, out, err = child(BUDGET_CASES, timeout=120)
    assert rc == 0 and "all done" in out, (rc, out, err[-2000:])
    for line in out.splitlines()[:-1]:
        assert line.endswith("False ['not-data']"), line


def test_a_large_value_the_file_really_holds_loads():
    big = {"floats": [float(i) for i in range(200_000)], "blob": bytes(3 << 20)}
    rep, ns = data_only(el.snapshot({"big": big}).data)
    assert rep.restored == ["big"] and ns["big"] == big


# --- judging a file of very many imports -----------------------------------------------------

def test_judging_stops_after_max_judged_distinct_imports():
    n = 250_000
    imports = [{"module": f"mod{i}", "name": f"n{i}", "protocol": 2, "opcode": "GLOBAL"}
               for i in range(n)]
    rec = {"index": 1, "names": ["x"], "serializer": "pickle", "ok": True, "imports": imports}
    j = _trust.Judgement({"records": [rec]}, None, _trust.DENY)
    assert j.unjudged == n - _trust.MAX_JUDGED
    rows = j.listing()
    assert len(rows) == _trust.MAX_JUDGED + 1
    [unjudged] = [r for r in rows if r["target"].startswith("imports beyond")]
    assert unjudged["danger"] == _trust.UNKNOWN and "not judged" in unjudged["why"]
    assert j.refused(rec)  # the record is refused unless trusted
    assert _trust.refuses(unjudged["danger"], _trust.DATA)
    assert not _trust.refuses(unjudged["danger"], _trust.TRUST)


# --- finding 6 (Python side): names from a file are shown, not interpreted ----------------------

VECTORS = json.load(open(os.path.join(ROOT, "tests", "vectors", "escape-text.json"),
                         encoding="utf-8"))["vectors"]
HOSTILE_NAME = "data\r\x1b[2K  ok  builtins.dict  data\x1b[8m"


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: repr(v["input"])[:30])
def test_shown_text_follows_the_golden_vectors(vector):
    assert _report.shown_text(vector["input"]) == vector["shown"]
    assert _report.shown_text(vector["shown"]) == vector["shown"]  # showing twice: same


def _raw_controls(text):
    return [c for c in text if c != "\n" and _report.shown_text(c) != c]


def test_every_python_table_shows_names_from_a_file_escaped():
    ns = {HOSTILE_NAME: {"k": 1}, "evil\u202egnp": 2, "ok": 3}
    snap = el.snapshot(ns)
    assert not _raw_controls(snap.table()) and "data\\x0d\\x1b[2K" in snap.table()
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(snap.data, out, trust=True)
    assert HOSTILE_NAME in out  # restored as it was, only shown escaped
    assert not _raw_controls(rep.table()) and "evil\\u202egnp" in rep.table()
    foreign = el.load_snapshot(snap.data, {"__name__": "__main__"}, foreign=True)
    assert not _raw_controls(foreign.table()) and "data\\x0d" in foreign.table()
    rows = [{"name": HOSTILE_NAME, "module": "json\x1b[8m", "attr": None, "ok": True}]
    text = _report.restore_text({"restored": [{"name": HOSTILE_NAME}], "modules": rows,
                                 "problems": [], "skipped": [], "warnings": [HOSTILE_NAME],
                                 "timings": {"load_ms": 1}})
    assert not _raw_controls(text)


@pytest.mark.parametrize("mode", [{"foreign": False}, {"data_only": True, "foreign": True}])
def test_a_module_object_is_never_handed_out_by_a_guarded_restore(mode):
    """Not only in data-only mode: a checkpoint of this origin importing a module by name (no
    writer of Elastic Lite does: cloudpickle and dill rebuild module references by a call)
    is refused before BUILD could change the module for the whole process."""
    import json.decoder
    j = _trust.judge_import({"module": "json", "name": "decoder", "protocol": 2})
    assert j["danger"] == _trust.UNKNOWN and "module json.decoder itself" in j["why"]
    stream = corpus.record(corpus.global_("json", "decoder")
                           + b"}" + corpus._unicode("el_poisoned") + b"K\x01s" + b"b", 2)
    rep = el.load_snapshot(one(stream), {"__name__": "__main__"}, **mode)
    assert rep.failed_names == ["x"] and not hasattr(json.decoder, "el_poisoned")
    # and the unpickler refuses it even where the judgement was not asked
    with pytest.raises(_trust.Refused, match="module json.decoder itself"):
        _trust.guarded_load("pickle", stream, (), _trust.DENY, {("json", "decoder")})
