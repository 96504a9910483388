"""Mutation cases of change detection, shared by host CPython
(tests/py/test_change_detection.py) and fresh Pyodide interpreters
(tests/node/pyodide-change-detection.test.mjs runs this file there).

`run_case(store, case)` takes a checkpoint, another (nothing changed), mutates one thing, takes
a third, and restores the third from the store's bytes into a NEW namespace; it returns what
was reused/written each time and whether the restored namespace shows the mutation."""

import elastic_lite as el
from elastic_lite.changes import fast_path as _fast_path
from elastic_lite.session.kernel import SESSION

# Each case: setup code, the mutation, the name that must be rewritten, a check that the
# restored namespace sees the mutation (an expression that must be True there).
MUTATIONS = {
    "nested container": ("x = {'a': [1, {'b': [2, 3]}]}", "x['a'][1]['b'].append(4)", "x",
                         "x == {'a': [1, {'b': [2, 3, 4]}]}"),
    "dict reordered, same items": ("x = {'a': 1, 'b': 2}", "x['a'] = x.pop('a')", "x",
                                   "list(x) == ['b', 'a']"),
    "bytearray in place (same length)": ("x = bytearray(200000)", "x[123456] = 7", "x",
                                         "x[123456] == 7 and len(x) == 200000"),
    "small bytearray": ("x = bytearray(b'abc')", "x[0] = 65", "x", "x == bytearray(b'Abc')"),
    "array.array in place": ("import array\nx = array.array('i', range(100000))",
                             "x[99999] = -1", "x", "x[99999] == -1"),
    "array.array typecode only": ("import array\nx = array.array('i', [1, 2])",
                                  "x = array.array('I', [1, 2])", "x", "x.typecode == 'I'"),
    "instance attribute": ("class P:\n    def __init__(self): self.v = [1]\np = P()",
                           "p.v[0] = 2", "p", "p.v == [2]"),
    "new instance attribute": ("class P:\n    pass\np = P()", "p.w = 5", "p", "p.w == 5"),
    "slotted instance": ("class S:\n    __slots__ = ('a', 'b')\n"
                         "    def __init__(self): self.a, self.b = 1, 2\ns = S()",
                         "s.b = 3", "s", "s.b == 3 and not hasattr(s, '__dict__')"),
    "tuple holding a list": ("t = (1, [2])", "t[1].append(3)", "t", "t == (1, [2, 3])"),
    "random.Random state": ("import random\nr = random.Random(7)", "r.random()", "r",
                            "(lambda q: (q.random(), q.random())[1])"
                            "(__import__('random').Random(7)) == r.random()"),
    "io.StringIO position": ("import io\nf = io.StringIO('hello world')", "f.read(6)", "f",
                             "f.read() == 'world'"),
    "io.StringIO contents": ("import io\nf = io.StringIO()", "f.write('x')", "f",
                             "f.getvalue() == 'x'"),
    "itertools.count": ("import itertools\nc = itertools.count(5)", "next(c)", "c",
                        "next(c) == 6"),
    "deque": ("import collections\nq = collections.deque([1, 2], maxlen=5)",
              "q.rotate(1)", "q", "list(q) == [2, 1] and q.maxlen == 5"),
    "set": ("s = {1, 2}", "s.discard(1)", "s", "s == {2}"),
    "closure nonlocal": ("def make():\n    n = 0\n    def inc():\n        nonlocal n\n"
                         "        n += 1\n        return n\n    return inc\ninc = make()",
                         "inc()", "inc", "inc() == 2"),
    "function default": ("def f(x=[1]):\n    return x\n", "f.__defaults__[0].append(2)",
                         "f", "f() == [1, 2]"),
    "function attribute": ("def f():\n    pass\n", "f.tag = 'v2'", "f", "f.tag == 'v2'"),
    "class attribute": ("class K:\n    level = 1\n", "K.level = 2", "K", "K.level == 2"),
    "PickleBuffer stand-in": (
        "import pickle\n"
        "class Buf:\n"
        "    def __init__(self, data): self.data = data\n"
        "    def __reduce_ex__(self, protocol):\n"
        "        return (type(self), (pickle.PickleBuffer(self.data),))\n"
        "b = Buf(bytearray(300000))",
        "b.data[299999] = 1", "b", "bytes(b.data)[299999] == 1"),
    "rebound to an equal-length string": ("s = 'a' * 100000", "s = 'b' + s[1:]", "s",
                                          "s[0] == 'b' and len(s) == 100000"),
    # from 1 MiB, buffers are compared with a private copy (memcmp) instead of their CRC-32
    "big bytearray, one byte": ("x = bytearray(3 << 20)", "x[(3 << 20) - 5] = 1", "x",
                                "x[-5] == 1 and len(x) == 3 << 20"),
    "big array.array, two elements swapped 65521 apart": (
        "import array\nx = array.array('d', range(400000))",
        "x[0], x[65521] = x[65521], x[0]", "x", "x[0] == 65521.0 and x[65521] == 0.0"),
    "big PickleBuffer stand-in": (
        "import pickle\n"
        "class Buf:\n"
        "    def __init__(self, data): self.data = data\n"
        "    def __reduce_ex__(self, protocol):\n"
        "        return (type(self), (pickle.PickleBuffer(self.data),))\n"
        "b = Buf(bytearray(2 << 20))",
        "b.data[12345] = 7", "b", "bytes(b.data)[12345] == 7"),
    "rebound to a different big bytes": ("x = bytes(100000)", "x = bytes(99999) + b'\\x01'",
                                         "x", "x[-1] == 1"),
    # Changes the fast path of change detection (_fast_path: Python 3.12+, so Pyodide) must see
    # although the cell does not name the variable: it reuses the records of variables no
    # code named since the previous checkpoint, without walking or pickling them.
    "through an alias": ("x = [1, 2]\nholder = [x]", "holder[0][0] = 9", "x",
                         "x == [9, 2] and holder[0] is x"),
    "a function changing a global": ("data = [1]\ndef put():\n    data[0] = 2", "put()",
                                     "data", "data == [2]"),
    "a function rebinding a global": ("n = [1]\ndef bump():\n    global n\n    n = [n[0] + 1]",
                                      "bump()", "n", "n == [2]"),
    "a method changing its instance": (
        "class C:\n    def __init__(self): self.v = [0]\n    def put(self): self.v[0] = 1\n"
        "c = C()", "c.put()", "c", "c.v == [1]"),
    "a lambda changing a global": ("vals = [1]",
                                   "list(map(lambda v: vals.insert(0, v) or vals.pop(), [2]))",
                                   "vals", "vals == [2]"),
    "a sort key changing a global": ("log = [0]\ndef key(v):\n    log[0] += v\n    return v",
                                     "sorted([2, 1], key=key)", "log", "log == [3]"),
    "a generator resumed": ("acc = [0]\ndef gen():\n    while True:\n"
                            "        acc[0] += 1\n        yield\ng = gen()\nnext(g)",
                            "next(g)", "acc", "acc == [2]"),
    "exec in a cell": ("y = [0]", "exec('y[0] = 5')", "y", "y == [5]"),
    "globals() item changed": ("z = [0]", "globals()['z'][0] = 1", "z", "z == [1]"),
    "globals() item rebound": ("w = [0]", "globals()['w'] = [7]", "w", "w == [7]"),
    "class attribute through an instance": ("class K:\n    reg = [0]\nr = K.reg\nk = K()",
                                            "k.reg[0] = 1", "r", "r == [1]"),
    # the standard library's Python code (json, re) called by a cell is not library code that
    # could change a variable behind the cell's back (in Pyodide it lives in a zip file)
    "a cell calling the standard library": (
        "import json, re\nlog = []", "log.append(json.dumps({'a': re.sub('a', 'b', 'abc')}))",
        "log", "log == ['{\"a\": \"bbc\"}']"),
}
# Cases where the fast path must be taken (`other` reused without being walked or pickled,
# where sys.monitoring exists), and cases where it must give up (code that reaches a
# variable without naming it): every variable is looked at again.
# Its group pickles a notebook class by value, in bytes that differ from one pickle to the
# next: the full path never takes it for unchanged (safe, not cheap); the fast path does.
UNSTABLE = ("class attribute through an instance",)
GIVE_UP = ("globals() item changed", "globals() item rebound", "function default")
FAST = ("through an alias", "a function changing a global", "a function rebinding a global",
        "a method changing its instance", "a lambda changing a global",
        "a sort key changing a global", "a generator resumed", "exec in a cell",
        "class attribute through an instance", "nested container", "set", "small bytearray",
        "a cell calling the standard library")


async def checkpoint(store, name, ns):
    """A checkpoint with change detection into `store`: the kernel session's write phases
    (group, write, send, finish, commit), its Snapshot."""
    return await SESSION._write(store, name, ns)


def reused(snap):
    return sorted(n for g in snap.groups if g.reused for n in g.names)


def written(snap):
    return sorted(n for g in snap.groups if not g.reused for n in g.names)


async def run_case(store, case, prefix="case", shadow_budget=None):
    """One case (see the module doc); `shadow_budget`: change detection's copies of big
    buffers (None: the default; 0: none, every buffer compared by its CRC-32)."""
    old = SESSION.shadow_budget
    if shadow_budget is not None:
        SESSION.shadow_budget = shadow_budget
    try:
        return await _run_case(store, case, prefix)
    finally:
        SESSION.shadow_budget = old


async def _run_case(store, case, prefix):
    setup, mutate, name, check = MUTATIONS[case]
    ns = {"__name__": "__main__"}
    _fast_path.cells_run_in(ns)  # every change below is made by code run in it, as cells are
    exec(compile(setup + "\nother = [1, 2, 3]", "<setup>", "exec"), ns)
    await checkpoint(store, f"{prefix}-1", ns)
    same = await checkpoint(store, f"{prefix}-2", ns)
    exec(compile(mutate, "<mutate>", "exec"), ns)
    after = await checkpoint(store, f"{prefix}-3", ns)
    entry = await store.get(f"{prefix}-3")
    fresh = {"__name__": "__main__"}
    report = el.load_snapshot(entry["bytes"], fresh, foreign=False)  # this store's own entry
    skipped = [s["name"] for s in after.skipped]
    if name in skipped:  # no serializer of this Python can save it (itertools in 3.14)
        return {"name": name, "skipped": True, "in_first": name in reused(same) + written(same)}
    return {"name": name, "skipped": False, "reused_unchanged": name in reused(same),
            "written_changed": name in written(after), "other_reused": "other" in reused(after),
            "restored_ok": report.ok, "shows_change": bool(eval(check, fresh)),
            "other_untouched": _untouched(after, "other")}


def _untouched(snap, name):
    """True when `name`'s record was reused by the fast path (no code named it since)."""
    return any(g.reused and name in g.names and "no code named it" in (g.note or "")
               for g in snap.groups)
