"""Which names of the user namespace a checkpoint takes, and how.

A name is one of:
- skipped silently: private (`_x`), IPython/kernel internals (In, Out, get_ipython, exit,
  quit, and whatever IPython itself hides from `%who`);
- a module binding: `import numpy as np`, `from math import sqrt`, `from typing import *`
  (any object that is an attribute of the module it says it comes from) -> re-imported on
  restore under the same name instead of being pickled;
- a variable: serialized into a record.
Reading the namespace never writes to it (we iterate over a copy of its items).
"""

import sys
import types

import cloudpickle

from .groups import ATOMIC, is_notebook_def
from .._report import type_name
from .._words import quoted

# Names a Jupyter/IPython kernel puts into the user namespace that are not user state.
KERNEL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})

_IMPORTABLE_KINDS = (types.FunctionType, types.BuiltinFunctionType, type)


def ipython_shell():
    """The running IPython shell, or None (IPython is not even imported in plain Pyodide)."""
    mod = sys.modules.get("IPython")
    if mod is None:
        return None
    try:
        return mod.get_ipython()
    except Exception:
        return None


def default_namespace():
    """IPython's user namespace when a shell runs (JupyterLite kernel), else `__main__`."""
    shell = ipython_shell()
    if shell is not None:
        return shell.user_ns
    return sys.modules["__main__"].__dict__


def _hidden_names(namespace):
    shell = ipython_shell()
    if shell is None or shell.user_ns is not namespace:
        return {}
    return getattr(shell, "user_ns_hidden", {}) or {}


def _module_binding(name, value, ns_module_name, imported):
    """(module, attr) to re-import `value` from, or None if it is not an import binding.
    `imported` maps id(object in sys.modules) -> its name: that also catches module-like
    objects that are not ModuleType (Pyodide's `import js` is a JsProxy)."""
    modname = imported.get(id(value))
    if modname is not None:
        return (modname, None)
    if isinstance(value, types.ModuleType):
        modname = getattr(value, "__name__", None)
        if modname and sys.modules.get(modname) is value:
            return (modname, None)
        return None
    if type(value) in ATOMIC:
        return None  # `from math import pi`: a number is its own value
    if isinstance(value, _IMPORTABLE_KINDS):
        mod = getattr(value, "__module__", None)
        qual = getattr(value, "__qualname__", None)
        if not isinstance(mod, str) or not isinstance(qual, str) or "." in qual or "<" in qual:
            return None
        if mod == ns_module_name or mod == "__main__":
            return None  # defined in the notebook: its code must be saved by value
        module = sys.modules.get(mod)
        if module is None or getattr(module, qual, None) is not value:
            return None
        return None if _computed_anew(module, qual) else (mod, qual)
    return _module_attribute(name, value, ns_module_name)


def _computed_anew(module, attr):
    """True when `module` gives `attr` only through its own `__getattr__` (PEP 562) and does
    not keep it: asked again in another interpreter it computes it again, so what a restore
    would bind cannot be checked before it runs (the restore refuses such a binding). typing
    on Python 3.14 computes ContextManager, AsyncContextManager, Pattern and Match that way
    but keeps what it computed in its namespace: those are bound by name, and the restore
    asks the module for them (_trust.computed_binding)."""
    try:
        return attr not in vars(module)
    except TypeError:  # no __dict__ (a JsProxy module of Pyodide): a plain attribute
        return False


def _module_attribute(name, value, ns_module_name):
    """Any other object that IS an attribute of the module it says it comes from
    (`from typing import *` binds typing.List, typing.Optional, ...; `from os import
    environ`): re-imported by name, like a function, instead of saved as a record."""
    try:
        mod = getattr(value, "__module__", None)
        if not isinstance(mod, str) or mod in (ns_module_name, "__main__", "builtins"):
            return None
        module = sys.modules.get(mod)
        if module is None:
            return None
        for attr in (name, getattr(value, "__qualname__", None),
                     getattr(value, "__name__", None), getattr(value, "_name", None)):
            if isinstance(attr, str) and attr.isidentifier() and \
                    getattr(module, attr, None) is value and not _computed_anew(module, attr):
                return (mod, attr)
    except Exception:  # an object whose attributes raise: not a binding
        return None
    return None


def _refused_binding(name, binding):
    """Why a checked restore refuses this module binding, or None: it binds a function the
    deny-list says runs code or touches files under ANOTHER name (`reader = pd.read_csv`;
    `from os import system` keeps its name and is bound)."""
    if binding is None or binding[1] is None or binding[1] == name:
        return None
    from .picklers import refused_identity
    why = refused_identity(f"{binding[0]}.{binding[1]}")
    return None if why is None else why.replace(
        "it holds", f"it binds {name} to", 1).replace(
        "re-create it after restore", f"run `{name} = ...` again after restore")


def _computed_reference(value, ns_module_name):
    """A library function or class that pickle can only save by its name, in a module that
    computes that name anew each time (_computed_anew): a restore would refuse it."""
    if not isinstance(value, _IMPORTABLE_KINDS):
        return False
    try:
        mod, qual = value.__module__, value.__qualname__
        module = sys.modules.get(mod) if isinstance(mod, str) else None
        return mod not in (ns_module_name, "__main__") and isinstance(qual, str) and \
            module is not None and getattr(module, qual, None) is value and \
            _computed_anew(module, qual)
    except Exception:
        return False


def _saved_by_own_name(value, ns_module_name, namespace):
    """True if pickle would write `value` as a reference to ITSELF in the notebook module
    (its type's __reduce__ returns a bare name, e.g. a wrapper object whose __module__ and
    __qualname__ were copied from a notebook function). A fresh kernel has no such name, so
    the record could never load; better to say so when the checkpoint is taken."""
    if isinstance(value, (type, types.FunctionType, types.ModuleType)):
        return False
    try:
        mod = getattr(value, "__module__", None)
        if mod != ns_module_name and mod != "__main__":
            return False
        if mod == "__main__" and type(value) in cloudpickle.Pickler._dispatch_table:
            return False  # cloudpickle's own reducer saves it by value (a TypeVar of __main__)
        qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    except Exception:
        return False
    return isinstance(qual, str) and namespace.get(qual) is value


class Capture:
    """The result of reading a namespace: variables to save and module bindings."""

    def __init__(self):
        self.variables = {}  # name -> value, in namespace order
        self.modules = []  # [{"name", "module", "attr"}]
        self.skipped = []  # [{"name", "type", "reason"}] decided before serializing


def _unstorable_name(name):
    """Why a checkpoint cannot hold a variable of this name, or None. Record names are UTF-8,
    separated by NUL bytes: `globals()["a\\0b"] = x` came back as two variables `a` and `b`
    (and a record that does not hold 2 values), `globals()[""]` as a record of no names, and
    one lone surrogate aborted the whole checkpoint with a UnicodeEncodeError."""
    if not isinstance(name, str):
        return "only names that are strings can be stored"
    if not name:
        return "an empty name cannot be stored in a checkpoint"
    if "\0" in name:
        return "a name containing a NUL character cannot be stored in a checkpoint"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "a name that is not valid Unicode (a lone surrogate) cannot be stored"
    return None


# Values of these exact types are data: no module binding (unless the very object is in
# sys.modules), no notebook def, nothing pickle would save by a name of its own.
_PLAIN_DATA = ATOMIC | {list, dict, tuple, set, frozenset, bytearray}


def capture(namespace, names=None):
    ns_module_name = namespace.get("__name__", "__main__")
    hidden = _hidden_names(namespace)
    modules = list(sys.modules.items())
    imported = dict(zip(map(id, (m for _, m in modules)), (n for n, _ in modules)))
    imported.pop(id(None), None)
    imported.pop(id(namespace.get("__builtins__")), None)
    result = Capture()
    wanted = None if names is None else set(names)
    for name, value in list(namespace.items()):
        if wanted is not None:
            if name not in wanted:
                continue
        elif not isinstance(name, str) or name.startswith("_") or name in KERNEL_NAMES:
            continue
        elif name in hidden and hidden[name] is value:
            continue
        if type(value) in _PLAIN_DATA and id(value) not in imported and (
                type(name) is str and name.isidentifier()):  # an identifier is storable
            result.variables[name] = value
            continue
        why = _unstorable_name(name)
        if why is not None:
            result.skipped.append({"name": name.encode("utf-8", "backslashreplace").decode(),
                                   "type": type_name(value), "reason": why})
            continue
        binding = _module_binding(name, value, ns_module_name, imported)
        why = _refused_binding(name, binding)
        if why is not None:
            result.skipped.append({"name": name, "type": type_name(value), "reason": why})
        elif binding is not None:
            result.modules.append({"name": name, "module": binding[0], "attr": binding[1]})
        elif isinstance(value, types.ModuleType):
            result.skipped.append({
                "name": name, "type": "module",
                "reason": f"module {quoted(getattr(value, '__name__', '?'))} is not importable "
                          "by name (not in sys.modules); re-create it after restore",
            })
        elif _computed_reference(value, ns_module_name):
            result.skipped.append({
                "name": name, "type": type_name(value),
                "reason": f"module {quoted(value.__module__)} computes {quoted(value.__qualname__)} with its "
                          "__getattr__ each time it is asked, so a restore could not check "
                          "what it would bind (pickle saves it only by that name): run "
                          f"`from {value.__module__} import {value.__qualname__}` after restore"})
        elif not is_notebook_def(value, namespace) and _saved_by_own_name(
                value, ns_module_name, namespace):
            result.skipped.append({
                "name": name, "type": type_name(value),
                "reason": "pickle saves this object only as a reference to the notebook's own "
                          f"name {quoted(name)}, which a fresh kernel does not have; re-create it "
                          "after restore"})
        else:
            result.variables[name] = value
    if wanted is not None:
        missing = sorted(wanted - set(namespace))
        for name in missing:
            result.skipped.append({"name": name, "type": "-",
                                   "reason": "no such name in the namespace"})
    return result
