"""What a data-science variable IS, as plain JSON data, so a value before a checkpoint and
after a restore in another process can be compared (tests/py/test_datascience_notebooks.py).

`describe(value)`: arrays by type, dtype, shape, strides order and a hash of their bytes
(masked arrays with their mask and fill value); pandas objects by their values, dtypes and
index (MultiIndex levels and names, frequencies, time zones, categories); scikit-learn
estimators by their parameters, every fitted attribute (names ending in "_") and what they
predict or transform for a fixed probe; matplotlib figures and axes by what they draw
(titles, labels, limits, line data, artists); containers item by item; anything else by its
repr when that holds no memory address, else by its type and attributes.
`relations(namespace)`: which variables are the same object, which arrays share memory, which
axes belong to which figure variable (aliasing a restore must keep).
"""

import hashlib
import math
import re
import sys

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _h(raw):
    return hashlib.sha256(raw).hexdigest()[:16]


def _type(value):
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}"


def _array(a):
    np = sys.modules["numpy"]
    out = {"type": _type(a), "dtype": str(a.dtype), "shape": list(a.shape)}
    if isinstance(a, np.ma.MaskedArray):
        out.update(mask=_array(np.ma.getmaskarray(a).view(np.ndarray)),
                   fill=repr(a.fill_value), data=_array(a.data.view(np.ndarray)))
        return out
    if a.dtype.hasobject:
        out["items"] = [describe(v) for v in a.ravel().tolist()]
    else:
        out["bytes"] = _h(np.ascontiguousarray(a).view(np.uint8).tobytes())
    out["writeable"] = bool(a.flags.writeable)
    out["attrs"] = describe(dict(getattr(a, "__dict__", {}) or {}))
    return out


def _pandas(v):
    pd = sys.modules["pandas"]
    if isinstance(v, pd.MultiIndex):
        return {"type": _type(v), "names": list(v.names),
                "levels": [_pandas(level) for level in v.levels],
                "codes": [_array(c) for c in v.codes]}
    if isinstance(v, pd.Index):
        return {"type": _type(v), "dtype": str(v.dtype), "name": repr(v.name),
                "values": repr(list(v)), "freq": repr(getattr(v, "freqstr", None))}
    if isinstance(v, pd.Series):
        return {"type": _type(v), "dtype": str(v.dtype), "name": repr(v.name),
                "index": _pandas(v.index), "values": repr(v.tolist()),
                "cat": repr((list(v.cat.categories), v.cat.ordered))
                if isinstance(v.dtype, pd.CategoricalDtype) else None}
    if isinstance(v, pd.DataFrame):
        return {"type": _type(v), "index": _pandas(v.index), "columns": _pandas(v.columns),
                "columns_data": [_pandas(v.iloc[:, i]) for i in range(v.shape[1])]}
    if isinstance(v, pd.Categorical):
        return {"type": _type(v), "values": repr(list(v)),
                "categories": repr(list(v.categories)), "ordered": v.ordered}
    groupby = getattr(getattr(pd, "api", None), "typing", None)
    if groupby is not None and isinstance(v, (groupby.DataFrameGroupBy, groupby.SeriesGroupBy)):
        return {"type": _type(v), "obj": describe(v.obj), "groups": repr(dict(v.indices)),
                "keys": repr(v.keys)}
    if _type(v).startswith("pandas.") and hasattr(v, "obj"):  # a Resampler, a Rolling window
        return {"type": _type(v), "repr": _ADDRESS.sub("", repr(v)), "obj": describe(v.obj)}
    return None


def _estimator(est):
    np = sys.modules["numpy"]
    params = est.get_params(deep=False)
    out = {"type": _type(est),
           "params": {k: describe(p) for k, p in sorted(params.items())},
           "fitted": {k: describe(val) for k, val in sorted(vars(est).items())
                      if k.endswith("_") and not k.startswith("_")}}
    n = getattr(est, "n_features_in_", None)
    if isinstance(n, int):
        probe = np.linspace(-2.0, 2.0, 5 * n).reshape(5, n)
        for method in ("predict", "transform", "predict_proba"):
            fn = getattr(est, method, None)
            if fn is None:
                continue
            try:
                out[method] = describe(np.asarray(fn(probe)))
            except Exception as exc:
                out[method] = f"{type(exc).__name__}"
    return out


def _artist_data(artist):
    out = {"type": _type(artist)}
    for getter in ("get_xydata", "get_offsets", "get_array", "get_label", "get_text"):
        fn = getattr(artist, getter, None)
        if fn is not None:
            try:
                out[getter] = describe(fn())
            except Exception as exc:
                out[getter] = type(exc).__name__
    return out


def _axes(ax):
    return {"type": _type(ax), "title": ax.get_title(), "xlabel": ax.get_xlabel(),
            "ylabel": ax.get_ylabel(), "xlim": describe(ax.get_xlim()),
            "ylim": describe(ax.get_ylim()),
            "artists": [_artist_data(a) for a in ax.get_children()
                        if not _type(a).startswith(("matplotlib.axis.", "matplotlib.spines."))],
            "position": describe(list(ax.get_position().bounds))}


def _matplotlib(v):
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return None
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.colors import Colormap
    if isinstance(v, Figure):
        return {"type": _type(v), "size": describe(list(v.get_size_inches())),
                "dpi": v.dpi, "suptitle": v._suptitle.get_text() if v._suptitle else None,
                "axes": [_axes(ax) for ax in v.axes]}
    if isinstance(v, Axes):
        return dict(_axes(v), index=v.figure.axes.index(v))
    if isinstance(v, Colormap):
        return {"type": _type(v), "name": v.name, "N": v.N}
    if isinstance(v, Artist):
        return _artist_data(v)
    return None


def describe(v, depth=0):
    """Plain JSON data describing `v` (see the module docstring)."""
    if depth > 8:
        return {"type": _type(v), "deep": True}
    t = type(v)
    if v is None or t in (bool, int, str):
        return v
    if t is float:
        return "nan" if math.isnan(v) else repr(v)
    if t in (bytes, bytearray):
        return {"type": t.__name__, "bytes": _h(bytes(v))}
    if t in (list, tuple):
        return {"type": t.__name__, "items": [describe(x, depth + 1) for x in v]}
    if t is dict:
        return {"type": "dict", "items": [[repr(k), describe(x, depth + 1)]
                                          for k, x in v.items()]}
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.ndarray):
        return _array(v)
    if np is not None and isinstance(v, np.generic):
        return {"type": _type(v), "value": repr(v.item()) if v == v else "nan"}
    if np is not None and isinstance(v, np.random.Generator):
        return {"type": _type(v), "state": repr(v.bit_generator.state)}
    if "pandas" in sys.modules:
        out = _pandas(v)
        if out is not None:
            return out
    if "sklearn" in sys.modules and hasattr(v, "get_params") and hasattr(v, "fit") \
            and not isinstance(v, type):
        return _estimator(v)
    out = _matplotlib(v)
    if out is not None:
        return out
    if isinstance(v, type):
        return {"type": "type", "name": f"{v.__module__}.{v.__qualname__}",
                "attrs": sorted(k for k in vars(v) if not k.startswith("__"))}
    text = repr(v)
    if not _ADDRESS.search(text):
        return {"type": _type(v), "repr": text}
    attrs = getattr(v, "__dict__", None)
    return {"type": _type(v), "attrs": None if attrs is None else sorted(attrs)}


def relations(namespace, names):
    """[kind, a, b] facts about aliasing among the variables `names`."""
    np = sys.modules.get("numpy")
    out = []
    for i, a in enumerate(names):
        va = namespace[a]
        for b in names[i + 1:]:
            vb = namespace[b]
            if va is vb:
                out.append(["same", a, b])
            elif np is not None and isinstance(va, np.ndarray) and isinstance(vb, np.ndarray) \
                    and not va.dtype.hasobject and not vb.dtype.hasobject \
                    and np.shares_memory(va, vb):
                out.append(["shares memory", a, b])
            elif getattr(va, "figure", None) is vb and vb is not None:
                out.append(["drawn in", a, b])
            elif getattr(vb, "figure", None) is va and va is not None:
                out.append(["drawn in", b, a])
    return out


def everything(namespace, names):
    """{"values": {name: describe(value)}, "relations": relations(...)}, and what could
    not be described ({name: error}) — a describe that fails is a difference, not a crash."""
    values, errors = {}, {}
    for n in names:
        try:
            values[n] = describe(namespace[n])
        except Exception as exc:
            errors[n] = f"{type(exc).__name__}: {exc}"
    return {"values": values, "errors": errors, "relations": relations(namespace, names)}
