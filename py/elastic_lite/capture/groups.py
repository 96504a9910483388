"""Group variables that share objects, so each group is pickled together and aliasing survives.

An id-walk from every variable over the objects it reaches (no pickling): two variables that
reach a common non-atomic object end up in one group (union-find). The walk goes level by
level: `gc.get_referents(*frontier)`, then C-level map/compress/filter over the level's ids
(never set operations against the whole `owner` map, which would make it quadratic). Python
code runs once per distinct type and once per distinct class/function met. An object whose
refcount says it has exactly one referrer is walked through without being recorded (nobody
else can reach it), which spares most of the bookkeeping in big data. The cyclic GC is paused
during the walk.

Most of the cost is avoided, not optimised: the walk is deterministic (a budget in OBJECTS,
never in seconds, so the grouping never depends on how loaded the machine is) and it does
not walk what it can prove cannot alias:
- atomic values (int, str, bytes, float, ...) and containers of nothing but atomic values
  contribute no edges (they are filtered by type, level by level, in C);
- the largest variable is not walked at all when every OTHER variable's objects are
  "closed": each object they reach that has more than one referrer has all its referrers
  accounted for (the edges the walk itself followed, plus the namespace bindings). An
  object of the largest variable shared with another variable would need a referrer the
  walk did not see, so closedness proves there is none. A large variable is recognised
  before its first level is expanded (its length, or the width of its next level), so a
  4-million-entry dict next to a few small variables costs nothing to group. If the proof
  fails (something outside holds a reference: IPython's `Out`, a library cache...), the
  large variable is walked too, so the result is the same, only slower.

What the walk does NOT descend into:
- modules, module dicts, the namespace itself, builtins: pickled by reference;
- classes and functions that are not defined in the notebook: pickled by reference;
- generators, frames, coroutines: no serializer can save them, and descending would drag the
  data they point at into their failure;
- notebook functions and classes bound to a top-level name ("defs"): these are the things
  every instance and every caller reaches, so unioning through them would collapse the
  namespace into one group. They get their own group and other records refer to them by
  name (see capture/picklers.py / _rebuild.ref). Only a reference cycle between groups through defs
  (rare: `def f(g=...)` and `def g(f=...)`) merges those groups, so loading never loops.

Memory shared without a Python reference: numpy arrays are not tracked by the GC (their
referents are invisible to `gc.get_referents`), so when numpy is already imported (never
imported here) an array's children are the owner of its memory (the `.base` chain, through
memoryviews to the bytes/bytearray they expose) and, for object arrays, its elements. Views
of one owner therefore land in one group, and `capture.picklers` saves them as views of it. Top-level
arrays whose memory overlaps without a common owner are united too (`np.shares_memory`).

The walk is bounded by `max_objects`: past it, every variable is put into one group (safe:
aliasing is kept, the group is just larger) and `Grouping.truncated` says so.
"""

import collections
import functools
import gc
import itertools
import operator
import sys
import time
import types

_ALONE = 3  # sys.getrefcount of an object referenced by one container only (see _Walk.level)
_PAUSE = 8192  # objects (or width of the next level) after which a variable counts as large
# Levels of nesting (the walk's levels: a linked list's nodes, lists within lists) past which
# a variable is not pickled: picklers recurse once per level, and in Pyodide the JS stack
# overflows first (a fatal error of the interpreter, not a RecursionError): pickle.dumps of
# a 3,000-node linked list kills the kernel, and a checkpoint after every cell would kill it
# again. Host CPython refuses most such values too (RecursionError from ~300 nodes).
# Measured: a 999-node chain checkpoints in Node and in Chromium's worker, plain pickle of
# 2,000 crashes both; 600 leaves room for a deeper stack at the time of the checkpoint
# (a kernel's message handlers).
DEEP_LEVELS = 600
# Nested saves pickle may make: past them a group is not pickled (see _winding and
# capture.picklers.too_deep). One level of the walk is up to three saves (an instance of a
# __slots__ class, its state tuple, its slots dict), so this is at least what DEEP_LEVELS lets
# through: else a 595-node chain of such instances, saved while alone, was skipped as soon as
# _winding had its group measured. A chain of 999 instances (about 2,000 nested saves)
# checkpoints in Node and in Chromium's worker, one of 2,000 (4,000) crashes both.
PICKLE_DEPTH = 3 * DEEP_LEVELS + 100
_TALL = 8  # levels up to which the walk does not note which variable reached which level
_SHARED_ATOMIC = 4096  # atomic values at least this long are grouped by identity (one copy)

ATOMIC = frozenset({
    int, float, complex, str, bytes, bool, type(None), type(Ellipsis),
    type(NotImplemented), range,
})
_SIZED = (list, tuple, dict, set, frozenset)

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


def numpy_ndarray():
    """numpy.ndarray if numpy is ALREADY imported, else None (we never import it)."""
    np = sys.modules.get("numpy")
    return getattr(np, "ndarray", None) if np is not None else None


def memory_owner(arr, ndarray):
    """The object that owns `arr`'s memory: the end of the `.base` chain, looking through
    memoryviews to the object they expose (bytes, bytearray, mmap...) and through numpy's
    own stand-in of `as_strided` / `sliding_window_view` (an `__array_interface__` holder
    whose `.base` is the array it describes)."""
    owner = arr
    base = arr.base
    while base is not None:
        if isinstance(base, ndarray):
            owner, base = base, base.base
        elif type(base) is memoryview:
            owner, base = base.obj, getattr(base.obj, "base", None)
            if not isinstance(owner, ndarray):
                break
        elif type(base).__name__ == "DummyArray" and isinstance(
                getattr(base, "base", None), ndarray):
            base = base.base
        else:
            return base
    return owner


class Grouping:
    def __init__(self, groups, objects, seconds, truncated, unwalked=None, deep=()):
        self.groups = groups  # list of lists of names, in namespace order
        self.deep = set(deep)  # variables nested more than DEEP_LEVELS levels deep
        self.objects = objects  # how many non-atomic objects the walk expanded
        self.seconds = seconds  # informative only: no decision depends on time
        self.truncated = truncated  # None, or why the walk stopped early
        self.unwalked = unwalked  # the variable proven not to share anything without a walk
        self.refs = {}  # name -> names of the notebook defs its value refers to (by name)
        self.types = frozenset()  # the types of the objects the walk looked at
        self.winding = []  # groups pickle may recurse deeper into than the walk saw (_winding)


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


class _TooMany(Exception):
    pass


_compress, _repeat = itertools.compress, itertools.repeat
_count = operator.countOf
_SEQUENCES = (list, tuple)
_not = operator.not_
# What a special child (class, function, module...) is to the walk, decided once per object:
_DROP, _DEF, _NODE = 0, 1, 2  # by reference (not state) / a notebook def (an edge) / walked
_JUST_CLASSES = {type}


class _Walk:
    """The state of one grouping walk (see the module docstring).

    All variables are walked at once, level by level (a breadth-first walk from every root),
    each object carrying the index of the variable it was reached from (its label): the
    fixed cost of a level (some 20 C-level passes) is then paid a few times per snapshot, not
    a few times per variable, which is what dominates a namespace of many small variables."""

    def __init__(self, variables, namespace, def_ids, max_objects):
        self.ns = namespace
        self.names = list(variables)
        self.uf = _UnionFind(len(self.names))
        self.owner = {}  # id(object) -> index of the first variable that reached it
        self.multi = {}  # id -> object, for recorded objects (more than one referrer)
        self.indeg = collections.Counter()  # id -> edges into it the walk followed
        self._stop = None  # ids never walked into (_stop_ids), made when first needed
        self.def_keys = set(def_ids)
        self.def_owner = {}  # id(def) -> variable index that owns it (its top-level name)
        self.edges = set()  # (variable index, id(def)): variable i refers to a def by name
        self.expanded = 0
        self.max_objects = max_objects
        self.ndarray = numpy_ndarray()
        self.special = SPECIAL + ((self.ndarray,) if self.ndarray is not None else ())
        self._is_special = {}  # type -> bool (decided once per type)
        self.kinds = {}  # type -> 0 atomic (no edges), 1 plain (its referents), 2 special
        self._decided = {}  # id(special object) -> (it, _DROP / _DEF / _NODE), once each
        self.deep = set()  # labels of variables reached more than DEEP_LEVELS levels down
        self.tall = {}  # label -> the deepest level past _TALL its variable was walked at
        self.levels = 0  # the deepest level the walk expanded
        self.back = collections.Counter()  # label -> edges to objects of an earlier level
        self.at = {}  # id -> the level a recorded object was reached at (roots: 0)

    @property
    def stop(self):
        """The namespace's and every module's dict (and the shared empty immutables): built
        on first use, which a walk of nothing shared never comes to (it costs one look at
        every module: hundreds in a kernel)."""
        if self._stop is None:
            self._stop = _stop_ids(self.ns)
        return self._stop

    # -- one level ------------------------------------------------------------------------
    def _special_types(self, distinct):
        cache = self._is_special
        out = set()
        for t in distinct:
            s = cache.get(t)
            if s is None:
                s = cache[t] = t not in ATOMIC and issubclass(t, self.special)
            if s:
                out.add(t)
        return out

    def _special_children(self, obj):
        """(children, memory owner or None) of a special object that is a node (not by
        reference). The owner of an array's memory is returned apart: it may be bytes,
        which the atomic filter would drop."""
        if self.ndarray is not None and isinstance(obj, self.ndarray):
            owner = memory_owner(obj, self.ndarray)
            out = gc.get_referents(obj)  # an ndarray subclass's __dict__ (a mask...)
            if obj.dtype.hasobject:
                out.extend(obj.ravel(order="K").tolist() if obj.ndim else [obj.item()])
            return out, (owner if owner is not obj else None)
        if isinstance(obj, _LEAVES):
            return (), None
        if isinstance(obj, type):
            return gc.get_referents(obj), None  # a notebook class: its dict, bases, mro
        if type(obj) is types.FunctionType:
            out = [obj.__defaults__, obj.__kwdefaults__, obj.__dict__]
            if obj.__closure__:
                out.extend(obj.__closure__)
            return [o for o in out if o is not None], None
        if isinstance(obj, types.MethodType):
            return (obj.__func__, obj.__self__), None
        if isinstance(obj, types.BuiltinFunctionType):
            return (obj.__self__,), None
        return (), None

    def _runs(self, objs, labs):
        """(label, children) per run of same-variable plain objects (one gc.get_referents
        each: the frontier is grouped by variable), then per special object; and the
        (owners, their labels) of array memory, kept apart (they may be bytes, which the
        atomic filter would drop)."""
        tys = list(map(type, objs))
        special = self._special_types(set(tys))
        owners, owner_labs, specials = [], [], ()
        if special:
            flags = list(map(special.__contains__, tys))
            plain_flags = list(map(_not, flags))
            specials = zip(_compress(objs, flags), _compress(labs, flags))
            objs, labs = list(_compress(objs, plain_flags)), list(_compress(labs, plain_flags))
        runs = []
        n = len(objs)
        if n:
            if labs[0] == labs[-1] and labs.count(labs[0]) == n:
                cuts = [0, n]
            else:
                cuts = [0]
                cuts.extend(_compress(range(1, n), map(
                    operator.ne, itertools.islice(labs, 1, None), labs)))
                cuts.append(n)
            for a, b in zip(cuts, itertools.islice(cuts, 1, None)):
                one = objs[a]
                # a run of one list or tuple: its items are its referents (no copy to make)
                runs.append((labs[a], one if b - a == 1 and type(one) in _SEQUENCES
                             else gc.get_referents(*objs[a:b])))
        for obj, label in specials:
            children, owner = self._special_children(obj)
            runs.append((label, children))
            if owner is not None:
                owners.append(owner)
                owner_labs.append(label)
        return runs, owners, owner_labs

    def _decide(self, specials, label):
        """Each distinct special object of a run decided once per walk (by reference: not
        state; a notebook def: an edge of `label`; else a node to walk); returns the ids of
        the nodes."""
        decided, walked = self._decided, set()
        for obj in specials:
            oid = id(obj)
            how = decided.get(oid)
            if how is None:
                how = decided[oid] = (obj, _DROP if _by_reference(obj, self.ns) else
                                      _DEF if oid in self.def_keys else _NODE)
            if how[1] == _DEF:
                self.edges.add((label, oid))
            elif how[1] == _NODE:
                walked.add(oid)
        return walked

    def _expand(self, objs, labs):
        """(children, their labels): the non-atomic, not-by-reference objects directly
        referenced by `objs`, each labelled with its parent's variable. References to
        notebook defs become edges (variable -> def: referred to by name, not a union).

        C code end to end for the common path (dicts, lists, tuples, instances), one run of
        same-variable objects at a time: the set of a run's child types first, so a run of
        nothing but atomic values (a list of numbers, of strings: most of the elements of
        ordinary data) costs one C pass over its children and nothing else. Python code runs
        once per run, once per distinct type and once per DISTINCT special object (a class
        reached from 100,000 instances is decided once)."""
        runs, owners, owner_labs = self._runs(objs, labs)
        out, lab = [], []
        kinds = self.kinds
        for label, ch in runs:
            if not ch:
                continue
            first = type(ch[0])  # most runs hold one type (a list of floats, of instances):
            # told in one pass, no list made; the last item first, because counting a mixed
            # run (an instance's class and values) compares unequal types the slow way
            if type(ch[-1]) is first and _count(map(type, ch), first) == len(ch):
                if first in ATOMIC:  # nothing but atomic values: no edges
                    continue
                tys, distinct = None, {first}
            else:
                tys = list(map(type, ch))
                distinct = set(tys)
                if distinct <= ATOMIC:
                    continue
            for t in distinct.difference(kinds):
                kinds[t] = 0 if t in ATOMIC else 2 if issubclass(t, self.special) else 1
            codes = list(map(kinds.get, distinct))
            if 2 in codes and 1 not in codes and distinct.difference(ATOMIC) == _JUST_CLASSES:
                # atomic values and classes of the plain metaclass only (a run of instances:
                # their class, once per instance): the distinct classes in one pass, no
                # list of them made, hashed by identity (`type` hashes that way; a metaclass
                # of its own takes the general path below)
                classes = dict.fromkeys(_compress(ch, map(kinds.get, tys)) if 0 in codes
                                        else ch)
                walked = self._decide(classes, label)
                if not walked:
                    continue  # nothing left to walk (a run of instances of a def)
                kept = [c for c in (_compress(ch, map(kinds.get, tys)) if 0 in codes else ch)
                        if id(c) in walked]
            else:
                kept = ch if 0 not in codes else list(_compress(ch, map(kinds.get, tys)))
                if 2 in codes:  # classes, functions, modules: by reference, defs, or nodes
                    ids = list(map(id, kept))
                    if 1 in codes:  # plain children too: pick the special ones out
                        is_sp = list(map((2).__eq__, map(kinds.get, map(type, kept))))
                        specials = dict(zip(_compress(ids, is_sp), _compress(kept, is_sp)))
                    else:  # every child kept is special
                        specials = dict(zip(ids, kept))
                    walked = self._decide(specials.values(), label)
                    if not walked and 1 not in codes:
                        continue  # nothing left to walk
                    drop = specials.keys() - walked
                    if drop:
                        kept = list(_compress(kept, map(_not, map(drop.__contains__, ids))))
            out.extend(kept)
            lab.extend(_repeat(label, len(kept)))
        if owners:
            out.extend(owners)
            lab.extend(owner_labs)
        return out, lab

    def _level(self, objs, labs, level=0):
        """Expand one level; returns the next (objects, labels)."""
        out, lab = self._expand(objs, labs)
        self.expanded += len(out)
        if self.expanded > self.max_objects:
            raise _TooMany
        # An object whose only reference is the container we came from cannot be reached
        # again from anywhere: descend into it without recording it. (refcount 3 = that
        # container + the `out` list + getrefcount's argument.) In big data (lists of
        # dicts, instances) that is most objects, and it skips all the id bookkeeping.
        refs = list(map(sys.getrefcount, out))
        if refs.count(_ALONE) == len(refs):
            return out, lab
        alone = list(map(_ALONE.__eq__, refs))
        nxt, nxt_labs = list(_compress(out, alone)), list(_compress(lab, alone))
        shared = list(map(_not, alone))
        out, lab = list(_compress(out, shared)), list(_compress(lab, shared))
        ids = list(map(id, out))
        self.indeg.update(ids)  # every edge into a multi-referenced object (closedness)
        keep = list(map(_not, map(self.stop.__contains__, ids)))
        if not all(keep):
            out, lab, ids = (list(_compress(x, keep)) for x in (out, lab, ids))
        # Every test below iterates over this level's ids only (never over `owner`, which
        # grows with the namespace).
        owner, uf = self.owner, self.uf
        prev = list(map(owner.get, ids))
        known = list(map(operator.is_not, prev, _repeat(None)))
        if any(known):  # an edge to an object recorded at this level or before (its
            # children would be at level + 1): sideways or back (see _winding)
            at = self.at
            was = list(map(at.__getitem__, _compress(ids, known)))
            self.back.update(_compress(_compress(lab, known), map(
                operator.ge, _repeat(level), was)))
        for a, b in set(zip(_compress(lab, known), _compress(prev, known))):
            if a != b:
                uf.union(a, b)
        new = list(map(_not, known))
        new_ids = list(_compress(ids, new))
        if not new_ids:
            return nxt, nxt_labs
        new_labs = list(_compress(lab, new))
        first = dict(zip(reversed(new_ids), reversed(new_labs)))  # first label wins
        if len(first) != len(new_ids):  # reached twice in this level: maybe by two variables
            for oid, label in zip(new_ids, new_labs):
                if first[oid] != label:
                    uf.union(first[oid], label)
        byid = dict(zip(new_ids, _compress(out, new)))
        owner.update(first)
        self.at.update(zip(first, _repeat(level + 1)))
        fresh = list(map(byid.__getitem__, first))
        self.multi.update(zip(first, fresh))
        nxt.extend(fresh)
        nxt_labs.extend(first.values())
        return nxt, nxt_labs

    def run(self, objs, labs, pause=False, level=0):
        """Walk from `objs` (labelled, at `level`) to the end. With `pause`, a variable whose
        pending objects pass the threshold is set aside: returns (its label, its objects, their
        level) or None. Labels still walking past DEEP_LEVELS levels go into `deep`."""
        while objs:
            level += 1
            self.levels = max(self.levels, level)
            if level > _TALL:  # narrow, in practice: only deep structures get here
                self.tall.update(zip(labs, _repeat(level)))
            if level > DEEP_LEVELS:
                self.deep.update(labs)
            if pause and len(objs) > _PAUSE:
                label, count = collections.Counter(labs).most_common(1)[0]
                if count > _PAUSE // 2:
                    mine = list(map(label.__eq__, labs))
                    aside = list(_compress(objs, mine))
                    others = list(map(_not, mine))
                    objs, labs = list(_compress(objs, others)), list(_compress(labs, others))
                    self.run(objs, labs, level=level - 1)
                    return label, aside, level - 1
            objs, labs = self._level(objs, labs, level)
        return None

    def flat(self, objs, label):
        """True when nothing lies more than two levels past `objs`: none of their children
        holds anything the GC can see (one C pass: a 4-million-entry dict of numbers costs a
        fraction of pickling it, where telling its items' types costs more than pickling).
        Objects the GC does not track hold nothing a walk could see either. With numpy
        imported (arrays hold objects the GC does not show), one level of the walk says it."""
        if self.ndarray is not None:
            return not self._expand(objs, [label] * len(objs))[0]
        return not gc.get_referents(*gc.get_referents(*objs))

    # -- the whole namespace ---------------------------------------------------------------
    def closed_except(self, skip, variables, holders=()):
        """True if no object recorded outside `skip`'s group has a referrer the walk did not
        follow (other than namespace bindings): then `skip` shares nothing with the rest."""
        probe = []  # calibrates what holding an object in `multi` adds to its refcount
        self.multi[id(probe)] = probe
        del probe
        try:
            counts = dict(zip(self.multi, map(sys.getrefcount, self.multi.values())))
        finally:
            self.multi.popitem()
        baseline = counts.popitem()[1]
        bound = collections.Counter(map(id, self.ns.values()))
        bound.update(map(id, variables.values()))  # the caller's dict of captured variables
        for held in holders:
            if held is not variables:
                bound.update(map(id, held.values()))
        history = {id(d): d for d in (self.ns.get("Out"), self.ns.get("_oh"))
                   if type(d) is dict}  # IPython's output history holds displayed values
        for d in history.values():
            bound.update(map(id, d.values()))
        group = self.uf.find(skip)
        find, owner, indeg = self.uf.find, self.owner, self.indeg
        defs = self.def_keys  # referred to by name from anywhere: not aliasing
        multi = self.multi
        for oid, refs in counts.items():
            if oid in defs or find(owner[oid]) == group:
                continue
            if refs - baseline != indeg[oid] + bound[oid] and not _frozen(multi[oid]):
                return False
        return True

    def unite_overlapping_arrays(self, variables):
        """Top-level arrays whose memory overlaps without a common owner object (memory
        wrapped twice from outside Python): one group, decided by np.shares_memory."""
        if self.ndarray is None:
            return
        np = sys.modules["numpy"]
        utils = getattr(getattr(np, "lib", None), "array_utils", None)
        byte_bounds = utils.byte_bounds if utils is not None else np.byte_bounds
        ndarray = self.ndarray
        arrays = []
        for i, name in enumerate(self.names):
            value = variables[name]
            if not isinstance(value, ndarray) or not value.nbytes:
                continue
            owner = memory_owner(value, ndarray)
            # Memory numpy allocated, or a bytes/bytearray, is nobody else's: only memory
            # wrapped from outside (ctypes, mmap, a C library...) can overlap another owner.
            if type(owner) in (bytes, bytearray) or (
                    isinstance(owner, ndarray) and owner.flags.owndata):
                continue
            lo, hi = byte_bounds(value)
            arrays.append((lo, hi, i, id(owner)))
        if len(arrays) < 2:
            return
        arrays.sort()
        for k, (lo, hi, i, owner) in enumerate(arrays):
            for lo2, hi2, j, owner2 in arrays[k + 1:]:
                if lo2 >= hi:
                    break
                if owner2 == owner or self.uf.find(i) == self.uf.find(j):
                    continue
                a, b = variables[self.names[i]], variables[self.names[j]]
                try:
                    shared = np.shares_memory(a, b, max_work=100_000)
                except Exception:  # too hard to decide exactly: keep them together
                    shared = True
                if shared:
                    self.uf.union(i, j)


def _frozen(obj, depth=4):
    """A tuple/frozenset of nothing but atomic values (a class's `__static_attributes__`, a
    default-argument tuple the compiler also keeps in a code object): immutable all the way
    down, so who else holds it cannot matter."""
    if type(obj) not in (tuple, frozenset) or not depth:
        return False
    return all(type(x) in ATOMIC or _frozen(x, depth - 1) for x in obj)


def _estimate(value):
    """Cheap size of a top-level value (its length if it is a builtin container)."""
    if type(value) in _SIZED:
        return len(value)
    try:
        return len(value) if isinstance(value, _SIZED) else 0
    except Exception:  # a subclass with a __len__ of its own that fails
        return 0


def find_groups(variables, namespace, def_ids, max_objects=20_000_000, holders=()):
    """Partition `variables` (name -> value) into groups; `def_ids` maps id -> def name;
    `holders`: the caller's other dicts holding these values (counted as bindings, as
    `variables` is, when the refcounts tell whether the largest variable must be walked).

    The cyclic GC is paused meanwhile: the walk allocates big temporary lists (no cycles),
    and on Python 3.14 each automatic collection would also scan part of the (large) heap."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _find_groups(variables, namespace, def_ids, max_objects, holders)
    finally:
        if was_enabled:
            gc.enable()


def _find_groups(variables, namespace, def_ids, max_objects, holders):
    t_start = time.perf_counter()
    names = list(variables)
    n = len(names)
    if n == 0:
        return Grouping([], 0, 0.0, None)
    w = _Walk(variables, namespace, def_ids, max_objects)
    atomic_owner = {}  # id -> variable index, for long atomic values bound twice
    paused = {}  # variable index -> objects left when it proved large
    objs, labs = [], []
    truncated = unwalked = None
    for i, name in enumerate(names):
        root = variables[name]
        rid = id(root)
        if type(root) in ATOMIC:
            if type(root) is bytes and w.ndarray is not None and rid not in w.owner:
                w.owner[rid], w.at[rid] = i, 0  # arrays may expose these bytes (np.frombuffer)
                w.multi[rid] = root
            elif rid in w.owner:
                w.uf.union(i, w.owner[rid])
            elif isinstance(root, (str, bytes)) and len(root) >= _SHARED_ATOMIC:
                w.uf.union(i, atomic_owner.setdefault(rid, i))
            continue
        if rid in w.owner:
            w.uf.union(i, w.owner[rid])
            continue
        w.owner[rid], w.at[rid] = i, 0
        w.multi[rid] = root
        if rid in w.def_keys:
            w.def_owner.setdefault(rid, i)
        if _estimate(root) > _PAUSE:
            paused[i] = [root]
        else:
            objs.append(root)
            labs.append(i)
    root = None  # no reference of ours left for closed_except to see
    try:
        aside = w.run(objs, labs, pause=not paused)
        objs = labs = None
        start = 0  # the level the paused variables' pending objects are at
        if aside is not None:
            paused[aside[0]] = aside[1]
            start = aside[2]
            aside = None
        if paused:
            # Keep the widest paused variable for last; walk the others to the end.
            last = max(paused, key=lambda k: (_estimate(variables[names[k]]),
                                              len(paused[k]), -k))
            rest = [k for k in paused if k != last]
            w.run([o for k in rest for o in paused[k]],
                  [k for k in rest for _ in paused[k]])
            for k in rest:
                del paused[k]
            # Left unwalked only when nothing non-atomic lies past its pending objects: how
            # deep pickle would go inside it is known then (a large list of dicts could hold
            # a chain of thousands of objects, which pickling in Pyodide does not survive)
            if w.closed_except(last, variables, holders) and w.flat(paused[last], last):
                unwalked = names[last]
                w.levels = max(w.levels, start + 2)
                if start + 2 > _TALL:
                    w.tall[last] = start + 2
            else:
                left = paused.pop(last)
                w.run(left, [last] * len(left), level=start)
            paused.clear()
    except _TooMany:
        truncated = (f"the grouping walk stopped after {w.expanded:,} objects (its budget); "
                     "every variable was saved in one group, so aliasing is kept")
        for j in range(1, n):
            w.uf.union(0, j)
    if truncated is None:
        w.unite_overlapping_arrays(variables)
        _merge_def_cycles(w.uf, n, w.edges, w.def_owner)
    groups = {}
    for i, name in enumerate(names):
        groups.setdefault(w.uf.find(i), []).append(name)
    out = Grouping(list(groups.values()), w.expanded, time.perf_counter() - t_start,
                   truncated, unwalked, deep=(names[i] for i in w.deep))
    if truncated is None:
        out.winding = _winding(w, groups, out.deep)
    out.types = frozenset(w.kinds).union(w._is_special)
    for i, d in w.edges:
        if d in def_ids:
            out.refs.setdefault(names[i], set()).add(def_ids[d])
    if truncated is not None or unwalked is not None:  # not walked to the end: any def
        every = set(def_ids.values())
        for name in (names if truncated is not None else [unwalked]):
            out.refs[name] = every
    return out


def _winding(w, groups, deep):
    """The groups pickling may recurse deeper into than the walk's levels say (each a list of
    names): the walk counts levels breadth first, pickle goes depth first, and along an edge
    to an object the walk had already reached at an earlier level (sideways or back: a node
    linked to the next one, both held in a flat list) it goes on deeper than that object's
    level (4,000 such nodes are two levels to the walk, 4,000 to pickle). Every other edge
    goes one level down, so a path of pickle's is at most (k + 1) * (levels + 1) long, k the
    group's sideways or back edges, levels its deepest (noted per variable past _TALL; below,
    the walk's deepest); only a group where that passes PICKLE_DEPTH is listed, for
    `capture.picklers.too_deep` to measure."""
    find = w.uf.find
    lowest = min(_TALL, w.levels)  # what a group with no variable past _TALL levels has
    levels = collections.defaultdict(lambda: lowest)  # a group's deepest level
    for label, level in w.tall.items():
        g = find(label)
        levels[g] = max(levels[g], level)
    back = collections.Counter()
    for label, k in w.back.items():
        back[find(label)] += k
    return [groups[g] for g in groups
            if (back[g] + 1) * (levels[g] + 1) > PICKLE_DEPTH
            and not deep.intersection(groups[g])]


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
