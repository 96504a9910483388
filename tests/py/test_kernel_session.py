"""The kernel session (py/elastic_lite/session/kernel.py) on host CPython: one restore path
(the public `el.restore` and `host.restore` give the same words and the same report in every
situation), every record read from a store checked against its content key before anything
of it is unpickled or replayed, the list report (point labels, the restore choice, the default
name); the point labels' golden vectors are tests/py/test_golden_vectors.py's."""

import asyncio
import json
import os
import re

import elastic_lite as el
from elastic_lite import host
from elastic_lite.session.kernel import SESSION
from test_automatic_points import store  # noqa: F401  (the fixture: a MemoryStore in use)


def run(coro):
    return asyncio.run(coro)


def fresh():
    return {"__name__": "__main__"}


def _plain(value):
    """A report without what differs between two runs of the same thing (times)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in ("timings", "ms")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _tamper(store, name, variable, replacement=None):
    """Change the stored bytes of the record holding `variable` (in place, same length)."""
    entry = run(store.get_entry(name))
    for r in entry["records"]:
        rec = store._records[r["key"]]
        if variable.encode() in bytes(rec[0][:200]):
            data = bytearray(rec[0]) if replacement is None else bytearray(replacement)
            if replacement is None:
                data[-100] ^= 1
            assert len(data) == len(rec[0])
            rec[0] = bytes(data)
            return r["key"]
    raise AssertionError(f"no record of {variable}")


WORDS = json.load(open(os.path.join(os.path.dirname(__file__), "..", "vectors", "host-words.json"),
                       encoding="utf-8"))["restore"]


def said(ok, problems, want):
    """Whether a restore's outcome says what tests/vectors/host-words.json wants."""
    if want["ok"]:
        return ok and problems == []
    p = problems[0] if problems else {}
    text = p.get("message", "")
    return not ok and (p.get("kind"), p.get("code")) == (want["kind"], want["code"]) and (
        text == want["message"] if "message" in want else want["contains"] in text
        if "contains" in want else re.match(want["pattern"], text) is not None)


def _situations(store):
    """The five situations of a restore, each set up in `store`: (label, name, expected code)."""
    yield "empty store", None, "not-found"
    ns = {"__name__": "__main__", "x": [1, 2], "y": "kept"}
    assert run(el.checkpoint("mine", namespace=ns))["ok"]
    yield "ok", "mine", None
    yield "missing name", "nope", "not-found"
    run(store.put("theirs", run(host.export("mine"))["data"], {"imported": "theirs.elc"}))
    yield "foreign", "theirs", "foreign"
    assert run(el.checkpoint("hurt", namespace=ns))["ok"]
    _tamper(store, "hurt", "x")
    yield "damaged", "hurt", "damaged"


def test_el_restore_and_host_restore_say_the_same_in_the_five_situations(store):
    seen = []
    for label, name, code in _situations(store):
        a, b = fresh(), fresh()
        public = run(el.restore(name, namespace=a))
        hosted = run(host.restore(name, namespace=b))
        assert _plain(public) == _plain(hosted), label
        assert json.loads(json.dumps(public, default=str))["op"] == "restore", label
        codes = [p["code"] for p in public["problems"]] + [p["kind"] for p in public["problems"]]
        assert (code is None and public.ok and codes == []) or code in codes, (label, codes)
        assert {k: v for k, v in a.items() if k != "__builtins__"} == \
            {k: v for k, v in b.items() if k != "__builtins__"}, label
        seen.append((label, public.ok, public.problems))
    # the words every host gives (the CLI's and the demo's tests read the same vector)
    assert [label for label, _, _ in seen] == [w["situation"] for w in WORDS]
    for (label, ok, problems), want in zip(seen, WORDS):
        assert said(ok, problems, want), (label, problems)
    # the report prints as the words a person reads, failures as their one line
    assert str(run(el.restore("nope", namespace=fresh()))) == 'no checkpoint named "nope"'
    # a restore without a name for a notebook that has none yet (the extension's Restore)
    empty = run(host.restore(notebook="l.ipynb", namespace=fresh()))["problems"][0]
    assert empty["message"] == WORDS[0]["notebook_message"].format(notebook="l.ipynb"), empty


def test_a_record_swapped_in_the_store_is_damage_naming_the_variable_never_loaded(store):
    """A record replaced in place by another valid record of the same length (x = 2 where
    x = 1 was saved): whole as a container, so only its content key tells."""
    run(el.checkpoint("one", namespace={"__name__": "__main__", "x": 1, "other": [5]}))
    run(el.checkpoint("two", namespace={"__name__": "__main__", "x": 2, "other": [5]}))
    key_two = next(r["key"] for r in run(store.get_entry("two"))["records"]
                   if b"\x02" in store._records[r["key"]][0] and b"x" in store._records[r["key"]][0][:200])
    _tamper(store, "one", "x", replacement=store._records[key_two][0])
    ns = fresh()
    rep = run(el.restore("one", namespace=ns))
    assert "x" not in ns and ns["other"] == [5], "the swapped record was not loaded, the rest was"
    [bad] = rep.problems
    assert bad["kind"] == "damaged" and bad["code"] == "content-key" and bad["names"] == ["x"]
    assert not rep.ok
    # inspect and export say so too; the store marked it (not offered for reuse)
    inspected = run(host.inspect("one"))
    assert not inspected["ok"] and [p["code"] for p in inspected["problems"]] == ["content-key"]
    exported = run(host.export("one"))
    assert not exported["ok"] and "data" not in exported
    assert run(store.has_records([bad and next(
        r["key"] for r in run(store.get_entry("one"))["records"] if r["key"] != key_two
        and store._records[r["key"]][0] == store._records[key_two][0])])) == [False]


def _recorded(cells):
    """A namespace whose recorder saw `cells` run."""
    ns = fresh()
    rec = SESSION.recorder(ns, create=True)
    for code in cells:
        rec.before(code)
        exec(code, ns)
        rec.after(True)
    return ns


def _history_record(store, name):
    return next(r for r in run(store.get_entry(name))["records"]
                if b"__elastic_lite_history__" in store._records[r["key"]][0][:200])


def test_an_edited_record_of_recorded_cells_is_never_replayed(store):
    """The recorded cells (kind 3) of an own checkpoint replaced in place by a whole record
    of the same length whose cell differs (as an attacker would make one, CRCs right): no
    cell of it runs, the report says which record."""
    ns = _recorded(["gen = (n for n in range(5))", "next(gen)"])
    other = _recorded(["gen = (n for n in range(7))", "next(gen)"])
    try:
        assert run(el.checkpoint("cells", namespace=ns))["replay"]["recompute"]
        assert run(el.checkpoint("edited", namespace=other))["ok"]
        mine, theirs = _history_record(store, "cells"), _history_record(store, "edited")
        assert mine["length"] == theirs["length"] and mine["key"] != theirs["key"]
        store._records[mine["key"]][0] = store._records[theirs["key"]][0]
        back = fresh()
        rep = run(el.restore("cells", namespace=back))
        assert "gen" not in back and rep["recomputed"] == []
        [bad] = [p for p in rep.problems if p["code"] == "content-key"]
        assert "(the recorded cells)" in bad["message"] and bad["names"] == []
    finally:
        SESSION.stop_recording(ns)
        SESSION.stop_recording(other)


def test_list_gives_labels_the_restore_choice_and_the_default_name(store):
    ns = {"__name__": "__main__", "v": 1}
    mine = run(el.checkpoint(namespace=ns, notebook="l.ipynb")).name
    run(host.checkpoint(namespace=ns, notebook="l.ipynb", auto=True,
                        cell={"executionCount": 4, "firstLine": "v = 1", "timeMs": 1}))
    report = run(el.list_checkpoints("l.ipynb", namespace=ns))
    assert report == run(host.list("l.ipynb", namespace=ns)) | {"timings": report["timings"]}
    assert report["default_name"] == "checkpoint"
    labels = {e["name"]: e["label"] for e in report["checkpoints"]}
    assert labels[mine] == "" and sorted(labels.values()) == ["", "[4] v = 1"]
    # this kernel's own automatic point is never what a restore without a name brings back
    assert report["restore_choice"] == mine
    assert run(host.list("l.ipynb", namespace=fresh()))["restore_choice"] != mine


def test_the_kernel_names_every_checkpoint_taken_without_a_name(store):
    """Hosts pass no name (the toolbar, %checkpoint, the demo): tied to a notebook, the kernel
    calls it `<path> <UTC time>` (the path: set_notebook's label of the notebook's id), an
    automatic point `<path> [<count>] <time>`; tied to none, host.list's default_name."""
    ns = {"__name__": "__main__", "v": 1}
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    el.set_notebook("id-42", label="work/l.ipynb")
    by_host = run(host.checkpoint(namespace=ns))
    assert by_host["ok"] and re.fullmatch(f"work/l\\.ipynb {stamp}", by_host["name"]), by_host
    assert run(host.checkpoint(namespace=ns, notebook="other.ipynb"))["name"].startswith(
        "other.ipynb 20")
    auto = run(host.checkpoint(namespace=ns, auto=True, cell={"executionCount": 3, "timeMs": 0}))
    assert auto["name"] == "work/l.ipynb [3] 1970-01-01T00:00:00.000Z"
    listed = run(host.list(namespace=ns))["checkpoints"]
    assert by_host["name"] in [e["name"] for e in listed]  # what the hosts show: the kernel's
    data = el.snapshot(ns).data  # an import for the notebook: named by the kernel too
    imported = run(host.import_checkpoint(data, notebook="id-42", unique=True))["name"]
    assert re.fullmatch(f"work/l\\.ipynb imported {stamp}", imported), imported
    el.set_notebook(None)
    assert run(host.checkpoint(namespace=ns))["name"] == "checkpoint"
    assert run(host.import_checkpoint(data))["name"] == "imported"


def test_one_registry_of_namespaces_forgets_the_oldest_and_trackers_stay_few(store):
    from elastic_lite.session import kernel as _kernel
    spaces = [fresh() for _ in range(_kernel.MAX_SPACES + 3)]
    for ns in spaces:
        ns["x"] = [1]
        assert run(el.checkpoint("n", namespace=ns))["ok"]
    assert SESSION.space(spaces[0], create=False) is None, "the oldest was forgotten"
    kept = [s for s in SESSION._spaces.values() if s.tracker is not None]
    assert len(kept) == _kernel.TRACKED
    assert SESSION.space(spaces[-1], create=False).tracker is not None


def test_the_host_reports_say_that_the_random_state_travels(store):  # noqa: F811
    """random.seed(0), checkpoint, two draws, restore: the report names the generator it put
    back, and the draws after the restore repeat the two made after the checkpoint."""
    import random
    random.seed(0)
    ns = fresh()
    ns["x"] = 1
    saved = run(host.checkpoint("seeded", namespace=ns))
    assert saved["ok"] and "random" in saved["random_state"], saved.get("random_state")
    after = [random.random(), random.random()]
    back = run(host.restore("seeded", namespace=fresh()))
    assert back["ok"] and "random" in back["random_state"], back.get("random_state")
    assert [random.random(), random.random()] == after
    assert "random" in str(back)


def test_el_inspect_is_host_inspect_the_one_report(store):
    """el.inspect is the hosts' inspect: the same report (op, ok, problems, records, trust),
    not the core's raw dictionary."""
    run(el.checkpoint("seen", namespace={"x": [1, 2]}))
    public, hosted = run(el.inspect("seen")), run(host.inspect("seen"))
    assert public["op"] == "inspect" and public.ok and public["whole"]
    assert _plain(public) == _plain(hosted)
    assert [r["names"] for r in public.records if not r["manifest"]] == [["x"]]
    missing = run(el.inspect("nope"))
    assert not missing.ok and missing.problems[0]["code"] == "not-found"


def test_a_malformed_module_binding_is_a_refused_problem_not_a_crash(store):
    """A manifest binding without a module (a crafted file: the container fuzzer's seed) is
    refused; reporting it raised TypeError (None + str), so restoring such a file from the
    store ended in a traceback (the CLI's `restore` printed it)."""
    seed = os.path.join(os.path.dirname(__file__), "..", "..", "wasm", "fuzz", "corpus", "container",
                        "v2-buffers.elc")
    with open(seed, "rb") as f:
        rep = el.load_snapshot(f.read(), namespace=fresh(), foreign=False)
    refused = [p for p in rep.problems() if p["kind"] == "refused"]
    assert refused and refused[0]["calls"] == [] and "malformed module binding" in refused[0]["message"]
