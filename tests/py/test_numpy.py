"""Real numpy state through snapshot() in this process and load_snapshot() in a NEW process
(a fresh kernel): dtypes, layouts, views that stay views, aliasing, Generators, notebook
code over arrays. numpy is pinned in versions.env (host .venv)."""

import json

import pytest

np = pytest.importorskip("numpy")

import elastic_lite as el  # noqa: E402
from elastic_lite.capture.selection import capture  # noqa: E402
from elastic_lite.capture.groups import find_groups  # noqa: E402

from fresh_kernel import restore_elsewhere  # noqa: E402


def serializers(snap):
    return {n: g.serializer for g in snap.groups for n in g.names}


def group_of(snap, name):
    return next(g for g in snap.groups if name in g.names)


def test_big_array_is_cloudpickled_not_dill(nb):
    # At protocol 5 numpy hands the pickler a PickleBuffer: the sink takes it (no dill).
    ns = nb("import numpy as np\nbig = np.ones((1000, 1000))\nsmall = np.arange(5)")
    snap = el.snapshot(ns)
    assert serializers(snap) == {"big": "cloudpickle", "small": "cloudpickle"}
    assert group_of(snap, "big").fallback is None
    assert group_of(snap, "big").bytes >= 8_000_000
    out = restore_elsewhere(snap.data, "print(big.shape, big.sum(), small.tolist())")
    assert out.split() == ["(1000,", "1000)", "1000000.0", "[0,", "1,", "2,", "3,", "4]"]


DTYPES = """
import numpy as np
arrays = {
    "bool": np.array([True, False, True]),
    "int8": np.arange(-5, 5, dtype=np.int8), "uint16": np.arange(7, dtype=np.uint16),
    "int64": np.arange(10 ** 6, dtype=np.int64), "uint64": np.array([2 ** 64 - 1], np.uint64),
    "float16": np.linspace(0, 1, 9, dtype=np.float16), "float32": np.ones(3, np.float32) / 3,
    "longdouble": np.array([1.5], np.longdouble),
    "complex128": np.array([1 + 2j, -3.5j]), "complex64": np.array([1j], np.complex64),
    "datetime": np.array(["2024-02-29T12:00", "NaT"], dtype="datetime64[ms]"),
    "timedelta": np.array([1, -2], dtype="timedelta64[s]"),
    "unicode": np.array(["héllo", "wörld", ""]), "bytes": np.array([b"ab", b"\\x00c"]),
    "void": np.array([b"\\x01\\x02"], dtype="V2"),
    "big_endian": np.arange(4, dtype=">i4"),
    "structured": np.array([(1, 2.5, "x", (3, 4))], dtype=[("i", "i4"), ("f", "f8"),
                            ("s", "U3"), ("sub", [("a", "u1"), ("b", "u1")])]),
    "object": np.array([{"k": 1}, [2], None, "s"], dtype=object),
    "zero_d": np.array(3.25), "empty": np.empty((0, 4)),
    "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "strided": np.arange(100.0).reshape(10, 10)[::3, 1::4].copy(order="K"),
    "noncontig": np.arange(60).reshape(3, 4, 5).transpose(2, 0, 1)[::2],
    "masked": np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False], fill_value=-9.0),
    "matrix3d": np.random.default_rng(0).standard_normal((20, 30, 40)),
}
"""


def test_dtypes_and_layouts_restore_exactly_in_a_new_process(nb):
    ns = nb(DTYPES)
    snap = el.snapshot(ns)
    assert set(serializers(snap).values()) == {"cloudpickle"}
    expected = {}
    for k, a in ns["arrays"].items():
        expected[k] = {"dtype": str(a.dtype), "shape": list(a.shape),
                       "c": bool(a.flags.c_contiguous), "f": bool(a.flags.f_contiguous),
                       "type": type(a).__name__}
    # A lone non-contiguous view (nothing else holds its memory) is numpy's compact copy.
    expected["noncontig"]["c"] = True
    out = restore_elsewhere(snap.data, r"""
import json, numpy as np
res = {}
for k, a in arrays.items():
    res[k] = {"dtype": str(a.dtype), "shape": list(a.shape), "c": bool(a.flags.c_contiguous),
              "f": bool(a.flags.f_contiguous), "type": type(a).__name__}
assert arrays["int64"].sum() == sum(range(10 ** 6))
assert arrays["uint64"][0] == 2 ** 64 - 1 and arrays["longdouble"][0] == 1.5
assert np.isnat(arrays["datetime"][1]) and str(arrays["datetime"][0]) == "2024-02-29T12:00:00.000"
assert arrays["unicode"].tolist() == ["héllo", "wörld", ""]
assert arrays["structured"][0]["sub"]["b"] == 4 and arrays["structured"]["s"][0] == "x"
assert arrays["object"][0] == {"k": 1} and arrays["object"][2] is None
assert arrays["masked"].mask.tolist() == [False, True, False]
assert arrays["masked"].fill_value == -9.0 and arrays["masked"].sum() == 4.0
assert arrays["noncontig"].tolist() == np.arange(60).reshape(3, 4, 5).transpose(2, 0, 1)[::2].tolist()
assert float(arrays["matrix3d"][3, 4, 5]) == float(np.random.default_rng(0).standard_normal((20, 30, 40))[3, 4, 5])
print(json.dumps(res))
""")
    assert json.loads(out) == expected


VIEWS = """
import numpy as np
big = np.arange(24.0).reshape(4, 6)        # itself a view of the arange's memory
head = big[:2]
column = big[:, 3]
flipped = big[::-1, ::-1]
as_bytes = big.view(np.uint8)
frozen = big[1:3]
frozen.flags.writeable = False
rec = np.zeros(3, dtype=[("x", "i4"), ("y", "f8")])
rec_y = rec["y"]
owner = np.ones(1000)
window = owner[10:20]
"""


def test_views_come_back_as_views_of_the_restored_owner(nb):
    ns = nb(VIEWS)
    snap = el.snapshot(ns)
    assert set(serializers(snap).values()) == {"cloudpickle"}
    # Everything sharing big's memory is one group; rec with rec_y; owner with window.
    groups = sorted(sorted(g.names) for g in snap.groups)
    assert ["as_bytes", "big", "column", "flipped", "frozen", "head"] in groups
    assert ["rec", "rec_y"] in groups and ["owner", "window"] in groups
    restore_elsewhere(snap.data, r"""
import numpy as np
assert all(np.shares_memory(v, big) for v in (head, column, flipped, as_bytes, frozen))
assert head.base is big.base and np.shares_memory(window, owner)
head[0, 0] = -1.0                       # write through a view: the owner sees it
assert big[0, 0] == -1.0 and flipped[-1, -1] == -1.0 and as_bytes[0, :8].view(np.float64)[0] == -1.0
big[3, 5] = 99.0                        # and the other way round
assert flipped[0, 0] == 99.0 and column[3] == 3 * 6 + 3
assert not frozen.flags.writeable and big.flags.writeable
rec_y[1] = 2.5
assert rec[1]["y"] == 2.5 and rec_y.strides == (12,)
window[:] = 7
assert owner[10:20].tolist() == [7.0] * 10 and owner[9] == 1.0 and owner.sum() == 1060.0
""")


SUBCLASS_VIEWS = """
import numpy as np
data = np.zeros(4, dtype=[("a", "i8"), ("b", "f8")])
rec = data.view(np.recarray)
base = np.arange(6.0)
m = np.asmatrix(base.reshape(2, 3))
class Tagged(np.ndarray):
    pass
t = base[1:5].view(Tagged)
t.unit = "cm"
plain_of_m = np.asarray(m)[1]
"""


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix's own warning
def test_ndarray_subclass_views_stay_views(nb):
    # recarray, matrix, a notebook subclass (with an attribute), and a plain view of a
    # matrix: before, each came back as a copy (writes no longer went through) unreported.
    ns = nb(SUBCLASS_VIEWS)
    snap = el.snapshot(ns)
    assert not any(g.note for g in snap.groups), snap.table()
    restore_elsewhere(snap.data, r"""
import numpy as np
assert type(rec) is np.recarray and type(m) is np.matrix and type(t).__name__ == "Tagged"
assert t.unit == "cm" and m.shape == (2, 3) and rec.dtype.names == ("a", "b")
rec.a[1] = 7
assert data["a"][1] == 7
data["b"][2] = 2.5
assert rec[2].b == 2.5
base[0] = 9.0
assert m[0, 0] == 9.0
base[4] = -4.0
assert t[3] == -4.0 and plain_of_m[1] == -4.0
t[0] = 11.0
assert base[1] == 11.0 and m[0, 1] == 11.0
""")


def test_a_subclass_view_saved_as_a_copy_is_reported_at_checkpoint(nb):
    # numpy.ma.MaskedArray pickles itself (data and mask): it cannot stay a view, so the
    # checkpoint says so instead of the restore silently cutting the tie.
    ns = nb("import numpy as np\nbase = np.arange(6.0)\n"
            "marr = np.ma.masked_array(base, mask=[0, 1, 0, 0, 0, 0])")
    snap = el.snapshot(ns)
    note = group_of(snap, "marr").note
    assert note and "numpy.ma.MaskedArray" in note and "copy" in note, snap.table()
    assert "numpy.ma.MaskedArray" in snap.table()


def test_a_lone_view_of_an_unnamed_array_is_saved_compactly(nb):
    # Nothing else holds its owner: numpy's own (compact) copy, not the whole owner.
    ns = nb("import numpy as np\nfirst_row = np.zeros((1000, 1000))[0]")
    snap = el.snapshot(ns)
    assert group_of(snap, "first_row").bytes < 20_000
    restore_elsewhere(snap.data, "assert first_row.shape == (1000,) and not first_row.any()")


def test_two_views_of_an_unnamed_owner_stay_shared(nb):
    ns = nb("import numpy as np\n_t = np.arange(10.0)\nleft = _t[:6]\nright = _t[4:]\ndel _t")
    snap = el.snapshot(ns)
    assert sorted(group_of(snap, "left").names) == ["left", "right"]
    restore_elsewhere(snap.data, "left[5] = -5\nassert right[1] == -5 and left.base is right.base")


def test_aliasing_across_variables_and_containers(nb):
    ns = nb("""
import numpy as np
a = np.arange(5)
same = a
holder = {"a": a, "pair": [a, a]}
class Box:
    def __init__(self, arr):
        self.arr = arr
box = Box(a)
objs = np.empty(2, dtype=object)
lst = [1, 2]
objs[0] = lst
objs[1] = a
""")
    snap = el.snapshot(ns)
    assert sorted(group_of(snap, "a").names) == ["a", "box", "holder", "lst", "objs", "same"]
    restore_elsewhere(snap.data, r"""
assert same is a and holder["a"] is a and holder["pair"][1] is a and box.arr is a
assert objs[0] is lst and objs[1] is a
a[0] = 42
assert holder["pair"][0][0] == 42 and box.arr[0] == 42
""")


def test_arrays_over_python_buffers_keep_sharing_them(nb):
    ns = nb("""
import numpy as np
raw = bytearray(80)
floats = np.frombuffer(raw, dtype=np.float64)
ro = bytes(range(16))
ints = np.frombuffer(ro, dtype=np.uint8)[4:8]
ints_too = np.frombuffer(ro, dtype=np.uint32)
""")
    snap = el.snapshot(ns)
    assert sorted(group_of(snap, "raw").names) == ["floats", "raw"]
    assert sorted(group_of(snap, "ro").names) == ["ints", "ints_too", "ro"]
    restore_elsewhere(snap.data, r"""
import numpy as np
floats[2] = 1.5
assert np.frombuffer(bytes(raw[16:24]), dtype=np.float64)[0] == 1.5
assert ints.tolist() == [4, 5, 6, 7] and not ints.flags.writeable
assert np.shares_memory(ints, ints_too)
""")


def test_memory_shared_without_a_common_owner_is_one_group(nb):
    ns = nb("""
import ctypes
import numpy as np
buf = (ctypes.c_double * 10)()
a = np.ctypeslib.as_array(buf)
b = np.ctypeslib.as_array(ctypes.cast(buf, ctypes.POINTER(ctypes.c_double)), shape=(5,))
c = np.zeros(3)
del buf
""")
    variables = capture(ns).variables
    groups = sorted(map(sorted, find_groups(variables, ns, {}).groups))
    assert ["a", "b"] in groups and ["c"] in groups


def test_generator_continues_the_same_stream(nb):
    ns = nb("import numpy as np\nrng = np.random.default_rng(2024)\n_ = rng.random(7)\n"
            "legacy = np.random.RandomState(5)\n_ = legacy.randint(0, 100, 3)")
    snap = el.snapshot(ns)
    assert serializers(snap) == {"rng": "cloudpickle", "legacy": "cloudpickle"}
    expect = ns["rng"].random(4).tolist(), ns["legacy"].randint(0, 100, 4).tolist()
    out = restore_elsewhere(snap.data,
                            "import json\nprint(json.dumps([rng.random(4).tolist(), "
                            "legacy.randint(0, 100, 4).tolist()]))")
    assert json.loads(out) == [expect[0], expect[1]]


def test_notebook_functions_and_classes_over_arrays(nb):
    ns = nb("""
import numpy as np
scale = 2.0
def normalize(a):
    return (a - a.mean()) / a.std() * scale
class Dataset:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x, self.y = x, y
    def fit(self):
        return np.polyfit(self.x, self.y, 1)
xs = np.linspace(0, 1, 50)
ds = Dataset(xs, 3 * xs + 1)
transform = np.vectorize(lambda v: v * scale)
""")
    snap = el.snapshot(ns)
    assert set(serializers(snap).values()) == {"cloudpickle"}
    restore_elsewhere(snap.data, r"""
import numpy as np
slope, icept = ds.fit()
assert abs(slope - 3) < 1e-9 and abs(icept - 1) < 1e-9 and ds.x is xs
assert abs(normalize(xs).std() - 2.0) < 1e-12
scale = 10.0
assert abs(normalize(xs).std() - 10.0) < 1e-12      # live globals
assert not hasattr(ds, "__dict__") and "x" in Dataset.__dict__
assert transform(np.array([1.0]))[0] == 10.0
""")


def test_restore_into_a_namespace_without_builtins():
    ns = {"__name__": "__main__"}
    exec("import numpy as np\ndef total(a):\n    return len(a) + int(sum(a))\narr = np.arange(4)", ns)
    snap = el.snapshot(ns)
    target = {}
    assert el.load_snapshot(snap.data, target).ok
    assert "__builtins__" in target and target["total"](target["arr"]) == 10


def test_numpy_is_not_imported_by_a_snapshot_that_does_not_use_it():
    import subprocess
    import sys
    from fresh_kernel import ROOT
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import elastic_lite as el\n"
            "ns = {'__name__': '__main__'}; exec('x = [1]; y = {\"k\": x}', ns)\n"
            "data = el.snapshot(ns).data; el.load_snapshot(data, {})\n"
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, ROOT + "/py"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == "False"
