"""The hostile corpus (hostile_corpus.py: every trick of issue 11 in a well-formed container)
restored in host CPython, each in every mode, with its sentinel checked in a scratch
directory:

- as a FOREIGN file (elastic_lite.host.restore(data=...), and load_snapshot(bytes) of bytes
  snapshot() did not make in this process — in a new process, every trick included): nothing
  at all is unpickled or imported;
- data-only: only the benign record loads;
- vouched for as the person's own (load_snapshot(foreign=False), what a store entry this
  store signed gets): every trick is refused except the notebook function rebuilt and called
  by REDUCE, which no list can tell from a legitimate checkpoint; that is why foreign bytes
  are gated on provenance, not on the lists;
- trusted: each payload really runs here (its sentinel appears), so "nothing ran" above is
  not true merely because a payload could not have run.
"""

import asyncio
import json
import os
import subprocess
import sys

import pytest

import elastic_lite as el
from elastic_lite import host

import hostile_corpus as corpus

ITEMS = corpus.build()
LIVE = [i for i in ITEMS if i["live"]]


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """Restores run with a scratch directory as the current one (the sentinels land here);
    sentinels and trusted extension codes are cleared after each test."""
    monkeypatch.chdir(tmp_path)
    corpus.clear()
    yield tmp_path
    corpus.clear()


def restore_bytes(item, **kwargs):
    ns = {"__name__": "__main__"}
    rep = el.load_snapshot(item["data"], ns, **kwargs)
    corpus.poke_print(ns)
    return rep, ns


def ids(items):
    return [i["id"] for i in items]


@pytest.mark.parametrize("item", LIVE, ids=ids(LIVE))
def test_trusted_each_payload_really_runs_here(scratch, item):
    rep, ns = restore_bytes(item, trust=True)
    assert corpus.sentinels() == [item["id"]], rep.to_dict()


@pytest.mark.parametrize("item", ITEMS, ids=ids(ITEMS))
def test_a_foreign_file_runs_nothing_and_loads_nothing(scratch, item):
    ns = {"__name__": "__main__"}
    rep = asyncio.run(host.restore(data=item["data"], namespace=ns))
    corpus.poke_print(ns)
    assert corpus.sentinels() == []
    assert rep["restored"] == [] and not rep["ok"]
    [prob] = rep["problems"]
    assert prob["kind"] == "refused" and prob["code"] == "foreign"
    assert set(ns) <= {"__name__", "__builtins__"}          # not even a module binding
    assert rep["trust"]["provenance"] == "foreign"
    # the person is shown what it would import, the trick's real target marked
    dangerous = [r for r in rep["trust"]["imports"] if r["danger"] in ("runs-code", "unknown")]
    if item["id"] != "function-body":
        assert dangerous, rep["trust"]["imports"]


@pytest.mark.parametrize("item", ITEMS, ids=ids(ITEMS))
def test_data_only_loads_only_the_plain_data(scratch, item):
    rep, ns = restore_bytes(item, data_only=True, foreign=True)
    assert corpus.sentinels() == []
    assert rep.restored == (["kept"] if item["id"] != "function-body" else [])
    assert not set(item["names"]) & set(rep.restored)
    if item["id"] == "manifest-print":
        assert "print" not in ns and rep.modules[0]["refused"]
    else:
        assert {f["code"] for f in rep.failed} == {"not-data"}


@pytest.mark.parametrize("item", [i for i in ITEMS if i["id"] != "function-body"],
                         ids=ids([i for i in ITEMS if i["id"] != "function-body"]))
def test_own_bytes_refuse_every_listed_trick(scratch, item):
    rep, ns = restore_bytes(item, foreign=False)
    assert corpus.sentinels() == []
    assert rep.restored == ["kept"] and ns["kept"] == {"a": [1, 2]}
    if item["id"] == "manifest-print":
        assert ns.get("print") is None and rep.modules[0]["refused"]
    else:
        [failed] = rep.failed
        assert failed["kind"] == "refused" and failed["code"] == "denied"
        assert failed["names"] == item["names"]


def test_own_bytes_do_not_stop_a_function_body_which_is_why_provenance_is_the_boundary(scratch):
    """Every import of this record is one a legitimate checkpoint with a function makes; the
    lists cannot refuse it. Vouched for as the caller's own bytes it runs; as a foreign file
    (above, and below in a new process) it does not."""
    [item] = [i for i in ITEMS if i["id"] == "function-body"]
    rep, _ = restore_bytes(item, foreign=False)
    assert corpus.sentinels() == ["function-body"] and rep.restored == ["boom"]
    listing = {r["target"]: r["danger"] for r in rep.trust["imports"]}
    assert listing["elastic_lite._rebuild.make_function"] == "builds-code"


def test_the_combined_file_restores_nothing_foreign_and_everything_trusted(scratch):
    data = corpus.combined(ITEMS)
    assert el.load.loader.inspect(data)["ok"]
    ns = {"__name__": "__main__"}
    rep = asyncio.run(host.restore(data=data, namespace=ns))
    corpus.poke_print(ns)
    assert corpus.sentinels() == [] and rep["restored"] == []
    rep = asyncio.run(host.restore(data=data, namespace=ns, data_only=True))
    corpus.poke_print(ns)
    assert corpus.sentinels() == [] and [r["name"] for r in rep["restored"]] == ["kept"]
    rep = asyncio.run(host.restore(data=data, namespace=ns, trust=True))
    corpus.poke_print(ns)
    assert corpus.sentinels() == sorted(i["id"] for i in LIVE)


@pytest.mark.parametrize("item", [i for i in ITEMS if i["id"] != "function-body"],
                         ids=ids([i for i in ITEMS if i["id"] != "function-body"]))
def test_bytes_snapshot_did_not_make_are_foreign_here_too(scratch, item):
    """load_snapshot(bytes) with no argument, in this process: bytes written by hand (not by
    snapshot()) load nothing."""
    rep, ns = restore_bytes(item)
    assert corpus.sentinels() == [] and rep.restored == []
    assert [f["code"] for f in rep.failed] == ["foreign"] and rep.trust["provenance"] == "foreign"
    assert set(ns) <= {"__name__", "__builtins__"}


# The person's natural restore of a file, el.load_snapshot(open(f, "rb").read()), in a new
# process. The trusted pass afterwards shows that each payload does run in that process.
_CHILD = r"""
import json, os, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import elastic_lite as el
import hostile_corpus as corpus
items = json.load(sys.stdin)
out = {"default": {}, "trusted": {}}
for mode, kwargs in (("default", {}), ("trusted", {"trust": True})):
    for item in items:
        corpus.clear()
        ns = {"__name__": "__main__"}
        with open(item["file"], "rb") as f:
            rep = el.load_snapshot(f.read(), ns, **kwargs)
        corpus.poke_print(ns)
        out[mode][item["id"]] = {"ran": corpus.sentinels(), "restored": rep.restored,
                                 "codes": [p["code"] for p in rep.failed],
                                 "provenance": rep.trust["provenance"],
                                 "names": sorted(k for k in ns if k != "__builtins__")}
corpus.clear()
print(json.dumps(out))
"""


def test_a_new_process_restoring_the_files_runs_nothing(scratch):
    """Every trick, the notebook-function body included (its bytes were made by snapshot(),
    but in another process), saved to a file and restored with load_snapshot(bytes)."""
    files = []
    for item in ITEMS:
        path = scratch / f"{item['id']}.elc"
        path.write_bytes(item["data"])
        files.append({"id": item["id"], "file": str(path)})
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _CHILD, corpus_root(), here],
                          input=json.dumps(files).encode(), capture_output=True, timeout=300,
                          cwd=scratch)
    assert proc.returncode == 0, proc.stderr.decode()[-4000:]
    out = json.loads(proc.stdout.splitlines()[-1])  # after what poke_print printed
    for item in ITEMS:
        got = out["default"][item["id"]]
        assert got["ran"] == [] and got["restored"] == [], (item["id"], got)
        assert got["codes"] == ["foreign"] and got["provenance"] == "foreign", (item["id"], got)
        assert got["names"] == ["__name__"], (item["id"], got)
    for item in LIVE:  # the same bytes, trusted in that process: each payload does run there
        assert out["trusted"][item["id"]]["ran"] == [item["id"]], (item["id"], out["trusted"])


def corpus_root():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "py")
