"""Group variables that share objects, so each group is pickled together and aliasing survives.

An id-walk from every variable over the objects it reaches (no pickling): two variables that
reach a common non-atomic object end up in one group (union-find). The walk goes level by
level: `gc.get_referents(*frontier)`, then C-level map/compress/filter over the level's ids
(never set operations against the whole `owner` map, which would make it quadratic). Python
code runs once per distinct type and once per distinct class/function met. An object whose
refcount says it has exactly one referrer is walked through without being recorded (nobody
else can reach it), which spares most of the bookkeeping in big data. The cyclic GC is paused
during the walk. Cost: ~0.7 us per reachable object natively, ~0.7-1.5 us in Pyodide.

What the walk does NOT descend into:
- atomic values (int, str, bytes, float, ...): sharing them does not matter;
- modules, module dicts, the namespace itself, builtins: pickled by reference;
- classes and functions that are not defined in the notebook: pickled by reference;
- generators, frames, coroutines: no serializer can save them, and descending would drag the
  data they point at into their failure;
- notebook functions and classes bound to a top-level name ("defs"): these are the things
  every instance and every caller reaches, so unioning through them would collapse the
  namespace into one group. They get their own group and other records refer to them by
  name (see _pickling.py / _rebuild.ref). Only a reference cycle between groups through defs
  (rare: `def f(g=...)` and `def g(f=...)`) merges those groups, so loading never loops.

The walk is bounded: past `budget_s` seconds or `max_objects` objects it stops and puts every
variable it has not finished into one group together with everything it has seen (safe:
aliasing is kept, the group is just larger) and says so in `Grouping.truncated`.
"""

import functools
import gc
import itertools
import operator
import sys
import time
import types

_ALONE = 3  # sys.getrefcount of an object referenced by one container only (see find_groups)

ATOMIC = frozenset({
    int, float, complex, str, bytes, bool, type(None), type(Ellipsis),
    type(NotImplemented), range,
})

# Objects the walk must look at in Python before descending.
SPECIAL = (
    type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
    types.MethodType, types.CodeType, types.GeneratorType, types.FrameType,
    types.CoroutineType, types.AsyncGeneratorType,
)
_LEAVES = (types.ModuleType, types.CodeType, types.GeneratorType, types.FrameType,
           types.CoroutineType, types.AsyncGeneratorType)


def is_notebook_function(obj, namespace):
    return type(obj) is types.FunctionType and obj.__globals__ is namespace


def is_notebook_class(obj, namespace):
    if not isinstance(obj, type):
        return False
    mod = getattr(obj, "__module__", None)
    return mod == namespace.get("__name__", "__main__") or mod == "__main__"


LRU_WRAPPER = type(functools.lru_cache(maxsize=None)(lambda: None))


def is_notebook_lru(obj, namespace):
    """`@functools.lru_cache` / `@functools.cache` on a notebook function."""
    return type(obj) is LRU_WRAPPER and is_notebook_function(
        getattr(obj, "__wrapped__", None), namespace)


def is_notebook_def(obj, namespace):
    return (is_notebook_function(obj, namespace) or is_notebook_class(obj, namespace)
            or is_notebook_lru(obj, namespace))


class Grouping:
    def __init__(self, groups, objects, seconds, truncated):
        self.groups = groups  # list of lists of names, in namespace order
        self.objects = objects  # how many distinct non-atomic objects the walk visited
        self.seconds = seconds
        self.truncated = truncated  # None, or why the walk stopped early


class _UnionFind:
    def __init__(self, n):
        self.parent = list(range(n))

    def find(self, i):
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _by_reference(obj, namespace):
    """True for objects pickle saves as a name (module, library class or function): they
    are not state, and two variables using `math.sqrt` or `Fraction` share nothing."""
    if isinstance(obj, (types.ModuleType, types.CodeType)):
        return True
    if isinstance(obj, type):
        return not is_notebook_class(obj, namespace)
    if type(obj) is types.FunctionType:
        return obj.__globals__ is not namespace
    if isinstance(obj, types.BuiltinFunctionType):
        owner = getattr(obj, "__self__", None)
        return owner is None or isinstance(owner, types.ModuleType)
    return False


def _special_children(obj, namespace):
    """Children of a special object that is a node (not by reference)."""
    if isinstance(obj, _LEAVES):
        return ()
    if isinstance(obj, type):
        return gc.get_referents(obj)  # a notebook class: its dict, bases, mro
    if type(obj) is types.FunctionType:
        out = [obj.__defaults__, obj.__kwdefaults__, obj.__dict__]
        if obj.__closure__:
            out.extend(obj.__closure__)
        return [o for o in out if o is not None]
    if isinstance(obj, types.MethodType):
        return (obj.__func__, obj.__self__)
    if isinstance(obj, types.BuiltinFunctionType):
        return (obj.__self__,)
    return ()


def _kinds(objs):
    """(types of objs, the distinct SPECIAL types among them). Type tests are made once per
    distinct type: isinstance with a tuple costs ~200 ns per object natively, a set lookup on
    the type ~20 ns (both several times more in WebAssembly)."""
    tys = list(map(type, objs))
    distinct = set(tys)
    special = {t for t in distinct if t not in ATOMIC and issubclass(t, SPECIAL)}
    return tys, distinct, special


def _children(objs, namespace):
    """All non-atomic, not-by-reference objects directly referenced by `objs`.

    The common path (dicts, lists, tuples, instances) is C code end to end: type lookups via
    map, gc.get_referents on the whole level, filtering via compress. Python code runs once
    per distinct type and once per DISTINCT special object (a class reached from 100,000
    instances is decided once)."""
    tys, _, special = _kinds(objs)
    if special:
        flags = list(map(special.__contains__, tys))
        plain = list(itertools.compress(objs, map(operator.not_, flags)))
        out = gc.get_referents(*plain) if plain else []
        for obj in itertools.compress(objs, flags):
            out.extend(_special_children(obj, namespace))
    else:
        out = gc.get_referents(*objs)
    tys, distinct, special = _kinds(out)
    keep_types = distinct - ATOMIC
    if len(keep_types) != len(distinct):
        keep = list(map(keep_types.__contains__, tys))
        out = list(itertools.compress(out, keep))
        if special:
            tys = list(itertools.compress(tys, keep))
    if special:
        specials = list(itertools.compress(out, map(special.__contains__, tys)))
        unique = dict(zip(map(id, specials), specials))
        drop = {i for i, o in unique.items() if _by_reference(o, namespace)}
        if drop:
            out = list(itertools.compress(
                out, map(operator.not_, map(drop.__contains__, map(id, out)))))
    return out


def _stop_ids(namespace):
    """Dicts never to walk into: the namespace itself and every module's globals."""
    import builtins
    # Also the immutable singletons every container may hold: sharing them is not aliasing.
    stop = {id(namespace), id(builtins.__dict__), id(()), id(frozenset())}
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if d is not None:
            stop.add(id(d))
    return stop


def find_groups(variables, namespace, def_ids, budget_s=5.0, max_objects=20_000_000):
    """Partition `variables` (name -> value) into groups; `def_ids` maps id -> def name.

    The cyclic GC is paused meanwhile: the walk allocates big temporary lists (no cycles),
    and on Python 3.14 each automatic collection would also scan part of the (large) heap."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _find_groups(variables, namespace, def_ids, budget_s, max_objects)
    finally:
        if was_enabled:
            gc.enable()


def _find_groups(variables, namespace, def_ids, budget_s, max_objects):
    names = list(variables)
    n = len(names)
    start = time.perf_counter()
    if n <= 1:
        return Grouping([names] if names else [], 0, 0.0, None)
    uf = _UnionFind(n)
    owner = {}  # id(object) -> index of the first variable that reached it
    stop = _stop_ids(namespace)
    def_keys = set(def_ids)
    def_owner = {}  # id(def) -> variable index that owns it (its top-level name)
    edges = []  # (variable index, id(def)) : variable i refers to a def by name
    unique_seen = 0  # objects walked through without recording them (see below)
    truncated = None
    deadline = start + budget_s
    unfinished_from = None
    for i, name in enumerate(names):
        root = variables[name]
        rid = id(root)
        if rid in owner:
            uf.union(i, owner[rid])
            continue
        owner[rid] = i
        if rid in def_keys:
            def_owner.setdefault(rid, i)
        frontier = [root]
        while frontier:
            if len(owner) + unique_seen > max_objects or time.perf_counter() > deadline:
                truncated = (f"the grouping walk stopped after {len(owner) + unique_seen:,} "
                             f"objects and {time.perf_counter() - start:.1f} s; variables from "
                             f"{name!r} on were saved as one group with everything before")
                unfinished_from = i
                break
            out = _children(frontier, namespace)
            # An object whose only reference is the container we came from cannot be reached
            # again from anywhere: descend into it without recording it. (refcount 3 = that
            # container + the `out` list + getrefcount's argument.) In big data (lists of
            # dicts, instances) that is most objects, and it skips all the id bookkeeping.
            alone = list(map(_ALONE.__eq__, map(sys.getrefcount, out)))
            frontier = list(itertools.compress(out, alone))
            unique_seen += len(frontier)
            out = list(itertools.compress(out, map(operator.not_, alone)))
            if not out:
                continue
            byid = dict(zip(map(id, out), out))
            # Every test below iterates over this level's ids only (never over `owner`, which
            # grows with the namespace): C-level filter/filterfalse, no set ops on dict views.
            ids = list(itertools.filterfalse(stop.__contains__, byid))
            if def_keys:
                hits = [d for d in def_keys if d in byid and d != rid]
                if hits:  # defs are referred to by name: an edge, not a union
                    edges.extend((i, d) for d in hits)
                    ids = list(itertools.filterfalse(def_keys.__contains__, ids))
            seen = set(map(owner.__getitem__, filter(owner.__contains__, ids)))
            seen.discard(i)
            for other in seen:
                uf.union(i, other)
            new = list(itertools.filterfalse(owner.__contains__, ids))
            owner.update(dict.fromkeys(new, i))
            frontier.extend(map(byid.__getitem__, new))
        if unfinished_from is not None:
            break
    if unfinished_from is not None:
        for j in range(1, n):
            uf.union(0, j)
    else:
        _merge_def_cycles(uf, n, edges, def_owner)
    groups = {}
    for i, name in enumerate(names):
        groups.setdefault(uf.find(i), []).append(name)
    return Grouping(list(groups.values()), len(owner) + unique_seen,
                    time.perf_counter() - start, truncated)


def _merge_def_cycles(uf, n, edges, def_owner):
    """Union groups that refer to each other's defs in a cycle (strongly connected)."""
    graph = {}
    for i, d in edges:
        j = def_owner.get(d)
        if j is None:
            continue
        a, b = uf.find(i), uf.find(j)
        if a != b:
            graph.setdefault(a, set()).add(b)
    if not graph:
        return
    # Tarjan's SCC, iterative (no recursion limit on long chains).
    index, low, on_stack, stack, counter = {}, {}, set(), [], [0]
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                for m in members[1:]:
                    uf.union(members[0], m)
