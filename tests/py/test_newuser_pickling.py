"""Notebook objects a newcomer's notebooks held that came back wrong (host CPython, real core).

- `@functools.singledispatch` on a notebook function: cloudpickle refused its wrapper (a
  WeakKeyDictionary in the closure), dill copied functools' module globals into the stream,
  and restoring the person's OWN checkpoint refused it ("would call builtins.setattr"; in
  Pyodide also zipimport.zipimporter): the function was simply gone.
"""

import elastic_lite as el
from fresh_kernel import restore_elsewhere

DISPATCH = '''
from functools import singledispatch
class Shape:
    pass
@singledispatch
def describe(x):
    "what x is"
    return "thing"
@describe.register
def _(x: int):
    return "int"
@describe.register(list)
def _as_list(x):
    return "list of " + str(len(x))
@describe.register
def _shape(x: Shape):
    return "shape " + unit
unit = "cm"
'''


def test_singledispatch_of_a_notebook_function_is_saved_and_restored(nb):
    ns = nb(DISPATCH)
    snap = el.snapshot(ns)
    row = next(g for g in snap.groups if "describe" in g.names)
    assert row.serializer == "cloudpickle", (row.serializer, row.fallback)
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(snap, out)  # the person's own bytes: nothing refused
    assert rep.ok and "describe" in rep.restored, rep.table()
    assert [out["describe"](v) for v in (1, [1, 2], "s", out["Shape"]())] == \
        ["int", "list of 2", "thing", "shape cm"]
    assert out["describe"].__doc__ == "what x is"
    out["unit"] = "mm"  # live globals, as for every notebook function
    assert out["describe"](out["Shape"]()) == "shape mm"


def test_singledispatch_restores_in_a_new_process(nb):
    ns = nb(DISPATCH)
    printed = restore_elsewhere(el.snapshot(ns).data, '''
assert restore_report["ok"], restore_report
class Sub(list):
    pass
print(describe(7), describe(Sub([1])), describe(Shape()), describe(2.5))
@describe.register(float)
def _f(x):
    return "float"
print(describe(2.5))
''')
    assert printed.split("\n")[:2] == ["int list of 1 shape cm thing", "float"], printed
