"""The global random generators travel with the session: after `random.seed(0)` /
`np.random.seed(0)`, a checkpoint, and a restore in a NEW process (data-only: the state is
plain data in the manifest), the next draws are the ones the old process makes after the
checkpoint. Before, the new process drew from a fresh, unseeded state. A damaged or hostile
state is a warning, never a crash; the reports say what was saved and put back.
"""

import json
import os
import subprocess
import sys
import types

import pytest

import elastic_lite as el
from elastic_lite.capture import random_state as _random_state
from fresh_kernel import ROOT

np = pytest.importorskip("numpy")

_CHILD = r"""
import json, sys, types
sys.path.insert(0, sys.argv[1])
import random
import elastic_lite as el
main = types.ModuleType("__main__")
sys.modules["__main__"] = main
rep = el.load_snapshot(sys.stdin.buffer.read(), main.__dict__, data_only=True)
out = {"report": rep.to_dict(), "text": rep.table(),
       "random": [random.random() for _ in range(3)] + [random.gauss(0, 1)]}
if "numpy.random" in sys.modules:
    import numpy as np
    out["numpy"] = np.random.rand(3).tolist() + [float(np.random.randn())]
print(json.dumps(out, default=str))
"""


def _restore_in_new_process(data):
    proc = subprocess.run([sys.executable, "-c", _CHILD, os.path.join(ROOT, "py")],
                          input=bytes(data), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def test_next_draws_after_a_restore_continue_the_seeded_sequences(monkeypatch):
    import random
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    exec(compile("import random\nimport numpy as np\nrandom.seed(0)\nnp.random.seed(0)\n"
                 "first = [random.random(), np.random.rand()]\n"
                 "g = random.gauss(0, 1)\nn = np.random.randn()\n",  # a cached Gaussian each
                 "<cells>", "exec"), main.__dict__)
    snap = el.snapshot(main.__dict__)
    expected_random = [random.random() for _ in range(3)] + [random.gauss(0, 1)]
    expected_numpy = np.random.rand(3).tolist() + [float(np.random.randn())]
    assert snap.to_dict()["random_state"] == ["random", "numpy.random"]
    assert "random state of random and numpy.random saved" in snap.table()

    got = _restore_in_new_process(snap.data)
    assert got["report"]["failed"] == [] and got["report"]["warnings"] == [], got["report"]
    assert got["random"] == expected_random
    assert got["numpy"] == expected_numpy
    assert got["report"]["random_state"] == ["random", "numpy.random"]
    assert "random state: random and numpy.random put back" in got["text"]


def test_numpy_state_is_saved_only_once_numpy_random_is_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "numpy.random", raising=False)
    assert list(_random_state.capture()) == ["random"]


@pytest.mark.parametrize("field", [
    {"random": {"version": 3, "words": "AAAA"}},
    {"random": {"version": 2, "words": ""}},
    {"random": {"version": 3, "words": "!" * 2500}},
    {"random": {"version": 3, "words": _random_state._pack([0] * 624 + [625])}},
    {"random": "not a dict"},
    {"numpy": {"bit_generator": "PCG64", "words": ""}},
    {"numpy": {"bit_generator": "MT19937", "words": _random_state._pack([1] * 624),
               "pos": 625, "has_gauss": 0, "cached_gaussian": 0.0}},
    {"numpy": {"bit_generator": "MT19937", "words": _random_state._pack([1] * 624),
               "pos": 3, "has_gauss": 1, "cached_gaussian": float("nan")}},
])
def test_a_bad_state_is_a_warning_and_changes_nothing(field):
    import random
    before = random.getstate(), np.random.get_state()[1].tolist()
    warnings = []
    assert _random_state.put_back({"random": field}, warnings) == []
    assert len(warnings) == 1 and "was not put back" in warnings[0], warnings
    assert (random.getstate(), np.random.get_state()[1].tolist()) == before
