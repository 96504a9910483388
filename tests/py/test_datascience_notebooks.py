"""Real data-science state, round trip: notebooks written the way handbooks and courses work
(tests/notebooks/datascience/: NumPy, pandas, matplotlib with the Agg backend, scikit-learn)
run cell by cell in a kernel-like __main__ of this process, checkpointed, and restored in ONE
new Python process (each notebook into its own fresh __main__), in the checked mode of the
person's own checkpoint (what a store whose signature checked gives: foreign=False).

Every variable is compared (datascience_compare.describe: arrays by dtype, shape and bytes,
frames by values, dtypes and index, models by fitted attributes and predictions, figures by
what they draw) together with the aliasing between them (same object, shared memory, axes
of a figure). Each is equal, different, missing (not restored) or skipped with a reason at
checkpoint time; a notebook's metadata lists the variables expected to be skipped or
different, and nothing may be missing. The table is printed (pytest -s) for the notes.
"""

import base64
import json
import os
import subprocess
import sys
import types

import pytest

for _module in ("numpy", "pandas", "matplotlib", "sklearn"):
    pytest.importorskip(_module)

import elastic_lite as el  # noqa: E402
from datascience_compare import everything  # noqa: E402
from fresh_kernel import ROOT  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = os.path.join(ROOT, "tests", "notebooks", "datascience")

_CHILD = r"""
import base64, json, sys, types
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import elastic_lite as el
from datascience_compare import everything
out = []
for job in json.load(sys.stdin):
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    rep = el.load_snapshot(base64.b64decode(job["data"]), main.__dict__, foreign=False)
    names = [n for n in job["names"] if n in main.__dict__]
    out.append({"report": rep.to_dict(), "after": everything(main.__dict__, names)})
print(json.dumps(out, default=str))
"""


def _load(name):
    with open(os.path.join(NOTEBOOKS, name), encoding="utf-8") as f:
        nb = json.load(f)
    cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
             for c in nb["cells"] if c["cell_type"] == "code"]
    return cells, nb["metadata"]["elastic_lite_test"]


def _variables(ns, snap):
    bound = {m["name"] for m in snap.modules}
    return [n for n, v in ns.items() if isinstance(n, str) and not n.startswith("_")
            and n not in bound and not isinstance(v, types.ModuleType)]


def _run(name, monkeypatch):
    cells, expect = _load(name)
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    ns = main.__dict__
    for i, src in enumerate(cells, 1):
        exec(compile(src, f"<{name} cell {i}>", "exec"), ns)
    snap = el.snapshot(ns)
    names = _variables(ns, snap)
    return {"name": name, "expect": expect, "snap": snap, "names": names,
            "before": everything(ns, names)}


def _restore_all(runs):
    jobs = [{"data": base64.b64encode(r["snap"].data).decode(), "names": r["names"]}
            for r in runs]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(ROOT, "py"), HERE],
                          input=json.dumps(jobs).encode(), capture_output=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-4000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def _verdicts(run, restored):
    skipped = {s["name"]: s["reason"] for s in run["snap"].skipped}
    before, after = run["before"], restored["after"]
    out = {}
    for n in run["names"]:
        if n in skipped:
            out[n] = "skipped"
        elif n not in after["values"] and n not in after["errors"]:
            out[n] = "missing"
        elif n in before["values"] and before["values"][n] == after["values"].get(n):
            out[n] = "equal"
        else:
            out[n] = "different"
    return out, skipped


# the probes of describe() meet log1p of negatives and frames fitted with column names
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
def test_datascience_notebooks_round_trip(monkeypatch, capsys):
    os.environ.setdefault("MPLBACKEND", "Agg")
    runs = [_run(n, monkeypatch) for n in sorted(os.listdir(NOTEBOOKS)) if n.endswith(".ipynb")]
    assert len(runs) == 4
    restored = _restore_all(runs)
    rows, problems = [], []
    for run, back in zip(runs, restored):
        verdicts, skipped = _verdicts(run, back)
        counts = {k: sum(1 for v in verdicts.values() if v == k)
                  for k in ("equal", "different", "missing", "skipped")}
        rows.append((run["name"], len(verdicts), counts,
                     sorted(run["snap"].modules, key=lambda m: m["name"])))
        expect = run["expect"]
        lost = set(map(tuple, run["before"]["relations"])) - \
            set(map(tuple, back["after"]["relations"]))
        different = sorted(n for n, v in verdicts.items() if v == "different")
        missing = sorted(n for n, v in verdicts.items() if v == "missing")
        if different != sorted(expect["different"]):
            problems.append(f"{run['name']}: different {different} "
                            f"(errors {back['after']['errors']})")
        if missing:
            problems.append(f"{run['name']}: missing {missing}: {back['report']['failed']}")
        if sorted(skipped) != sorted(expect["skipped"]) or not all(skipped.values()):
            problems.append(f"{run['name']}: skipped {skipped}")
        if lost:
            problems.append(f"{run['name']}: aliasing lost {sorted(lost)}")
        if back["report"]["failed"] or not all(m["ok"] for m in back["report"]["modules"]):
            problems.append(f"{run['name']}: restore report {back['report']['failed']} "
                            f"{[m for m in back['report']['modules'] if not m['ok']]}")
        if back["report"]["random_state"] != ["random", "numpy.random"]:
            problems.append(f"{run['name']}: random state {back['report']['random_state']}")
    with capsys.disabled():
        print("\nnotebook              variables  equal  different  missing  skipped")
        for name, total, c, _ in rows:
            print(f"{name:<22}{total:>9}{c['equal']:>7}{c['different']:>11}"
                  f"{c['missing']:>9}{c['skipped']:>9}")
    assert not problems, "\n".join(problems)
