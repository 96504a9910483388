// LayoutStore: the rules of the content-addressed store folder (docs/STORE-LAYOUT.md), written
// once for every way of reaching a folder. DirectoryStore (directory.mjs: Node's fs, the CLI)
// and FolderStore (folder.mjs: a File System Access directory handle, Chromium) extend it and
// only say how a file is read, written, listed, removed, locked and pinned; everything the
// files mean is here:
//
//   <dir>/entries/<stem>.json   one checkpoint: {format, version, name, size, head, records:
//                               [{key, length}], tail, meta, sig} (head and tail base64)
//   <dir>/records/<key>         one record's bytes, named by its key (SHA-256, see common.mjs);
//                               <key>.damaged marks one whose bytes were found changed
//   <dir>/locks/<stem>.lock     the writer lock of one checkpoint name, held for a whole write
//   <dir>/store.lock            held for the short steps that change what records are used
//   <dir>/counter.json          the signed counter (generations: rollback, concurrent writers)
//   <dir>/retention.json        retention settings: {default, notebooks: {path: policy}}
//   <dir>/signing-key           the store's signing key, made by the first signed commit
//   <dir>/<stem>.elc (+ .meta.json)  a checkpoint file as written by earlier versions (or
//                               copied in by hand): still listed, read and deleted
//
// <stem> is the name percent-encoded (only A-Z a-z 0-9 _ - and non-leading dots stay as they
// are), so no name can reach outside <dir> and two names never share a file.
//
// Crash safety: every file is replaced whole (the subclass writes it under a temporary name and
// renames it). Records are written first; the entry file is the commit point, written under
// store.lock after checking that every record it names is there. Which records are used is read
// from the entries themselves: a record no entry names is freed by delete and by the sweep (run
// when a store first opens the folder), unless a writer has pinned it: a record's pin (its
// mtime) is set to now when putRecords() writes or finds it and reset to 0 by the commit that
// uses it; a pin older than orphanGraceMs is ignored. Every record read is checked against its
// key, and a stored record is reused by a write only once its bytes are found to be these.
//
// What a subclass provides (paths are relative to the store, '/'-separated; `sub` is '' or
// one of SUBDIRS):
//   _show(rel)                    the path as a person should see it in a message
//   _readFile(rel, what, utf8)    the file's bytes (Uint8Array) or text, null if absent; a
//                                 link or another kind of file: StoreError 'unsafe'
//   _openFile(rel, what)          {size, read(buf, offset, length, position) -> n, close()}, or null
//   _stat(rel)                    {file: regular file?, size, mtimeMs} without following a link, or null
//   _writeFile(sub, rel, pieces)  the file replaced whole by `pieces` (durably)
//   _syncDir(sub), _mkdirs(), _readdir(sub) ([] if absent), _checkFolder(sub) (false if absent)
//   _remove(rel) (absent is fine), _removeOwn(rel) (only a regular file or a link)
//   _touch(rel, date)             sets the pin (may reject: then the record is not pinned)
//   _createMarker(rel)            an empty file, kept if one is there
//   _acquireLock(rel, {timeoutMs, what}) -> {release()}; _sweepLeftovers() (dead writers' files)
//   _readKeyText(), _makeKeyFile(docText), _keyShow()   the signing key's file
//   _recordKeyOf(u8)              recordKey() (may be synchronous)
//   _storageError(name, needed, err)  a message for a full disk / quota, or null
import {
  checkName, plainMeta, toBytes, byNewest, splitContainer, prepareRecords, checkEntry, distinctKeys,
  isRecordKey, missingRecordError, storeError, checkRetention, defaultRetention, expiredByRetention,
  DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_ORPHAN_GRACE_MS, importSigningKey, signEntry, signatureState,
  checkRecordsRead, checkRecordList, sameBytesAt,
  signCounter, readCounter, generationOf, conflictError, StoreNotes, COUNTER_FORMAT,
} from './common.mjs';

export const ENTRY_FORMAT = 'elastic-lite checkpoint entry';
export const ENTRY_VERSION = 2;
export const KEY_FORMAT = 'elastic-lite signing key';
export const SUBDIRS = ['entries', 'records', 'locks'];
export const TMP_PREFIX = '.tmp-';
export const LIVE_CHUNK = 4 * 1024 * 1024; // bytes of a live view copied per write
const LEGACY_CONTAINER = '.elc';
const LEGACY_SIDECAR = '.meta.json';
const MAX_STEM = 200; // file names are limited to 255 bytes; leave room for suffixes
const IO_IN_FLIGHT = 4;
const UNPINNED = new Date(0);
const MISSING = 'is missing';
const utf8 = new TextEncoder();

/** Percent-encodes a checkpoint name into a file-name stem (throws a clear Error if it can't). */
export function nameToStem(name) {
  checkName(name);
  let stem = '';
  for (const byte of utf8.encode(name)) {
    const ch = String.fromCharCode(byte);
    const keep = /[A-Za-z0-9_-]/.test(ch) || (ch === '.' && stem.length > 0);
    stem += keep ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (stem.length > MAX_STEM) {
    throw new Error(`Invalid checkpoint name: "${name.slice(0, 40)}..." is too long for a file name ` +
      `(${stem.length} characters once encoded, at most ${MAX_STEM}); choose a shorter name.`);
  }
  return stem;
}

/** The inverse of nameToStem, or null for a file name this store did not write. */
export function stemToName(stem) {
  if (!/^(?:[A-Za-z0-9_-]|%[0-9A-F]{2})(?:[A-Za-z0-9_.-]|%[0-9A-F]{2})*$/.test(stem)) return null;
  try {
    const latin1 = stem.replace(/%([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
    const name = new TextDecoder().decode(Uint8Array.from(latin1, (c) => c.charCodeAt(0)));
    return nameToStem(name) === stem ? name : null;
  } catch {
    return null;
  }
}

/** Base64 of bytes (Node's Buffer where there is one: the same text, faster). */
export function toBase64(u8) {
  if (globalThis.Buffer) return globalThis.Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('base64');
  let text = '';
  for (let i = 0; i < u8.byteLength; i += 0x8000) text += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(text);
}

function fromBase64(text) {
  if (globalThis.Buffer) return new Uint8Array(globalThis.Buffer.from(text, 'base64'));
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Random hex of `bytes` bytes (temporary names, tokens). */
export function randomHex(bytes) {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function fmtBytes(n) {
  if (n == null || !Number.isFinite(n)) return 'unknown';
  const mib = n / (1024 * 1024);
  return mib >= 1 ? `${n} bytes (${mib.toFixed(1)} MiB)` : `${n} bytes`;
}

// Runs fn over items with at most `limit` at once.
async function eachLimited(items, limit, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) { const i = next; next += 1; await fn(items[i], i); }
  }));
}

const text = (bytes) => new TextDecoder().decode(bytes);

export class LayoutStore {
  /**
   * @param {string} where the store as a person should see it in a message (a path)
   * @param {object} [options] retention / keepLast, lockTimeoutMs, orphanGraceMs as for IndexedDBStore
   */
  constructor(where, { retention, keepLast, lockTimeoutMs = DEFAULT_LOCK_TIMEOUT_MS,
    orphanGraceMs = DEFAULT_ORPHAN_GRACE_MS } = {}) {
    this.dir = where;
    this.retention = defaultRetention(retention, keepLast);
    this.lockTimeoutMs = lockTimeoutMs;
    this.orphanGraceMs = orphanGraceMs;
    this._swept = false;
    this._signing = null; // {key, keyId} once read or made
    this._notes = new StoreNotes();
  }

  // ---- the signed counter (see "The signed counter" in indexeddb.mjs) -----------------------

  // What counter.json says under `signing` (readCounter), with the highest generation also of
  // a counter that is not signed (a store that never had a key).
  async _readCounter(signing) {
    let doc = null;
    try { doc = JSON.parse(await this._readFile('counter.json', 'The store counter', true)); } catch (err) {
      if (err.code === 'unsafe') throw err; // a missing or damaged one: nothing trusted
    }
    const c = await readCounter(signing, doc);
    if (!c.present || c.generation) return c;
    return { ...c, generation: Number.isSafeInteger(doc?.generation) && doc.generation > 0 ? doc.generation : 0 };
  }

  // Saves the counter: signed with `signing`, or (no key yet) unsigned, holding only the generation.
  async _writeCounter(signing, generation, names, previousKeyIds) {
    const doc = signing ? await signCounter(signing, generation, names, previousKeyIds)
      : { format: COUNTER_FORMAT, version: 1, keyId: null, generation, names: {}, previousKeyIds, mac: null };
    await this._writeFile('', 'counter.json', [utf8.encode(JSON.stringify(doc) + '\n')]);
    await this._syncDir('');
  }

  /** The generation of checkpoint `name` now (0: none, or saved before generations). */
  async generation(name) {
    checkName(name);
    return generationOf((await this._readEntry(name))?.meta);
  }

  /** The next commit of `name` (by this object) fails with 'conflict' unless `name` is still at `generation`. */
  expect(name, generation) { this._notes.expect(name, generation); }

  /** Plain notices for a person, each given once (a changed signing key). */
  takeNotices() { return this._notes.takeNotices(); }

  // ---- the signing key ----------------------------------------------------------------------

  /**
   * The store's signing key, read from its file (made there when `create` and there is none;
   * two writers making one at once both end up with the first one written); null when there is
   * none yet. How the file is opened and checked is the subclass's (_readKeyText).
   */
  async _signingKey(create) {
    if (this._signing) return this._signing;
    let keyText = await this._readKeyText();
    if (keyText === null && create) {
      await this._makeKeyFile(JSON.stringify({ format: KEY_FORMAT, version: 1, keyId: randomHex(8),
        key: toBase64(globalThis.crypto.getRandomValues(new Uint8Array(32))) }) + '\n');
      keyText = await this._readKeyText();
    }
    if (keyText === null) return null;
    let doc;
    try { doc = JSON.parse(keyText); } catch { doc = null; }
    let raw = null;
    try { raw = doc && doc.format === KEY_FORMAT && typeof doc.key === 'string' ? fromBase64(doc.key) : null; } catch { /* bad base64 */ }
    if (!raw || raw.byteLength !== 32 || typeof doc.keyId !== 'string') {
      throw storeError('corrupted', `The signing key ${this._keyShow()} is not a valid key file. Delete it: a new one is ` +
        'made on the next checkpoint (checkpoints signed with the old one then count as foreign until you confirm them once).');
    }
    this._signing = await importSigningKey(raw, doc.keyId);
    return this._signing;
  }

  async _signatureOf(name, entry, meta, sig) {
    const signing = await this._signingKey(false);
    const counter = await this._readCounter(signing);
    return this._notes.verdict(`the checkpoint store ${this.dir}`, signing, counter,
      await signatureState(signing, name, entry, meta, sig), name, meta);
  }

  get keepLast() { return this.retention?.keepLast ?? null; }

  /** putRecords takes live views (see recordPieces in indexeddb.mjs). */
  get livePieces() { return true; }

  _entryFile(name) { return `entries/${nameToStem(name)}.json`; }
  _recordFile(key) { return `records/${key}`; }
  _legacyFiles(name) {
    const stem = nameToStem(name);
    return [stem + LEGACY_CONTAINER, stem + LEGACY_SIDECAR];
  }

  // ---- locks --------------------------------------------------------------------------------

  /** Holds the writer lock of checkpoint `name` (every writer of this folder). */
  async lock(name, { timeoutMs = this.lockTimeoutMs } = {}) {
    const stem = nameToStem(name);
    await this._mkdirs();
    return this._acquireLock(`locks/${stem}.lock`, { timeoutMs, what: `Checkpoint "${name}"` });
  }

  async _withStoreLock(fn) {
    await this._mkdirs();
    const lock = await this._acquireLock('store.lock', { timeoutMs: this.lockTimeoutMs, what: `The checkpoint store ${this.dir}` });
    try { return await fn(); } finally { await lock.release(); }
  }

  // ---- writing ------------------------------------------------------------------------------

  async putRecords(records) {
    const prepared = await prepareRecords(records);
    await this._opened();
    try {
      await this._writeRecords(prepared);
    } catch (err) {
      throw await this._writeError(null, prepared.reduce((n, r) => n + r.length, 0), err);
    }
    return prepared.map((r) => r.key);
  }

  // Pins the records already stored (under store.lock, so a delete cannot free one between the
  // check and the pin) and writes the others; returns the keys it wrote. A stored file is
  // reused only once its bytes are found to be exactly these: a file planted under the key
  // (keys are predictable from the values) or damaged since is replaced, never signed.
  async _writeRecords(prepared) {
    const unique = [...new Map(prepared.map((r) => [r.key, r])).values()];
    const missing = await this._withStoreLock(async () => {
      const now = new Date();
      const out = [];
      for (const r of unique) {
        const file = this._recordFile(r.key);
        const damaged = await this._stat(`${file}.damaged`);
        if (!damaged && await this._holdsBytes(file, r)) await this._touch(file, now);
        else out.push(r); // absent, damaged or other bytes: written again (which repairs its checkpoints)
      }
      return out;
    });
    await eachLimited(missing, IO_IN_FLIGHT, (r) => this._writeFile('records', this._recordFile(r.key), r.pieces));
    if (missing.length) await this._syncDir('records');
    await Promise.all(missing.map((r) => this._removeOwn(`${this._recordFile(r.key)}.damaged`)));
    return missing.map((r) => r.key);
  }

  // True when record file `file` holds exactly the bytes of prepared record `r` (compared as
  // read, LIVE_CHUNK at a time; never through a link: one there is refused).
  async _holdsBytes(file, r) {
    const opened = await this._openFile(file, 'Record file');
    if (!opened) return false;
    try {
      if (opened.size !== r.length) return false;
      const buf = new Uint8Array(Math.min(LIVE_CHUNK, r.length));
      for (let at = 0; at < r.length;) {
        const n = await opened.read(buf, 0, Math.min(buf.byteLength, r.length - at), at);
        if (n === 0 || !sameBytesAt(r.pieces, at, buf.subarray(0, n))) return false;
        at += n;
      }
      return true;
    } finally {
      await opened.close();
    }
  }

  async hasRecords(keys) {
    const list = [...keys];
    list.forEach((k) => { if (!isRecordKey(k)) throw new Error(`Not a record key: ${JSON.stringify(k)}.`); });
    await this._opened();
    return this._withStoreLock(async () => {
      const now = new Date();
      return Promise.all(list.map(async (k) => {
        if (await this._stat(`${this._recordFile(k)}.damaged`)) return false;
        if (!(await this._stat(this._recordFile(k)))?.file) return false; // (a link there: the write refuses it)
        try { await this._touch(this._recordFile(k), now); return true; } catch { return false; }
      }));
    });
  }

  async commit(name, entry, { retention, sign = true, expect } = {}) {
    checkName(name);
    const e = checkEntry(entry);
    const meta = plainMeta(entry.meta, e.size);
    await this._opened();
    try {
      const signing = await this._signingKey(sign);
      await this._withStoreLock(() => this._commitLocked(name, e, meta, retention, { signing, sign, expect }));
    } catch (err) {
      throw await this._writeError(name, e.size, err);
    }
  }

  /** Saves a whole checkpoint file; unsigned unless `sign` (an import is foreign until confirmed). */
  async put(name, bytes, meta = {}, { sign = false, expect } = {}) {
    checkName(name);
    const size = toBytes(bytes).byteLength;
    const parts = splitContainer(bytes);
    const lock = await this.lock(name);
    let created = [];
    try {
      const prepared = await prepareRecords(parts.records);
      await this._opened();
      created = await this._writeRecords(prepared);
      const e = checkEntry({ head: parts.head, tail: parts.tail, records: prepared.map((r) => ({ key: r.key, length: r.length })) });
      const m = plainMeta(meta, e.size);
      const signing = await this._signingKey(sign);
      await this._withStoreLock(() => this._commitLocked(name, e, m, undefined, { signing, sign, expect }));
      created = [];
    } catch (err) {
      throw await this._writeError(name, size, err);
    } finally {
      if (created.length) await this.discardRecords(created).catch(() => {}); // give the space back
      await lock.release();
    }
  }

  // The commit (store.lock held): the expected generation, the counter's next generation into
  // meta, the signature, the entry (the commit point), retention, then the counter.
  async _commitLocked(name, e, meta, retentionOverride, { signing, sign, expect }) {
    const missing = [];
    const lengths = new Map(e.records.map((r) => [r.key, r.length]));
    await Promise.all([...lengths].map(async ([key, length]) => {
      const st = await this._stat(this._recordFile(key));
      if (!st || !st.file || st.size !== length) missing.push(key);
    }));
    if (missing.length) throw missingRecordError(name, missing);
    const before = await this._readEntry(name).catch(() => null); // a damaged one is replaced
    const expected = this._notes.takeExpected(name, expect);
    if (expected !== undefined && expected !== generationOf(before?.meta)) throw conflictError(name, expected, generationOf(before?.meta));
    const counter = await this._readCounter(signing);
    // A counter this key does not vouch for is made again BEFORE the entry, so that a crash
    // between the two never leaves an own entry with a generation and no counter.
    if (signing && !counter.trusted) await this._writeCounter(signing, counter.generation, {}, counter.previousKeyIds);
    meta.generation = counter.generation + 1;
    const sig = sign ? await signEntry(signing, name, e, meta) : null;
    await this._writeEntry(name, e, meta, sig); // the commit point
    await Promise.all(this._legacyFiles(name).map((f) => this._remove(f)));
    // Committed records are no longer pinned: once unused they can be freed at once.
    await Promise.all(distinctKeys(e.records).map((k) => this._touch(this._recordFile(k), UNPINNED).catch(() => {})));
    const dropped = before ? [...distinctKeys(before.records)] : [];
    if (meta.notebook != null) {
      const policy = retentionOverride !== undefined ? checkRetention(retentionOverride)
        : await this._retentionFor(meta.notebook);
      if (policy) {
        const mine = (await this._entries()).filter((x) => x.meta.notebook === meta.notebook);
        const expired = expiredByRetention(mine.map((x) => ({
          name: x.name, createdMs: x.meta.createdMs ?? 0, fixedBytes: x.fixedBytes,
          bytes: () => x.records.map((r) => [r.key, r.length]), exempt: x.meta.keep === true,
        })), name, policy);
        for (const old of expired) dropped.push(...(await this._removeEntry(old)));
        for (const old of expired) counter.names[old] = meta.generation;
      }
    }
    await this._writeCounter(signing, meta.generation, { ...counter.names, [name]: meta.generation }, counter.previousKeyIds);
    await this._freeUnused(dropped);
  }

  // Writes the entry file of `name` (atomically, durably).
  async _writeEntry(name, e, meta, sig) {
    const doc = {
      format: ENTRY_FORMAT, version: ENTRY_VERSION, name, size: e.size,
      head: toBase64(e.head), records: e.records, tail: toBase64(e.tail), meta,
      ...(sig ? { sig } : {}),
    };
    await this._writeFile('entries', this._entryFile(name), [utf8.encode(JSON.stringify(doc) + '\n')]);
    await this._syncDir('entries');
  }

  /**
   * Signs the entry of `name` as this store's own (a foreign checkpoint a person looked at and
   * confirmed); false when there is no such checkpoint (or only a file of an earlier version).
   */
  async sign(name) {
    checkName(name);
    const signing = await this._signingKey(true);
    const lock = await this.lock(name);
    try {
      return await this._withStoreLock(async () => {
        const entry = await this._readEntry(name);
        if (!entry) return false;
        // adopted: a new generation, so that what the counter said of the name holds again
        const counter = await this._readCounter(signing);
        const meta = { ...entry.meta, generation: counter.generation + 1 };
        await this._writeEntry(name, entry, meta, await signEntry(signing, name, entry, meta));
        await this._writeCounter(signing, meta.generation, { ...counter.names, [name]: meta.generation }, counter.previousKeyIds);
        return true;
      });
    } finally {
      await lock.release();
    }
  }

  // Removes the entry (and legacy files) of `name`; returns the keys it used.
  async _removeEntry(name) {
    const entry = await this._readEntry(name).catch(() => null);
    await this._remove(this._entryFile(name));
    await Promise.all(this._legacyFiles(name).map((f) => this._remove(f)));
    return entry ? distinctKeys(entry.records) : [];
  }

  // Frees those of `keys` that no entry names and no live writer pinned (store.lock held).
  async _freeUnused(keys, { ignorePins = false } = {}) {
    if (!keys.length) return 0;
    if (!(await this._checkFolder('records'))) return 0;
    const used = new Set();
    for (const x of await this._entries()) for (const r of x.records) used.add(r.key);
    let freed = 0;
    for (const key of new Set(keys)) {
      if (used.has(key)) continue;
      const file = this._recordFile(key);
      const st = await this._stat(file);
      if (!st || !st.file) continue; // only the store's own regular files
      if (!ignorePins && Date.now() - st.mtimeMs < this.orphanGraceMs) continue;
      await this._remove(file);
      await this._removeOwn(`${file}.damaged`);
      freed += 1;
    }
    if (freed) await this._syncDir('records');
    return freed;
  }

  async _writeError(name, needed, err) {
    if (err.code === 'busy' || err.code === 'missing-record') return err;
    const full = await this._storageError(name, needed, err);
    if (full) return full;
    if (err.message && err.message.startsWith('Not enough disk space')) return err;
    const e = new Error(`Saving ${name ? `checkpoint "${name}"` : 'checkpoint records'} in ${this.dir} failed (${err.message}); ` +
      (name ? 'the previous checkpoint of that name, if any, is unchanged.' : 'no checkpoint was changed.'));
    e.code = err.code; e.cause = err;
    return e;
  }

  // The words of a full disk: what it needed, what is free (`free`: bytes or null), what to do.
  _fullError(name, needed, err, free) {
    const what = name ? `checkpoint "${name}"` : 'checkpoint records';
    const e = new Error(`Not enough disk space in ${this.dir} to save ${what}: it needs ` +
      `${fmtBytes(needed)}, ${free == null ? 'free space unknown' : `${fmtBytes(free)} free`}. Delete old ` +
      'checkpoints (elastic-lite rm NAME) or free disk space, and try again.' +
      (name ? ` The previous checkpoint "${name}", if any, is unchanged.` : ''));
    e.code = err.code ?? 'quota'; e.needed = needed; e.free = free;
    return e;
  }

  // ---- reading ------------------------------------------------------------------------------

  /** The parsed entry file of `name`, null if absent; throws if it is damaged. */
  async _readEntry(name) {
    const file = this._entryFile(name);
    await this._checkFolder('entries');
    let doc;
    try { doc = await this._readFile(file, `The entry of checkpoint "${name}"`, true); } catch (err) {
      if (err.code === 'unsafe') throw err;
      throw new Error(`Reading checkpoint "${name}" from ${this._show(file)} failed: ${err.message}`);
    }
    if (doc === null) return null;
    const parsed = parseEntry(doc, name);
    if (!parsed) {
      throw storeError('corrupted', `Checkpoint "${name}" in ${this.dir} is corrupted: ${this._show(file)} is not a valid entry. ` +
        `Delete it (elastic-lite rm "${name}") and checkpoint again.`);
    }
    return parsed;
  }

  // Every readable entry (damaged entry files are skipped: get() reports them by name).
  async _entries() {
    const out = [];
    for (const f of await this._readdir('entries')) {
      if (!f.endsWith('.json') || f.startsWith('.')) continue;
      const name = stemToName(f.slice(0, -5));
      if (name === null) continue;
      const doc = parseEntry(await this._readFile(`entries/${f}`, 'Entry', true).catch(() => '') ?? '', name);
      if (doc) out.push(doc);
    }
    return out;
  }

  async get(name) {
    checkName(name);
    const entry = await this._readEntry(name);
    if (!entry) return this._getLegacy(name);
    const out = new Uint8Array(entry.size);
    out.set(entry.head, 0);
    let at = entry.head.byteLength;
    const jobs = entry.records.map((r) => { const job = [r, at]; at += r.length; return job; });
    await this._checkFolder('records');
    const gone = new Set();
    await eachLimited(jobs, IO_IN_FLIGHT, async ([r, offset]) => {
      const problem = await this._readRecordInto(this._recordFile(r.key), r.length, out, offset);
      if (problem === MISSING) gone.add(r.key);
      else if (problem) {
        throw storeError('corrupted', `Checkpoint "${name}" in ${this.dir} is corrupted: record ${r.key.slice(0, 12)}… ${problem}. ` +
          `Delete it (elastic-lite rm "${name}") and checkpoint again.`);
      }
    });
    if (gone.size) throw this._lostError(name, { missing: gone.size, records: distinctKeys(entry.records).length });
    out.set(entry.tail, at);
    // Every record against its key, on the bytes read (see "Checking what is read" in indexeddb.mjs).
    const damaged = await checkRecordsRead(out, entry.head.byteLength, entry.records, (u8) => this._recordKeyOf(u8));
    for (const d of damaged) await this._markDamaged(d.key).catch(() => {}); // best effort (a read-only store)
    return { bytes: out, meta: { ...entry.meta, size: entry.size }, damaged,
      signature: await this._signatureOf(name, entry, entry.meta, entry.sig) };
  }

  // Reads record file `file` (expected `length` bytes) into out[at...]; a problem or null.
  async _readRecordInto(file, length, out, at) {
    let opened;
    try {
      opened = await this._openFile(file, 'Record file');
    } catch (err) {
      if (err.code === 'unsafe') throw err;
      return `cannot be read (${err.message})`;
    }
    if (!opened) return MISSING;
    try {
      if (opened.size !== length) return `holds ${opened.size} bytes instead of ${length}`;
      let got = 0;
      while (got < length) {
        const n = await opened.read(out, at + got, length - got, got);
        if (n === 0) return `ended after ${got} of ${length} bytes`;
        got += n;
      }
      return null;
    } finally {
      await opened.close();
    }
  }

  /** The 'lost' error of checkpoint `name` whose record files are gone (`loss`: {missing, records}). */
  _lostError(name, loss) {
    return storeError('lost', `Checkpoint "${name}" is lost: ${loss.missing} of its ${loss.records} records are no longer in ` +
      `${this.dir}; they were deleted from it (by hand, or by a sync or cleanup tool). Only its entry was left. Delete it ` +
      `(elastic-lite rm "${name}", or Delete in the checkpoints panel), and keep the folder whole: a record file is ` +
      'shared by every checkpoint that holds the same bytes.', { loss: { ...loss, store: 'folder' } });
  }

  // Marks record `key` damaged (<key>.damaged, empty).
  async _markDamaged(key) {
    await this._checkFolder('records');
    await this._createMarker(`${this._recordFile(key)}.damaged`);
  }

  /**
   * The entry of checkpoint `name` without its records' bytes: {name, head, records, tail, meta,
   * size}. A file of an earlier version has no records: it is all tail (and read whole).
   */
  async getEntry(name) {
    checkName(name);
    const entry = await this._readEntry(name);
    if (entry) {
      return { name, head: entry.head, records: entry.records, tail: entry.tail, meta: { ...entry.meta, size: entry.size },
        size: entry.size, signature: await this._signatureOf(name, entry, entry.meta, entry.sig) };
    }
    const legacy = await this._getLegacy(name);
    return legacy && { name, head: new Uint8Array(0), records: [], tail: legacy.bytes, meta: legacy.meta,
      size: legacy.bytes.byteLength, signature: { state: 'unsigned', keyId: null } };
  }

  async readRecords(keys) {
    const list = [...keys];
    list.forEach((k) => { if (!isRecordKey(k)) throw new Error(`Not a record key: ${JSON.stringify(k)}.`); });
    await this._checkFolder('records');
    const out = await Promise.all(list.map(async (key) => {
      const buf = await this._readFile(this._recordFile(key), 'Record file');
      if (buf === null) throw storeError('missing-record', `Record ${key} is not in the store ${this.dir}.`, { keys: [key] });
      return buf;
    }));
    await checkRecordList(list, out, (u8) => this._recordKeyOf(u8)); // (see "Checking what is read" in indexeddb.mjs)
    for (const key of out.damaged) await this._markDamaged(key).catch(() => {}); // best effort (a read-only store)
    return out;
  }

  /**
   * Newest first: {name, meta}; a checkpoint whose record files are gone from the folder
   * (deleted by hand, by a sync or cleanup tool) carries `lost: {missing, records, store:
   * 'folder'}` (as IndexedDB's list: presence only, one listing of records/, never bytes).
   */
  async list({ notebook } = {}) {
    await this._opened();
    const out = [];
    const names = new Set();
    const shown = [];
    for (const e of await this._entries()) {
      names.add(e.name);
      if (notebook == null || e.meta.notebook === notebook) shown.push(e);
    }
    const losses = await this._losses(shown);
    shown.forEach((e, i) => {
      if (losses[i] !== undefined) out.push({ name: e.name, meta: { ...e.meta, size: e.size }, ...(losses[i] ? { lost: losses[i] } : {}) });
    });
    for (const f of await this._readdir('')) {
      if (!f.endsWith(LEGACY_CONTAINER) || f.startsWith('.')) continue;
      const name = stemToName(f.slice(0, -LEGACY_CONTAINER.length));
      if (name === null || names.has(name)) continue;
      const legacy = await this._legacyMeta(name);
      if (legacy && (notebook == null || legacy.meta.notebook === notebook)) out.push({ name, meta: legacy.meta });
    }
    return out.sort(byNewest);
  }

  // For each of `entries`: null (its records are there), {missing, records, store: 'folder'}
  // (some are gone), or undefined (its entry was deleted meanwhile: not listed). A record
  // counts as there when its file is in records/ (one listing). An entry is found lost only
  // after reading its file again: a delete or the retention running between the listings
  // removes the entry before freeing its records, and such an entry is gone, not lost.
  async _losses(entries) {
    if (!entries.length) return [];
    // records/ that is a link is not looked into: the listing stays (it reads no record), and
    // every read, write, sweep and delete refuses the store in words ('unsafe').
    const listed = await this._readdir('records').catch((err) => {
      if (err?.code === 'unsafe') return null;
      throw err;
    });
    if (listed === null) return entries.map(() => null);
    const held = new Set(listed);
    return Promise.all(entries.map(async (e) => {
      const keys = distinctKeys(e.records);
      if (keys.every((k) => held.has(k))) return null;
      const now = await this._readEntry(e.name).catch(() => e);
      if (!now) return undefined;
      const found = await Promise.all(distinctKeys(now.records).map(async (k) => held.has(k) || !!(await this._stat(this._recordFile(k)))?.file));
      const missing = found.filter((f) => !f).length;
      return missing ? { missing, records: found.length, store: 'folder' } : null;
    }));
  }

  async delete(name) {
    checkName(name);
    await this._opened();
    return this._withStoreLock(async () => {
      let entry = null; let damaged = false;
      try { entry = await this._readEntry(name); } catch { damaged = true; } // a damaged entry goes too
      const existed = !!entry || damaged || !!(await this._legacyMeta(name));
      await this._remove(this._entryFile(name));
      await Promise.all(this._legacyFiles(name).map((f) => this._remove(f)));
      if (existed) await this._syncDir('entries');
      const signing = existed ? await this._signingKey(false) : null;
      if (signing) { // a deleted entry put back later is a rollback too
        const counter = await this._readCounter(signing);
        await this._writeCounter(signing, counter.generation + 1, { ...counter.names, [name]: counter.generation + 1 }, counter.previousKeyIds);
      }
      await this._freeUnused(entry ? distinctKeys(entry.records) : []);
      return existed;
    });
  }

  // ---- checkpoints of earlier versions: <stem>.elc + <stem>.meta.json ------------------------

  // {meta, file} of a legacy checkpoint, or null. Metadata that does not match the file (size
  // and mtime recorded when it was written) is replaced by metadata derived from the file.
  async _legacyMeta(name) {
    const [container, sidecar] = this._legacyFiles(name);
    const st = await this._stat(container);
    if (!st || !st.file) return null;
    let side = null;
    try {
      const s = JSON.parse(await this._readFile(sidecar, 'Checkpoint metadata', true));
      if (s && s.name === name && s.size === st.size && s.mtimeMs === st.mtimeMs && s.meta && typeof s.meta === 'object') side = s;
    } catch { /* missing or damaged */ }
    const meta = side ? { ...side.meta, size: st.size }
      : { notebook: null, createdMs: Math.round(st.mtimeMs), size: st.size, metadataMissing: true };
    return { meta, file: container };
  }

  async _getLegacy(name) {
    const legacy = await this._legacyMeta(name);
    if (!legacy) return null;
    let bytes;
    try {
      bytes = await this._readFile(legacy.file, `Checkpoint "${name}"`);
    } catch (err) {
      if (err.code === 'unsafe') throw err;
      throw new Error(`Reading checkpoint "${name}" from ${this._show(legacy.file)} failed: ${err.message}`);
    }
    if (bytes === null) return null;
    return { bytes, meta: { ...legacy.meta, size: bytes.byteLength }, signature: { state: 'unsigned', keyId: null }, damaged: [] };
  }

  // ---- retention settings, housekeeping -----------------------------------------------------

  async _retentionSettings() {
    try {
      const s = JSON.parse(await this._readFile('retention.json', 'The retention settings', true));
      return { default: s.default ?? null, notebooks: s.notebooks && typeof s.notebooks === 'object' ? s.notebooks : {} };
    } catch {
      return { default: null, notebooks: {} };
    }
  }

  async _retentionFor(notebook) {
    const s = await this._retentionSettings();
    const own = notebook != null ? s.notebooks[notebook] : undefined;
    return checkRetention(own ?? s.default) ?? this.retention;
  }

  /** Retention for `notebook` (null: every notebook without its own), kept in retention.json. */
  async setRetention(notebook, policy) {
    const p = checkRetention(policy);
    await this._withStoreLock(async () => {
      const s = await this._retentionSettings();
      if (notebook == null) s.default = p; else if (p) s.notebooks[notebook] = p; else delete s.notebooks[notebook];
      await this._writeFile('', 'retention.json', [utf8.encode(JSON.stringify(s, null, 1) + '\n')]);
      await this._syncDir('');
    });
  }

  async getRetention(notebook) {
    const s = await this._retentionSettings();
    if (notebook == null) return checkRetention(s.default) ?? this.retention;
    return this._retentionFor(notebook);
  }

  /** Frees records no entry names (pins older than orphanGraceMs), dead writers' temp and lock files. */
  async sweep() {
    return this._withStoreLock(async () => {
      await this._sweepLeftovers();
      const files = await this._readdir('records');
      const records = files.filter(isRecordKey);
      const present = new Set(records);
      for (const f of files.filter((x) => x.endsWith('.damaged') && !present.has(x.slice(0, -8)))) {
        await this._removeOwn(`records/${f}`); // its record is gone
      }
      return this._freeUnused(records);
    });
  }

  /**
   * Reads each record back and checks it against its key: {checked, damaged: [key...]}. A
   * damaged one is marked (<key>.damaged): hasRecords() then says it is not stored and the next
   * putRecords() of its true bytes rewrites it, repairing every checkpoint that names it.
   */
  async verifyRecords(keys) {
    const list = [...new Set(keys)];
    const damaged = [];
    for (const key of list) {
      if (!isRecordKey(key)) throw new Error(`Not a record key: ${JSON.stringify(key)}.`);
      await this._checkFolder('records');
      const buf = await this._readFile(this._recordFile(key), 'Record file');
      if (buf === null) continue;
      if (await this._recordKeyOf(buf) !== key) {
        await this._markDamaged(key);
        damaged.push(key);
      }
    }
    return { checked: list.length, damaged };
  }

  /** Frees those of `keys` that no entry names, pinned or not (a writer giving up its records). */
  async discardRecords(keys) {
    return this._withStoreLock(() => this._freeUnused([...keys], { ignorePins: true }));
  }

  async stats() {
    const records = (await this._readdir('records')).filter(isRecordKey);
    let recordBytes = 0;
    for (const k of records) recordBytes += (await this._stat(this._recordFile(k)).catch(() => null))?.size ?? 0;
    const entries = (await this._readdir('entries')).filter((f) => f.endsWith('.json') && !f.startsWith('.')).length;
    return { checkpoints: entries, records: records.length, recordBytes };
  }

  // The first use of a store sweeps what dead writers left behind (best effort).
  async _opened() {
    if (this._swept) return;
    this._swept = true;
    if ((await this._readdir('')).length === 0) return;
    await this.sweep().catch(() => {});
  }

  async close() {}
}

// An entry document (text or bytes), checked, with head/tail decoded; null if it is not a
// valid one for `name`.
function parseEntry(doc, name) {
  let d;
  try { d = JSON.parse(typeof doc === 'string' ? doc : text(doc)); } catch { return null; }
  if (!d || d.format !== ENTRY_FORMAT || d.version !== ENTRY_VERSION || d.name !== name ||
      typeof d.head !== 'string' || typeof d.tail !== 'string' || !Array.isArray(d.records) ||
      !d.meta || typeof d.meta !== 'object') return null;
  try {
    const e = checkEntry({ head: fromBase64(d.head), tail: fromBase64(d.tail), records: d.records });
    if (e.size !== d.size) return null;
    return { name, size: e.size, head: new Uint8Array(e.head), tail: new Uint8Array(e.tail), records: e.records, meta: d.meta,
      fixedBytes: e.head.byteLength + e.tail.byteLength, sig: d.sig ?? null };
  } catch {
    return null;
  }
}
