"""Restore in bounded memory: a checkpoint read from its store one record at a time.

A restore used to assemble the whole container in one buffer (and the store held another
copy of it in JS) before the first value was unpickled: a 1 GiB state needed about three
times its size. `Streamed` reads the store's entry, then the records one batch at a time
while the core's pull reader (_core.PullReader) validates them, and keeps each record cut
where it will be used: its frame (header, pickle stream, buffer table) in one buffer and
every out-of-band buffer in memory of its own: a bytearray, or, for a buffer its pickle stream
loads read-only (NEXT_BUFFER, READONLY_BUFFER: what a `bytes` variable is saved as), a bytes
object of its size. A JS store that can (readRecordInto: the IndexedDB store) reads a record
of INTO_FROM bytes or more straight into those pieces (its header, then its stream when small
and its buffer table, to know the cuts; from an OPFS file with no copy in between) and checks
its key there; other records are copied once from what the store read. Those pieces are the
buffers' final memory: load_snapshot hands them to pickle as they are (numpy arrays restore
as views of the bytearrays; `bytes(buffer)` of a bytes piece is that very object, so a
`bytes` value is never copied again) and lets go of a record's pieces as soon as it is
loaded. So a restore holds, beyond the restored state, one record in transit and the frames:
records cross from the store with one copy, never assembled.

Every record is checked against its content key as it is read (by a JS store itself, else
here) and by the core's validation before anything is unpickled, as in `read_verified`. A
record that does not match, a missing record or a failing read raises `Unread`: the caller
reads the checkpoint again through `read_verified`, which names what is damaged exactly as
every other read does (damage is rare; the second read costs only then).

How a record is cut is a hint for memory, never trusted: its header is parsed here only to
find the buffers (and its stream's opcodes walked, not run, to find the read-only ones), and
a record whose header does not make sense is kept whole (the core then says what is wrong
with it). A bytes piece is written only by the read that fills it, before any value holds it."""

import bisect
import struct
import sys
import zlib

from .. import _jsbytes
from ..store import stores as _stores
from .._report import human_size
from .._words import quoted

STREAM_FROM = 64 * 1024 * 1024  # a checkpoint from this size restores through the stream
# and so does one holding a record of this size or more: read straight into its final memory
# it skips two copies of it, which outweighs the stream's few more store calls (Chromium, in
# the same rounds: 50 MiB of bytes in one record 418-545 against 546-710 ms whole; 3.2 MiB of
# small dicts in one record was slower streamed in two runs of three)
STREAM_RECORD_FROM = 16 * 1024 * 1024
INTO_FROM = 1024 * 1024  # records from this size are read straight into their pieces (JS stores that can)
SCAN_STREAM = 64 * 1024  # a record's pickle stream up to this size is looked at for read-only buffers
FRAME_READ = 64 * 1024  # a large record's first read: its header, stream and table when they fit
BYTES_FROM = 4096  # read-only buffers from this size are read into the bytes object they load as
# Pyodide's heap is a 32-bit WebAssembly memory: 4 GiB at most, whatever the machine has.
HEAP_LIMIT = (4 << 30) if sys.platform == "emscripten" else None
KERNEL_HEAP = 256 * 1024 * 1024  # what a fresh kernel holds before the state comes back
RESTORE_MARGIN = 64 * 1024 * 1024  # the bound of a streamed restore above its largest record
WHOLE_LIMIT = sys.maxsize  # the largest checkpoint that can be read whole (one Python buffer)

_RECORD = struct.Struct("<4sIBBHIQQ")  # magic, K, kind, serializer, flags, M, S, B
_TABLE_ENTRY = struct.Struct("<QQ")  # buffer offset (from the record), length
_MAX_BUFFERS = 1 << 20


def restore_room(size, largest, limit=None):
    """The warning a checkpoint report carries when its state (`size` bytes, the largest
    record `largest`) would not restore in this interpreter's heap (`limit`, default
    HEAP_LIMIT: Pyodide's 4 GiB; None in host CPython), else None. A restore holds the state,
    one record in transit and a margin, in a kernel that holds KERNEL_HEAP already."""
    limit = HEAP_LIMIT if limit is None else limit
    need = size + largest + RESTORE_MARGIN + KERNEL_HEAP
    if not limit or need <= limit:
        return None
    return (f"this checkpoint cannot be restored in this browser: restoring its "
            f"{human_size(size)} needs about {human_size(need)} of Python's memory (the state, "
            f"its largest record of {human_size(largest)} and a fresh kernel's own), and "
            f"Python in the browser (Pyodide) has at most {human_size(limit)}. It is saved; to "
            "have one that restores here, checkpoint fewer or smaller variables "
            "(checkpoint(names=[...]))")


class Unread(Exception):
    """The streamed read could not give every record as stored (damaged, missing, or the
    store failed): read the checkpoint the whole way instead, which reports it."""


def unreadable(name, size, why):
    """The StoreError of a checkpoint the stream could not read (`why`) and that is too large
    to be read whole here (`size` > WHOLE_LIMIT: Pyodide's buffers end below 2 GiB), which
    would have named the damaged variables."""
    return _stores.StoreError(
        f"checkpoint {quoted(name)} could not be read: {why}. At {human_size(size)} it is too large "
        "to be read whole here to name the variables concerned; nothing of it was restored. "
        "Restore another checkpoint, or check this one with `elastic-lite verify`", "damaged")


def streams(store, size, records=()):
    """Whether a checkpoint of `size` bytes in `store` (its entry's `records`: [{key, length}])
    restores through the stream."""
    large = size >= STREAM_FROM or any((r.get("length") or 0) >= STREAM_RECORD_FROM for r in records)
    return large and _stores._reads_records(store)


class _JsRecord:
    """A record as a JS store read it (its chunks: Uint8Arrays), copied out a range at a time
    straight into the Python memory that keeps it."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.starts, at = [], 0
        for c in chunks:
            self.starts.append(at)
            at += int(c.byteLength)
        self.nbytes = at

    def copy(self, start, stop, as_bytes=False):
        out = _piece(stop - start, as_bytes)
        dst = memoryview(out)
        i = max(0, bisect.bisect_right(self.starts, start) - 1)
        at = start
        while at < stop:
            c, c0 = self.chunks[i], self.starts[i]
            n = min(stop, c0 + int(c.byteLength)) - at
            if n > 0:
                _jsbytes.read_into(dst[at - start:at - start + n], c, at - c0)
                at += n
            i += 1
        return out


class _PyRecord:
    """A record as a Python store read it (bytes-like)."""

    def __init__(self, data):
        self.view = memoryview(data).cast("B")
        self.nbytes = self.view.nbytes

    def copy(self, start, stop, as_bytes=False):
        return (bytes if as_bytes else bytearray)(self.view[start:stop])


def _cuts(rec):
    """Where the record `rec` is cut: ([(start, stop)] covering it, each out-of-band buffer a
    piece of its own, the starts of the buffers to keep as `bytes`, see _bytes_starts); one
    piece when its header does not describe a format-2 record of exactly this length (the core
    says what is wrong with it)."""
    n = rec.nbytes
    head = rec.copy(0, _RECORD.size) if n >= _RECORD.size else None
    table = _table_range(head, n) if head is not None else None
    if table is None:
        return [(0, n)], set()
    k, s = _stream_range(head)
    stream = rec.copy(k, k + s) if s <= SCAN_STREAM else None
    return _cut_by_table(rec.copy(*table), n, stream)


async def _cuts_read(read, n):
    """_cuts of a record of `n` bytes whose ranges are read by `await read(start, stop)`: its
    first FRAME_READ bytes in one read (header, stream and buffer table, as a record of a
    few large buffers has them), and what of its stream (when small) and table lies beyond
    in a second one."""
    first = memoryview(await read(0, min(n, FRAME_READ))) if n >= _RECORD.size else None
    table = _table_range(first[:_RECORD.size], n) if first is not None else None
    if table is None:
        return [(0, n)], set()
    k, s = _stream_range(first[:_RECORD.size])
    scan = s <= SCAN_STREAM
    start = k if scan else table[0]
    got = first[start:table[1]] if table[1] <= len(first) else memoryview(await read(start, table[1]))
    return _cut_by_table(got[table[0] - start:], n, got[:s] if scan else None)


def _stream_range(head):
    """(K, S) of a record header already checked by _table_range."""
    _magic, k, _kind, _ser, _flags, _m, s, _b = _RECORD.unpack(bytes(head))
    return k, s


def _readonly_buffers(stream):
    """Indices of the out-of-band buffers the pickle `stream` marks read-only (NEXT_BUFFER
    then READONLY_BUFFER: a `bytes` value, or a read-only array), by walking its opcodes
    without running them; empty when the stream does not parse."""
    import pickletools
    out, index, previous = set(), -1, None
    try:
        for op, _arg, _pos in pickletools.genops(bytes(stream)):
            if op.name == "NEXT_BUFFER":
                index += 1
            elif op.name == "READONLY_BUFFER" and previous == "NEXT_BUFFER":
                out.add(index)
            previous = op.name
    except Exception:
        return set()
    return out


def _table_range(head, n):
    """(start, stop) of the buffer table of a record of `n` bytes whose header starts with
    `head`, or None when it does not describe a format-2 record of exactly this length."""
    magic, k, _kind, _ser, _flags, m, s, b = _RECORD.unpack(bytes(head))
    if magic != b"ELRC" or not m or m > _MAX_BUFFERS or k + b != n or k + s + 24 * m + 4 > n:
        return None
    return k + s, k + s + 24 * m


def _cut_by_table(table, n, stream):
    """(cuts, bytes starts) from the buffer table; `stream`: the record's pickle stream when
    it was read (small), to find the buffers it loads read-only (see _bytes_starts)."""
    table = bytes(table)
    whole = [(0, n)], set()
    m = len(table) // 24
    readonly = _readonly_buffers(stream) if stream is not None else set()
    cuts, at, as_bytes = [], 0, set()
    for i in range(m):
        off, length = _TABLE_ENTRY.unpack_from(table, 24 * i)
        if off < at or off + length > n:
            return whole
        if off > at:
            cuts.append((at, off))  # the frame, or the zero padding before this buffer
        if length:
            cuts.append((off, off + length))
            if i in readonly and length >= BYTES_FROM:
                as_bytes.add(off)
        at = off + length
    if at < n:
        cuts.append((at, n))
    return cuts, as_bytes


def _piece(n, as_bytes):
    """The memory a piece of `n` bytes is read into: a new bytes object for a buffer the stream
    loads read-only (a `bytes` variable: pickle's bytes(buffer) then returns this very object,
    no second copy; it is filled before anything else sees it), else a bytearray (writable)."""
    return bytes(n) if as_bytes else bytearray(n)


class Streamed:
    """A checkpoint of a store, read record by record (see the module's docstring).

        s = await Streamed.open(store, name)      # None: no such checkpoint
        info = await s.inspect()                  # reads every record; raises Unread
        s.payload(rec), s.buffers(rec)            # what load_snapshot unpickles
        s.release(rec)                            # a loaded record's pieces let go
    """

    def __init__(self, store, entry):
        self.store = store
        self.meta = entry.get("meta") or {}
        self.signature = entry.get("signature")
        self.records = entry["records"]
        head, tail = bytes(entry["head"]), bytes(entry["tail"])
        self.starts, at = [], len(head)
        for r in self.records:
            self.starts.append(at)
            at += r["length"]
        self.size = at + len(tail)
        self._head = len(head)
        self._pieces = {-1: [(0, head)], len(self.records): [(at, tail)]}
        self.info = None
        self.largest_record = max((r["length"] for r in self.records), default=0)

    @classmethod
    async def open(cls, store, name):
        entry = await store.get_entry(name)
        return None if entry is None else cls(store, entry)

    # -- reading --

    def _record_at(self, offset):
        """The index of the record holding file byte `offset` (-1: the head; len(records):
        the tail)."""
        if offset < self._head:
            return -1
        i = bisect.bisect_right(self.starts, offset) - 1
        if i >= 0 and offset < self.starts[i] + self.records[i]["length"]:
            return i
        return len(self.records)

    async def _fetch(self, first):
        """Reads record `first` and the ones after it not read yet, up to about _stores.BATCH_BYTES,
        each checked against its key and cut into its pieces."""
        if self.records[first]["length"] >= INTO_FROM and _reads_into(self.store):
            return await self._fetch_into(first)
        batch, size = [], 0
        for i in range(first, len(self.records)):
            if i in self._pieces or (batch and size + self.records[i]["length"] > _stores.BATCH_BYTES):
                break
            batch.append(i)
            size += self.records[i]["length"]
        keys = [self.records[i]["key"] for i in batch]
        try:
            got, damaged = await _read_records(self.store, keys)
        except _stores.StoreError as exc:
            raise Unread(str(exc)) from None
        if len(got) != len(batch):
            raise Unread("the store gave back another number of records than asked")
        for i, rec in zip(batch, got):
            want = self.records[i]
            if rec.nbytes != want["length"] or not _matches(rec, want["key"], damaged):
                raise Unread(f"record {i} does not match its content key")
            start = self.starts[i]
            cuts, as_bytes = _cuts(rec)
            self._pieces[i] = [(start + a, rec.copy(a, b, a in as_bytes)) for a, b in cuts]

    async def _fetch_into(self, i):
        """Reads large record `i` straight into its pieces (a JS store's readRecordInto): its
        header and buffer table first, then every piece in one call that checks the key."""
        key, n = self.records[i]["key"], self.records[i]["length"]

        async def read(start, stop):
            buf = bytearray(stop - start)
            await _read_into(self.store, key, [(start, buf)], False)
            return buf

        cuts, as_bytes = await _cuts_read(read, n)
        pieces = [(a, _piece(b - a, a in as_bytes)) for a, b in cuts]
        if not await _read_into(self.store, key, pieces, True):
            raise Unread(f"record {i} does not match its content key")
        start = self.starts[i]
        self._pieces[i] = [(start + a, buf) for a, buf in pieces]

    async def _have(self, offset, n):
        i = self._record_at(offset)
        last = self._record_at(max(offset, offset + n - 1))
        for j in range(i, last + 1):
            if j not in self._pieces:
                await self._fetch(j)

    def _span(self, offset, n, longer=0):
        """Bytes [offset, offset + n) (held already): a view of the piece holding them, as far
        as that piece goes (at most `longer` bytes when more than n), else a copy joined from
        the pieces they span."""
        i = self._record_at(offset)
        pieces = self._pieces[i]
        k = self._piece_index(i, offset)
        start, buf = pieces[k]
        at = offset - start
        if at + n <= len(buf):
            return memoryview(buf)[at:at + max(n, min(longer, len(buf) - at))]
        out = bytearray()
        while len(out) < n:
            i = self._record_at(offset + len(out))
            pieces = self._pieces[i]
            start, buf = pieces[self._piece_index(i, offset + len(out))]
            at = offset + len(out) - start
            out += memoryview(buf)[at:at + n - len(out)]
        return memoryview(out)

    def _piece_index(self, i, offset):
        pieces = self._pieces[i]
        if len(pieces) == 1:
            return 0
        return bisect.bisect_right([s for s, _ in pieces], offset) - 1

    async def inspect(self, chunk=1 << 20):
        """The core's validated inspection report, every record read once on the way (in file
        order, batch by batch). Raises Unread (see the module's docstring)."""
        from .. import _core
        with _core.PullReader(self.size, True, False, chunk) as r:
            while (need := r.need()) is not None:
                kind, off, n = need
                await self._have(off, n)
                if kind == "window":
                    r.feed_window(off, self._span(off, n, chunk))
                else:
                    r.feed_crc32(zlib.crc32(self._span(off, n)))
            self.info = r.result()
        missing = [i for i in range(len(self.records)) if i not in self._pieces]
        for i in missing:  # records the core never asked for (a damaged index): read, checked
            await self._fetch(i)
        return self.info

    # -- what load_snapshot unpickles --

    def payload(self, rec):
        return self._span(rec["payload_offset"], rec["length"])

    def buffers(self, rec):
        return [self._buffer(b["offset"], b["length"]) for b in rec.get("buffers") or ()]

    def _buffer(self, offset, n):
        """An out-of-band buffer for pickle: the bytes object it was read into when it is one
        (loaded as that very object), else a view of its piece."""
        i = self._record_at(offset)
        start, buf = self._pieces[i][self._piece_index(i, offset)]
        if type(buf) is bytes and start == offset and len(buf) == n:
            return buf
        return self._span(offset, n)

    def release(self, rec):
        """Lets go of the pieces of the stored record that is exactly the loaded record
        `rec` (its values hold what they need); a stored record holding more (format 1.0: the
        whole file) is kept."""
        i = self._record_at(rec.get("offset") or 0)
        if (0 <= i < len(self.records) and self.starts[i] == rec.get("offset")
                and self.records[i]["length"] == rec.get("record_length")):
            self._pieces.pop(i, None)


def _reads_into(store):
    return isinstance(store, _stores.JsStore) and hasattr(store.proxy, "readRecordInto")


async def _read_into(store, key, pieces, check):
    """Has the JS store read record `key` into `pieces` ([(offset in the record, bytearray or bytes)])
    where they lie; with `check` (they cover the record) whether the bytes match the key."""
    from js import Array, Object
    with _jsbytes.LiveViews() as live:
        targets = Array.new()
        for at, buf in pieces:
            t = Object.new()
            t.at = at
            t.view = live.view(buf)
            targets.push(t)
        opts = Object.new()
        opts.check = check
        try:
            # the key through _jsbytes.call: a 64-character str above 2 GiB of the heap
            # would reach JS as NULs
            return bool(await _jsbytes.call(store.proxy, "readRecordInto", (key, targets, opts)))
        except Exception as exc:
            raise Unread(getattr(exc, "message", None) or str(exc)) from None


def _matches(rec, key, damaged):
    """Whether a record read matches its key: as the store said (`damaged`), else hashed
    here (a JS store that did not say is read the whole way instead)."""
    if damaged is not None:
        return key not in damaged
    if not isinstance(rec, _PyRecord):
        return False
    return _stores.record_key(rec.view) == key


async def _read_records(store, keys):
    """([record], damaged keys or None): the records of `keys` as the store reads them, JS
    arrays left in JS (copied out piece by piece), each record checked by the store when it
    says so (`damaged`), else to be checked here."""
    if isinstance(store, _stores.JsStore):
        got, damaged = await store.read_records_js(keys)
        return [_JsRecord(p) for p in got], damaged
    got = await store.read_records(keys)
    damaged = getattr(got, "damaged", None)
    return [_PyRecord(g) for g in got], damaged
