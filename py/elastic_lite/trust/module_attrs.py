"""Module attributes a module computes with its own `__getattr__` (PEP 562).

typing on Python 3.14 computes ContextManager, AsyncContextManager, Pattern and Match the
first time they are asked for (`from typing import *` asks), and keeps them in its namespace;
lazy-loading libraries do the same. A checkpoint binds such a name by reference (it was in
the module's namespace), but in a fresh interpreter the module has not computed it yet, and
restore judges every import without running code (_trust): "module typing computes
'ContextManager' with its __getattr__" was refused, and the variable was missing.

`ask_modules(info, manifest)` runs before the judging, for checkpoints that are the person's
own (made in this process, or from a store whose signature checked) and not in data-only
mode: for every name a record imports or a module binding binds, from a module that is
ALREADY imported, whose namespace lacks it and whose own `__getattr__` (a function defined in
that very module) would compute it, the module is asked once, as the notebook's import did.
What the module then keeps is judged like any other attribute (its identity against the
deny-list); what it does not keep stays "computed", and is refused as before. The capture
side (capture.selection._computed_anew) never binds a name the module does not keep, so such a
variable is saved by value or skipped with the reason when the checkpoint is taken.
Foreign checkpoints (before the person confirmed) never get here.

The same judge follows a record's attribute PATH (protocol 4's dotted names: matplotlib's
figures pickle bound methods such as `Figure.pick`) only in a module already imported, so a
checkpoint holding a figure was refused whole in a new kernel. For the person's own
checkpoints `import_for_paths` first imports those modules (unpickling would import them
anyway), except one the deny-list says runs something when imported.
"""

import importlib
import sys
import types

_MODULE_DICT = types.ModuleType.__dict__["__dict__"]


def _hook(module):
    """The module's own `__getattr__` (a plain function whose globals are the module's
    namespace), or None: a hook planted from elsewhere, or a module object whose type
    overrides attribute access, is not asked."""
    if type(module) is not types.ModuleType:
        return None
    namespace = _MODULE_DICT.__get__(module)
    hook = namespace.get("__getattr__")
    if type(hook) is not types.FunctionType or hook.__globals__ is not namespace:
        return None
    return namespace, hook


def _wanted(info, manifest):
    """(module, name) pairs the checkpoint imports or binds, first attribute only."""
    pairs = set()
    for rec in info.get("records") or []:
        for imp in rec.get("imports") or ():
            module, name = imp.get("module"), imp.get("name")
            if isinstance(module, str) and isinstance(name, str):
                pairs.add((module, name.split(".", 1)[0]))
    modules = manifest.get("modules") if isinstance(manifest, dict) else None
    for b in modules if isinstance(modules, list) else ():
        if isinstance(b, dict) and isinstance(b.get("module"), str) and \
                isinstance(b.get("attr"), str):
            pairs.add((b["module"], b["attr"]))
    return pairs


def _dotted_modules(info):
    """Modules whose attribute PATHS records import (`Figure.pick`: protocol 4's dotted
    names), and which are not imported yet."""
    return sorted({imp["module"] for rec in info.get("records") or []
                   for imp in rec.get("imports") or ()
                   if isinstance(imp.get("module"), str) and isinstance(imp.get("name"), str)
                   and "." in imp["name"] and imp["module"] not in sys.modules
                   and all(p.isidentifier() for p in imp["module"].split("."))})


def import_for_paths(info):
    """Import the modules whose attribute paths the records name. The judge follows such a
    path only in a module already imported ("module matplotlib.figure is not imported here,
    so the attribute path 'FigureBase.delaxes' cannot be followed"), so a checkpoint holding
    a matplotlib figure was refused whole in a new kernel; unpickling would import these
    modules anyway. A module the deny-list says runs something when imported is not
    imported (the judge then refuses as before). Returns the modules imported."""
    from . import rules as _trust
    done = []
    for module in _dotted_modules(info):
        if _trust._import_danger(module) is not None:
            continue
        try:
            importlib.import_module(module)
        except Exception:
            continue
        done.append(module)
    return done


def ask_modules(info, manifest):
    """Ask already imported modules for the attributes they compute (see the module
    docstring), after importing those whose attribute paths the records name
    (import_for_paths). Returns the (module, name) pairs asked, in order; errors are ignored
    (the judging then refuses the import with its reason, as before)."""
    import_for_paths(info)
    asked = []
    for module_name, name in sorted(_wanted(info, manifest)):
        if not name.isidentifier() or name.startswith("__"):
            continue
        found = _hook(sys.modules.get(module_name))
        if found is None or name in found[0]:
            continue
        asked.append((module_name, name))
        try:
            found[1](name)
        except Exception:
            pass
    return asked
