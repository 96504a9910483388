"""The id-walk that groups variables sharing objects (no pickling involved)."""

from elastic_lite._capture import capture
from elastic_lite._groups import find_groups, is_notebook_def


def groups_of(ns, **kw):
    variables = capture(ns).variables
    defs = {}
    for k, v in variables.items():
        if is_notebook_def(v, ns):
            defs.setdefault(id(v), k)
    return sorted(sorted(g) for g in find_groups(variables, ns, defs, **kw).groups)


def test_aliasing_unites_variables(nb):
    ns = nb("x = [1]; y = {'k': x}; z = x; w = [2]; t = (w,); other = [3]")
    assert groups_of(ns) == [["other"], ["t", "w"], ["x", "y", "z"]]


def test_shared_inner_object_unites(nb):
    ns = nb("s = {'deep': [1]}\na = [s['deep']]\nb = {'v': s['deep']}\nc = [[1]]")
    assert groups_of(ns) == [["a", "b", "s"], ["c"]]


def test_notebook_defs_are_referred_to_not_united(nb):
    ns = nb("""
class C:
    pass
def f(): return 1
a = C(); b = C(); h = {"f": f, "C": C}; g = f
""")
    # g is f (one object under two names): one group; instances do not collapse into C's.
    assert groups_of(ns) == [["C"], ["a"], ["b"], ["f", "g"], ["h"]]


def test_library_classes_and_functions_do_not_unite(nb):
    ns = nb("import math, fractions\na = [math.sqrt, fractions.Fraction(1, 2)]\n"
            "b = [math.sqrt, fractions.Fraction(1, 3)]")
    assert groups_of(ns) == [["a"], ["b"]]


def test_generator_is_a_leaf(nb):
    ns = nb("data = [1, 2, 3]\ngen = (v for v in data)")
    assert groups_of(ns) == [["data"], ["gen"]]


def test_def_cycle_merges(nb):
    ns = nb("""
def f(g=None): return g
def g(h=None): return h
f.__defaults__ = (g,)
g.__defaults__ = (f,)
def k(): return 0
""")
    assert groups_of(ns) == [["f", "g"], ["k"]]


def test_closure_and_defaults_are_walked(nb):
    ns = nb("""
shared = [1]
def outer():
    def inner(): return shared_local
    shared_local = shared
    return inner
fn = outer()
other = [shared]
""")
    assert groups_of(ns) == [["fn", "other", "shared"], ["outer"]]


def test_budget_stops_the_walk_safely(nb):
    ns = nb("a = [[i] for i in range(200000)]\nb = [[i] for i in range(10)]\nc = [1]")
    variables = {k: v for k, v in ns.items() if not k.startswith("_")}
    grouping = find_groups(variables, ns, {}, max_objects=1000)
    assert grouping.truncated and "stopped" in grouping.truncated
    assert grouping.groups == [["a", "b", "c"]]


def test_shared_empty_tuple_is_not_aliasing(nb):
    ns = nb("a = [(), frozenset()]\nb = {'k': ()}\nc = [frozenset()]")
    assert groups_of(ns) == [["a"], ["b"], ["c"]]
