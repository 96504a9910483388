"""The id-walk that groups variables sharing objects (no pickling involved)."""

from elastic_lite.capture.selection import capture
from elastic_lite.capture.groups import find_groups, is_notebook_def


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
    # Two large variables: one of them must be walked, and that exceeds the budget.
    ns = nb("a = [[i] for i in range(200000)]\nb = [[i] for i in range(100000)]\nc = [1]")
    variables = {k: v for k, v in ns.items() if not k.startswith("_")}
    grouping = find_groups(variables, ns, {}, max_objects=1000)
    assert grouping.truncated and "stopped" in grouping.truncated
    assert grouping.groups == [["a", "b", "c"]]


def test_budget_is_objects_not_time(nb):
    # The same namespace groups the same way every time, whatever the machine is doing.
    ns = nb("a = [[i] for i in range(30000)]\nb = [[i] for i in range(20000)]\nb.append(a[7])")
    variables = {k: v for k, v in ns.items() if not k.startswith("_")}
    results = {tuple(map(tuple, find_groups(variables, ns, {}).groups)) for _ in range(3)}
    assert results == {(("a", "b"),)}


def test_largest_variable_is_not_walked_when_the_others_are_closed(nb):
    ns = nb("big = [float(i) for i in range(50000)]\nsmall = [[1], {'x': 2}]\nn = 3")
    grouping = find_groups(capture(ns).variables, ns, {})
    assert grouping.unwalked == "big" and grouping.objects < 100
    assert sorted(grouping.groups) == [["big"], ["n"], ["small"]]


def test_the_largest_variable_is_walked_when_anything_lies_past_its_first_level(nb):
    # How deep pickle goes inside a variable is known only from a walk: a large list of
    # containers is walked, and a chain thousands of objects long inside it (which pickling
    # in Pyodide does not survive: a fatal error of the kernel) is found and not pickled.
    import elastic_lite as el
    ns = nb("big = [{'k': [i]} for i in range(50000)]\nsmall = [[1], {'x': 2}]")
    grouping = find_groups(capture(ns).variables, ns, {})
    assert grouping.unwalked is None and sorted(grouping.groups) == [["big"], ["small"]]
    ns = nb("class Node:\n    def __init__(self, nxt): self.nxt = nxt\nchain = None\n"
            "for _ in range(3000): chain = Node(chain)\n"
            "big = [float(i) for i in range(50000)] + [chain]\nsmall = [1]\ndel chain")
    snap = el.snapshot(ns)
    assert snap.walk.unwalked is None
    reasons = {s["name"]: s["reason"] for s in snap.skipped}
    assert "nested more than 600 levels deep" in reasons["big"], reasons
    assert sorted(n for g in snap.groups for n in g.names) == ["Node", "small"]


def test_a_small_variable_inside_the_largest_one_is_found(nb):
    # `inner` is held by `big` too: its refcount betrays a referrer the walk did not follow,
    # so the largest variable is walked after all and the two are grouped.
    ns = nb("big = [{'k': [i]} for i in range(50000)]\ninner = big[40000]['k']\nother = [5]")
    grouping = find_groups(capture(ns).variables, ns, {})
    assert grouping.unwalked is None
    assert sorted(map(sorted, grouping.groups)) == [["big", "inner"], ["other"]]


def test_an_object_deep_in_a_small_variable_shared_with_the_largest(nb):
    ns = nb("shared = {'deep': [1, 2]}\nbig = [[i] for i in range(50000)] + [shared['deep']]\n"
            "holder = [shared]\ndel shared")
    grouping = find_groups(capture(ns).variables, ns, {})
    assert sorted(map(sorted, grouping.groups)) == [["big", "holder"]]


def test_a_reference_from_outside_the_namespace_forces_the_full_walk(nb):
    # Like IPython's Out history: a referrer the walk cannot see. The result stays right.
    ns = nb("big = [[i] for i in range(50000)]\nsmall = [[1]]\n")
    keep_alive = [ns["small"][0]]
    grouping = find_groups(capture(ns).variables, ns, {})
    assert grouping.unwalked is None and sorted(grouping.groups) == [["big"], ["small"]]
    assert keep_alive


def test_containers_of_atomic_values_cost_no_bookkeeping(nb):
    ns = nb("nums = list(range(100000))\ntable = {i: i * 2 for i in range(50000)}\nx = [1]")
    grouping = find_groups(capture(ns).variables, ns, {})
    assert grouping.objects == 0 and sorted(grouping.groups) == [["nums"], ["table"], ["x"]]


def test_long_atomic_values_bound_twice_are_one_group(nb):
    ns = nb("blob = b'x' * 100000\nsame = blob\nshort = 'ab'\nalso_short = short")
    groups = sorted(map(sorted, find_groups(capture(ns).variables, ns, {}).groups))
    assert groups == [["also_short"], ["blob", "same"], ["short"]]


def test_shared_empty_tuple_is_not_aliasing(nb):
    ns = nb("a = [(), frozenset()]\nb = {'k': ()}\nc = [frozenset()]")
    assert groups_of(ns) == [["a"], ["b"], ["c"]]


def test_an_immutable_tuple_of_atomic_values_held_elsewhere_does_not_force_the_walk(nb):
    # Python 3.13+ keeps a class's `__static_attributes__` tuple in a code object too.
    ns = nb("class K:\n    names = ('i', 'name')\nbig = [float(i) for i in range(50000)]")
    held_by_a_code_object = [ns["K"].names]
    grouping = find_groups(capture(ns).variables, ns, {id(ns["K"]): "K"})
    assert grouping.unwalked == "big" and held_by_a_code_object


def test_one_mutable_object_among_atomic_values_is_still_walked(nb):
    # The walk skips a run of children that is nothing but atomic values (a list of numbers
    # costs one pass over its elements' types). The boundary: one shared mutable object at
    # the END of a long list of numbers, or a bytearray (mutable, untracked by the GC) among
    # strings, or one deeper down among numbers, still unites.
    ns = nb("shared = {'k': 1}\nbuf = bytearray(b'ab')\n"
            "nums = [float(i) for i in range(5000)] + [shared]\n"
            "same = {'x': 1.5, 'y': 'text', 'z': shared}\n"
            "words = ['w%d' % i for i in range(3000)] + [buf]\n"
            "holder = ({'deep': [2.0] * 100 + [buf]},)\n"
            "alone = [float(i) for i in range(5000)]\n"
            "del shared, buf")
    assert groups_of(ns) == [["alone"], ["holder", "words"], ["nums", "same"]]


def test_a_def_reached_from_many_variables_is_an_edge_of_each(nb):
    # A class or function is decided once per snapshot (by reference, a def, or a node),
    # but every variable reaching a def must still record it (restore needs the def first),
    # and a notebook function that is NOT a top-level def is a node: shared, it unites.
    ns = nb("""
class C:
    def __init__(self, i): self.i = i
def f(): return 1
a = [C(i) for i in range(100)]
b = [C(i) for i in range(50)]
c = {'fn': f}
d = [f, 1.0]
def make():
    return lambda: 2
fn = make()
e = [fn]
g = {'same': fn}
del fn
""")
    variables = capture(ns).variables
    defs = {id(v): k for k, v in variables.items() if is_notebook_def(v, ns)}
    grouping = find_groups(variables, ns, defs)
    assert sorted(map(sorted, grouping.groups)) == [
        ["C"], ["a"], ["b"], ["c"], ["d"], ["e", "g"], ["f"], ["make"]]
    assert grouping.refs["a"] == {"C"} and grouping.refs["b"] == {"C"}
    assert grouping.refs["c"] == {"f"} and grouping.refs["d"] == {"f"}


def test_instances_holding_shared_data_next_to_their_class_still_unite(nb):
    # A run of instances of a notebook class whose only children are their class (a def:
    # an edge) and atomic values is done at once; the boundary: one plain child (a list
    # shared with another variable) next to the class keeps the run walked.
    ns = nb("""
class C:
    def __init__(self, v, w=None): self.v, self.w = v, w
held = [1]
a = [C(i) for i in range(50)] + [C(0, held)]
b = {'k': held}
c = [C(i) for i in range(50)]
del held
""")
    variables = capture(ns).variables
    defs = {id(v): k for k, v in variables.items() if is_notebook_def(v, ns)}
    grouping = find_groups(variables, ns, defs)
    assert sorted(map(sorted, grouping.groups)) == [["C"], ["a", "b"], ["c"]]
    assert grouping.refs["a"] == {"C"} and grouping.refs["c"] == {"C"}


def test_the_largest_variable_is_not_walked_inside_snapshot_either(nb):
    # snapshot() holds the captured variables in dicts of its own (and a def beside them): its
    # references must not read as a referrer the walk did not follow
    import elastic_lite as el
    ns = nb("class P:\n    pass\nbig = [float(i) for i in range(50000)]\nsmall = [[1], {'x': 2}]\n"
            "d = {'a': [1, 2]}")
    walk = el.snapshot(ns).walk
    assert walk.unwalked == "big" and walk.objects < 100
    ns = nb("class P:\n    pass\nbig = [{'k': [i]} for i in range(50000)]\ninner = big[40000]['k']\n"
            "d = {'a': [1, 2]}")
    walk = el.snapshot(ns).walk
    assert walk.unwalked is None and ["big", "inner"] in map(sorted, walk.groups)


def test_instances_holding_other_classes_record_each_class(nb):
    # A run of instances whose non-atomic children are classes only is decided by the distinct
    # classes at once. The boundaries: a def held as an attribute (not the instance's own
    # class) is an edge too; a notebook class that is not a top-level def is a node, walked:
    # what its body holds, shared, unites; and classes of a metaclass of their own (here: all
    # equal, one hash) are told apart by identity, not by equality.
    ns = nb("""
class C:
    def __init__(self, kind=None): self.kind = kind
class D:
    pass
shared = [1, 2]
def make(data):
    class Local:
        held = data
    return Local
class AllEqual(type):
    def __eq__(self, other): return True
    def __hash__(self): return 0
class E(metaclass=AllEqual):
    pass
def make_equal(data):
    class F(metaclass=AllEqual):
        held = data
    return F
a = [C() for _ in range(20)] + [C(D)]
b = [C() for _ in range(20)] + [C(make(shared))]
c = [E() for _ in range(20)] + [make_equal(shared)()]
d = {'k': shared}
del shared
""")
    variables = capture(ns).variables
    defs = {id(v): k for k, v in variables.items() if is_notebook_def(v, ns)}
    grouping = find_groups(variables, ns, defs)
    groups = sorted(map(sorted, grouping.groups))
    assert ["b", "c", "d"] in groups and ["a"] in groups
    assert grouping.refs["a"] == {"C", "D"}
    assert grouping.refs["b"] >= {"C"} and grouping.refs["c"] >= {"E"}


def test_pickles_depth_is_measured_only_where_shared_objects_could_make_it_long(nb):
    # A flat list of linked nodes is two levels to the walk and 3,000 saves deep to pickle:
    # measured (capture.picklers.too_deep). The boundaries, not measured (it costs a Python
    # pass over the group): a table whose rows are each held twice, shallow, next to a
    # 500-node chain (whose depth does not make the table any deeper); the chain itself.
    ns = nb("""
class Node:
    def __init__(self, nxt=None): self.nxt = nxt
linked = [Node() for _ in range(1500)]
for a, b in zip(linked, linked[1:]):
    a.nxt = b
rows = [[i, str(i)] for i in range(300)]
table = rows + rows
chain = None
for _ in range(500):
    chain = Node(chain)
del a, b, rows
""")
    variables = capture(ns).variables
    defs = {id(v): k for k, v in variables.items() if is_notebook_def(v, ns)}
    grouping = find_groups(variables, ns, defs)
    assert sorted(map(sorted, grouping.winding)) == [["linked"]]
