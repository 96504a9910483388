"""A module that computes attributes with a module `__getattr__` (PEP 562), as typing does on
Python 3.14 (ContextManager, AsyncContextManager, Pattern, Match) and lazy-loading libraries
do. Used by tests/py/test_computed_module_attrs.py and
tests/node/pyodide-module-getattr.test.mjs (loaded into Pyodide from this file).

- `Kept`, `KeptClass`: computed at the first request, then kept in the module's namespace
  (typing's way): a checkpoint binds them by name and a restore asks the module again.
- `Table`: the same object each time, from a private table, never kept in the namespace.
- `Fresh`: a new object at each request (equal values, not the same object).
- `TableClass`: a class from the private table, never kept in the namespace (pickle can only
  save a class by its name, which a restore cannot check without asking the module).
"""

CALLS = []  # every attribute this module computed, in order


class Alias:
    def __init__(self, name, origin):
        self.name = name
        self.origin = origin

    def __eq__(self, other):
        return isinstance(other, Alias) and (self.name, self.origin) == (other.name, other.origin)

    def __hash__(self):
        return hash((self.name, self.origin))

    def __repr__(self):
        return f"computed_attrs.{self.name}"


_TABLE = {"Table": Alias("Table", "table"),
          "TableClass": type("TableClass", (), {"__module__": __name__})}


def __getattr__(name):
    CALLS.append(name)
    if name == "Kept":
        obj = Alias("Kept", "kept")
    elif name == "KeptClass":
        obj = type("KeptClass", (), {"__module__": __name__, "kind": "kept"})
    elif name in _TABLE:
        return _TABLE[name]
    elif name == "Fresh":
        return Alias("Fresh", "fresh")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = obj
    return obj
