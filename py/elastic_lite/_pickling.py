"""The two picklers a group is tried with: cloudpickle first, dill if cloudpickle raises.

Both get the same two changes, made in `reducer_override` (called before any type-specific
saver, in the C pickler that cloudpickle subclasses and in the pure-Python one dill uses):
1. A notebook function/class bound to a top-level name that belongs to ANOTHER group is
   written as `elastic_lite._rebuild.ref(name)`: one object after restore, whichever records
   reach it.
2. A notebook function (its globals are the namespace being saved) is written as code +
   attributes + closure, WITHOUT its globals, and rebuilt with the live namespace as globals
   (`_rebuild.make_function`). cloudpickle would copy the globals it uses into a private dict
   and dill may copy all of `__main__`; both break `scale = 100` after restore.

Protocol 5 everywhere (the C core validates protocols 0-5).
"""

import copyreg
import pickle
import re
import threading
import types

import cloudpickle
import dill

from . import _rebuild
from ._groups import LRU_WRAPPER

PROTOCOL = 5


def _function_reduce(func):
    closure = func.__closure__
    attrs = {
        "__qualname__": func.__qualname__,
        "__module__": func.__module__,
        "__doc__": func.__doc__,
        "__defaults__": func.__defaults__,
        "__kwdefaults__": func.__kwdefaults__,
    }
    try:
        annotations = func.__annotations__  # Python 3.14 evaluates them lazily: may raise
    except Exception:
        annotations = None
    if annotations:
        attrs["__annotations__"] = dict(annotations)
    type_params = getattr(func, "__type_params__", ())
    if type_params:
        attrs["__type_params__"] = type_params
    cells = {}
    for i, cell in enumerate(closure or ()):
        try:
            cells[i] = cell.cell_contents
        except ValueError:  # an empty cell (a variable assigned later in the outer scope)
            pass
    state = (attrs, cells, dict(func.__dict__))
    return (_rebuild.make_function, (func.__code__, func.__name__, len(closure or ())),
            state, None, None, _rebuild.function_setstate)


_RLOCK_TYPE = type(threading.RLock())
_RLOCK_COUNT = re.compile(r"count=(\d+)")


def _rlock_reduce(lock):
    """dill saves an RLock as (count, owner) read from its repr and restores it with
    `_acquire_restore`, so an UNLOCKED RLock (owner=0) comes back owned by a thread 0 that
    does not exist: its next `acquire()` blocks forever, and in single-threaded Pyodide that
    freezes the kernel. No thread of the saving session exists after restore, so we keep
    only what the saving thread itself held (re-acquired by the restoring thread)."""
    count = 0
    if lock._is_owned():
        found = _RLOCK_COUNT.search(repr(lock))
        count = int(found.group(1)) if found else 1
    return (_rebuild.make_rlock, (count,))


def _lru_reduce(obj):
    params = obj.cache_parameters()
    return (_rebuild.make_lru_cache, (obj.__wrapped__, params["maxsize"], params["typed"]))


def _is_notebook_lru(obj, namespace):
    return type(obj) is LRU_WRAPPER and type(getattr(obj, "__wrapped__", None)) is \
        types.FunctionType and obj.__wrapped__.__globals__ is namespace


class _Policy:
    """Shared decision of both picklers; `namespace` and `refs` are set per group."""

    def _el_init(self, namespace, refs):
        self._el_namespace = namespace
        self._el_refs = refs  # id(def) -> top-level name, for defs of other groups

    def _el_reduce(self, obj):
        name = self._el_refs.get(id(obj))
        if name is not None:
            return (_rebuild.ref, (name,))
        if type(obj) is types.FunctionType and obj.__globals__ is self._el_namespace:
            return _function_reduce(obj)
        if type(obj) is _RLOCK_TYPE:  # only dill reaches here: cloudpickle refuses locks
            return _rlock_reduce(obj)
        return NotImplemented


_cp_class_reduce = getattr(cloudpickle.cloudpickle, "_class_reduce", None)


class CloudPickler(_Policy, cloudpickle.Pickler):
    """cloudpickle, plus our two rules, with its per-object Python overhead trimmed: one
    `reducer_override` call per non-builtin object instead of three, and a plain dict as the
    dispatch table (cloudpickle's ChainMap costs a Python `__getitem__` with two caught
    KeyErrors for every instance pickled)."""

    def __init__(self, file, namespace, refs):
        cloudpickle.Pickler.__init__(self, file, protocol=PROTOCOL)
        self._el_init(namespace, refs)
        table = dict(copyreg.dispatch_table)  # read now: copyreg.pickle() may add later
        table.update(cloudpickle.Pickler._dispatch_table)
        self.dispatch_table = table

    def reducer_override(self, obj):
        if isinstance(obj, type):
            name = self._el_refs.get(id(obj))
            if name is not None:
                return (_rebuild.ref, (name,))
            if _cp_class_reduce is not None:
                return _cp_class_reduce(obj)
            return cloudpickle.Pickler.reducer_override(self, obj)
        if type(obj) is types.FunctionType:
            name = self._el_refs.get(id(obj))
            if name is not None:
                return (_rebuild.ref, (name,))
            if obj.__globals__ is self._el_namespace:
                return _function_reduce(obj)
            return cloudpickle.Pickler.reducer_override(self, obj)
        if type(obj) is LRU_WRAPPER:
            name = self._el_refs.get(id(obj))
            if name is not None:
                return (_rebuild.ref, (name,))
            if _is_notebook_lru(obj, self._el_namespace):
                return _lru_reduce(obj)
        return NotImplemented


class DillPickler(_Policy, dill.Pickler):
    def __init__(self, file, namespace, refs):
        dill.Pickler.__init__(self, file, protocol=PROTOCOL)
        self._el_init(namespace, refs)

    def reducer_override(self, obj):
        return self._el_reduce(obj)


def load(serializer, payload):
    """Unpickle one record's payload (already validated by the C core)."""
    if serializer == "dill":
        return dill.loads(bytes(payload))
    return pickle.loads(payload)


class _PlainUnpickler(pickle.Unpickler):
    """For the manifest: plain data only, it may not import anything."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"the checkpoint manifest refers to {module}.{name}; a manifest holds plain data "
            "only, so this checkpoint was altered or damaged")


def load_plain(payload):
    import io
    return _PlainUnpickler(io.BytesIO(payload)).load()


def dump_plain(obj):
    return pickle.dumps(obj, protocol=PROTOCOL)
