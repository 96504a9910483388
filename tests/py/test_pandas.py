"""Real pandas state through snapshot() here and load_snapshot() in a NEW process: every
common column kind and index, by cloudpickle (never dill), and Copy-on-Write kept: two
DataFrames that share memory before the checkpoint must not write into each other after it.
pandas is pinned in versions.env (host .venv)."""

import pytest

pd = pytest.importorskip("pandas")

import elastic_lite as el  # noqa: E402

from fresh_kernel import restore_elsewhere  # noqa: E402

FRAME = """
import numpy as np
import pandas as pd
n = 1000
df = pd.DataFrame({
    "i": np.arange(n, dtype=np.int64),
    "f": np.linspace(0, 1, n),
    "s": [f"row{i}" for i in range(n)],
    "b": np.arange(n) % 2 == 0,
    "cat": pd.Categorical(np.array(["a", "b", "c"])[np.arange(n) % 3], ordered=True),
    "when": pd.date_range("2024-01-01", periods=n, freq="h"),
    "when_tz": pd.date_range("2024-03-30", periods=n, freq="h", tz="Europe/Paris"),
    "nullable": pd.array([1, None] * (n // 2), dtype="Int64"),
    "obj": [{"k": i} if i % 100 == 0 else None for i in range(n)],
})
series = pd.Series([1.5, 2.5, None], index=["x", "y", "z"], name="values")
categorical = pd.Categorical(["lo", "hi", "lo"], categories=["lo", "hi"], ordered=True)
tz_index = pd.DatetimeIndex(["2024-10-27 01:30", "2024-10-27 03:30"], tz="Europe/Paris")
multi = pd.DataFrame({"v": range(6)},
                     index=pd.MultiIndex.from_product([["x", "y"], [1, 2, 3]], names=["k", "n"]))
periods = pd.period_range("2024-01", periods=4, freq="M")
intervals = pd.interval_range(0, 4)
sparse = pd.Series(pd.arrays.SparseArray([0, 0, 1, 0]))
"""


def test_pandas_objects_restore_exactly_by_cloudpickle(nb):
    ns = nb(FRAME)
    snap = el.snapshot(ns)
    assert {g.serializer for g in snap.groups} == {"cloudpickle"}, snap.table()
    assert all(g.fallback is None for g in snap.groups)
    dtypes = list(ns["df"].dtypes.astype(str))
    when = str(ns["df"]["when_tz"].iloc[48])
    sums = ns["df"].groupby("cat", observed=True)["i"].sum().to_dict()
    restore_elsewhere(snap.data, f"DTYPES = {dtypes!r}\nWHEN = {when!r}\nSUMS = {sums!r}\n" + r"""
import pandas as pd, pandas.testing as pdt
import numpy as np
pdt.assert_frame_equal(df, df.copy())
assert list(df.dtypes.astype(str)) == DTYPES, list(df.dtypes.astype(str))
assert DTYPES[4:8] == ["category", "datetime64[us]", "datetime64[us, Europe/Paris]", "Int64"]
assert df["cat"].cat.ordered and list(df["cat"].cat.categories) == ["a", "b", "c"]
assert str(df["when_tz"].iloc[48]) == WHEN == "2024-04-01 01:00:00+02:00"  # across DST
assert df["nullable"].isna().sum() == 500 and df["obj"].iloc[100] == {"k": 100}
assert series.name == "values" and np.isnan(series["z"]) and list(series.index) == ["x", "y", "z"]
assert list(categorical.codes) == [0, 1, 0] and categorical.ordered
assert [str(t) for t in tz_index] == ["2024-10-27 01:30:00+02:00", "2024-10-27 03:30:00+01:00"]
assert multi.loc[("y", 2), "v"] == 4 and multi.index.names == ["k", "n"]
assert str(periods[2]) == "2024-03" and intervals[1].left == 1
assert sparse.sparse.density == 0.25
assert df.groupby("cat", observed=True)["i"].sum().to_dict() == SUMS
""")


def test_copy_on_write_survives_the_checkpoint(nb):
    ns = nb("""
import numpy as np
import pandas as pd
df = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) * 2})
head = df.iloc[:5]          # shares df's memory until one of them is written
cols = df[["a"]]
col = df["b"]
arr = df["a"].to_numpy()    # a read-only view for the user
""")
    assert ns["head"]._mgr.blocks[0].values.base is not None  # really sharing before
    snap = el.snapshot(ns)
    assert {g.serializer for g in snap.groups} == {"cloudpickle"}
    restore_elsewhere(snap.data, r"""
head.iloc[0, 0] = -1.0
cols.iloc[1, 0] = -2.0
col.iloc[2] = -3.0
assert df["a"].tolist() == [float(i) for i in range(10)], "a write to a copy reached df"
assert df["b"].tolist() == [i * 2.0 for i in range(10)]
assert head.iloc[0, 0] == -1.0 and cols.iloc[1, 0] == -2.0 and col.iloc[2] == -3.0
assert not arr.flags.writeable and arr.tolist() == [float(i) for i in range(10)]
""")


def test_notebook_code_over_dataframes(nb):
    ns = nb("""
import pandas as pd
threshold = 2
def big_groups(frame):
    counts = frame.groupby("k").size()
    return sorted(counts[counts > threshold].index)
class Report:
    def __init__(self, frame):
        self.frame = frame
        self.summary = frame.describe()
data = pd.DataFrame({"k": list("aaabbc"), "v": range(6)})
report = Report(data)
""")
    snap = el.snapshot(ns)
    assert {g.serializer for g in snap.groups} == {"cloudpickle"}
    restore_elsewhere(snap.data, r"""
assert big_groups(data) == ["a"]
threshold = 1
assert big_groups(data) == ["a", "b"]
assert report.frame is data and report.summary.loc["max", "v"] == 5
""")


def test_what_a_checked_restore_refuses_is_skipped_at_checkpoint_not_lost_with_its_group(nb):
    # df.style (a Styler: pandas.io.formats.style is deny-listed) shares df with `frames`:
    # before, all three were one record, saved, then refused whole by the default (checked)
    # restore, reported nowhere at checkpoint time. Now the Styler is skipped with the
    # reason and the others stay one group (frames[0] is df).
    ns = nb("import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.5]})\n"
            "styled = df.style.format('{:.1f}')\nframes = [df]\n")
    snap = el.snapshot(ns)
    skipped = {s["name"]: s["reason"] for s in snap.skipped}
    assert list(skipped) == ["styled"], snap.table()
    assert "Styler" in skipped["styled"] and "re-create it after restore" in skipped["styled"]
    group = next(g for g in snap.groups if "df" in g.names)
    assert sorted(group.names) == ["df", "frames"] and "styled" in group.note
    back = {}
    rep = el.load_snapshot(snap.data, back)  # made here: the checked mode, not trusted
    assert rep.failed == [] and back["frames"][0] is back["df"], rep.table()
    assert back["df"]["a"].tolist() == [1.0, 2.5]
