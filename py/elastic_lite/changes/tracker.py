"""Change detection between checkpoints (issue 14): a group of variables unchanged since this
kernel's previous checkpoint to the same store is not written again — the new checkpoint
names the record the store already holds, by key and length — and, where a cheap proof
exists, it is not even pickled again.

Correctness comes first: a changed object must never be taken for unchanged. A group is
taken as unchanged in one of two ways only:

1. A proof without pickling (`proof_of`), for values whose whole state the proof sees:
   - values immutable all the way down (int, float, str, bytes, ..., tuples and frozensets of
     them) that are the very objects of last time (`is`). The memo keeps them alive, so no
     other object can have taken their ids meanwhile;
   - one bytearray or array.array (exact types): type, typecode, length and the same bytes.
   Nothing else has such a proof here: dicts, lists, instances, functions, numpy arrays,
   objects whose state lives in C (random.Random, deque, io.StringIO, itertools...).
2. Pickling again and comparing: the serializer, the stream's length and BLAKE2b-128 digest
   (`match_key`), and each out-of-band buffer's bytes. Equal means the record's bytes are the
   stored record's: records are position independent, so the stored copy stands for it at any
   offset. This sees whatever pickle sees — a Random's state, a StringIO's position, a deque's
   items — and saves the store write, not the pickling. Pickling that is not deterministic (a
   set of objects ordered by address that moved) only makes a record look changed: safe.

"The same bytes" of a buffer (`check_content`): a buffer of at least SHADOW_MIN bytes is
compared byte for byte (memcmp) with a private copy kept from last time (a "shadow"), as long
as all the shadows of the checkpoint fit in the budget (`set_shadow_budget`, 256 MiB by
default): exact, and 3x faster than a checksum in Pyodide (memcmp ~10 GB/s; zlib's CRC-32,
the fastest checksum there, 2-3 GB/s), at the price of that memory. Other buffers (smaller,
or past the budget) are compared by length and CRC-32: the one residual risk, stated, is a
changed buffer keeping its length and CRC-32 — a 2^-32 chance per changed buffer. Pickle
streams, where small variables change at every cell, use the 128-bit digest.

What is remembered (`Tracker`, kept by the kernel session per namespace and store): for
each data record of the previous checkpoint its group's names, the record's key and length
in the store (read back with one `get_entry` after the commit), its match_key, its proof,
the objects the proof holds, what is known of its buffers' bytes, and its report line.
Before a checkpoint `prepare()` asks the store whether those records are still there
(`has_records`, which also pins them until the commit: a delete meanwhile cannot free them,
and a record the store found damaged counts as missing, so it is written again); missing
ones are forgotten. A restore drops the namespace's tracker: the first checkpoint after it
is whole.

The timeline's rules (the points' names and labels, which one a restore without a name
brings back) are in session/timeline.py; the kernel session keeps its state.
"""

import array
import hashlib
import zlib

from ..capture.groups import ATOMIC

_GONE = object()
_IMMUTABLE_BUDGET = 100_000  # items examined to prove a tuple/frozenset immutable, at most
SHADOW_MIN = 1 << 20  # buffers from this size are compared with a private copy (below: CRC)


class Content:
    """What is remembered of one buffer's bytes: its length, its CRC-32 (None when it was
    not computed) and a private copy (None when small or past the budget)."""

    __slots__ = ("nbytes", "crc", "shadow")

    def __init__(self, nbytes, crc, shadow):
        self.nbytes, self.crc, self.shadow = nbytes, crc, shadow


class ShadowRoom:
    """The shadow budget of one checkpoint: copies kept or made count against it."""

    def __init__(self, nbytes):
        self.left = nbytes

    def take(self, n):
        if n > self.left:
            return False
        self.left -= n
        return True

    def give_back(self, content):
        if content.shadow is not None:
            self.left += len(content.shadow)


NO_SHADOW_ROOM = ShadowRoom(0)


def check_content(raw, previous, room):
    """(same, Content): whether the flat buffer `raw` holds the bytes `previous` (a Content,
    or None) remembers — by memcmp with its copy, else by length and CRC-32 — and what to
    remember of it now (the previous copy when equal; a new copy if it fits in `room`)."""
    n = raw.nbytes
    same, crc = False, None
    if previous is not None and previous.shadow is not None and len(previous.shadow) == n:
        if bytearray.__eq__(previous.shadow, raw) is True:
            if not room.take(n):  # already allocated: keep it anyway, and say so
                room.left -= n
            return True, previous
    elif previous is not None and previous.nbytes == n and previous.crc is not None:
        crc = zlib.crc32(raw)
        same = crc == previous.crc
    # the CRC-32 is computed only when needed: to compare, or when no copy is kept
    shadow = bytearray(raw) if n >= SHADOW_MIN and room.take(n) else None
    if shadow is None and crc is None:
        crc = zlib.crc32(raw)
    return same, Content(n, crc, shadow)


class KnownRecord:
    """What one data record of a checkpoint was: enough to know it again."""

    __slots__ = ("names", "key", "length", "match_key", "proof", "held", "report", "writable",
                 "buffers", "content", "ids", "lens", "defs")

    def __init__(self, names, match_key, proof, held, report, writable, key=None, length=None,
                 buffers=(), content=None):
        self.ids = None  # id of each variable's value when it was saved (see Reuse.untouched)
        self.lens = None  # len() of each value that is a builtin container or string, or None
        self.defs = frozenset()  # names of the notebook defs its values refer to by name
        self.names = names  # tuple: the group (its record's header names them in this order)
        self.match_key = match_key  # see match_key()
        self.proof = proof  # see proof_of(), or None
        self.held = held  # the objects an identity proof refers to (kept alive), or None
        self.report = report  # the GroupReport of when it was written
        self.writable = writable  # out-of-band buffers restore must hand back writable
        self.key = key  # the store's key of the record, once committed
        self.length = length  # the record's length in the container (a multiple of 64)
        self.buffers = buffers  # Content of each out-of-band buffer, in record order
        self.content = content  # Content of a lone bytearray/array.array (its proof), or None


def match_key(serializer, stream_length, stream_digest, buffer_lengths):
    """What two records must share besides their buffers' bytes (see check_content)."""
    return (serializer, stream_length, stream_digest, tuple(buffer_lengths))


def stream_hasher():
    return hashlib.blake2b(digest_size=16)


def _immutable(value, budget):
    """True if `value` is immutable all the way down (atoms, tuples/frozensets of them);
    `budget` is a one-item list counting the items still allowed to be examined."""
    t = type(value)
    if t in ATOMIC:
        return True
    if t is not tuple and t is not frozenset:
        return False
    budget[0] -= len(value)
    if budget[0] < 0:
        return False
    return all(type(x) in ATOMIC or _immutable(x, budget) for x in value)


def proof_of(values, previous=None, room=NO_SHADOW_ROOM):
    """(proof, held, content, same) for the group's values: `proof` None when no cheap proof
    exists; `same` True when it proves the group unchanged since `previous` (a KnownRecord or None).

    Identity proof: every value immutable all the way down; proof = their ids, held = the
    values (so the ids stay theirs). A value that is the object the previous memo held was
    proven immutable then, and is not examined again. Content proof: one bytearray or
    array.array of exactly those types: type, typecode and length in the proof, the bytes
    compared by check_content (`content` is what to remember of them)."""
    if len(values) == 1:
        value = values[0]
        t = type(value)
        if t is bytearray or t is array.array:
            raw = memoryview(value).cast("B")
            proof = ("content", t.__name__, getattr(value, "typecode", None), raw.nbytes)
            known = previous.content if previous is not None and previous.proof == proof else None
            same, content = check_content(raw, known, room)
            return proof, None, content, same and known is not None
    old = previous.held if previous is not None and previous.held is not None else ()
    budget = [_IMMUTABLE_BUDGET]
    for i, value in enumerate(values):
        if i < len(old) and old[i] is value:
            continue
        if not _immutable(value, budget):
            return None, None, None, False
    proof = ("same",) + tuple(map(id, values))
    return proof, tuple(values), None, previous is not None and previous.proof == proof


class Tracker:
    """This kernel's memory of its previous checkpoint of one namespace to one store: the
    memos of its data records, by group names (see the module doc), and what code may have
    changed since (_fast_path.Changes, armed when that checkpoint started)."""

    def __init__(self):
        self.memos = {}  # names tuple -> KnownRecord (key known)
        self.changes = None


_SIZED = (list, dict, set, frozenset, tuple, str, bytes, bytearray)


def _fingerprint(values):
    return (tuple(map(id, values)),
            tuple(len(v) if type(v) in _SIZED else None for v in values))


class Reuse:
    """One checkpoint being taken with change detection (made by `prepare`; two checkpoints
    running at once, e.g. an automatic one and a person's, each have their own).

    The snapshot loop asks `previous(names)` for a group's memo, then either reuses it (by
    proof or by match_key: `reused(index, memo, ...)`) or writes the record (`wrote(index,
    memo)`); `key(index)` is the stored key of a reused record. `committed()` learns the new
    records' keys and makes this checkpoint the one the tracker remembers."""

    def __init__(self, tracker, memos, shadow_budget):
        self.tracker = tracker
        self.memos = memos  # names tuple -> KnownRecord of the previous checkpoint, still stored
        self.current = {}  # record index -> KnownRecord of this checkpoint
        self.stats = {"reused": 0, "reused_bytes": 0, "proven": 0, "written": 0,
                      "untouched": 0}
        self.slow_reason = None  # why the fast path was not taken (see untouched())
        self.room = ShadowRoom(shadow_budget)  # copies of big buffers this checkpoint keeps
        self.changes = None  # what may have changed since the previous checkpoint
        self.fresh = None  # what may change from now on (the tracker's once committed)
        self.variables = {}
        self.def_refs = {}  # name -> names of the defs its value refers to (this walk)

    def begin(self, namespace, variables):
        """The snapshot loop starts: changes are collected anew from now on."""
        from . import fast_path as _fast_path
        self.variables = variables
        self.changes = self.tracker.changes
        self.fresh = _fast_path.arm(namespace)

    def untouched(self, namespace):
        """(memos of records to reuse as they are, without walking or pickling their
        variables, why not more) -- the fast path of change detection: none of a record's
        variables was named by code that ran since the previous checkpoint (_fast_path), each
        is the same object with the same length, and no record it refers to through a
        notebook def is touched. ([], reason) when the fast path cannot be taken."""
        from . import fast_path as _fast_path
        changes = self.changes
        if changes is None:
            return [], "no change tracking since the previous checkpoint"
        if changes.full is None:
            _fast_path.intact()  # gives up if the watch was interrupted meanwhile
        if changes.full is not None:
            return [], changes.full
        why = _fast_path.unsafe_bindings(namespace, changes.names)
        if why is not None:
            return [], why
        memos = [m for m in self.memos.values() if m.ids is not None]
        variables = self.variables
        touched = set(changes.names)
        for m in memos:
            values = [variables.get(n, _GONE) for n in m.names]
            if any(v is _GONE for v in values) or _fingerprint(values) != (m.ids, m.lens):
                touched.update(m.names)
        # a touched record reaches the records of the defs it refers to (an instance, the
        # class attributes of its class): they are touched too, until nothing changes
        owner = {n: m for m in memos for n in m.names}
        hit = {id(owner[n]): owner[n] for n in touched if n in owner}
        todo = list(hit.values())
        while todo:
            m = todo.pop()
            for d in m.defs:
                o = owner.get(d)
                if o is not None and id(o) not in hit:
                    hit[id(o)] = o
                    todo.append(o)
        return [m for m in memos if id(m) not in hit], None

    def _stamp(self, memo, defs=None):
        values = [self.variables.get(n, _GONE) for n in memo.names]
        if any(v is _GONE for v in values):
            memo.ids = memo.lens = None
        else:
            memo.ids, memo.lens = _fingerprint(values)
        memo.defs = (frozenset().union(*(self.def_refs.get(n, ()) for n in memo.names))
                     if defs is None else defs)
        return memo

    def previous(self, names):
        return self.memos.get(tuple(names))

    def reused(self, index, memo, proof, held, proven, buffers=None, content=None):
        """Record `index` of the new checkpoint is `memo`'s stored record (`buffers` /
        `content`: what is now known of its bytes, when they were looked at)."""
        if proven == "untouched" and buffers is None and content is None and \
                proof is memo.proof and held is memo.held:
            # the very values it was made of (untouched() compared their ids and lengths):
            # the memo stays as it is
            self.current[index] = memo
        else:
            self.current[index] = self._stamp(KnownRecord(
                memo.names, memo.match_key, proof, held, memo.report, memo.writable, memo.key,
                memo.length, memo.buffers if buffers is None else buffers,
                content if content is not None else memo.content),
                memo.defs if proven == "untouched" else None)
        self.stats["reused"] += 1
        self.stats["reused_bytes"] += memo.length
        self.stats["proven"] += proven is True
        self.stats["untouched"] += proven == "untouched"

    def wrote(self, index, memo):
        self.current[index] = self._stamp(memo)
        self.stats["written"] += 1

    def key(self, index):
        return self.current[index].key

    async def committed(self, store, name, record_count, records=None):
        """After the commit of checkpoint `name` (its writer lock still held): the keys of the
        records just written become what is remembered. `records`: the entry's records as
        committed (the keys the store gave back for them); without them the entry is read
        once (a round trip, and the store checks the entry's match_key)."""
        self.tracker.memos = {}
        self.tracker.changes = self.fresh  # the memos below, and what changed since they were
        if records is None:
            entry = await store.get_entry(name)
            records = (entry or {}).get("records") or []
        if len(records) != record_count:
            return  # not the entry we wrote (or a store that cut it otherwise): remember none
        memos = {}
        for index, memo in self.current.items():
            rec = records[index]
            if memo.key is not None and memo.key != rec.get("key"):
                continue
            length = rec.get("length")
            if not isinstance(length, int) or length <= 0 or length % 64:
                continue
            memo.key, memo.length = rec.get("key"), length
            memos[memo.names] = memo
        self.tracker.memos = memos


async def prepare(store, tracker, shadow_budget, ask=True):
    """The Reuse to hand the snapshot loop for a checkpoint into `store`, `tracker` being
    what is remembered of the previous one; `shadow_budget`: bytes of private copies of big
    buffers it may keep (see check_content). Records remembered that the store no longer
    holds are left out; the others are pinned by `has_records` until the commit (a delete
    meanwhile cannot free them). `ask=False` (a store whose commit checks every record the
    entry names, in the transaction that counts them: see kernel._write): the store is not
    asked, every remembered record is taken as held."""
    memos = list(tracker.memos.values())
    if memos and ask:
        try:
            present = list(await store.has_records([m.key for m in memos]))
        except Exception:  # a store that cannot tell: reuse nothing, write every record
            present = [False] * len(memos)
        memos = [m for m, ok in zip(memos, present) if ok is True]
    return Reuse(tracker, {m.names: m for m in memos}, shadow_budget)


def forget(namespace=None):
    """The next checkpoint of `namespace` writes every record (load_snapshot calls it)."""
    from ..session.kernel import SESSION
    SESSION.forget_changes(namespace)
