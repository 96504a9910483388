"""The session recorder in host CPython: what each executed cell read (with the version),
wrote, changed in place, deleted and did, from its syntax tree, from the namespace's
before/after identities and from the audit hook; bounded memory; its JSON."""

import json
import os
import sys

import pytest

from elastic_lite.replay.recorder import HistoryError, Recorder, is_stateful
from replay_helpers import Session, scratch  # noqa: F401 (a fixture)


def effects(cell, source=None):
    return {k for k, _, s in cell.effects if source is None or s == source}


def test_reads_carry_the_version_they_read_and_writes_make_new_versions():
    s = Session()
    c1 = s.run("a = 1\nb = [a]")
    c2 = s.run("a = a + 1")
    c3 = s.run("c = a * len(b)\nd = c")
    assert c1.reads == {} and c1.writes == ["a", "b"]
    assert c2.reads == {"a": c1.id} and c2.writes == ["a"]
    # `len` is a builtin (not in the namespace): no dependency; `c` is read after the cell
    # bound it itself: not a read from the namespace.
    assert c3.reads == {"a": c2.id, "b": c1.id} and c3.writes == ["c", "d"]
    assert s.rec.versions == {"a": c2.id, "b": c1.id, "c": c3.id, "d": c3.id}
    assert [c.count for c in s.rec.cells] == [1, 2, 3] and all(c.ok for c in s.rec.cells)


def test_in_place_changes_are_writes_of_the_variable():
    s = Session()
    s.run("lst = []\nd = {}\nclass O: pass\no = O()\nname = 'x'\nnums = [3, 1]")
    c = s.run("lst.append(1)\nd['k'] = 2\no.attr = 3\nname.upper()\nn = nums.count(3)")
    assert set(c.writes) == {"lst", "d", "o", "n"}  # a str cannot change; count() is pure
    c = s.run("del lst[0]\nd['k'] += 1\nnums.sort()")
    assert set(c.writes) == {"lst", "d", "nums"}
    c = s.run("del d")
    assert c.deletes == ["d"] and "d" not in s.rec.versions


def test_notebook_functions_carry_their_globals_to_the_cells_that_call_them():
    s = Session()
    s.run("scale = 3\nlog = []")
    s.run("def f(x):\n    return x * scale\n"
          "def record(v):\n    log.append(v)\n"
          "def reset():\n    global scale\n    scale = 1\n"
          "def add_to(target, v):\n    target.append(v)\n"
          "def g(x):\n    return f(x) + 1")
    c = s.run("y = g(2)")  # g calls f, which reads scale: y depends on scale
    assert set(c.reads) == {"g", "f", "scale"} and c.writes == ["y"]
    c = s.run("record(5)")
    assert "log" in c.writes
    c = s.run("reset()")
    assert "scale" in c.writes
    s.run("mine = []")
    c = s.run("add_to(mine, 1)")
    assert "mine" in c.writes


def test_methods_of_notebook_classes_count_for_calls_and_instantiation():
    s = Session()
    s.run("registry = []\nfactor = 2")
    s.run("class Model:\n    def __init__(self):\n        registry.append(self)\n"
          "    def predict(self, x):\n        return x * factor")
    c = s.run("m = Model()")
    assert "registry" in c.writes
    c = s.run("p = m.predict(3)")
    assert "factor" in c.reads and "m" in c.reads


def test_what_the_code_does_not_name_is_caught_by_the_identity_comparison():
    s = Session()
    c = s.run("exec('hidden = 1')\nglobals()['other'] = 2")
    assert {"hidden", "other"} <= set(c.writes)
    assert "exec()" in c.opaque  # its reads cannot be known: never replayed
    s.run("from os.path import *")
    assert "join" in s.rec.versions


def test_reading_a_stateful_value_is_a_write_of_it(scratch):
    p = scratch / "data.txt"
    p.write_text("a\nb\nc\n")
    s = Session()
    s.run(f"gen = (i for i in range(5))\nf = open({str(p)!r})\nimport sqlite3\n"
          "con = sqlite3.connect(':memory:')\nlst = [1, 2]")
    assert s.run("for v in gen:\n    break").writes == ["v", "gen"]
    assert s.run("print(f)").writes == ["f"]  # conservative: using a file may move it
    assert "con" in s.run("rows = con.execute('select 1').fetchall()").writes
    assert s.run("for v in lst:\n    pass").writes == ["v"]  # a list does not change
    assert is_stateful(iter([])) and is_stateful(s.ns["con"]) and not is_stateful([1])


def test_side_effects_from_the_code(scratch):
    s = Session()
    s.run("import random, os, time\nimport urllib.request as ur")
    assert effects(s.run("print('hi')")) == {"prints"}
    assert effects(s.run(f"open({str(scratch / 'o.txt')!r}, 'w').close()")) == {"writes-files"}
    assert effects(s.run(f"fh = open({str(scratch / 'o.txt')!r})")) == {"reads-files"}
    assert effects(s.run("x = random.random()")) == {"nondeterministic"}
    assert effects(s.run("random.seed(1)\nx = random.random()")) == set()
    assert effects(s.run("t = time.time()")) == {"nondeterministic"}
    assert effects(s.run("def fetch_it():\n    return ur.urlopen('http://127.0.0.1:9')\n"
                         "def shout(v):\n    print(v)")) == set()  # defined, not run
    assert effects(s.run("shout(1)")) == {"prints"}  # the body's effects come with the call
    c = s.run("if False:\n    fetch_it()")
    assert effects(c) == {"network"}  # conservative: the code may call it


def test_side_effects_seen_at_run_time(scratch, monkeypatch):
    # A helper module the notebook imports: its code is not the cell's, the audit hook
    # sees what it does anyway.
    (scratch / "nbhelper.py").write_text(
        "import socket, subprocess\n"
        "def save(p):\n    open(p, 'w').write('x')\n"
        "def lookup():\n    return socket.getaddrinfo('127.0.0.1', 9)\n"
        "def run():\n    return subprocess.run([" + repr(sys.executable) + ", '-c', '0'])\n"
        "def opendb(p):\n    import sqlite3\n    return sqlite3.connect(p)\n")
    monkeypatch.syspath_prepend(str(scratch))
    s = Session(audit=True)
    s.run("import nbhelper")
    c = s.run(f"nbhelper.save({str(scratch / 'out.txt')!r})")
    assert effects(c, "run") == {"writes-files"}
    assert effects(s.run("nbhelper.lookup()"), "run") == {"network"}
    assert effects(s.run("nbhelper.run()"), "run") == {"runs-command"}
    db = str(scratch / "x.db")
    assert effects(s.run(f"c1 = nbhelper.opendb({db!r})"), "run") == {"writes-files"}
    assert effects(s.run("c2 = nbhelper.opendb(':memory:')"), "run") == set()
    s.ns["c1"].close()
    assert effects(s.run("n = 1 + 1")) == set()  # nothing recorded outside the cells


def test_failed_cells_are_recorded_with_their_error_and_partial_writes():
    s = Session()
    c = s.run("a = 1\nb = 1 / 0\nc = 3", expect_ok=False)
    assert not c.ok and c.error.startswith("ZeroDivisionError")
    assert "a" in s.rec.versions and s.rec.versions["a"] == c.id
    c = s.run("x = (", expect_ok=False)
    assert not c.ok and "does not parse" in c.opaque


def test_changes_between_recorded_cells_come_from_outside():
    s = Session()
    s.run("a = 1\nb = 2")
    s.ns["a"] = 10  # a restore, a silent snippet: not a recorded cell
    del s.ns["b"]
    c = s.run("c = a")
    assert c.reads == {"a": 0} and "b" not in s.rec.versions


def test_the_recorder_never_breaks_a_cell():
    s = Session()
    s.rec.after(ok=True)  # after() without before(): ignored
    s.rec.before(b"not text")
    s.ns["x"] = 1
    s.rec.after(ok=True)
    cell = s.rec.cells[-1]
    assert cell.note.startswith("the recorder failed on this cell") and not cell.replay
    assert s.rec.versions["x"] == cell.id  # the identity comparison still saw the write
    s.rec.before("outer = 1")  # nested cells (a cell running a cell): only the outer one
    s.rec.before("inner = 1")
    s.ns["inner"] = s.ns["outer"] = 1
    s.rec.after()
    s.rec.after()
    assert s.rec.cells[-1].code == "outer = 1" and len(s.rec.cells) == 2


def test_magic_lines_and_ipython_history_names():
    s = Session()
    s.ns["get_ipython"] = None  # the cell is only analyzed here, never run
    s.rec.before("get_ipython().run_line_magic('time', 'y = x + 1')\n"
                 "get_ipython().system('ls')")
    s.rec.after()
    c = s.rec.cells[-1]
    assert effects(c) == {"runs-command"}
    s.ns["x"] = 1
    s.rec.before("z = x + _5")
    s.rec.after()
    assert "output history" in s.rec.cells[-1].opaque


def test_no_replay_marker_and_set_replay():
    s = Session()
    assert not s.run("# elastic-lite: no-replay\nseed = 42").replay
    s.run("a = 1")
    s.rec.set_replay(2, False)
    assert not s.cell(2).replay
    with pytest.raises(KeyError, match="no recorded cell"):
        s.rec.set_replay(99, False)


def test_cells_no_plan_can_need_are_dropped():
    s = Session()
    s.run("total = 0")
    for i in range(300):
        s.run(f"tmp = {i}")
        s.run("total = total + tmp")
        s.run("print(total)")  # writes nothing: never needed
    s.rec.prune()
    counts = [c.count for c in s.rec.cells]
    # The chain of `total` needs every `total = total + tmp` and every `tmp = i` it read.
    assert len(counts) == 1 + 300 * 2 and not any(c.code == "print(total)" for c in s.rec.cells)
    s.run("total = 0")  # a fresh value: the whole chain is no longer needed
    s.rec.prune()
    assert [c.code for c in s.rec.cells] == ["tmp = 299", "total = 0"]


def test_memory_caps_drop_code_then_cells():
    s = Session(max_cell_code=100, max_code=120, max_cells=5)
    c = s.run("big = 1  # " + "x" * 200)
    assert c.code is None and "limit kept per cell" in c.note
    for i in range(8):
        s.run(f"v{i} = {i}  # padding padding padding padding")
    s.rec.prune()
    assert len(s.rec.cells) == 5 and s.rec.dropped_before > 1
    kept = sum(len(c.code or "") for c in s.rec.cells)
    assert kept <= 120 and any(c.code is None and "dropped" in c.note for c in s.rec.cells)


def test_json_round_trip_continues_the_session():
    s = Session()
    s.run("def f(x):\n    return x * k\nk = 2")
    s.run("y = f(3)")
    data = s.history()
    rec = Recorder.from_json(data, namespace=s.ns)
    assert rec.to_json() == data
    # Continue recording on the loaded history: f's globals are still known.
    rec.before("z = f(1)")
    s.ns["z"] = 2
    rec.after()
    assert set(rec.cells[-1].reads) == {"f", "k"} and rec.cells[-1].count == 3


@pytest.mark.parametrize("mutate, message", [
    (lambda d: "not a dict", "not an Elastic Lite session history"),
    (lambda d: dict(d, format="other"), "not an Elastic Lite session history"),
    (lambda d: dict(d, version=2), "version 2 is not supported"),
    (lambda d: dict(d, cells={}), "'cells' is not a list"),
    (lambda d: dict(d, cells=[dict(d["cells"][0], id="1")]), r"cells\[0\]\.id is not an integer"),
    (lambda d: dict(d, cells=[dict(d["cells"][0], reads={"a": -1})]), "reads is not an integer"),
    (lambda d: dict(d, cells=[dict(d["cells"][0], effects=[["x"]])]), "effects is not a list"),
    (lambda d: dict(d, cells=d["cells"] * 2), "not unique and increasing"),
    (lambda d: dict(d, versions=[]), "'versions' is not an object"),
    (lambda d: dict(d, next_id=1), "next_id is not past the last cell"),
    (lambda d: dict(d, functions={"f": {"reads": 5}}), "function entry is malformed"),
])
def test_a_damaged_history_is_refused_clearly(mutate, message):
    s = Session()
    s.run("def f():\n    return 1\na = f()")
    with pytest.raises(HistoryError, match=message):
        Recorder(namespace={}).load(mutate(s.history()))


def test_random_damage_to_a_history_raises_history_error_or_loads():
    import random
    s = Session()
    s.run("import math\ndef f(v):\n    return v * k\nk = 2")
    s.run("y = [f(i) for i in range(3)]\nz = {'a': y}")
    s.run("z['b'] = 1\nprint(z)")
    text = json.dumps(s.history())
    rng = random.Random(1234)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(400):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice('0123456789"{}[],:-ntfaxe ')
        try:
            data = json.loads("".join(chars))
        except ValueError:
            continue
        try:
            Recorder(namespace={}).load(data)
            outcomes["loaded"] += 1
        except HistoryError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 10 and outcomes["loaded"] > 10


def test_the_audit_hook_records_nothing_outside_cells(scratch):
    s = Session(audit=True)
    s.run("a = 1")
    # Outside a cell the hook returns at once: opening files is recorded nowhere.
    with open(os.path.join(scratch, "f.txt"), "w") as fh:
        fh.write("x")
    assert all(not c.effects for c in s.rec.cells)
