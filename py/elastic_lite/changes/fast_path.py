"""Which variables may have changed since a checkpoint, without looking at them: the fast
path of change detection (automatic points after small cells).

Between two checkpoints of a namespace to one store, `Changes` collects the names the code
that ran there could have changed, read from that code itself (its bytecode: the global
names it reads, binds and deletes), or gives up (`full`: the reason why everything must be
walked and pickled again, as without this module). `changes.tracker.Reuse` hands it to the
snapshot loop: a record none of whose variables was named by such code (and none of the
records it refers to through a notebook class or function) is taken as unchanged without
being walked or pickled (see _snapshot, "untouched").

Only for namespaces whose code runs as cells: IPython's user namespace (the kernels of
JupyterLite and Jupyter), or one declared with `cells_run_in` (a host that runs every cell
as code in it); for any other dict, a program may change its objects from its own code,
which nothing here sees.

How code is seen: Python 3.12's `sys.monitoring` reports the start and every resumption of
Python code (PY_START, PY_RESUME, PY_THROW) while some `Changes` is armed; each code object
reports once between two checkpoints (then it is switched off until the next one re-arms: a
loop calling a notebook function pays one event). Every
piece of code whose globals are a watched namespace is analysed once (cached per code
object, nested code objects included):
- the names it reads, binds or deletes become "touched": an object changed in place by it
  is reachable from one of them (or from what its calls return: its arguments are named
  too, and a notebook function it calls is code of the namespace, analysed when it starts);
- it gives up (`full`) on what reaches objects without naming them: globals(), vars(),
  locals(), getattr()/setattr()/delattr(), __import__, type(), super(), object, eval
  (exec and eval of code in the namespace are seen as code of their own), any dunder
  attribute (`x.__dict__`, `f.__globals__`, `obj.__class__`), IPython's output history
  (`_`, `Out`, ...), an import of a module outside SAFE_MODULES, a name bound to such a
  module;
- a notebook function (or class body, generator, lambda) counts only when it is called,
  directly or through other notebook code, by top-level code of the namespace (a cell, code
  run in it): called from elsewhere (a library's callback, a thread) it gives up. It is
  judged at its first start between two checkpoints: the same function started again later
  in that interval by the standard library (an asyncio callback) is not seen again.
Code outside the namespace: the standard library and the kernel's machinery (IPython,
ipykernel, Pyodide's kernel, elastic_lite itself) are ignored (they change only what they
are handed); any other library code called by the notebook's code (a Python function of
numpy, pandas, a plotting library) gives up.
When the checkpoint is taken while code of the namespace is on the stack (a cell calling
`el.checkpoint`, any thread running notebook code), that code's names count for the next
one too (or it gives up, for a notebook function).

What the fast path assumes (said in docs/BENCHMARKS.md too): library code that
runs on its own (not called by the notebook's code: a library's timer or event callback)
changes no notebook variable in place (one that calls a notebook function is seen: that
gives up); objects that only a library class or module holds (pickled by reference, never
walked by the grouping) are not also the data of a notebook variable; JavaScript does not
change Python objects in place through proxies (bindings replaced from outside are still
seen: `changes.tracker` compares the id and the length of every variable it takes as untouched). Without sys.monitoring (CPython
3.11) every checkpoint walks everything, as before.
"""

import atexit
import builtins
import dis
import os
import sys
import sysconfig
import threading
import weakref

from ..replay.cell_ast import IPYTHON_HISTORY

_MON = getattr(sys, "monitoring", None)
_TOOL_IDS = (4, 3)  # the free tool ids (0-2 and 5 are the debugger's, coverage's, ...)

# Modules code may import or name without giving up: their functions change only what they
# are handed (their state is no notebook data). random's global generator is saved anyway
# (_random_state, at every checkpoint).
SAFE_MODULES = frozenset({
    "math", "cmath", "operator", "json", "re", "string", "itertools", "statistics",
    "datetime", "time", "textwrap", "collections", "random", "fractions", "decimal",
    "elastic_lite",
})
OPAQUE_NAMES = frozenset({
    "globals", "vars", "locals", "getattr", "setattr", "delattr", "__import__", "type",
    "super", "object", "eval", "__builtins__", "builtins", "breakpoint", "get_ipython",
})
# Code whose globals are not the namespace and that is the kernel's own machinery.
_MACHINERY = ("IPython", "ipykernel", "traitlets", "comm", "jupyter_client", "jupyter_core",
              "zmq", "tornado", "pyodide", "_pyodide", "pyodide_kernel", "piplite", "micropip",
              "elastic_lite", "cloudpickle", "dill", "jedi", "parso", "prompt_toolkit",
              "pygments", "decorator", "executing", "stack_data", "asttokens", "pure_eval",
              "wcwidth", "matplotlib_inline", "debugpy", "psutil", "platformdirs")
# The JupyterLite extension's command wrapper (js/extension/src/python.ts): it calls
# elastic_lite's host operations only (restore forgets every change tracker anyway).
_HOST_WRAPPER = "_elastic_lite_cmd"

_GLOBAL_OPS = frozenset({"LOAD_NAME", "LOAD_GLOBAL", "STORE_NAME", "STORE_GLOBAL",
                         "DELETE_NAME", "DELETE_GLOBAL", "LOAD_FROM_DICT_OR_GLOBALS"})
_ATTR_OPS = frozenset({"LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR", "LOAD_METHOD",
                       "LOAD_SUPER_ATTR"})


class Changes:
    """What may have changed in one namespace since it was armed (see the module doc)."""

    __slots__ = ("ns_id", "names", "full", "__weakref__")

    def __init__(self, namespace):
        self.ns_id = id(namespace)
        self.names = set()  # names code of the namespace read, bound or deleted
        self.full = None  # why every variable must be looked at again, or None

    def give_up(self, why):
        if self.full is None:
            self.full = why


class _State:
    tool = None  # the sys.monitoring tool id we hold, or None
    on = False  # events switched on
    quiet = 0  # > 0 while elastic_lite's own checkpoint code runs (not the notebook's)
    armed = {}  # id(namespace) -> WeakSet of Changes still collecting
    analysed = {}  # id(code) -> (code, names, reason or None, harmless)
    machinery = {}  # co_filename -> bool
    cells = {}  # id(namespace) -> namespace, for the namespaces of cells_run_in()
    lock = threading.Lock()


def available():
    """True where the fast path can work (Python 3.12+: sys.monitoring)."""
    return _MON is not None


def cells_run_in(namespace):
    """Declares that the code changing `namespace`'s objects runs with it as its globals (a
    notebook's cells, code exec'd in it, functions defined there): its checkpoints may take
    the fast path. IPython's user namespace is taken as such without asking (the kernels of
    JupyterLite and Jupyter); any other namespace is not (a program may change a dict's
    objects from its own code, which no cell analysis sees)."""
    _State.cells[id(namespace)] = namespace


def _cells_only(namespace):
    if id(namespace) in _State.cells:
        return True
    from ..capture.selection import ipython_shell
    shell = ipython_shell()
    return shell is not None and getattr(shell, "user_ns", None) is namespace


def arm(namespace):
    """A new Changes of `namespace`, collecting from now on."""
    changes = Changes(namespace)
    if not available() or not _start():
        changes.give_up("this Python has no sys.monitoring (3.12+): every checkpoint walks "
                        "every variable")
        return changes
    if not _cells_only(namespace):
        changes.give_up("not a namespace whose code runs as cells (an IPython shell's, or "
                        "one given to changes.fast_path.cells_run_in): every checkpoint walks every "
                        "variable")
        return changes
    intact()
    with _State.lock:
        _State.armed.setdefault(id(namespace), weakref.WeakSet()).add(changes)
    # once it is gone (dropped with its tracker, or with a report), the events go off when no
    # other collects; else they stayed on until something armed or gave up, every resumption
    # of code elsewhere paying a callback that walks the stack
    weakref.finalize(changes, _switch, False).atexit = False
    _running_code(namespace, changes)
    _switch()
    if _State.on:  # code switched off since the last checkpoint reports again
        _MON.restart_events()
    return changes


class quiet:
    """Context: elastic_lite's own snapshot code runs (its pickling may call a notebook's
    __reduce__ or cloudpickle: not code of the notebook changing its variables)."""

    def __enter__(self):
        _State.quiet += 1

    def __exit__(self, *exc):
        _State.quiet -= 1


def _running_code(namespace, changes):
    """Code of the namespace running now (this thread's stack, other threads) goes on after
    the checkpoint: its names count, or it gives up."""
    me = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        if ident != me:
            while frame is not None:
                if frame.f_globals is namespace:
                    changes.give_up("a thread runs code of the notebook")
                    return
                frame = frame.f_back
    _notebook_frames(sys._getframe(1), namespace, changes)


def _notebook_frames(frame, namespace, changes):
    """Applies the analysis of every frame of the namespace on the stack from `frame` down;
    gives up when the outermost of a run of them is not top-level code."""
    run_top = None
    while frame is not None:
        if frame.f_globals is namespace:
            code = frame.f_code
            _, names, reason, harmless = _analyse(code)
            if reason is not None:
                changes.give_up(reason)
                return
            changes.names.update(names)
            run_top = code
        elif run_top is not None:
            if not _top_level(run_top):
                changes.give_up(f"{run_top.co_qualname}() of the notebook was called from "
                                "outside the notebook's code")
                return
            run_top = None
        frame = frame.f_back
    if run_top is not None and not _top_level(run_top):
        changes.give_up(f"{run_top.co_qualname}() of the notebook runs outside a cell")


def _top_level(code):
    return code.co_name == "<module>" or _analyse(code)[3]


def _start():
    if _State.tool is not None:
        return True
    for tool in _TOOL_IDS:
        try:
            _MON.use_tool_id(tool, "elastic-lite changes")
        except ValueError:  # taken by another tool
            continue
        _State.tool = tool
        _register()
        atexit.register(_stop)
        return True
    return False


def _register():
    """(Re)registers our callbacks; False when one was no longer ours (another tool took the
    id, or CPython removed it): what was collected meanwhile cannot be trusted."""
    ev = _MON.events
    intact = True
    for event, fn in ((ev.PY_START, _on_start), (ev.PY_RESUME, _on_start),
                      (ev.PY_THROW, _on_throw)):
        intact = _MON.register_callback(_State.tool, event, fn) is fn and intact
    return intact


def intact():
    """True when the watch ran without interruption since the previous call."""
    if _State.tool is None:
        return False
    if _register():
        return True
    _give_up_all("the change watch was interrupted")
    return False


def _give_up_all(why):
    for watched in list(_State.armed.values()):
        for changes in list(watched):
            changes.give_up(why)
    _switch()


def _on_start(code, offset, _getframe=sys._getframe):
    return _guarded(code, _getframe(1))


def _on_throw(code, offset, exc, _getframe=sys._getframe):
    _guarded(code, _getframe(1))
    return None  # PY_THROW events cannot be switched off per code


def _guarded(code, frame):
    """_on_code(code, frame), which never raises into the notebook's code (a failure gives
    up: never a missed change)."""
    try:
        return _on_code(code, frame)
    except Exception as exc:
        try:
            _give_up_all(f"the change watch failed: {type(exc).__name__}: {exc}")
        except Exception:  # the interpreter is shutting down
            pass
        return None


def _stop():
    """At exit: no more events (module globals go away while the interpreter ends)."""
    if _State.tool is not None:
        _MON.set_events(_State.tool, 0)
        _State.on = False


def _switch(wait=True):
    """Events on while some armed Changes still collects, off otherwise (no cost at all).
    `wait=False` (from a collected Changes' finalizer, which may run inside a section holding
    the lock): nothing if the lock is taken; its holder switches after it anyway."""
    if not _State.lock.acquire(blocking=wait):
        return
    try:
        for ns_id in list(_State.armed):
            live = [c for c in _State.armed[ns_id] if c.full is None]
            if not live:
                del _State.armed[ns_id]
        want = bool(_State.armed)
    finally:
        _State.lock.release()
    if want != _State.on and _State.tool is not None:
        ev = _MON.events
        _MON.set_events(_State.tool, (ev.PY_START | ev.PY_RESUME | ev.PY_THROW) if want else 0)
        _State.on = want


def _on_code(code, frame):
    """The event of `code` starting or resuming in `frame` (see the module doc)."""
    if _State.quiet:  # our own checkpoint: the machinery's code is switched off for good
        return _MON.DISABLE if _machinery(code) else None
    watched = _State.armed.get(id(frame.f_globals))
    if watched is None:
        if _machinery(code):
            return _MON.DISABLE
        # library code: given up where the notebook's code called it; on its own (a
        # library's callback, a test's or a host's code) it is assumed to change nothing of
        # the notebook's (see the module doc)
        ids = set()
        f = frame.f_back
        while f is not None:
            ids.add(id(f.f_globals))
            f = f.f_back
        hit = [ns_id for ns_id in _State.armed if ns_id in ids]
        if not hit:
            return None
        why = (f"library code ran ({code.co_qualname} in "
               f"{os.path.basename(code.co_filename)})")
        for ns_id in hit:
            for changes in list(_State.armed.get(ns_id, ())):
                changes.give_up(why)
        _switch()
        return None
    changes = list(watched)
    for c in changes:
        _notebook_frames(frame, frame.f_globals, c)
    if any(c.full is not None for c in changes):
        _switch()
        return None
    # Seen, its names taken: not reported again until the next checkpoint re-arms (a loop
    # calling a notebook function a million times pays one event, not a million)
    return _MON.DISABLE


def _machinery(code):
    name = code.co_filename
    known = _State.machinery.get(name)
    if known is None:
        known = _State.machinery[name] = _is_machinery(name)
    return known


def _roots():
    paths = sysconfig.get_paths()
    std = [os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if paths.get(k)]
    # where the standard library really is: Pyodide imports it from /lib/python314.zip,
    # while sysconfig names /lib/python3.14 (without this, every call of json, re, asyncio...
    # counted as library code: a cell using them gave the fast path up, and each call paid
    # a monitoring event that walks the stack)
    std.append(os.path.realpath(os.path.dirname(os.__file__)))
    pkgs = []
    for mod in _MACHINERY:
        m = sys.modules.get(mod)
        f = getattr(m, "__file__", None)
        if f:
            pkgs.append(os.path.dirname(os.path.realpath(f)) + os.sep)
    return std, pkgs


def _is_machinery(filename):
    if filename.startswith("<frozen "):
        return True
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    std, pkgs = _roots()
    if any(path.startswith(p) for p in pkgs):
        return True
    for s in std:
        if path.startswith(s + os.sep):
            rest = path[len(s) + 1:]
            return not rest.startswith(("site-packages", "dist-packages"))
    return False


def _analyse(code):
    """(code, names, reason, harmless) of a code object and the code nested in it: the global
    names it reads/binds/deletes; `reason` when it reaches objects without naming them;
    `harmless` for the extension's command wrapper."""
    key = id(code)
    hit = _State.analysed.get(key)
    if hit is not None and hit[0] is code:
        return hit
    harmless = code.co_name == _HOST_WRAPPER
    names, reason = set(), None
    if not harmless:
        names, reason = _names_of(code)
    out = (code, frozenset(names), reason, harmless)
    if len(_State.analysed) > 4096:
        _State.analysed.clear()
    _State.analysed[key] = out
    if harmless:  # the wrapper's nested code (its print helper) is the wrapper's
        for const in code.co_consts:
            if hasattr(const, "co_code"):
                _State.analysed[id(const)] = (const, frozenset(), None, True)
    return out


def _names_of(code):
    names = set()
    todo = [code]
    while todo:
        c = todo.pop()
        for ins in dis.get_instructions(c):
            op, arg = ins.opname, ins.argval
            if op in _GLOBAL_OPS:
                if arg in OPAQUE_NAMES or IPYTHON_HISTORY.match(arg):
                    return names, f"the code uses {arg}"
                names.add(arg)
            elif op in _ATTR_OPS:
                if isinstance(arg, str) and arg.startswith("__") and arg.endswith("__"):
                    return names, f"the code reads the attribute {arg}"
            elif op == "IMPORT_NAME":
                top = str(arg).split(".")[0]
                if top not in SAFE_MODULES:
                    return names, f"the code imports {arg}"
        todo.extend(k for k in c.co_consts
                    if hasattr(k, "co_code") and k.co_name != _HOST_WRAPPER)
    return names, None


def unsafe_bindings(namespace, names):
    """Why the names' current values defeat the fast path (a module outside SAFE_MODULES:
    its state is reachable through it), or None."""
    import types
    for name in names:
        value = namespace.get(name)
        if isinstance(value, types.ModuleType):
            top = (getattr(value, "__name__", "") or "").split(".")[0]
            if top not in SAFE_MODULES:
                return f"{name} is the module {value.__name__}"
        elif value is builtins:
            return f"{name} is the builtins module"
    return None
