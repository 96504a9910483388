"""The stores, below the kernel session: they only store (docs/INTERFACES.md, "Stores").

A store keeps each record of a checkpoint once, under its key (a SHA-256 of its bytes), with
a count of the checkpoints using it, and per checkpoint an entry {head, records: [{key,
length}], tail, meta} whose parts, concatenated, are the checkpoint file exactly. The calls:
async put(name, bytes, meta) / get(name) / list(notebook) / delete(name) (whole files), and
put_records(records) / has_records(keys) / commit(name, entry) / get_entry(name) /
read_records(keys) / lock(name) (records one by one, so unchanged ones are not sent again).
Which store a kernel uses is the kernel session's state (_kernel_session): whatever
`set_store()` was given (the JS glue passes its JS store; a JsProxy is wrapped by `as_store` so
Python sees bytes and dicts), else `default_store()`: in a browser page or worker that has
`indexedDB`, the IndexedDB store, whose ES module ships inside this wheel
(`elastic_lite/js/indexeddb.mjs`, imported from a Blob URL: it has no imports of its own);
else an in-memory store (host CPython, Pyodide under Node without a store).
Every read of a checkpoint's records goes through `read_verified` (bytes against content keys).
"""

import asyncio
import hashlib
import struct
import sys
import time
import zlib

from .. import _jsbytes
from . import signing as _signing
from .._words import quoted
from ..load.loader import JSON_DEPTH, json_depth

KEY_LEAF_SIZE = 4 * 1024 * 1024
BATCH_BYTES = 8 * 1024 * 1024      # records handed to a store per put_records call
LIVE_FROM = 1024 * 1024             # pieces of bytes from this size go to a JS store as live views
DEFAULT_LOCK_TIMEOUT = 60.0         # seconds a writer waits for another one of the same name
DEFAULT_ORPHAN_GRACE = 600.0        # seconds a record written for an uncommitted checkpoint is kept


class StoreError(Exception):
    """A store operation failed; the message says what and what to do. `.code` (when known)
    is the machine-readable kind: busy, missing-record, quota, corrupted, changed (a buffer
    written to by other code while it was being saved), failed."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


# ---- record keys and cutting a checkpoint file (the same rules as js/store/indexeddb.mjs) ----

def _pieces(record):
    """The buffers of one record as given: bytes-like, or a list of bytes-likes to concatenate."""
    parts = record if isinstance(record, (list, tuple)) else [record]
    return [memoryview(p).cast("B") for p in parts]


def record_key(record):
    """hex SHA-256(u64le(length) || SHA-256(leaf 0) || ...), leaves = 4 MiB slices of the
    record; `record` is bytes-like or a list of them (hashed where they lie, no copy)."""
    pieces = _pieces(record)
    top = hashlib.sha256(struct.pack("<Q", sum(p.nbytes for p in pieces)))
    leaf, room = hashlib.sha256(), KEY_LEAF_SIZE
    for p in pieces:
        at = 0
        while at < p.nbytes:
            n = min(room, p.nbytes - at)
            leaf.update(p[at:at + n])
            at += n
            room -= n
            if room == 0:
                top.update(leaf.digest())
                leaf, room = hashlib.sha256(), KEY_LEAF_SIZE
    if room < KEY_LEAF_SIZE:
        top.update(leaf.digest())
    return top.hexdigest()


_FOOTER = 32
_FORMAT_SHARED_RECORDS = 2  # the first major whose records are position independent


def split_container(data):
    """(head, [record, ...], tail) as memoryviews of `data`: a format-2 file cut by its index
    (each record with the padding up to the next one); anything else is one record. Only bounds
    and order are checked: any cut reassembles exactly, validation is the core's job."""
    mv = memoryview(data).cast("B")
    cut = _format_two_cut(mv)
    if cut is None:
        return mv[:0], ([mv] if mv.nbytes else []), mv[:0]
    starts, index_at = cut
    ends = starts[1:] + [index_at]
    head_end = starts[0] if starts else index_at
    return mv[:head_end], [mv[a:b] for a, b in zip(starts, ends)], mv[index_at:]


def _format_two_cut(mv):
    size = mv.nbytes
    if size < _FOOTER + 12:
        return None
    f = size - _FOOTER
    magic, count, index_at = struct.unpack_from("<4sIQ", mv, f)
    (major,) = struct.unpack_from("<H", mv, f + 24)
    if magic != b"ELFT" or major != _FORMAT_SHARED_RECORDS:
        return None
    if not index_at + 8 + 16 * count + 4 <= f:
        return None
    imagic, icount = struct.unpack_from("<4sI", mv, index_at)
    if imagic != b"ELIX" or icount != count:
        return None
    starts, prev_end = [], 0
    for i in range(count):
        start, length = struct.unpack_from("<QQ", mv, index_at + 8 + 16 * i)
        if not (start >= prev_end and (i > 0 or start > 0) and start + length <= index_at):
            return None
        starts.append(start)
        prev_end = start + length
    return starts, index_at


# ---- retention (the same rules as js/store/indexeddb.mjs) ----

_HOUR_MS = 3600 * 1000
_RETENTION_FIELDS = ("keepLast", "keepHourly", "maxBytes")


def check_retention(policy):
    """A retention policy {keepLast, keepHourly, maxBytes} (each optional) checked, or None."""
    if policy is None:
        return None
    if not isinstance(policy, dict):
        raise StoreError(f"a retention policy is a dict with keepLast, keepHourly, maxBytes; got {policy!r}")
    unknown = sorted(set(policy) - set(_RETENTION_FIELDS))
    if unknown:
        raise StoreError(f"unknown retention setting {', '.join(unknown)}: use keepLast, keepHourly, maxBytes")
    out = {}
    for field in _RETENTION_FIELDS:
        v = policy.get(field)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise StoreError(f"retention {field} must be a whole number >= 1, not {v!r}")
        out[field] = v
    return out or None


def expired_by_retention(entries, keep, policy, exempt=()):
    """Names to remove among `entries` [(name, created_ms, fixed_bytes, [(key, length)...])]
    of one notebook under `policy`, `keep` being the name just committed. Names in `exempt`
    (entries whose meta.keep is true: checkpoints a person asked for) are never removed; they
    still count against maxBytes."""
    if not policy:
        return []
    ordered = sorted(entries, key=lambda e: (-e[1], e[0]))
    kept = ordered
    if "keepLast" in policy or "keepHourly" in policy:
        chosen = {e[0] for e in ordered[:policy.get("keepLast", 0)]}
        if "keepHourly" in policy:
            hours = set()
            for e in ordered:
                hour = e[1] // _HOUR_MS
                if hour in hours:
                    continue
                if len(hours) >= policy["keepHourly"]:
                    break
                hours.add(hour)
                chosen.add(e[0])
        chosen.add(keep)
        kept = [e for e in ordered if e[0] in chosen]
    if "maxBytes" in policy:
        seen, used, cut = set(), 0, len(kept)
        for i, (name, _, fixed, records) in enumerate(kept):
            add = fixed + sum(length for key, length in dict(records).items() if key not in seen)
            if used + add > policy["maxBytes"] and name != keep:
                cut = i
                break
            used += add
            seen.update(key for key, _ in records)
        kept = kept[:cut] + [e for e in kept[cut:] if e[0] == keep]
    kept_names = set(exempt).union(e[0] for e in kept)
    return [e[0] for e in ordered if e[0] not in kept_names]


# ---- writer locks ----

class _HeldLock:
    """A writer lock held until release() (once): a thread lock, or a JS store's lock handle,
    whose release() may return a promise."""

    def __init__(self, lock):
        self._lock = lock

    async def release(self):
        lock, self._lock = self._lock, None
        if lock is not None and hasattr(result := lock.release(), "then"):
            await result


class MemoryStore:
    """Checkpoints in dicts of this interpreter (lost with it): tests and the fallback.

    The same model as the JS stores (records by key with reference counts, entries naming
    them). No method really suspends unless a writer waits for another one's lock, so the
    magics can drive it without an event loop."""

    def __init__(self, retention=None, keep_last=None, lock_timeout=DEFAULT_LOCK_TIMEOUT,
                 orphan_grace=DEFAULT_ORPHAN_GRACE):
        if retention is not None and keep_last is not None:
            raise StoreError("pass either retention or keep_last, not both")
        self.retention = check_retention({"keepLast": keep_last} if keep_last is not None else retention)
        self.lock_timeout = lock_timeout
        self.orphan_grace = orphan_grace
        self._records = {}   # key -> [bytes, refs, pinned_at (monotonic seconds, 0: not pinned)]
        self._damaged = set()  # keys whose bytes were found changed (verify_records)
        self._entries = {}   # name -> {"head", "records", "tail", "meta", "size", "seq"}
        self._settings = {}  # notebook (None: default) -> policy
        self._locks = {}
        self._seq = 0  # ties in createdMs (same millisecond): the later commit is newer

    async def lock(self, name, timeout=None):
        """Hold the writer lock of checkpoint `name` until `await held.release()`."""
        check_name(name)
        lock = self._locks.setdefault(name, asyncio.Lock())
        if not lock.locked():
            await lock.acquire()  # uncontended: returns without suspending
            return _HeldLock(lock)
        wait = self.lock_timeout if timeout is None else timeout
        try:
            await asyncio.wait_for(lock.acquire(), wait)
        except asyncio.TimeoutError:
            raise StoreError(f"checkpoint {quoted(name)} is being saved by another writer right now; "
                             f"waited {wait:g} s for it to finish. Try again in a moment.", "busy") from None
        return _HeldLock(lock)

    async def put_records(self, records):
        keys, now = [], time.monotonic()
        for record in records:
            pieces = _pieces(record)
            key = record_key(pieces)
            known = self._records.get(key)
            if known is None or key in self._damaged:
                self._records[key] = [b"".join(pieces), known[1] if known else 0, now]
                self._damaged.discard(key)
            else:
                known[2] = now
            keys.append(key)
        return keys

    async def has_records(self, keys):
        now, out = time.monotonic(), []
        for key in keys:
            rec = self._records.get(_check_key(key))
            if rec is not None and key not in self._damaged:
                rec[2] = now
                out.append(True)
            else:
                out.append(False)
        return out

    async def verify_records(self, keys):
        """{"checked", "damaged"}: records whose bytes no longer match their key are marked;
        has_records() then says False and the next put_records() of their bytes rewrites them."""
        checked = list(dict.fromkeys(keys))
        damaged = [k for k in checked if k in self._records and record_key(self._records[k][0]) != k]
        self._damaged.update(damaged)
        return {"checked": len(checked), "damaged": damaged}

    async def commit(self, name, entry, retention=..., sign=True):
        """Make `entry` the checkpoint `name`, signed as this store's own unless `sign` is
        False (see store/signing.py)."""
        check_name(name)
        head, records, tail, size = _check_entry(entry)
        meta = _plain_meta(entry.get("meta"), size)
        keys = list(dict.fromkeys(r["key"] for r in records))
        missing = [k for k in keys if k not in self._records]
        if missing:
            raise StoreError(f"cannot save checkpoint {quoted(name)}: {len(missing)} of its records are not "
                             "in the store; write them with put_records() and commit again", "missing-record")
        for k in keys:
            rec = self._records[k]
            rec[1] += 1
            rec[2] = 0
        self._drop(name)
        self._seq += 1
        self._entries[name] = {"head": head, "records": records, "tail": tail, "meta": meta,
                               "size": size, "seq": self._seq,
                               "sig": _signing.sign(name, head, records, tail, meta) if sign else None}
        notebook = meta.get("notebook")
        if notebook is not None:
            policy = check_retention(retention) if retention is not ... else (
                self._settings.get(notebook) or self._settings.get(None) or self.retention)
            mine = [(n, e["meta"].get("createdMs") or 0, len(e["head"]) + len(e["tail"]),
                     [(r["key"], r["length"]) for r in e["records"]])
                    for n, e in self._entries.items() if e["meta"].get("notebook") == notebook]
            exempt = [n for n, e in self._entries.items()
                      if e["meta"].get("notebook") == notebook and e["meta"].get("keep") is True]
            for old in expired_by_retention(mine, name, policy, exempt):
                self._drop(old)

    def _drop(self, name):
        old = self._entries.pop(name, None)
        if old is None:
            return False
        for k in dict.fromkeys(r["key"] for r in old["records"]):
            rec = self._records[k]
            rec[1] -= 1
            if self._freeable(rec):
                del self._records[k]
        return True

    def _freeable(self, rec):
        return rec[1] == 0 and not (rec[2] and time.monotonic() - rec[2] < self.orphan_grace)

    async def put(self, name, data, meta=None, sign=False):
        """Save a whole checkpoint file; unsigned unless `sign` (an import is foreign until
        a person confirmed it)."""
        check_name(name)
        head, records, tail = split_container(data)
        held = await self.lock(name)
        try:
            keys = await self.put_records(records)
            await self.commit(name, {"head": head, "tail": tail, "meta": meta,
                                     "records": [{"key": k, "length": r.nbytes} for k, r in zip(keys, records)]},
                              sign=sign)
        finally:
            await held.release()

    async def sign(self, name):
        """Sign the entry of `name` as this store's own (a foreign checkpoint a person
        confirmed); False when there is none."""
        check_name(name)
        e = self._entries.get(name)
        if e is None:
            return False
        e["sig"] = _signing.sign(name, e["head"], e["records"], e["tail"], e["meta"])
        return True

    @staticmethod
    def _signature(name, e):
        return _signing.state(name, e["head"], e["records"], e["tail"], e["meta"], e.get("sig"))

    async def get(self, name):
        check_name(name)
        e = self._entries.get(name)
        if e is None:
            return None
        data = b"".join([e["head"], *(self._records[r["key"]][0] for r in e["records"]), e["tail"]])
        return {"bytes": data, "meta": dict(e["meta"]), "signature": self._signature(name, e)}

    async def get_entry(self, name):
        check_name(name)
        e = self._entries.get(name)
        if e is None:
            return None
        return {"name": name, "head": e["head"], "records": [dict(r) for r in e["records"]],
                "tail": e["tail"], "meta": dict(e["meta"]), "size": e["size"],
                "signature": self._signature(name, e)}

    async def read_records(self, keys):
        missing = [k for k in keys if k not in self._records]
        if missing:
            raise StoreError(f"{len(missing)} record(s) are not in the store: {', '.join(missing[:2])}",
                             "missing-record")
        return [self._records[k][0] for k in keys]

    async def list(self, notebook=None):
        out = [(-(e["meta"].get("createdMs") or 0), -e["seq"], {"name": n, "meta": dict(e["meta"])})
               for n, e in self._entries.items()
               if notebook is None or e["meta"].get("notebook") == notebook]
        return [e for *_, e in sorted(out, key=lambda t: (t[0], t[1]))]

    async def delete(self, name):
        check_name(name)
        return self._drop(name)

    async def set_retention(self, notebook, policy):
        p = check_retention(policy)
        if p:
            self._settings[notebook] = p
        else:
            self._settings.pop(notebook, None)

    async def get_retention(self, notebook=None):
        return (self._settings.get(notebook) if notebook is not None else None) or \
            self._settings.get(None) or self.retention

    async def sweep(self):
        dead = [k for k, rec in self._records.items() if self._freeable(rec)]
        for k in dead:
            del self._records[k]
        return len(dead)

    async def discard_records(self, keys):
        dead = [k for k in dict.fromkeys(keys) if k in self._records and self._records[k][1] == 0]
        for k in dead:
            del self._records[k]
        return len(dead)

    async def stats(self):
        return {"checkpoints": len(self._entries), "records": len(self._records),
                "recordBytes": sum(len(r[0]) for r in self._records.values())}

    async def close(self):
        pass


def check_name(name):
    if not isinstance(name, str) or not name or len(name) > 200 or any(
            ord(c) < 32 or ord(c) == 127 for c in name):
        raise StoreError(f"invalid checkpoint name {quoted(name)}: use a non-empty string of at most "
                         "200 printable characters")


_KEY_CHARS = frozenset("0123456789abcdef")


def _check_key(key):
    """`key` if it is a record key (64 lowercase hex digits), else StoreError. One C-level
    set test per key: a checkpoint checks every key of its entry a few times."""
    if not (isinstance(key, str) and len(key) == 64 and _KEY_CHARS.issuperset(key)):
        raise StoreError(f"not a record key: {key!r}")
    return key


def _check_entry(entry):
    """(head bytes, [{"key", "length"}], tail bytes, size) of what commit() is given."""
    if not isinstance(entry, dict) or not isinstance(entry.get("records"), (list, tuple)):
        raise StoreError("commit() needs an entry {head, records: [{key, length}], tail, meta}")
    head = bytes(entry.get("head") or b"")
    tail = bytes(entry.get("tail") or b"")
    records = []
    for i, r in enumerate(entry["records"]):
        length = r.get("length") if isinstance(r, dict) else None
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise StoreError(f"commit(): record {i} must be {{key, length}}, not {r!r}")
        records.append({"key": _check_key(r.get("key")), "length": length})
    return head, records, tail, len(head) + len(tail) + sum(r["length"] for r in records)


def _plain_meta(meta, size):
    meta = dict(meta or {})
    meta["size"] = size
    if not isinstance(meta.get("createdMs"), (int, float)) or isinstance(meta.get("createdMs"), bool):
        meta["createdMs"] = int(time.time() * 1000)
    meta.setdefault("notebook", None)
    return meta


def _is_nullish(value):
    """JS null arrives as pyodide.ffi.jsnull (not None) in recent Pyodide."""
    if value is None:
        return True
    try:
        from pyodide.ffi import jsnull
    except ImportError:
        return False
    return value is jsnull


def _plain(value):
    """A JS value as plain Python data (null -> None), through JSON: metadata is JSON-like.
    What a store gives back may have been written by other code (a directory copied from
    elsewhere): metadata nested deeper than JS can stringify, or than Elastic Lite ever writes,
    is a StoreError saying so, not a RangeError from inside the bridge."""
    if _is_nullish(value):
        return None
    import json
    from js import JSON
    try:
        text = JSON.stringify(value)
        depth = json_depth(text.encode("utf-8", "surrogatepass"))
    except Exception as err:  # pyodide.ffi.JsException: RangeError, call stack exceeded
        raise StoreError(f"the store gave back metadata that cannot be read ({err}); Elastic "
                         "Lite did not write it: the store is damaged or was changed by other "
                         "code") from None
    if depth > JSON_DEPTH:
        raise StoreError(f"the store gave back metadata nesting {depth} levels deep, and Elastic "
                         f"Lite writes at most {JSON_DEPTH}: the store is damaged or was changed "
                         "by other code")
    return json.loads(text)


class JsStore:
    """A JS store object (JsProxy) seen from Python: bytes in and out, dicts for metadata.

    Bytes cross to JS with one copy each, in pieces no larger than the store's chunks, each in
    its own ArrayBuffer: the IndexedDB store then keeps them as they are instead of slicing
    (copying) them again. A store whose `livePieces` is true (ours) gets large pieces of
    immutable bytes (the pickle streams, bytes values: nothing can change them while the store
    awaits) as live views of Python's memory instead: it hashes them where they lie and copies
    a chunk at a time as it writes, so a checkpoint never holds a JS copy of a whole record.
    Writable buffers (bytearray, arrays) are still copied at once: other Python code may run
    while the store awaits, and a buffer changed between hashing and writing would be stored
    under a key that is not its bytes'. Stores written before records existed (put/get/list/
    delete only) still work: the record calls are there only when the JS store has them."""

    def __init__(self, proxy):
        self.proxy = proxy
        self.has_record_api = all(hasattr(proxy, m) for m in ("putRecords", "hasRecords", "commit", "lock"))
        self.live_pieces = getattr(proxy, "livePieces", False) is True
        # commit() checks the records an entry names and takes the last new ones along (one
        # transaction for a point): see send_records(hold=...) and tracker.prepare
        self.checks_at_commit = getattr(proxy, "checksAtCommit", False) is True

    @staticmethod
    def _error(op, exc):
        msg = getattr(exc, "message", None) or str(exc)
        code = getattr(exc, "code", None)  # hosts classify by it
        if not isinstance(code, str):
            code = getattr(exc, "name", None)
        return StoreError(f"the checkpoint store failed to {op}: {msg}", code if isinstance(code, str) else None)

    def _piece_size(self):
        size = getattr(self.proxy, "chunkSize", None)
        return size if isinstance(size, int) and size > 0 else KEY_LEAF_SIZE

    def _to_js_record(self, record, live=None, guards=None):
        from js import Array
        out, step = Array.new(), self._piece_size()
        for p in _pieces(record):
            if live is not None and p.nbytes >= LIVE_FROM and (guards is not None or type(p.obj) is bytes):
                if type(p.obj) is not bytes:
                    guards.append((p, zlib.crc32(p)))
                out.push(live.view(p))
                continue
            for at in range(0, p.nbytes, step):
                out.push(_jsbytes.to_js(p[at:at + step]))
        return out

    async def _call(self, what, method, *args, js=None):
        """`await` the JS store's `method(*args)`; a failure is a StoreError saying it failed to
        `what`. The Python data in args (names, keys, metadata, options) crosses through
        _jsbytes.call, as JSON in UTF-8 bytes: Pyodide's own conversion hands an ASCII str of
        64 characters or more that lies above 2 GiB of its heap to JS as NULs (a record key
        reached the store as 64 NULs). `js`: JS values inside the data, see _jsbytes.call."""
        try:
            return await _jsbytes.call(self.proxy, method, args, js)
        except Exception as exc:
            raise self._error(what, exc) from None

    async def lock(self, name, timeout=None):
        opts = {} if timeout is None else {"timeoutMs": int(timeout * 1000)}
        return _HeldLock(await self._call(f"lock {quoted(name)}", "lock", name, opts))

    async def put_records(self, records):
        from js import Array
        batch = Array.new()
        guards = []  # (writable piece handed over live, its CRC-32 then)
        with _jsbytes.LiveViews() as live:
            for record in records:
                batch.push(self._to_js_record(record, live if self.live_pieces else None, guards))
            keys = list((await self._call("save records", "putRecords", batch)).to_py())
            changed = any(zlib.crc32(p) != crc for p, crc in guards)
        if changed:  # the whole batch is given back, as write_parts does on failure
            await self._give_back(keys)
            raise StoreError(
                "a buffer (an array or bytearray) changed while the checkpoint was being "
                "saved: other code ran meanwhile and wrote to it. Nothing of this checkpoint "
                "was kept; take it again.", "changed")
        return keys

    async def _give_back(self, keys):
        try:
            await self.discard_records(keys)
        except Exception:
            pass  # the sweep frees them later

    async def has_records(self, keys):
        return list((await self._call("look up records", "hasRecords", list(keys))).to_py())

    def take_deleted(self):
        """Whether a checkpoint was deleted since the last call, here or by another page of
        this origin (the IndexedDB store): records remembered for change detection may be gone."""
        take = getattr(self.proxy, "takeDeleted", None)
        return take is not None and take() is True

    async def commit(self, name, entry, retention=..., sign=True, records=None):
        """`records` (a store with checks_at_commit): new records written in the commit's own
        transaction, the entry's records whose key is None, in order; returns their keys.
        Their writable buffers are copied (a live view would need the guard of put_records,
        and a commit cannot be given back)."""
        js_entry = {"records": [{"key": r["key"], "length": r["length"]} for r in entry["records"]],
                    "meta": entry.get("meta") or {}}
        js = {(1, part): _jsbytes.to_js(entry.get(part) or b"") for part in ("head", "tail")}
        opts = {} if retention is ... else {"retention": retention}
        if not sign:
            opts["sign"] = False
        with _jsbytes.LiveViews() as live:
            if records:
                from js import Array
                batch = Array.new()
                for record in records:
                    batch.push(self._to_js_record(record, live if self.live_pieces else None, None))
                js[(2, "records")] = batch
            keys = await self._call(f"save {quoted(name)}", "commit", name, js_entry, opts, js=js)
            return list(keys.to_py()) if records and hasattr(keys, "to_py") else []

    async def put(self, name, data, meta=None, sign=False):
        await self._call(f"save {quoted(name)}", "put", name, _jsbytes.to_js(data), meta or {},
                         {"sign": True} if sign else {})

    async def sign(self, name):
        """Sign the entry of `name` as the store's own (False: no such checkpoint). A JS store
        without signatures raises StoreError."""
        if not hasattr(self.proxy, "sign"):
            raise StoreError("this checkpoint store cannot sign checkpoints", "store")
        return bool(await self._call(f"sign {quoted(name)}", "sign", name))

    async def get(self, name):
        res = await self._call(f"read {quoted(name)}", "get", name)
        if _is_nullish(res):
            return None
        return {"bytes": _jsbytes.to_py(res.bytes), "meta": _plain(res.meta) or {},
                "signature": _plain(getattr(res, "signature", None))}

    async def get_entry(self, name):
        res = await self._call(f"read {quoted(name)}", "getEntry", name)
        if _is_nullish(res):
            return None
        return {"name": name, "head": _jsbytes.to_bytes(res.head), "tail": _jsbytes.to_bytes(res.tail),
                "records": _plain(res.records), "meta": _plain(res.meta) or {}, "size": res.size,
                "signature": _plain(getattr(res, "signature", None))}

    async def read_records(self, keys):
        res = await self._call("read records", "readRecords", list(keys))
        return _Read(_jsbytes.to_py(r) for r in res).checked(getattr(res, "damaged", None))

    async def read_records_js(self, keys):
        """(each record of `keys` as a list of JS Uint8Arrays, left in JS: the chunks it is
        stored in when the store can hand them out (readRecordChunks), else one array; the
        keys the store found not matching, or None when it did not check): for a reader that
        copies them out a range at a time (_streamed)."""
        chunked = hasattr(self.proxy, "readRecordChunks")
        res = await self._call("read records", "readRecordChunks" if chunked else "readRecords", list(keys))
        damaged = getattr(res, "damaged", None)
        records = [list(r) for r in res] if chunked else [[r] for r in res]
        return records, (None if damaged is None or _is_nullish(damaged) else frozenset(damaged))

    async def list(self, notebook=None):
        res = await self._call("list checkpoints", "list", {} if notebook is None else {"notebook": notebook})
        return _plain(res) or []

    async def delete(self, name):
        return bool(await self._call(f"delete {quoted(name)}", "delete", name))

    async def verify_records(self, keys):
        return _plain(await self._call("check records", "verifyRecords", list(keys)))

    async def discard_records(self, keys):
        return await self._call("give back records", "discardRecords", list(keys))

    async def set_retention(self, notebook, policy):
        await self._call("set retention", "setRetention", notebook, policy)

    async def get_retention(self, notebook=None):
        return _plain(await self._call("read the retention policy", "getRetention", notebook))

    async def stats(self):
        return _plain(await self._call("read its figures", "stats"))

    async def close(self):
        close = getattr(self.proxy, "close", None)
        if close is not None:
            await close()


class _Read(list):
    """Records as a store read them; `damaged`: the keys whose bytes the store itself found not
    matching (ours check every record they read: js/store, checkRecordList), None if it did not
    check (read_verified then hashes them here)."""

    damaged = None

    def checked(self, damaged):
        if damaged is not None and not _is_nullish(damaged):
            self.damaged = frozenset(damaged)
        return self


def _is_jsproxy(obj):
    try:
        from pyodide.ffi import JsProxy
    except ImportError:
        return False
    return isinstance(obj, JsProxy)


def as_store(store):
    """What `set_store()` was given, as a store: a JS store (JsProxy) wrapped, a Python
    object with the same async methods as it is, None as None (the default)."""
    if store is None or not _is_jsproxy(store):
        for method in ("put", "get", "list", "delete"):
            if store is not None and not callable(getattr(store, method, None)):
                raise TypeError(f"a store needs an async {method}() method; got {store!r}")
        return store
    return JsStore(store)


async def _indexeddb_store():
    from importlib import resources
    from pyodide.code import run_js
    # the source as UTF-8 bytes, not a str: a str made above 2 GiB of the heap would reach JS
    # as NULs (_jsbytes, "Strings")
    source = resources.files("elastic_lite").joinpath("js/indexeddb.mjs").read_bytes()
    importer = run_js(
        "(src) => import(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })))")
    module = await importer(_jsbytes.to_js(source))
    return module.IndexedDBStore.new()


def _has_indexeddb():
    if sys.platform != "emscripten":
        return False
    try:
        import js
        return getattr(js, "indexedDB", None) is not None
    except Exception:
        return False


async def default_store():
    """The store used when none was set: IndexedDB in a browser page or worker, else one in
    memory."""
    if _has_indexeddb():
        return JsStore(await _indexeddb_store())
    return MemoryStore()


def has_record_api(store):
    """Whether `store` takes records one by one (every store of this package does; a store
    written for the first interface has only put/get/list/delete)."""
    if isinstance(store, JsStore):
        return store.has_record_api
    return all(callable(getattr(store, m, None)) for m in ("put_records", "commit", "lock"))


async def send_records(store, parts, hold=False):
    """Sends the records of a checkpoint file given as `parts`, in file order: ("head",
    bytes), then per record ("record", bytes or [bytes, ...]) for its bytes, or ("stored",
    key, length) for a record the store already holds (unchanged since an earlier checkpoint:
    nothing is sent), then ("tail", bytes). New records go to the store in batches of about
    BATCH_BYTES as they come. Returns (head, [{key, length}], tail, keys sent): the entry to
    commit. On failure the records sent are given back when the store can.
    `hold`: the last batch is not sent but returned too, as a fifth item (its records, and
    the indices of their entries, whose keys stay None: for the commit to write them)."""
    head = tail = b""
    entries, batch, batch_at, batch_bytes, sent = [], [], [], 0, []

    async def flush():
        nonlocal batch, batch_at, batch_bytes
        if batch:
            keys = await store.put_records(batch)
            sent.extend(keys)
            for at, key in zip(batch_at, keys):
                entries[at]["key"] = key
        batch, batch_at, batch_bytes = [], [], 0

    try:
        for part in parts:
            kind = part[0]
            if kind == "head":
                head = part[1]
            elif kind == "tail":
                tail = part[1]
            elif kind == "stored":
                entries.append({"key": _check_key(part[1]), "length": part[2]})
            elif kind == "record":
                pieces = _pieces(part[1])
                length = sum(p.nbytes for p in pieces)
                batch_at.append(len(entries))
                entries.append({"key": None, "length": length})
                batch.append(pieces)
                batch_bytes += length
                if batch_bytes >= BATCH_BYTES:
                    await flush()
            else:
                raise ValueError(f"unknown checkpoint part {kind!r}")
        if hold:
            return head, entries, tail, sent, (batch, batch_at)
        await flush()
    except BaseException:
        await give_back(store, sent)
        raise
    return head, entries, tail, sent


async def give_back(store, keys):
    """Hand records sent for a checkpoint that was not committed back to the store (best
    effort: its sweep frees them later otherwise)."""
    if keys and callable(getattr(store, "discard_records", None)):
        try:
            await store.discard_records(keys)
        except Exception:
            pass


def _reads_records(store):
    if isinstance(store, JsStore):
        return all(hasattr(store.proxy, m) for m in ("getEntry", "readRecords"))
    return all(callable(getattr(store, m, None)) for m in ("get_entry", "read_records"))


async def read_verified(store, name, zero=True, entry=None):
    """Checkpoint `name` read record by record, each record's bytes checked against its
    content key (record_key) before anything can unpickle or replay them — the manifest and
    the recorded cells included: {"bytes" (the file, a bytearray), "meta", "signature",
    "mismatched": [{"index", "key", "start", "length", "names"}]}, or None when there is no
    such checkpoint. A record whose bytes do not match its key is left as zeros in "bytes"
    (nothing of it loads; `zero=False`: as read, for an inspection) and listed in "mismatched" with the names its header gives and, when
    the core finds those bytes damaged, its record report ("core"). Records are read in
    batches of about BATCH_BYTES. A store that checked them itself (the JS stores, with the
    platform's SHA-256: `damaged` on what read_records returns) is not second-guessed; a store
    that cannot hand out records (put/get/list/delete only) gives the whole file, unchecked.
    `entry`: what store.get_entry(name) gave, when the caller read it already."""
    check_name(name)
    if not _reads_records(store):
        got = await store.get(name)
        return None if got is None else {"bytes": got["bytes"], "meta": got.get("meta") or {},
                                         "signature": got.get("signature"), "mismatched": []}
    entry = entry if entry is not None else await store.get_entry(name)
    if entry is None:
        return None
    head, tail, records = memoryview(entry["head"]), memoryview(entry["tail"]), entry["records"]
    out = bytearray(head.nbytes + sum(r["length"] for r in records) + tail.nbytes)
    out[:head.nbytes] = head
    starts, at = [], head.nbytes
    for r in records:
        starts.append(at)
        at += r["length"]
    out[at:] = tail
    mismatched, batch, size = [], [], 0
    for i, r in enumerate(records):
        batch.append(i)
        size += r["length"]
        if size >= BATCH_BYTES or i == len(records) - 1:
            got = await store.read_records([records[b]["key"] for b in batch])
            damaged = getattr(got, "damaged", None)  # checked by the store itself, or None
            for b, data in zip(batch, got):
                view = memoryview(data).cast("B")
                start, rec = starts[b], records[b]
                out[start:start + min(view.nbytes, rec["length"])] = view[:rec["length"]]
                if view.nbytes != rec["length"] or (rec["key"] in damaged if damaged is not None
                                                    else record_key(view) != rec["key"]):
                    mismatched.append({"index": b, "key": rec["key"], "start": start,
                                       "length": rec["length"], "got": view.nbytes})
            batch, size = [], 0
    if any(m["got"] != m["length"] for m in mismatched):
        await store.get(name)  # a record of another length: the store's own error, if it has one
    if mismatched:
        _name_and_zero(out, mismatched, zero)
    return {"bytes": out, "meta": entry.get("meta") or {}, "signature": entry.get("signature"),
            "mismatched": mismatched}


def _name_and_zero(out, mismatched, zero):
    """Each mismatched record as the core sees its bytes (its names, a label only; its
    damage, when the core finds some: `core`), then zeroed: nothing of it can be unpickled."""
    from .. import _core
    try:
        info = _core.inspect(out, validate=True)
        by_index = {r.get("index"): r for r in info.get("records") or []}
    except Exception:
        by_index = {}
    for m in mismatched:
        rec = by_index.get(m["index"]) or {}
        m["names"] = [str(n) for n in rec.get("names") or []]
        m["core"] = None if rec.get("ok", True) else rec
        if zero:
            out[m["start"]:m["start"] + m["length"]] = bytes(m["length"])


async def mark_damaged(store, keys):
    """Have the store check records found not matching their keys: once marked, has_records
    says False and the next checkpoint holding the same values writes them again, which
    repairs every checkpoint sharing them (best effort: a store that cannot tell is left)."""
    verify = getattr(store, "verify_records", None)
    if not keys or verify is None or (isinstance(store, JsStore)
                                      and not hasattr(store.proxy, "verifyRecords")):
        return
    try:
        await verify(list(keys))
    except Exception:
        pass
