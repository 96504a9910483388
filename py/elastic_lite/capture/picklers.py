"""The picklers a group is tried with: cloudpickle first, dill if cloudpickle raises (and,
before them, the plain C pickler for what needs none of our rules: see the end of this file).

Both get the same changes, made in `reducer_override` (called before any type-specific
saver, in the C pickler that cloudpickle subclasses and in the pure-Python one dill uses):
1. A notebook function/class bound to a top-level name that belongs to ANOTHER group is
   written as `elastic_lite._rebuild.ref(name)`: one object after restore, whichever records
   reach it.
2. A notebook function (its globals are the namespace being saved) is written as code +
   attributes + closure, WITHOUT its globals, and rebuilt with the live namespace as globals
   (`_rebuild.make_function`). cloudpickle would copy the globals it uses into a private dict
   and dill may copy all of `__main__`; both break `scale = 100` after restore.
3. A notebook class is rebuilt by `_rebuild.make_class`: cloudpickle's skeleton, plus what
   cloudpickle leaves out of the class statement (`__slots__`: without it a slotted class or
   a namedtuple comes back with a `__dict__` per instance) and a way through a base's
   `__init_subclass__` that wanted keyword arguments nobody recorded (reported on restore).
4. A numpy view whose memory owner is held by something else too (another variable, another
   view, an earlier object of the record) is written as (owner, offset, shape, strides,
   dtype): after restore it is again a view of the restored owner, so writes go through. A
   lone view is left to numpy (a compact copy, nothing to share). Arrays inside pandas
   objects are never turned into views: pandas (Copy-on-Write) tracks sharing between its
   objects with references pickle cannot carry, so shared memory there would let a write to
   one DataFrame show in another. numpy is never imported here: only what `sys.modules`
   already holds is looked at.

Buffers: both picklers take pickle's `buffer_callback` (the snapshot loop sends large
contiguous buffers out of band with it); whatever else protocol 5 hands the file (bytes,
bytearray, a PickleBuffer kept in-band) the core's writer takes through the buffer protocol.

One CloudPickler serves a whole snapshot (`begin_group` clears its memo between records);
its dispatch table is a plain dict handed to the C pickler before it reads the attribute
(cloudpickle's ChainMap costs a Python `__getitem__` and two caught KeyErrors per instance).

Protocol 5 everywhere (the C core validates protocols 0-5).
"""

import copyreg
import functools
import importlib
import io
import pickle
import re
import sys
import threading
import types

import cloudpickle
import dill

from .. import _rebuild
from .groups import LRU_WRAPPER, memory_owner, numpy_ndarray

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


_SINGLEDISPATCH_CODE = functools.singledispatch(lambda arg: None).__code__


def _is_notebook_singledispatch(obj, namespace):
    """`@functools.singledispatch` on a notebook function: the wrapper (functools' code,
    functools' globals) keeps a WeakKeyDictionary in its closure, so cloudpickle refuses it
    and dill copies functools' module globals, in a stream restore then refuses (it calls
    builtins.setattr)."""
    return getattr(obj, "__code__", None) is _SINGLEDISPATCH_CODE and type(
        getattr(obj, "__wrapped__", None)) is types.FunctionType and \
        obj.__wrapped__.__globals__ is namespace


def _singledispatch_reduce(obj):
    """Saved as what made it: the function and its registrations (not `object`'s, which
    is the function itself)."""
    impls = [(cls, impl) for cls, impl in obj.registry.items() if cls is not object]
    return (_rebuild.make_singledispatch, (obj.__wrapped__, impls))


def _is_notebook_lru(obj, namespace):
    return type(obj) is LRU_WRAPPER and type(getattr(obj, "__wrapped__", None)) is \
        types.FunctionType and obj.__wrapped__.__globals__ is namespace


# -- classes ------------------------------------------------------------------------------

_cp = cloudpickle.cloudpickle
_cp_class_reduce = getattr(_cp, "_class_reduce", None)
_cp_make_skeleton_class = getattr(_cp, "_make_skeleton_class", None)


_NAMED_TUPLE = getattr(sys.modules.get("typing"), "NamedTuple", None)  # makes its own slots


def _slot_names(cls, slots):
    names = [slots] if isinstance(slots, str) else list(slots)
    owner = cls.__name__.lstrip("_")
    return [f"_{owner}{n}" if n.startswith("__") and not n.endswith("__") and owner else n
            for n in names]


def _class_reduce(cls):
    """cloudpickle's reduction of a class defined in the notebook, made faithful: the class
    statement gets its `__slots__` back (so the slots exist again, and instances have no
    `__dict__` when they had none), and `_rebuild.make_class` builds it."""
    rv = _cp_class_reduce(cls) if _cp_class_reduce is not None else NotImplemented
    if type(rv) is not tuple or rv[0] is not _cp_make_skeleton_class:
        return rv  # by reference, an enum, a builtin type: cloudpickle's answer is right
    args = list(rv[1])
    slots = cls.__dict__.get("__slots__")
    if slots is not None and not any(b is _NAMED_TUPLE for b in args[2]):
        type_kwargs = dict(args[3])
        type_kwargs["__slots__"] = slots
        args[3] = type_kwargs
        clsdict, slotstate = rv[2]
        for name in _slot_names(cls, slots):  # member descriptors: type() makes them again
            clsdict.pop(name, None)
        rv = (rv[0], rv[1], (clsdict, slotstate)) + rv[3:]
    return (_rebuild.make_class, tuple(args)) + rv[2:]


# -- numpy views ------------------------------------------------------------------------

def _refs_beyond(obj, own):
    """References to `obj` beyond the `own` ones the caller holds (its locals, a list)."""
    return sys.getrefcount(obj) - 2 - own - _REFCOUNT_SKEW  # our argument + getrefcount's


def _refcount_skew():
    """What sys.getrefcount reports beyond the model of `_refs_beyond`: 0 on CPython 3.11;
    newer interpreters may count borrowed references on the stack differently. Measured once,
    through `_refs_beyond` itself, on an object with exactly one holder besides our local."""
    probe = object()
    holder = [probe]
    skew = _refs_beyond(probe, 1) - 1
    del holder
    return skew


_REFCOUNT_SKEW = 0
_REFCOUNT_SKEW = _refcount_skew()


def _array_view_reduce(arr, ndarray):
    """Reduce `arr` (exactly an ndarray) to `_rebuild.array_view(owner, ...)` when it is a
    view whose memory owner is shared; None to let numpy pickle it (a compact copy)."""
    base = arr.base
    if base is None or arr.dtype.hasobject:
        return None
    owner = memory_owner(arr, ndarray)
    if owner is arr:
        return None
    if isinstance(owner, ndarray):  # an ndarray, or a subclass's (a matrix, a recarray...)
        if owner.dtype.hasobject or not (owner.flags.c_contiguous or owner.flags.f_contiguous):
            return None
        start = owner.__array_interface__["data"][0]
    elif type(owner) in (bytes, bytearray):
        np = sys.modules["numpy"]
        start = np.frombuffer(owner, dtype=np.uint8).__array_interface__["data"][0] \
            if len(owner) else 0
    else:
        return None  # memory of an mmap, a ctypes buffer...: numpy's copy
    # Shared? The owner (or the memoryview between) is held by more than this view's chain.
    # `base` and `owner` are two locals of ours: -1 each when they are the same object.
    if base is owner:
        shared = _refs_beyond(owner, 2) > 1
    else:
        shared = _refs_beyond(owner, 1) > 1 or _refs_beyond(base, 1) > 1
    if not shared:
        return None
    offset = arr.__array_interface__["data"][0] - start
    return (_rebuild.array_view,
            (owner, offset, arr.shape, arr.strides, arr.dtype, bool(arr.flags.writeable)))


def _mark_arrays(value, ndarray, marks, depth=6, budget=None):
    """Add the id of every ndarray found in `value` (through builtin containers, a few
    levels deep) to `marks`: these are pickled as numpy copies, never as views."""
    budget = [10_000] if budget is None else budget
    t = type(value)
    if t is ndarray:
        marks.add(id(value))
    elif depth and budget[0] > 0 and t in (tuple, list, dict):
        items = value.values() if t is dict else value
        budget[0] -= len(value)
        for item in items:
            _mark_arrays(item, ndarray, marks, depth - 1, budget)


def _byte_offset(view, owner):
    """Where the contiguous byte view `view` starts in the bytearray/bytes `owner`, or None
    when that cannot be known without copying: Python exposes no buffer address, ctypes does
    for writable memory only (a read-only view is then saved as a copy: nothing can write
    through it anyway)."""
    if view.nbytes == len(owner):
        return 0  # a contiguous view as long as its owner starts where it does
    if view.readonly or type(owner) is not bytearray or not view.nbytes:
        return None
    try:
        import ctypes
        start = ctypes.addressof(ctypes.c_char.from_buffer(view)) - \
            ctypes.addressof(ctypes.c_char.from_buffer(owner))
    except (ImportError, TypeError, ValueError):
        return None
    return start if 0 <= start <= len(owner) - view.nbytes else None


def _same(value):
    return value


def _memoryview_reduce(view, out_of_band=_same):
    """cloudpickle saves a memoryview as bytes: its type was lost, and its tie to the
    bytearray it views (writes no longer went through). A contiguous view of a bytearray or
    bytes is saved as (owner, start, stop): the owner is the same object as the variable
    holding it, in the same record (`out_of_band`: the stand-in the snapshot gave a large
    one). Any other view is saved as a memoryview of a copy, with its format and shape."""
    readonly = view.readonly
    if not view.c_contiguous:
        view = memoryview(view.tobytes()).cast(view.format, view.shape)
    owner = view.obj
    start = _byte_offset(view, owner) if type(owner) in (bytes, bytearray) else None
    if start is None:
        owner, start = view.tobytes(), 0
    shape = None if view.format == "B" and view.ndim == 1 else list(view.shape)
    return (_rebuild.memoryview_of, (out_of_band(owner), start, start + view.nbytes, readonly,
                                     view.format, shape))


def _standard_reduction(t, ndarray):
    """True when the ndarray subclass `t` pickles as ndarray does (recarray, matrix, most
    notebook subclasses): its array part may be saved as a view instead."""
    return all(getattr(t, n, None) is getattr(ndarray, n)
               for n in ("__reduce__", "__reduce_ex__", "__setstate__", "__getstate__"))


def _subclass_view_reduce(arr, ndarray, copied):
    """An ndarray subclass instance that is a view of memory another object holds too
    (`data.view(np.recarray)`, np.asmatrix(a)): `_rebuild.subclass_view`, a view of the same
    restored owner again, of the same class, with its instance attributes. A subclass with
    its own pickling (numpy.ma.MaskedArray) is left to it, a copy: its type name is added to
    `copied` (the checkpoint report says so). None when it shares nothing (numpy's copy)."""
    rv = _array_view_reduce(arr, ndarray)
    if rv is None:
        return None
    t = type(arr)
    if not _standard_reduction(t, ndarray):
        copied.append(f"{t.__module__}.{t.__qualname__}")
        return None
    attrs = getattr(arr, "__dict__", None)
    return (_rebuild.subclass_view, rv[1] + (t, dict(attrs) if attrs else None))


class RefusedOnRestore(pickle.PicklingError):
    """The group holds an instance of a type a checked restore refuses (the deny-list): it
    would be saved, then refused when restored. The snapshot skips what holds it instead."""


def refused_identity(ident):
    """Why a checked restore refuses a global whose real identity is `ident` ("posix.system",
    "pandas.io.formats.style.Styler": every module/name split is judged against the
    deny-list, as the restore's judge does), as the text a skipped variable shows; else None."""
    if not isinstance(ident, str) or "." not in ident:
        return None
    from ..trust.rules import why_denied  # (imported late: _trust loads its lists on first use)
    parts = ident.split(".")
    for i in range(len(parts) - 1, 0, -1):
        why = why_denied(".".join(parts[:i]), ".".join(parts[i:]))
        if why:
            return (f"a checked restore would refuse it: it holds {ident}, which the restore's "
                    f"deny-list refuses ({why}); re-create it after restore")
    return None


def refused_type(t):
    """Why a checked restore refuses an instance of the library type `t` (its class is a
    global of the stream: pandas' Styler "reads or writes files, evaluates expressions"),
    else None."""
    mod, qual = getattr(t, "__module__", None), getattr(t, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        return None
    return refused_identity(f"{mod}.{qual}")


_PLAIN, _CLASS, _FUNCTION, _LRU, _ARRAY, _NO_VIEWS, _MEMORYVIEW, _SUBARRAY, _REFUSED = range(9)
_NO_VIEW_PACKAGES = ("pandas",)


def _action(t, ndarray):
    """What reducer_override does with objects of type `t` (decided once per type)."""
    try:
        if issubclass(t, type):
            return _CLASS
    except TypeError:
        return _PLAIN
    if t is types.FunctionType:
        return _FUNCTION
    if t is LRU_WRAPPER:
        return _LRU
    if t is memoryview:
        return _MEMORYVIEW
    if refused_type(t) is not None:
        return _REFUSED
    if ndarray is not None:
        if t is ndarray:
            return _ARRAY
        mod = getattr(t, "__module__", None)
        if isinstance(mod, str) and mod.split(".", 1)[0] in _NO_VIEW_PACKAGES:
            return _NO_VIEWS
        if issubclass(t, ndarray):
            return _SUBARRAY
    return _PLAIN


# -- the picklers ---------------------------------------------------------------------------

# _fresh_memo: a pickler serving many records gets a NEW memo per record (`memo = {}`), not
# `clear_memo()`: the C pickler's memo table never shrinks, and clear_memo walks and zeroes
# every slot it ever grew to, so after one large group each small one paid for it (300
# clears after a 5,000-list dump: 4.1 ms against 1.3 ms in Pyodide, 45 against 8 after 50,000).


class _Policy:
    """Shared decision of both picklers; `begin_group` sets what changes per record."""

    def _el_init(self, namespace, refs):
        self._el_namespace = namespace
        self._el_refs = refs  # id(def) -> top-level name, for defs of other groups
        self._el_ndarray = numpy_ndarray()
        self._el_no_views = set()  # ids of arrays pickled as copies (inside pandas objects)
        self._el_actions = {}
        self.el_copied_views = []  # subclass views saved as copies (types), for the report
        # the group's stand-in for a large bytes/bytearray (its buffer out of band), set by
        # the snapshot per group: a memoryview's owner must be the very object its variable is
        self.el_out_of_band = _same

    def begin_group(self, refs):
        """Ready for the next record: empty memo, the refs of that group."""
        self.memo = {}  # see _fresh_memo
        self._el_refs = refs
        self._el_no_views = set()
        self.el_copied_views = []
        ndarray = numpy_ndarray()
        if ndarray is not self._el_ndarray:  # numpy was imported since: decide types again
            self._el_ndarray = ndarray
            self._el_actions = {}

    def _el_override(self, obj):
        t = type(obj)
        action = self._el_actions.get(t)
        if action is None:
            action = self._el_actions[t] = _action(t, self._el_ndarray)
        if action is _PLAIN:
            return NotImplemented
        if action is _REFUSED:
            raise RefusedOnRestore(refused_type(t))
        if action is _MEMORYVIEW:
            return _memoryview_reduce(obj, self.el_out_of_band)
        if action is _ARRAY:
            rv = None if id(obj) in self._el_no_views else \
                _array_view_reduce(obj, self._el_ndarray)
            return self._el_array(obj) if rv is None else rv
        if action is _SUBARRAY:
            rv = None if id(obj) in self._el_no_views else _subclass_view_reduce(
                obj, self._el_ndarray, self.el_copied_views)
            return NotImplemented if rv is None else rv
        if action is _NO_VIEWS:
            reduce = self.dispatch_table.get(t) if isinstance(
                getattr(self, "dispatch_table", None), dict) else None
            rv = reduce(obj) if reduce is not None else obj.__reduce_ex__(self.proto)
            if type(rv) is tuple:
                _mark_arrays(rv[1:], self._el_ndarray, self._el_no_views)
            return rv
        name = self._el_refs.get(id(obj))
        if name is not None:
            return (_rebuild.ref, (name,))
        if action is _CLASS:
            return self._el_class(obj)
        if action is _FUNCTION:
            if obj.__globals__ is self._el_namespace:
                return _function_reduce(obj)
            if _is_notebook_singledispatch(obj, self._el_namespace):
                return _singledispatch_reduce(obj)
            return self._el_function(obj)
        if action is _LRU and _is_notebook_lru(obj, self._el_namespace):
            return _lru_reduce(obj)
        return NotImplemented


def _import_home(obj):
    """Import the module a library class or function says it lives in when only its package
    is imported so far. numpy 2 sets np.recarray's module to numpy.rec, a submodule loaded on
    first use: cloudpickle, not finding it in sys.modules, saved the whole recarray class by
    value, and the restored recarray was an instance of a copy of it, not np.recarray.
    (pickle itself imports the module of every global it saves.)"""
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str) or mod in sys.modules or "." not in mod:
        return
    if mod.rpartition(".")[0] not in sys.modules:
        return
    try:
        importlib.import_module(mod)
    except Exception:  # not importable: cloudpickle decides as before
        pass


class CloudPickler(_Policy, cloudpickle.Pickler):
    """cloudpickle, plus our rules, with its per-object Python overhead trimmed: one
    `reducer_override` call per non-builtin object (decided per type), and a plain dict as
    the dispatch table."""

    def __init__(self, file, namespace, refs, buffer_callback=None):
        # The C pickler reads `dispatch_table` once, in its __init__: it must be there before.
        table = dict(copyreg.dispatch_table)  # read now: copyreg.pickle() may add later
        table.update(cloudpickle.Pickler._dispatch_table)
        self.dispatch_table = table
        cloudpickle.Pickler.__init__(self, file, protocol=PROTOCOL,
                                     buffer_callback=buffer_callback)
        self._el_init(namespace, refs)
        self._el_byref = {}  # id -> (function,): library functions pickled by reference

    def begin_group(self, refs):
        _Policy.begin_group(self, refs)
        self.globals_ref = {}  # cloudpickle's per-dump sharing of non-notebook globals

    def _el_class(self, obj):
        if obj.__module__ in ("__main__", self._el_namespace.get("__name__", "__main__")):
            return _class_reduce(obj)
        _import_home(obj)
        if _cp_class_reduce is not None:
            return _cp_class_reduce(obj)
        return cloudpickle.Pickler.reducer_override(self, obj)

    def _el_function(self, obj):
        # Library functions met again and again (numpy's _frombuffer in every array's
        # reduction) are decided once per snapshot: cloudpickle looks each one up by name.
        known = self._el_byref.get(id(obj))
        if known is not None and known[0] is obj:
            return NotImplemented
        _import_home(obj)
        rv = cloudpickle.Pickler.reducer_override(self, obj)
        if rv is NotImplemented:
            self._el_byref[id(obj)] = (obj,)
        return rv

    def _el_array(self, obj):
        return NotImplemented  # numpy's own reduction: a PickleBuffer at protocol 5

    reducer_override = _Policy._el_override


class DillPickler(_Policy, dill.Pickler):
    def __init__(self, file, namespace, refs, buffer_callback=None):
        dill.Pickler.__init__(self, file, protocol=PROTOCOL, buffer_callback=buffer_callback)
        self._el_init(namespace, refs)

    def _el_class(self, obj):
        return NotImplemented  # dill keeps slots and class details itself

    def _el_function(self, obj):
        return NotImplemented

    def _el_array(self, obj):
        # dill would save an ndarray with its protocol-2 __reduce__ (the data copied into the
        # stream); numpy's protocol-5 reduction hands a PickleBuffer to buffer_callback.
        return obj.__reduce_ex__(self.proto)

    def reducer_override(self, obj):
        if type(obj) is _RLOCK_TYPE:  # only dill reaches here: cloudpickle refuses locks
            return _rlock_reduce(obj)
        return self._el_override(obj)


class Discard:
    """A file that takes everything and keeps nothing."""

    @staticmethod
    def write(buf):
        return len(buf) if isinstance(buf, bytes) else memoryview(buf).nbytes


def _out_of_band_nothing(buf):
    return False


_PROBE_LEAVES = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray,
                           type(Ellipsis), type(NotImplemented), range, types.ModuleType,
                           types.BuiltinFunctionType, pickle.PickleBuffer})


def _saved_children(obj, policy):
    """What pickling `obj` with `policy`'s rules saves next, in pickle's order."""
    t = type(obj)
    if t is list or t is tuple or t is set or t is frozenset:
        return obj
    if t is dict:
        return [x for item in obj.items() for x in item]
    rv = policy.reducer_override(obj)
    if rv is NotImplemented:
        if isinstance(obj, type) or t is types.FunctionType:
            return ()  # by reference
        reduce = policy.dispatch_table.get(t)
        rv = reduce(obj) if reduce is not None else obj.__reduce_ex__(PROTOCOL)
    if not isinstance(rv, tuple):
        return ()  # a global's name
    func, args, state, listitems, dictitems = (rv + (None,) * 5)[:5]
    out = [func, *(args or ())]
    if listitems is not None:
        out.extend(listitems)
    if dictitems is not None:
        out.extend(x for item in dictitems for x in item)
    if state is not None:
        out.append(state)
    return out


def too_deep(values, namespace, refs, limit):
    """True when pickling `values` (with our rules; `refs`: the defs of other groups) nests
    more than `limit` saves: the C pickler recurses natively once per save, and in Pyodide
    the JavaScript stack overflows first (a fatal error that ends the kernel, no
    RecursionError). Told by going depth first through what pickle would save, in its order,
    each object once (its memo), with a list for a stack: no recursion here (Python's own
    pickler recurses natively too, through save_reduce). Anything that stops it (a reducer
    that fails) is left to the real pickling to report."""
    policy = CloudPickler(Discard(), namespace, refs, buffer_callback=_out_of_band_nothing)
    seen = {}  # id -> object (kept alive: the ids stay theirs)
    stack = [iter(values)]
    leaves = _PROBE_LEAVES
    try:
        while stack:
            for child in stack[-1]:
                if type(child) in leaves or id(child) in seen:
                    continue
                seen[id(child)] = child
                stack.append(iter(_saved_children(child, policy)))
                if len(stack) > limit:
                    return True
                break
            else:
                stack.pop()
    except Exception:  # not picklable, a reducer that fails...: the real attempt says so
        return False
    return False


def load(serializer, payload, buffers=()):
    """Unpickle one record's stream (already validated by the C core); `buffers` are its
    out-of-band buffers in NEXT_BUFFER order (writable memoryviews: arrays stay writable)."""
    if serializer == "dill":
        return dill.loads(bytes(payload), buffers=buffers)
    return pickle.loads(payload, buffers=buffers)


class _PlainUnpickler(pickle.Unpickler):
    """For the manifest of a format 1.0 checkpoint (a plain pickle): plain data only, it
    may not import anything. Format 2.0 manifests are JSON."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"the checkpoint manifest refers to {module}.{name}; a manifest holds plain data "
            "only, so this checkpoint was altered or damaged")


def load_plain(payload):
    return _PlainUnpickler(io.BytesIO(payload)).load()


# -- the plain pickler: groups that need none of the rules above ------------------------------
#
# Our reducer_override is one Python call per object that is not a builtin container or
# atomic value (0.4 us each in Pyodide: 20,000 instances cost 8 ms more than pickle.dumps).
# What decides, cheaply and before any byte reaches a record (the snapshot loop, _Pool):
# - `PlainCheck` pickles a group into a bounded sink with a reducer_override that stops at
#   the first object that would need one. A group that gets through holds only builtin
#   containers and atomic values (its stream imports nothing at all); small ones share
#   records. Plain data gains nothing from the plain pickler otherwise (no reducer is called
#   for it), so larger plain groups stay with cloudpickle.
# - A group that stopped at an object that is not the notebook's own (an instance of a
#   library class: a datetime, a Decimal, a Counter...) is written by `PlainPickler`, the C
#   pickler as it is (serializer "pickle"). pickle saves functions and classes by reference,
#   checking that the name leads back to the very object, and raises on lambdas, local or
#   redefined classes, modules, code objects. A stream that would import from the notebook's
#   module (`__main__`: in a kernel, its classes are there by name) is stopped as soon as it is
#   written (`NotebookReference`): the group is rewound and cloudpickle writes it, by our rules.
# Never while numpy is imported (the view rules live in reducer_override) or a module is
# registered with cloudpickle to be pickled by value (`plain_allowed`).

class NotPlain(Exception):
    """The plain check met an object that needs a reducer (`.notebook`: one of the notebook's
    own: a function, class or instance of a class defined in it; `.obj`: that object)."""

    def __init__(self, notebook, obj=None):
        super().__init__("not plain data")
        self.notebook = notebook
        self.obj = obj


class TooBig(Exception):
    """The plain check's stream grew past its limit."""


class NotebookReference(pickle.PicklingError):
    """The plain pickler was about to import something from the notebook's module."""


def notebook_modules(namespace):
    """Module names the notebook's own functions and classes carry (`__module__`)."""
    return {"__main__", namespace.get("__name__") or "__main__"}


def plain_allowed():
    """The plain pickler may write a group: numpy is not imported, no module is registered
    with cloudpickle to be pickled by value."""
    if numpy_ndarray() is not None:
        return False
    listed = getattr(cloudpickle.cloudpickle, "list_registry_pickle_by_value", None)
    return listed is not None and not listed()


class _Bounded:
    """A file that only counts what is written, and stops past `limit` bytes."""

    def __init__(self, limit):
        self.limit = limit
        self.size = 0

    def write(self, buf):
        n = len(buf) if isinstance(buf, bytes) else memoryview(buf).nbytes
        self.size += n
        if self.size > self.limit:
            raise TooBig()
        return n


class _CheckPickler(pickle.Pickler):
    def reducer_override(self, obj):
        modules = self.el_modules
        t = type(obj)
        module = getattr(obj if t is type or t is types.FunctionType else t, "__module__", None)
        raise NotPlain(module in modules, obj)


class PlainCheck:
    """`size(values)`: the pickled size of `values` if they are plain data no larger than
    `limit` bytes; else raises NotPlain or TooBig (early: at the first object that needs a
    reducer, or once the stream passes the limit)."""

    def __init__(self, namespace, limit):
        self._sink = _Bounded(limit)
        self._pickler = _CheckPickler(self._sink, protocol=PROTOCOL,
                                      buffer_callback=self._buffer)
        self._pickler.el_modules = notebook_modules(namespace)

    @staticmethod
    def _buffer(buf):
        raise NotPlain(False)  # a PickleBuffer: a record of its own (its buffer out of band)

    def size(self, values):
        text = _ascii_size(values)
        if text is not None:  # strings: no need to encode them to know
            if text > self._sink.limit:
                raise TooBig()
            return text
        self._sink.size = 0
        self._pickler.memo = {}  # see _fresh_memo
        self._pickler.dump(values)
        return self._sink.size


def _ascii_size(values):
    """What pickle.dumps(values, 5) takes for a tuple of 1 to 3 ASCII strings (str.isascii is
    a flag: no pass over the text) under 64 KiB in all (one frame), else None. Each string is
    SHORT_BINUNICODE or BINUNICODE + MEMOIZE; around them PROTO, FRAME, TUPLEn, MEMOIZE,
    STOP. A string bound twice would be a memo get instead (smaller): an upper bound."""
    if type(values) is not tuple or not 0 < len(values) <= 3:
        return None
    total = 2 + 9 + 3
    for v in values:
        if type(v) is not str or not v.isascii():
            return None
        total += len(v) + (3 if len(v) < 256 else 6)
    return total if total < 65536 else None


class _NotebookGuard:
    """The plain pickler's file: forwards to `file`, and raises NotebookReference when a
    write carries the name of the notebook's module the way pickle writes a global's module
    (SHORT_BINUNICODE, at protocol 4 and later)."""

    def __init__(self, file, modules):
        self.file = file
        self.needles = [b"\x8c" + bytes([len(m.encode())]) + m.encode()
                        for m in modules if len(m.encode()) < 256]

    def write(self, buf):
        for needle in self.needles if type(buf) is bytes else ():  # frames are bytes
            if needle in buf:
                raise NotebookReference("the group refers to the notebook's own functions or "
                                        "classes: cloudpickle writes it")
        return self.file.write(buf)


class PlainPickler(pickle.Pickler):
    """The C pickler as it is, into `file` through the notebook guard (see above).

    Instances of the notebook's own classes go through it too, when their class is a def of
    another group (`begin_group`'s `seeds`: the defs the walk saw the group reach): the C
    pickler calls no Python per instance, where our reducer_override costs one call each
    (24,000 instances: a third of `pickle.dumps` in Pyodide). The stream then starts with
    `_rebuild.ref(name)` of each seed, memoized and popped (`_seed_prefix`), and the pickler's
    memo is seeded with those objects under the same memo indices: wherever it meets one it
    writes a memo get of the ref -- what cloudpickle with our rules writes for a def of another
    group, there on its first meeting. Anything else of the notebook's own (a def not seeded,
    a lambda, a class of this group) would be a global of the notebook's module, which the
    guard stops: the group is rewound and cloudpickle writes it."""

    def __init__(self, file, namespace, buffer_callback=None):
        self._el_file = file
        super().__init__(_NotebookGuard(file, notebook_modules(namespace)), protocol=PROTOCOL,
                         buffer_callback=buffer_callback)

    def begin_group(self, refs, seeds=()):
        """Ready for the next record; `seeds`: (name, def) pairs to refer to by name."""
        self.memo = {i: (i, obj) for i, (_, obj) in enumerate(seeds)}  # see _fresh_memo
        if seeds:
            self._el_file.write(_seed_prefix(tuple(name for name, _ in seeds)))


_REF_GLOBAL = None


def _short_unicode(text):
    raw = text.encode("utf-8")
    if len(raw) < 256:
        return pickle.SHORT_BINUNICODE + bytes([len(raw)]) + raw
    return pickle.BINUNICODE + len(raw).to_bytes(4, "little") + raw


@functools.lru_cache(maxsize=64)
def _seed_prefix(names):
    """PROTO 5, then per name: `_rebuild.ref(name)` MEMOIZE POP (memo index i for the i-th
    name, as the seeded pickler's memo says). The pickler's own PROTO and frames follow."""
    global _REF_GLOBAL
    if _REF_GLOBAL is None:
        _REF_GLOBAL = (_short_unicode(_rebuild.ref.__module__) + _short_unicode("ref")
                       + pickle.STACK_GLOBAL)
    parts = [pickle.PROTO, bytes([PROTOCOL])]
    for name in names:
        parts += [_REF_GLOBAL, _short_unicode(name), pickle.TUPLE1, pickle.REDUCE,
                  pickle.MEMOIZE, pickle.POP]
    return b"".join(parts)
