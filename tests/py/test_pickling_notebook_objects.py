"""Notebook objects real notebooks hold that once came back wrong (host CPython, real core).

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


# - A memoryview came back as `bytes` (cloudpickle's choice), silently: another type, and
#   writes to the bytearray it viewed no longer showed through it.
VIEWS = '''
import os
big = bytearray(os.urandom(1 << 17))            # out of band (64 KiB or more)
view = memoryview(big)[1000:2000]
whole = memoryview(big)
small = bytearray(b"hello world")
tail = memoryview(small)[6:]
frozen = memoryview(small)[0:5].toreadonly()
word = memoryview(b"immutable")[2:5]
ints = memoryview(bytearray(16)).cast("i")
grid = memoryview(bytearray(range(12))).cast("B", [3, 4])
every_other = memoryview(bytearray(range(10)))[::2]
alone = memoryview(bytearray(1 << 17))[5:]      # its owner is no variable
'''

VIEW_CHECKS = '''
assert all(type(v) is memoryview for v in (view, whole, tail, frozen, word, ints, grid, every_other, alone))
assert view.obj is big and whole.obj is big and tail.obj is small
big[1000] ^= 0xFF
assert view[0] == big[1000] and whole[1000] == big[1000]
tail[0] = ord("W")
assert small == bytearray(b"hello World")
assert frozen.readonly and bytes(frozen) == b"hello" and not tail.readonly
assert bytes(word) == b"mut" and word.readonly
assert ints.format == "i" and len(ints) == 4 and not ints.readonly
assert grid.shape == (3, 4) and grid.tolist()[2] == [8, 9, 10, 11]
assert every_other.tolist() == [0, 2, 4, 6, 8] and len(alone) == (1 << 17) - 5
print("views ok")
'''


def test_memoryviews_stay_memoryviews_of_what_they_viewed(nb):
    ns = nb(VIEWS)
    snap = el.snapshot(ns)
    assert snap.size < 3 * (1 << 17), "big is written once, and its views refer to it"
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(snap, out)
    assert rep.ok, rep.table()
    exec(VIEW_CHECKS, out)
    assert restore_elsewhere(snap.data, VIEW_CHECKS).strip() == "views ok"


def test_memoryviews_are_plain_data(nb):
    ns = nb(VIEWS)
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(el.snapshot(ns).data, out, data_only=True)
    assert rep.ok, rep.table()
    exec(VIEW_CHECKS, out)


# - A long linked list (or lists nested thousands deep) crashed Pyodide at checkpoint time:
#   the C pickler recursed per node until the JS stack overflowed (the Node test
#   pyodide-no-fatal-errors runs that). On host CPython it was a RecursionError ("maximum
#   recursion depth exceeded"), which said nothing a person could act on.
def test_deeply_nested_values_are_skipped_with_a_reason_before_pickling(nb):
    from elastic_lite.capture.groups import DEEP_LEVELS
    ns = nb(f'''
class Link:
    __slots__ = ("v", "next")
    def __init__(self, v, nxt):
        self.v, self.next = v, nxt
chain = None
for i in range({DEEP_LEVELS + 50}):
    chain = Link(i, chain)
head_alias = [chain]
short = None
for i in range(100):
    short = Link(i, short)
''')
    snap = el.snapshot(ns)
    reasons = {s["name"]: s["reason"] for s in snap.skipped}
    assert set(reasons) == {"chain", "head_alias"}, reasons
    assert f"nested more than {DEEP_LEVELS} levels deep" in reasons["chain"]
    assert "shares objects with chain" in reasons["head_alias"]
    out = {"__name__": "__main__"}
    assert el.load_snapshot(snap, out).ok and out["short"].next.v == 98


# - Nodes linked to each other and also held in a flat list (a linked list kept in a list, a
#   graph's nodes): two levels to the walk, which counts breadth first, but pickle goes depth
#   first along the links, one native recursion per node: 4,000 of them were a fatal error of
#   the kernel in Pyodide. Pickle's own depth is now measured (capture.picklers.too_deep) for
#   a group whose shared objects make it longer than the walk's levels can tell; a ring of a
#   few hundred such nodes is saved as before.
def test_linked_nodes_held_in_a_flat_list_are_skipped_before_pickling(nb):
    ns = nb('''
class Node:
    def __init__(self, v):
        self.v, self.next = v, None
nodes = [Node(i) for i in range(4000)]
for a, b in zip(nodes, nodes[1:]):
    a.next = b
ring = [Node(i) for i in range(300)]
for a, b in zip(ring, ring[1:] + ring[:1]):
    a.next = b
del a, b
''')
    snap = el.snapshot(ns)
    reasons = {s["name"]: s["reason"] for s in snap.skipped}
    assert set(reasons) == {"nodes"}, reasons
    assert "levels deep" in reasons["nodes"] and "linked list" in reasons["nodes"]
    out = {"__name__": "__main__"}
    assert el.load_snapshot(snap, out).ok
    assert out["ring"][299].next is out["ring"][0] and out["ring"][5].next.v == 6


# - The two depth rules agree: what the walk's levels let through (a chain of DEEP_LEVELS
#   objects) pickle's measured depth lets through too, for the deepest kind of level (a
#   __slots__ instance: itself, its state tuple, its slots dict). A 595-node chain of such
#   instances, saved by one automatic point, was skipped by the next as soon as its group was
#   measured (PICKLE_DEPTH was 2 saves a level): JupyterLite, a cell redefining the class.
def test_a_chain_the_level_rule_saves_is_not_too_deep_for_the_depth_measure(nb):
    from elastic_lite.capture.groups import DEEP_LEVELS, PICKLE_DEPTH
    from elastic_lite.capture.picklers import too_deep
    ns = nb(f'''
class Slotted:
    __slots__ = ("v", "next")
    def __init__(self, v, n):
        self.v, self.next = v, n
class Plain:
    def __init__(self, v, n):
        self.v, self.next = v, n
near = far = plain = None
for i in range({DEEP_LEVELS - 5}):
    near, plain = Slotted(i, near), Plain(i, plain)
for i in range({2 * DEEP_LEVELS}):
    far = Slotted(i, far)
''')
    assert not too_deep((ns["near"],), ns, {}, PICKLE_DEPTH)
    assert not too_deep((ns["plain"],), ns, {}, PICKLE_DEPTH)
    assert too_deep((ns["far"],), ns, {}, PICKLE_DEPTH)


# - A plugin registry kept by a base class's __init_subclass__, which names the base by its
#   global name (the usual way): restore failed for the whole hierarchy ("NameError: name
#   'Base' is not defined": the hook ran again while the subclass was rebuilt, before Base
#   was bound), and where it did run it registered every subclass twice and wrapped its
#   methods twice. What the hook did is in the restored state: it is not run again.
REGISTRY = '''
class Base:
    registry = []
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        Base.registry.append(cls.__name__)
        cls.run = (lambda f: (lambda self: "checked " + f(self)))(cls.run)
    def run(self):
        return "base"
class A(Base):
    def run(self):
        return "a"
class B(Base):
    pass
class C(A):
    pass
b = B()
'''


def test_a_notebook_init_subclass_registry_restores_once(nb):
    ns = nb(REGISTRY)
    before = [ns["Base"].registry, ns["A"]().run(), ns["b"].run(), ns["C"]().run()]
    assert before == [["A", "B", "C"], "checked a", "checked base", "checked checked a"]
    printed = restore_elsewhere(el.snapshot(ns).data, '''
assert restore_report["ok"] and restore_report["warnings"] == [], restore_report
print([Base.registry, A().run(), b.run(), C().run()])
class D(B):  # the restored hook still works for new classes
    pass
print([Base.registry[-1], D().run()])
''')
    assert printed.split("\n")[:2] == [str(before), str(["D", "checked checked base"])], printed


def test_a_library_init_subclass_that_needs_keywords_is_reported(nb, monkeypatch):
    import sys
    import types
    lib = types.ModuleType("el_test_plugins")
    exec('''
class Plugin:
    def __init_subclass__(cls, *, key, **kw):
        super().__init_subclass__(**kw)
        cls.key = key
''', lib.__dict__)
    lib.Plugin.__module__ = "el_test_plugins"
    monkeypatch.setitem(sys.modules, "el_test_plugins", lib)
    ns = nb("from el_test_plugins import Plugin\nclass CSV(Plugin, key='csv'):\n    pass\n")
    out = {"__name__": "__main__"}
    rep = el.load_snapshot(el.snapshot(ns), out)
    assert out["CSV"].key == "csv" and issubclass(out["CSV"], lib.Plugin)
    assert len(rep.warnings) == 1 and "class CSV was not rebuilt faithfully" in rep.warnings[0]


# - The same with a notebook metaclass keeping a registry in __new__: every class was
#   registered again on restore (['Plugin', 'Loud', 'Plugin', 'Loud']).
METACLASS = '''
import abc
class Registry(type):
    classes = []
    def __new__(mcls, name, bases, ns, **kw):
        cls = super().__new__(mcls, name, bases, ns)
        mcls.classes.append(name)
        return cls
class Plugin(metaclass=Registry):
    def run(self):
        return "base"
class Loud(Plugin):
    def run(self):
        return super().run().upper()
class AbstractMeta(abc.ABCMeta):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        cls.made_by = "AbstractMeta"
class Shape(metaclass=AbstractMeta):
    @abc.abstractmethod
    def area(self): ...
class Square(Shape):
    def area(self):
        return 4
loud = Loud()
'''


def test_a_notebook_metaclass_registry_restores_once(nb):
    ns = nb(METACLASS)
    printed = restore_elsewhere(el.snapshot(ns).data, '''
assert restore_report["ok"], restore_report
assert type(Loud) is Registry and loud.run() == "BASE" and isinstance(loud, Plugin)
print(Registry.classes)
class New(Plugin):
    pass
print(Registry.classes[-1])
# a metaclass that derives from a library one (abc.ABCMeta) is still run: ABCs must work
assert Square().area() == 4 and Square.made_by == "AbstractMeta"
try:
    Shape()
except TypeError:
    pass
else:
    raise AssertionError("Shape is abstract")
''')
    assert printed.split("\n")[:2] == ["['Plugin', 'Loud']", "New"], printed


# - Names a checkpoint cannot hold (set through globals()[...]): "a\0b" came back as two
#   variables a and b of a record that did not hold 2 values, "" as a record of no names, and
#   one lone surrogate aborted the whole checkpoint (UnicodeEncodeError).
def test_names_a_checkpoint_cannot_hold_are_skipped_with_a_reason(nb):
    ns = nb("x = 1\n")
    ns["a\0b"], ns[""], ns["\ud800"], ns["a b"] = [9], 7, 8, 3
    snap = el.snapshot(ns)
    assert sorted(n for g in snap.groups for n in g.names) == ["a b", "x"]
    reasons = {s["name"]: s["reason"] for s in snap.skipped}
    assert set(reasons) == {"a\0b", "", "\\ud800"}
    assert "NUL" in reasons["a\0b"] and "empty" in reasons[""] and "surrogate" in reasons["\\ud800"]
    out = {}
    rep = el.load_snapshot(snap, out)
    assert rep.ok and out["x"] == 1 and out["a b"] == 3 and "a" not in out


def test_no_pickler_keeps_the_notebooks_objects_after_a_snapshot(nb):
    # The picklers' memo holds the objects of the last group written; the picklers sit in a
    # reference cycle (the out-of-band stand-in each group sets on them), so before they were
    # dropped those objects stayed referenced until the cyclic GC ran: memory kept, and the next
    # walk read them as shared (slower, and the largest variable walked whole).
    import gc
    import sys
    ns = nb("class P:\n    pass\nfrom datetime import date\nitems = [P() for _ in range(5)]\n"
            "when = [date(2020, 1, 1), [1]]\nwords = ['a', 'b']")
    watched = [ns["items"][0], ns["when"][1], ns["items"]]
    before = [sys.getrefcount(o) for o in watched]
    was = gc.isenabled()
    gc.disable()
    try:
        snap = el.snapshot(ns)
        after = [sys.getrefcount(o) for o in watched]
    finally:
        if was:
            gc.enable()
    assert snap.groups and after == before


def test_the_plain_check_sizes_ascii_text_without_pickling_it_and_nothing_else(nb):
    # The pool's check tells a group of ASCII strings its pickled size from their lengths
    # (exact: what pickle.dumps writes). The boundaries, pickled as before: text that is not
    # ASCII (its UTF-8 is longer than its length: over the limit here), a str subclass (it
    # needs a reducer: not plain), and more than three strings (another tuple opcode).
    import pickle
    import pytest
    from elastic_lite.capture.picklers import NotPlain, PlainCheck, TooBig
    ns = nb("class Tag(str):\n    pass")
    check = PlainCheck(ns, 16 * 1024)
    for values in [("a",), ("x" * 255, "y" * 256), ("t" * 16000,), ("",), tuple("abcd")]:
        assert check.size(values) == len(pickle.dumps(values, protocol=5))
    with pytest.raises(TooBig):
        check.size(("t" * 17000,))
    with pytest.raises(TooBig):
        check.size(("é" * 10000,))  # 10,000 characters, 20,000 bytes of UTF-8
    with pytest.raises(NotPlain):
        check.size((ns["Tag"]("x"),))


TYPING = '''
from typing import Generic, TypeVar
T = TypeVar("T")
Num = TypeVar("Num", int, float)
class Box(Generic[T]):
    def __init__(self, item: T):
        self.item = item
box = Box(3)
'''


def test_typevars_of_the_notebook_are_saved_by_value_and_restored(nb):
    # A TypeVar's __module__ is the notebook's and its __name__ its variable's, which made it
    # look like an object pickle saves only by that name; cloudpickle saves it by value.
    ns = nb(TYPING)
    snap = el.snapshot(ns)
    assert not [s for s in snap.skipped if s["name"] in ("T", "Num")], snap.skipped
    printed = restore_elsewhere(snap.data, '''
assert restore_report["ok"], restore_report
print(T.__name__, Num.__constraints__ == (int, float), Box.__parameters__[0] is T, box.item)
''')
    assert printed.strip() == "T True True 3", printed


OWN_NAME = '''
class Marker:
    def __reduce__(self):
        return self.__qualname__
mark = Marker()
mark.__module__, mark.__qualname__ = "__main__", "mark"
'''


def test_an_object_pickle_saves_only_by_its_own_notebook_name_is_skipped_with_why(nb):
    snap = el.snapshot(nb(OWN_NAME))
    reason = next(s["reason"] for s in snap.skipped if s["name"] == "mark")
    assert "only as a reference to the notebook's own name" in reason, snap.skipped
