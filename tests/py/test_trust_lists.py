"""The lists tell the truth: what the core reports a stream would import is resolved the way
the unpickler would resolve it, without running code, and judged by what it really is.
Each protection is tested on its own (the judgement, before any unpickling), so removing it
turns its test red even where the guarded unpickler would still catch the import later."""

import copyreg
import json
import os
import sys
import types

import pytest

import elastic_lite as el
from elastic_lite import _core, host
from elastic_lite.trust import rules as _trust

import hostile_corpus as corpus


def judged(module, name, protocol=4, serializer=None, mode=_trust.DENY):
    return _trust.judge_import({"module": module, "name": name, "protocol": protocol},
                               serializer, mode)


def core_imports(stream):
    """The core's report of one bare stream: what the judgement starts from."""
    rep = _core.validate_pickle(stream)
    assert rep["ok"], rep
    return rep["imports"]


# --- dotted names at protocol >= 4 --------------------------------------------------------------

@pytest.mark.parametrize("module,name,target", [
    ("cloudpickle", "builtins.exec", "builtins.exec"),
    ("os", "path.os.system", "posix.system"),
    ("elastic_lite.capture.picklers", "pickle.loads", "_pickle.loads"),
    ("pathlib", "Path.write_text", "pathlib.Path.write_text"),
])
def test_a_dotted_name_is_judged_by_what_it_reaches(module, name, target):
    [imp] = core_imports(corpus.record(corpus.call(corpus.stack_global(module, name), corpus._str("x")), 4))
    assert imp["prefixes"] and imp["protocol"] == 4
    j = _trust.judge_import(imp)
    assert j["state"] == "resolved" and j["target"] == target and j["danger"] == _trust.RUNS_CODE
    assert j["steps"][-1] == target


def test_the_same_dotted_name_at_protocol_3_is_a_plain_attribute_lookup():
    # below protocol 4 pickle does getattr(module, "builtins.exec"): no such attribute
    j = judged("cloudpickle", "builtins.exec", protocol=3)
    assert j["state"] == "missing" and j["danger"] is None


def test_a_dotted_name_through_a_module_not_imported_here_is_unknown(monkeypatch):
    monkeypatch.delitem(sys.modules, "pathlib._local", raising=False)
    j = judged("pathlib._local", "Path.write_text")
    assert j["state"] == "unknown" and j["danger"] == _trust.UNKNOWN
    assert "not imported here" in j["why"]


def test_a_module_getattr_or_a_property_on_the_path_is_unknown(monkeypatch):
    lazy = types.ModuleType("el_test_lazy")
    lazy.__getattr__ = lambda name: os.system  # what the unpickler would get: only by running it
    monkeypatch.setitem(sys.modules, "el_test_lazy", lazy)
    j = judged("el_test_lazy", "anything")
    assert j["danger"] == _trust.UNKNOWN and "__getattr__" in j["why"]

    class Holder:
        @property
        def tool(self):
            return os.system
    mod = types.ModuleType("el_test_prop")
    mod.holder = Holder()
    monkeypatch.setitem(sys.modules, "el_test_prop", mod)
    j = judged("el_test_prop", "holder.tool")
    assert j["danger"] == _trust.UNKNOWN and "computed when read" in j["why"]


def test_an_alias_is_judged_by_its_real_identity(monkeypatch):
    mod = types.ModuleType("el_test_alias")
    mod.harmless = os.system
    monkeypatch.setitem(sys.modules, "el_test_alias", mod)
    j = judged("el_test_alias", "harmless", protocol=5)
    assert j["target"] == "posix.system" and j["danger"] == _trust.RUNS_CODE


# --- Python 2 names at protocol <= 2 --------------------------------------------------------------

@pytest.mark.parametrize("module,name,mapped", [
    ("cPickle", "loads", ("pickle", "loads")),
    ("commands", "getoutput", ("subprocess", "getoutput")),
    ("__builtin__", "eval", ("builtins", "eval")),
])
def test_python_2_names_are_mapped_before_judging(module, name, mapped):
    [imp] = core_imports(corpus.record(corpus.call(corpus.global_(module, name), corpus._unicode("x")), 2))
    assert imp["protocol"] == 2 and (imp["module"], imp["name"]) == (module, name)
    j = _trust.judge_import(imp)
    assert (j["module"], j["name"]) == mapped and j["danger"] == _trust.RUNS_CODE
    assert "Python 2 name" in j["note"]
    # at protocol 3 there is no mapping: pickle would look for a module named `module`
    assert judged(module, name, protocol=3)["module"] == module


# --- EXT codes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["EXT1", "EXT2", "EXT4"])
def test_an_extension_code_not_registered_now_is_unknown(op):
    code = corpus.EXT_CODES[op]
    stream = corpus.record(corpus.call(corpus._ext(op, code), corpus._unicode("x")), 2)
    [imp] = core_imports(stream)
    assert imp["ext"] == code and imp["module"] is None
    j = _trust.judge_import(imp)
    assert j["danger"] == _trust.UNKNOWN and "not registered" in j["why"]


def test_unknown_counts_as_dangerous(tmp_path, monkeypatch):
    """A record whose only import cannot be resolved (an EXT code the registry does not hold
    now) is refused, though nothing on the deny-list is named."""
    code = corpus.EXT_CODES["EXT2"]
    stream = corpus.record(corpus.call(corpus._ext("EXT2", code), corpus._unicode("x")), 2)
    data = corpus.container([(["ext"], stream)])
    rep = el.load_snapshot(data, {"__name__": "__main__"}, foreign=False)  # the lists alone
    [failed] = rep.failed
    assert failed["names"] == ["ext"] and failed["code"] == "denied"
    assert "cannot be known" in failed["message"] and rep.restored == ["kept"]


def test_an_extension_code_registered_now_is_judged_by_its_key():
    code = 0x7E1
    copyreg.add_extension("builtins", "exec", code)
    try:
        j = _trust.judge_import({"module": None, "name": None, "ext": code, "protocol": 2})
        assert j["target"] == "builtins.exec" and j["danger"] == _trust.RUNS_CODE
    finally:
        copyreg.remove_extension("builtins", "exec", code)
    copyreg.add_extension("collections", "OrderedDict", code)
    try:
        j = _trust.judge_import({"module": None, "name": None, "ext": code, "protocol": 2})
        assert j["target"] == "collections.OrderedDict" and j["danger"] is None
    finally:
        copyreg.remove_extension("collections", "OrderedDict", code)


def test_registering_an_extension_code_is_itself_refused():
    assert judged("copyreg", "add_extension", protocol=2)["danger"] == _trust.RUNS_CODE


# --- manifest module bindings ---------------------------------------------------------------------

def test_a_manifest_binding_is_judged_like_an_import():
    j = _trust.judge_binding({"name": "print", "module": "builtins", "attr": "exec"})
    assert j["danger"] == _trust.RUNS_CODE and _trust.refuses_binding(j, _trust.DENY)
    # the person's own `from os import system` restores under its own name (and is listed)
    own = _trust.judge_binding({"name": "system", "module": "os", "attr": "system"})
    assert own["danger"] == _trust.RUNS_CODE and not _trust.refuses_binding(own, _trust.DENY)
    assert _trust.refuses_binding(own, _trust.DATA)
    private = _trust.judge_binding({"name": "__builtins__", "module": "os", "attr": None})
    assert _trust.refuses_binding(private, _trust.DENY)
    odd = _trust.judge_binding({"name": "x", "module": "os; import this", "attr": None})
    assert odd["danger"] == _trust.UNKNOWN
    assert _trust.judge_binding({"name": "np", "module": "antigravity", "attr": None})["danger"] \
        == _trust.RUNS_CODE  # importing it opens a web page


def test_inspect_lists_manifest_bindings_and_restore_refuses_the_rebinding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = corpus.container(modules=[{"name": "print", "module": "builtins", "attr": "exec"},
                                     {"name": "m", "module": "math", "attr": None}])
    rep = el.host and __import__("asyncio").run(host.inspect(data=data))
    rows = {r["target"]: r for r in rep["trust"]["imports"]}
    assert rows["builtins.exec"]["bindings"] == ["print"] and rows["builtins.exec"]["danger"] == "runs-code"
    assert rows["math"]["bindings"] == ["m"] and rows["math"]["danger"] is None
    ns = {"__name__": "__main__"}
    out = el.load_snapshot(data, ns, foreign=False)  # as this store's own: the lists alone
    assert "print" not in ns and ns["m"].sqrt(9) == 3 and not out.ok
    [prob] = [p for p in out.problems() if p["names"] == ["print"]]
    assert prob["kind"] == "refused" and prob["code"] == "denied"


# --- the guarded unpickler --------------------------------------------------------------------------

def test_the_unpickler_judges_what_it_really_finds(tmp_path, monkeypatch):
    """A module not imported when the records are judged is judged by its name alone; what
    it then hands the unpickler is judged again by its real identity, before any call."""
    (tmp_path / "el_test_reexport.py").write_text("from os import mkdir as harmless\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "el_test_reexport", raising=False)
    monkeypatch.chdir(tmp_path)
    stream = corpus.record(corpus.call(corpus.global_("el_test_reexport", "harmless"),
                                       corpus._unicode("el-pwned-reexport")), 2)
    data = corpus.container([(["sneaky"], stream)])
    info = el.load.loader.inspect(data)
    j = _trust.Judgement(info)
    assert j.refused(info["records"][1]) == []  # by its name, nothing to see
    rep = el.load_snapshot(data, {"__name__": "__main__"}, foreign=False)  # the lists alone
    assert not (tmp_path / "el-pwned-reexport").exists()
    [failed] = rep.failed
    assert failed["kind"] == "refused" and failed["calls"] == ["posix.mkdir"]
    # trusted, the very same record does call it (the test above could fail)
    el.load_snapshot(data, {"__name__": "__main__"}, trust=True)
    assert (tmp_path / "el-pwned-reexport").is_dir()


def test_the_unpickler_refuses_a_lookup_nobody_judged():
    accepted = {("builtins", "dict")}
    stream = corpus.record(corpus.call(corpus.global_("builtins", "len"), corpus._unicode("x")), 2)
    with pytest.raises(_trust.Refused):
        _trust.guarded_load("pickle", stream, (), _trust.DENY, accepted)
    value = _trust.guarded_load("pickle", stream, (), _trust.DENY, {("builtins", "len")})
    assert value == (1,)


# --- data-only mode -------------------------------------------------------------------------------

def test_data_only_loads_plain_data_numpy_and_pandas_but_no_function(nb):
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    ns = nb("import numpy as np, pandas as pd, datetime, collections, decimal\n"
            "a = np.arange(12.).reshape(3, 4)\nv = a[1:]\n"
            "df = pd.DataFrame({'x': [1, 2], 'c': pd.Categorical(['u', 'v'])})\n"
            "when = datetime.datetime(2024, 1, 2)\nod = collections.OrderedDict(a=1)\n"
            "d = decimal.Decimal('1.5')\nplain = {'k': [1, 2.5, 'x', b'y', None]}\n"
            "def f(x):\n    return x\n")
    snap = el.snapshot(ns)
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(snap.data, out, data_only=True, foreign=True)
    assert {"a", "v", "df", "when", "od", "d", "plain"} <= set(rep.restored)
    assert "f" not in out and np.array_equal(out["v"], np.arange(12.).reshape(3, 4)[1:])
    assert out["df"].equals(ns["df"]) and out["plain"] == ns["plain"]
    [failed] = [f for f in rep.failed if "f" in f["names"]]
    assert failed["code"] == "not-data" and "make_function" in failed["message"]


def test_data_only_refuses_dill_records_and_attribute_paths():
    j = judged("builtins", "dict", serializer="dill", mode=_trust.DATA)
    assert j["danger"] == _trust.NOT_DATA and "dill" in j["why"]
    j = judged("collections", "OrderedDict.fromkeys", mode=_trust.DATA)
    assert j["danger"] == _trust.NOT_DATA and "attribute path" in j["why"]
    assert judged("collections", "OrderedDict", mode=_trust.DATA)["danger"] is None


def test_the_allow_list_file_is_well_formed_and_builds_no_code():
    data = json.loads(open(_trust.ALLOWLIST.path, encoding="utf-8").read())
    assert data["version"] == 1 and data["allow"] and data["builds_code"]
    for section in ("allow", "builds_code"):
        for e in data[section]:
            assert set(e) == {"module", "why", "names"} and e["names"] and e["why"]
    # nothing allowed is also a code builder or on the deny-list
    for mod_re, names, _, _ in _trust.ALLOWLIST.rules():
        for e in data["allow"]:
            for n in e["names"]:
                if "*" not in n and "*" not in e["module"]:
                    assert not _trust.BUILDERS.why(e["module"], n), (e["module"], n)
                    assert not _trust.why_denied(e["module"], n), (e["module"], n)
