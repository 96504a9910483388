"""Load-time helpers that checkpoint pickles call by name.

Every pickle Elastic Lite writes may contain GLOBAL references to the functions below
(`elastic_lite._rebuild.make_function`, `...function_setstate`, `...ref`, `...make_class`,
`...array_view`, `...subclass_view`, `...memoryview_of`, `...make_lru_cache`,
`...make_singledispatch`, `...make_rlock`). They are the only code of ours that unpickling runs, so they are kept
small, stable and free of side effects beyond what restore needs. Renaming any of them breaks old checkpoints.

Two ideas live here:
- Notebook functions are rebuilt with the LIVE namespace as their globals (the dict the
  restore writes into), not a private copy, so `scale = 100` after restore is seen by `f`.
- A reference to a notebook function or class bound to a top-level name in another record
  is written as `ref(name)`: the loader restores that record (once) and hands back the very
  object, so identity and `isinstance` hold across records.
"""

import functools
import sys
import threading
import types

_state = threading.local()


class RestoreContext:
    """What a running restore exposes to the helpers: the target namespace, a resolver, and
    the warnings they raise (things rebuilt, but not exactly as they were)."""

    def __init__(self, namespace, resolve):
        self.namespace = namespace
        self.resolve = resolve  # name -> object; loads the record defining it on demand
        self.warnings = []


def _warn(message):
    ctx = getattr(_state, "ctx", None)
    if ctx is not None:
        ctx.warnings.append(message)


def current():
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        raise RuntimeError(
            "this pickle was written by elastic_lite and refers to other records of its "
            "checkpoint; load it with elastic_lite.load_snapshot(), not pickle.loads()"
        )
    return ctx


def push(ctx):
    prev = getattr(_state, "ctx", None)
    _state.ctx = ctx
    return prev


def pop(prev):
    _state.ctx = prev


def ref(name):
    """The object bound to `name` in this checkpoint (restored from its own record)."""
    return current().resolve(name)


def _empty_cell():
    if False:  # noqa: the assignment makes `cell` a free variable of the lambda
        cell = None
    return (lambda: cell).__closure__[0]  # noqa: F821


def make_function(code, name, n_cells):
    """A function skeleton whose globals are the live namespace; state comes after."""
    ns = current().namespace
    closure = tuple(_empty_cell() for _ in range(n_cells)) if n_cells else None
    return types.FunctionType(code, ns, name, None, closure)


def function_setstate(func, state):
    """Fill a skeleton from `make_function`. Done after memoization so cycles work."""
    attrs, cells, fdict = state
    for i, value in cells.items():  # only the cells that were filled when saved
        func.__closure__[i].cell_contents = value
    for key, value in attrs.items():
        setattr(func, key, value)
    if fdict:
        func.__dict__.update(fdict)


def _skip_init_subclass(cls, **kwargs):
    pass


def _notebook_class(klass):
    """Defined in the namespace being restored (its module is the notebook's)."""
    ctx = getattr(_state, "ctx", None)
    name = ctx.namespace.get("__name__", "__main__") if ctx is not None else "__main__"
    return getattr(klass, "__module__", None) in ("__main__", name)


def _skeleton(cp, hooks, *args):
    """cloudpickle's skeleton class, with the `__init_subclass__` of the classes `hooks`
    skipped while it is built."""
    saved = [(k, k.__dict__["__init_subclass__"]) for k in hooks]
    for k, _ in saved:
        k.__init_subclass__ = classmethod(_skip_init_subclass)
    try:
        if _notebook_metaclass(args[0]):
            return _bare_class(*args)
        return cp._make_skeleton_class(*args)
    finally:
        for k, hook in saved:
            k.__init_subclass__ = hook


def _notebook_metaclass(meta):
    """A metaclass whose every `__new__`/`__init__` (besides type's) is the notebook's own:
    like a notebook `__init_subclass__`, what they did is in the restored state (a class
    registry), and run again they would do it twice."""
    if not isinstance(meta, type) or meta is type:
        return False
    own = [k for k in meta.__mro__ if k not in (type, object)
           and ("__new__" in k.__dict__ or "__init__" in k.__dict__)]
    return bool(own) and all(map(_notebook_class, own))


def _bare_class(meta, name, bases, type_kwargs, tracker_id, extra):
    """The skeleton made by `type.__new__` alone: a notebook metaclass's own code is not run."""
    return type.__new__(meta, name, bases, {sys.intern(k): v for k, v in type_kwargs.items()})


def make_class(type_constructor, name, bases, type_kwargs, tracker_id, extra):
    """A notebook class, as cloudpickle's skeleton builds it (its state comes after), but
    made by the class statement it had: `type_kwargs` carries `__slots__` too.

    The bases' `__init_subclass__` ran when the class was first made; what it did to the
    class is in the class's state, and what it did to notebook objects (a registry, a
    counter) is in theirs, both restored. When every such hook is the notebook's own, it is
    skipped here: run again it would register the class twice, wrap its methods twice...
    The same holds for a notebook metaclass's `__new__`/`__init__` (`_notebook_metaclass`).
    A library's hook runs (it may set up what no state holds), without the keyword arguments
    the class statement once passed it (Python keeps them nowhere); if it refuses to run
    without them, the class is built with that hook skipped, which is reported."""
    from cloudpickle import cloudpickle as cp
    # No class tracking (tracker id None): cloudpickle would hand back a class of the same
    # id already in this process and then overwrite its methods with the restored ones,
    # whose globals are the namespace being restored into — a live class of the notebook
    # would change under its feet. A restore makes its own class; within one restore,
    # every record reaches it through `ref`.
    tracker_id = None
    args = (type_constructor, name, bases, type_kwargs, tracker_id, extra)
    hooks = {k for b in bases if isinstance(b, type) for k in b.__mro__
             if "__init_subclass__" in k.__dict__ and k is not object}
    if hooks and all(map(_notebook_class, hooks)):
        return _skeleton(cp, hooks, *args)
    try:
        return _skeleton(cp, (), *args)
    except TypeError as exc:
        why = str(exc)
        owner = next((k for b in bases if isinstance(b, type) for k in b.__mro__
                      if "__init_subclass__" in k.__dict__ and k is not object), None)
        if owner is None:
            raise
        cls = _skeleton(cp, [owner], *args)
    _warn(f"class {name} was not rebuilt faithfully: {owner.__qualname__}.__init_subclass__ "
          f"needs the keyword arguments of the original class statement ({why}), which are "
          "not recorded anywhere; it was skipped. Attributes it set on the class are "
          "restored, other effects (a registry, a check) are not")
    return cls


def pointer_bearing(dtype):
    """Does a numpy dtype hold pointers (object, a structured or subarray dtype with such a
    field, numpy 2's StringDType)? Decided from its structure, not from its flags (a pickled
    dtype's flags come from the file)."""
    if dtype.hasobject or dtype.kind in ("O", "T"):
        return True
    if dtype.subdtype is not None and pointer_bearing(dtype.subdtype[0]):
        return True
    return any(pointer_bearing(f[0]) for f in (dtype.fields or {}).values())


def array_view(owner, offset, shape, strides, dtype, writeable):
    """A numpy array that is a view of `owner` (a restored array, bytes or bytearray):
    reads and writes go through to it, as they did before the checkpoint. Elastic Lite
    writes views of plain dtypes only: a dtype holding pointers over these bytes (values the
    file would choose) is refused, and numpy checks the view stays inside `owner`."""
    import numpy
    dtype = numpy.dtype(dtype)
    if pointer_bearing(dtype):
        raise ValueError(f"array_view: a view of dtype {dtype} over bytes would read pointers "
                         "from them; Elastic Lite never writes one, so this record was made "
                         "elsewhere. It was not restored")
    if type(offset) is not int or offset < 0:
        raise ValueError(f"array_view: offset {offset!r} is not a byte offset")
    arr = numpy.ndarray(shape, dtype=dtype, buffer=owner, offset=offset, strides=strides)
    if not writeable and arr.flags.writeable:
        arr.flags.writeable = False
    return arr


def subclass_view(owner, offset, shape, strides, dtype, writeable, cls, attrs):
    """An instance of the ndarray subclass `cls` (np.recarray, np.matrix, a notebook's own)
    that is a view of `owner` as `array_view` makes it, with its instance attributes back:
    writes go through to the owner and its other views, as they did before."""
    import numpy
    if not (isinstance(cls, type) and issubclass(cls, numpy.ndarray)):
        raise TypeError(f"{cls!r} is not an ndarray subclass")
    arr = array_view(owner, offset, shape, strides, dtype, writeable).view(cls)
    if attrs:
        arr.__dict__.update(attrs)
    return arr


def memoryview_of(owner, start, stop, readonly, fmt="B", shape=None):
    """A memoryview of bytes `start:stop` of `owner` (a restored bytearray or bytes), cast
    to its format and shape: writes go through to the owner, as they did before."""
    view = memoryview(owner)[start:stop]
    if shape is not None or fmt != "B":
        view = view.cast(fmt, shape) if shape is not None else view.cast(fmt)
    return view.toreadonly() if readonly and not view.readonly else view


def make_lru_cache(func, maxsize, typed):
    """A notebook function wrapped by functools.lru_cache/cache (its cache starts empty)."""
    return functools.lru_cache(maxsize=maxsize, typed=typed)(func)


def make_singledispatch(func, impls):
    """A notebook function wrapped by functools.singledispatch, with its registrations
    [(class, implementation)] (its dispatch cache starts empty)."""
    wrapper = functools.singledispatch(func)
    for cls, impl in impls:
        wrapper.register(cls, impl)
    return wrapper


def make_rlock(count):
    """A threading.RLock held `count` times by the restoring thread (0: unlocked)."""
    lock = threading.RLock()
    for _ in range(count):
        lock.acquire()
    return lock
