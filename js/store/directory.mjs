// DirectoryStore: checkpoints as files in one directory (Node: the CLI, tests).
//
//   <dir>/entries/<stem>.json   one checkpoint: {format, version, name, size, head, records:
//                               [{key, length}], tail, meta} (head and tail base64)
//   <dir>/records/<key>         one record's bytes, named by its key (SHA-256, see common.mjs);
//                               <key>.damaged marks one whose bytes were found changed
//   <dir>/locks/<stem>.lock     the writer lock of one checkpoint name, held for a whole write
//   <dir>/store.lock            held for the short steps that change what records are used
//   <dir>/retention.json        retention settings: {default, notebooks: {path: policy}}
//   <dir>/signing-key           this store's signing key (mode 0600; see "Signatures" in
//                               indexeddb.mjs), made by the first signed commit; the option
//                               keyFile or $ELASTIC_LITE_KEY_FILE (relative: to the working
//                               directory) puts it elsewhere (e.g. a per-user file, so that a
//                               copy of the directory carries none)
//   <dir>/<stem>.elc (+ .meta.json)  a checkpoint file as written by earlier versions (or
//                               copied in by hand): still listed, read and deleted
//
// <stem> is the name percent-encoded (only A-Z a-z 0-9 _ - and non-leading dots stay as they
// are), so no name can reach outside <dir> and two names never share a file.
//
// docs/STORE-LAYOUT.md describes this layout byte for byte (for other implementations).
//
// Nothing here reaches outside <dir> (nofollow.mjs): folders are 0700 and files 0600 whatever
// the umask; no link is followed (files are opened with O_NOFOLLOW and checked through the
// descriptor, created with O_EXCL, folders checked with lstat), and a link where the store's
// own file or folder belongs is refused ('unsafe'); the sweep and the .damaged markers touch
// only regular files inside the real records/. Every record read is checked against its key
// (checkRecordsRead, nodeRecordKey), and a stored record is reused by a write only once its
// bytes are found to be the ones being written.
//
// Crash safety: every file is written under a temporary name (".tmp-<pid>-..."), fsynced, then
// renamed, and its directory fsynced. Records are written first; the rename of the entry file
// is the commit point, done under store.lock after checking that every record it names is
// there. A kill at any point leaves each checkpoint either as it was or as it was being saved.
// Which records are used is read from the entries themselves (no counter to get out of step):
// a record no entry names is freed by delete and by the sweep (run when a store first opens
// the directory), unless a writer has pinned it: a record's mtime is its pin, set to now when
// putRecords() writes or finds it and reset to 0 by the commit that uses it; a pin older than
// orphanGraceMs is ignored. Temporary and lock files of dead processes are removed too.
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes, createHash } from 'node:crypto';
import {
  checkName, plainMeta, toBytes, byNewest, splitContainer, prepareRecords, pieceBytes, checkEntry, distinctKeys,
  isRecordKey, missingRecordError, storeError, checkRetention, defaultRetention, expiredByRetention,
  KEY_LEAF_SIZE, DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_ORPHAN_GRACE_MS, importSigningKey, signEntry, signatureState,
  checkRecordsRead, checkRecordList, sameBytesAt,
  signCounter, readCounter, generationOf, conflictError, StoreNotes, COUNTER_FORMAT,
} from './common.mjs';
import { acquireLockFile, breakStale, readHolder, pidAlive } from './lockfile.mjs';
import {
  openRegular, readRegular, createExclusive, lstatOrNull, isRegular, removeOwn, ensureFolder, checkFolder, unsafePath,
} from './nofollow.mjs';

const ENTRY_FORMAT = 'elastic-lite checkpoint entry';
const ENTRY_VERSION = 2;
const LEGACY_CONTAINER = '.elc';
const LEGACY_SIDECAR = '.meta.json';
const TMP_PREFIX = '.tmp-';
const LIVE_CHUNK = 4 * 1024 * 1024; // bytes of a live view copied per write
const MAX_STEM = 200; // file names are limited to 255 bytes; leave room for suffixes
const IO_IN_FLIGHT = 4;
const UNPINNED = new Date(0);
const KEY_FORMAT = 'elastic-lite signing key';
const SUBDIRS = ['entries', 'records', 'locks'];

/** Percent-encodes a checkpoint name into a file-name stem (throws a clear Error if it can't). */
export function nameToStem(name) {
  checkName(name);
  let stem = '';
  for (const byte of Buffer.from(name, 'utf8')) {
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
    const name = Buffer.from(stem.replace(/%([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8');
    return nameToStem(name) === stem ? name : null;
  } catch {
    return null;
  }
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

export class DirectoryStore {
  /**
   * @param {string} dir directory holding the checkpoints (created on first write)
   * @param {object} [options] retention / keepLast, lockTimeoutMs, orphanGraceMs as for
   *   IndexedDBStore; keyFile: the signing key's file (default: $ELASTIC_LITE_KEY_FILE, else
   *   <dir>/signing-key)
   */
  constructor(dir, { retention, keepLast, lockTimeoutMs = DEFAULT_LOCK_TIMEOUT_MS,
    orphanGraceMs = DEFAULT_ORPHAN_GRACE_MS, keyFile } = {}) {
    if (typeof dir !== 'string' || dir === '') throw new Error('DirectoryStore needs a directory path.');
    this.dir = path.resolve(dir);
    this.retention = defaultRetention(retention, keepLast);
    this.lockTimeoutMs = lockTimeoutMs;
    this.orphanGraceMs = orphanGraceMs;
    // A key file given by option or environment is relative to the working directory, never to
    // the store (a relative key path must not land inside the folder whose writers it guards).
    const given = keyFile || process.env.ELASTIC_LITE_KEY_FILE;
    this.keyFile = given ? path.resolve(given) : path.join(this.dir, 'signing-key');
    this._swept = false;
    this._signing = null; // {key, keyId} once read or made
    this._notes = new StoreNotes();
  }

  // ---- the signed counter (see "The signed counter" in indexeddb.mjs) -----------------------

  _counterFile() { return path.join(this.dir, 'counter.json'); }

  // What <dir>/counter.json says under `signing` (readCounter), with the highest generation
  // also of a counter that is not signed (a store that never had a key).
  async _readCounter(signing) {
    let doc = null;
    try { doc = JSON.parse(await readRegular(this._counterFile(), 'The store counter', 'utf8')); } catch (err) {
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
    await this._writeFile('', this._counterFile(), [Buffer.from(JSON.stringify(doc) + '\n')]);
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
   * The store's signing key, read from its file (made there, mode 0600, when `create` and there
   * is none; two processes making one at once both end up with the first one written); null
   * when there is none yet. The file is opened once (never through a link), checked through
   * that descriptor (a regular file, this user's, nobody else may read it) and read from it:
   * no second look at the path that another file could be swapped in between.
   */
  async _signingKey(create) {
    if (this._signing) return this._signing;
    let text = await this._readKeyFile();
    if (text === null && create) {
      await this._makeKeyFile();
      text = await this._readKeyFile();
    }
    if (text === null) return null;
    let doc;
    try { doc = JSON.parse(text); } catch { doc = null; }
    const raw = doc && doc.format === KEY_FORMAT && typeof doc.key === 'string' ? Buffer.from(doc.key, 'base64') : null;
    if (!raw || raw.byteLength !== 32 || typeof doc.keyId !== 'string') {
      throw storeError('corrupted', `The signing key ${this.keyFile} is not a valid key file. Delete it: a new one is ` +
        'made on the next checkpoint (checkpoints signed with the old one then count as foreign until you confirm them once).');
    }
    this._signing = await importSigningKey(raw, doc.keyId);
    return this._signing;
  }

  // The key file's text, null if there is none; refused unless private to this user.
  async _readKeyFile() {
    const opened = await openRegular(this.keyFile, 'The signing key');
    if (!opened) return null;
    const { fh, st } = opened;
    try {
      if (process.platform !== 'win32' && ((st.mode & 0o077) !== 0 || (process.getuid && st.uid !== process.getuid()))) {
        throw storeError('failed', `The signing key ${this.keyFile} can be read by other users or belongs to another ` +
          `one (mode ${(st.mode & 0o777).toString(8)}): whoever can read it can sign checkpoints this store trusts. ` +
          `Make it yours alone (chmod 600 ${this.keyFile}), or delete it (your checkpoints then count as foreign ` +
          'until you confirm them once).');
      }
      return await fh.readFile({ encoding: 'utf8' });
    } finally {
      await fh.close();
    }
  }

  async _makeKeyFile() {
    const keyDir = path.dirname(this.keyFile);
    if (keyDir === this.dir) await this._mkdirs(); else await ensureFolder(keyDir, 'The signing key\'s folder', { parents: true });
    const doc = { format: KEY_FORMAT, version: 1, keyId: randomBytes(8).toString('hex'), key: randomBytes(32).toString('base64') };
    const tmp = `${this.keyFile}${TMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`;
    const fh = await createExclusive(tmp);
    try {
      await fh.writeFile(JSON.stringify(doc) + '\n');
      await fh.sync();
      await fh.close();
      await fs.link(tmp, this.keyFile); // fails if another process made one first (or a link is there): use theirs
    } catch (err) {
      await fh.close().catch(() => {});
      if (err.code !== 'EEXIST') throw err;
    } finally {
      await fs.rm(tmp, { force: true });
    }
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

  _entryFile(name) { return path.join(this.dir, 'entries', `${nameToStem(name)}.json`); }
  _recordFile(key) { return path.join(this.dir, 'records', key); }
  _legacyFiles(name) {
    const stem = nameToStem(name);
    return [path.join(this.dir, stem + LEGACY_CONTAINER), path.join(this.dir, stem + LEGACY_SIDECAR)];
  }

  // The names in folder `sub` of the store ([] if it is absent); a `sub` that is a link is refused.
  async _readdir(sub = '') {
    try {
      if (sub) await checkFolder(path.join(this.dir, sub), 'The store folder');
      return await fs.readdir(path.join(this.dir, sub));
    } catch (err) {
      if (err.code === 'ENOENT') return [];
      if (err.code === 'ENOTDIR') {
        throw new Error(`Checkpoint store ${this.dir} is not a directory; pass --store DIR with a directory.`);
      }
      throw err;
    }
  }

  // The store's folders, 0700 whatever the umask; a sub-folder that is a link is refused.
  async _mkdirs() {
    await ensureFolder(this.dir, 'The checkpoint store', { parents: true });
    for (const sub of SUBDIRS) await ensureFolder(path.join(this.dir, sub), 'The store folder');
  }

  // fsync of a directory makes the renames in it durable (Linux, macOS). Some platforms cannot
  // open or sync a directory; there the rename alone is the best available.
  async _syncDir(sub) {
    let fh;
    try {
      fh = await fs.open(path.join(this.dir, sub), 'r');
      await fh.sync();
    } catch (err) {
      if (!['EISDIR', 'EPERM', 'EINVAL', 'EBADF', 'EACCES'].includes(err.code)) throw err;
    } finally {
      await fh?.close();
    }
  }

  /** Writes `pieces` to a fresh fsynced temporary file in `sub`, renames it to `target`. */
  async _writeFile(sub, target, pieces) {
    const tmp = path.join(this.dir, sub, `${TMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
    const fh = await createExclusive(tmp); // O_EXCL | O_NOFOLLOW, mode 0600
    try {
      // writev writes the caller's views as they are: no copy of a record in here, except of
      // a live view (memory that may move while a write is in flight): a chunk at a time.
      for (const views of writable(pieces)) {
        let left = views;
        while (left.length) {
          const { bytesWritten } = await fh.writev(left);
          left = skipWritten(left, bytesWritten);
        }
      }
      await fh.sync();
      await fh.close();
      await fs.rename(tmp, target);
    } catch (err) {
      await fh.close().catch(() => {});
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  // ---- locks --------------------------------------------------------------------------------

  /** Holds the writer lock of checkpoint `name` (every process using this directory). */
  async lock(name, { timeoutMs = this.lockTimeoutMs } = {}) {
    const stem = nameToStem(name);
    await this._mkdirs();
    return acquireLockFile(path.join(this.dir, 'locks', `${stem}.lock`), { timeoutMs, what: `Checkpoint "${name}"` });
  }

  async _withStoreLock(fn) {
    await this._mkdirs();
    const lock = await acquireLockFile(path.join(this.dir, 'store.lock'),
      { timeoutMs: this.lockTimeoutMs, what: `The checkpoint store ${this.dir}` });
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
        const damaged = await lstatOrNull(`${file}.damaged`);
        if (!damaged && await this._holdsBytes(file, r)) await fs.lutimes(file, now, now);
        else out.push(r); // absent, damaged or other bytes: written again (which repairs its checkpoints)
      }
      return out;
    });
    await eachLimited(missing, IO_IN_FLIGHT, (r) => this._writeFile('records', this._recordFile(r.key), r.pieces));
    if (missing.length) await this._syncDir('records');
    await Promise.all(missing.map((r) => removeOwn(`${this._recordFile(r.key)}.damaged`)));
    return missing.map((r) => r.key);
  }

  // True when record file `file` holds exactly the bytes of prepared record `r` (compared as
  // read, LIVE_CHUNK at a time; never through a link: one there is refused).
  async _holdsBytes(file, r) {
    const opened = await openRegular(file, 'Record file');
    if (!opened) return false;
    const { fh, st } = opened;
    try {
      if (st.size !== r.length) return false;
      const buf = new Uint8Array(Math.min(LIVE_CHUNK, r.length));
      for (let at = 0; at < r.length;) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(buf.byteLength, r.length - at), at);
        if (bytesRead === 0 || !sameBytesAt(r.pieces, at, buf.subarray(0, bytesRead))) return false;
        at += bytesRead;
      }
      return true;
    } finally {
      await fh.close();
    }
  }

  async hasRecords(keys) {
    const list = [...keys];
    list.forEach((k) => { if (!isRecordKey(k)) throw new Error(`Not a record key: ${JSON.stringify(k)}.`); });
    await this._opened();
    return this._withStoreLock(async () => {
      const now = new Date();
      return Promise.all(list.map(async (k) => {
        if (await lstatOrNull(`${this._recordFile(k)}.damaged`)) return false;
        if (!(await isRegular(this._recordFile(k)))) return false; // (a link there: the write refuses it)
        try { await fs.lutimes(this._recordFile(k), now, now); return true; } catch { return false; }
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
      const st = await lstatOrNull(this._recordFile(key));
      if (!st || !st.isFile() || st.size !== length) missing.push(key);
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
    await Promise.all(this._legacyFiles(name).map((f) => fs.rm(f, { force: true })));
    // Committed records are no longer pinned: once unused they can be freed at once.
    await Promise.all(distinctKeys(e.records).map((k) => fs.lutimes(this._recordFile(k), new Date(), UNPINNED).catch(() => {})));
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
      head: Buffer.from(e.head.buffer, e.head.byteOffset, e.head.byteLength).toString('base64'),
      records: e.records,
      tail: Buffer.from(e.tail.buffer, e.tail.byteOffset, e.tail.byteLength).toString('base64'),
      meta,
      ...(sig ? { sig } : {}),
    };
    await this._writeFile('entries', this._entryFile(name), [Buffer.from(JSON.stringify(doc) + '\n')]);
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
    await fs.rm(this._entryFile(name), { force: true });
    await Promise.all(this._legacyFiles(name).map((f) => fs.rm(f, { force: true })));
    return entry ? distinctKeys(entry.records) : [];
  }

  // Frees those of `keys` that no entry names and no live writer pinned (store.lock held).
  async _freeUnused(keys, { ignorePins = false } = {}) {
    if (!keys.length) return 0;
    if (!(await checkFolder(path.join(this.dir, 'records'), 'The store folder'))) return 0;
    const used = new Set();
    for (const x of await this._entries()) for (const r of x.records) used.add(r.key);
    let freed = 0;
    for (const key of new Set(keys)) {
      if (used.has(key)) continue;
      const file = this._recordFile(key);
      const st = await lstatOrNull(file);
      if (!st || !st.isFile()) continue; // only the store's own regular files
      if (!ignorePins && Date.now() - st.mtimeMs < this.orphanGraceMs) continue;
      await fs.rm(file, { force: true });
      await removeOwn(`${file}.damaged`);
      freed += 1;
    }
    if (freed) await this._syncDir('records');
    return freed;
  }

  async _writeError(name, needed, err) {
    if (err.code === 'busy' || err.code === 'missing-record') return err;
    if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
      let free = null;
      try { const s = await fs.statfs(this.dir); free = s.bavail * s.bsize; } catch { /* best effort */ }
      const what = name ? `checkpoint "${name}"` : 'checkpoint records';
      const e = new Error(`Not enough disk space in ${this.dir} to save ${what}: it needs ` +
        `${fmtBytes(needed)}, ${free == null ? 'free space unknown' : `${fmtBytes(free)} free`}. Delete old ` +
        'checkpoints (elastic-lite rm NAME) or free disk space, and try again.' +
        (name ? ` The previous checkpoint "${name}", if any, is unchanged.` : ''));
      e.code = err.code; e.needed = needed; e.free = free;
      return e;
    }
    if (err.message && err.message.startsWith('Not enough disk space')) return err;
    const e = new Error(`Saving ${name ? `checkpoint "${name}"` : 'checkpoint records'} in ${this.dir} failed (${err.message}); ` +
      (name ? 'the previous checkpoint of that name, if any, is unchanged.' : 'no checkpoint was changed.'));
    e.code = err.code; e.cause = err;
    return e;
  }

  // ---- reading ------------------------------------------------------------------------------

  /** The parsed entry file of `name`, null if absent; throws if it is damaged. */
  async _readEntry(name) {
    const file = this._entryFile(name);
    await checkFolder(path.join(this.dir, 'entries'), 'The store folder');
    let text;
    try { text = await readRegular(file, `The entry of checkpoint "${name}"`, 'utf8'); } catch (err) {
      if (err.code === 'unsafe') throw err;
      throw new Error(`Reading checkpoint "${name}" from ${file} failed: ${err.message}`);
    }
    if (text === null) return null;
    const doc = parseEntry(text, name);
    if (!doc) {
      throw storeError('corrupted', `Checkpoint "${name}" in ${this.dir} is corrupted: ${file} is not a valid entry. ` +
        `Delete it (elastic-lite rm "${name}") and checkpoint again.`);
    }
    return doc;
  }

  // Every readable entry (damaged entry files are skipped: get() reports them by name).
  async _entries() {
    const out = [];
    for (const f of await this._readdir('entries')) {
      if (!f.endsWith('.json') || f.startsWith('.')) continue;
      const name = stemToName(f.slice(0, -5));
      if (name === null) continue;
      const doc = parseEntry(await readRegular(path.join(this.dir, 'entries', f), 'Entry', 'utf8').catch(() => '') ?? '', name);
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
    await checkFolder(path.join(this.dir, 'records'), 'The store folder');
    await eachLimited(jobs, IO_IN_FLIGHT, async ([r, offset]) => {
      const problem = await readRecordInto(this._recordFile(r.key), r.length, out, offset);
      if (problem) {
        throw storeError('corrupted', `Checkpoint "${name}" in ${this.dir} is corrupted: record ${r.key.slice(0, 12)}… ${problem}. ` +
          `Delete it (elastic-lite rm "${name}") and checkpoint again.`);
      }
    });
    out.set(entry.tail, at);
    // Every record against its key, on the bytes read (see "Checking what is read" in indexeddb.mjs).
    const damaged = await checkRecordsRead(out, entry.head.byteLength, entry.records, nodeRecordKey);
    for (const d of damaged) await this._markDamaged(d.key).catch(() => {}); // best effort (a read-only store)
    return { bytes: out, meta: { ...entry.meta, size: entry.size }, damaged,
      signature: await this._signatureOf(name, entry, entry.meta, entry.sig) };
  }

  // Marks record `key` damaged (<key>.damaged, empty): created without following a link, kept
  // if it is already there as a regular file; a link or anything else there is refused.
  async _markDamaged(key) {
    const marker = `${this._recordFile(key)}.damaged`;
    await checkFolder(path.join(this.dir, 'records'), 'The store folder');
    try {
      await (await createExclusive(marker)).close();
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const st = await fs.lstat(marker);
      if (!st.isFile()) throw unsafePath(marker, 'The damage marker', st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file');
    }
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
    await checkFolder(path.join(this.dir, 'records'), 'The store folder');
    const out = await Promise.all(list.map(async (key) => {
      const buf = await readRegular(this._recordFile(key), 'Record file');
      if (buf === null) throw storeError('missing-record', `Record ${key} is not in the store ${this.dir}.`, { keys: [key] });
      return asView(buf);
    }));
    await checkRecordList(list, out, nodeRecordKey); // (see "Checking what is read" in indexeddb.mjs)
    for (const key of out.damaged) await this._markDamaged(key).catch(() => {}); // best effort (a read-only store)
    return out;
  }

  async list({ notebook } = {}) {
    await this._opened();
    const out = [];
    const names = new Set();
    for (const e of await this._entries()) {
      names.add(e.name);
      const meta = { ...e.meta, size: e.size };
      if (notebook == null || meta.notebook === notebook) out.push({ name: e.name, meta });
    }
    for (const f of await this._readdir()) {
      if (!f.endsWith(LEGACY_CONTAINER) || f.startsWith('.')) continue;
      const name = stemToName(f.slice(0, -LEGACY_CONTAINER.length));
      if (name === null || names.has(name)) continue;
      const legacy = await this._legacyMeta(name);
      if (legacy && (notebook == null || legacy.meta.notebook === notebook)) out.push({ name, meta: legacy.meta });
    }
    return out.sort(byNewest);
  }

  async delete(name) {
    checkName(name);
    await this._opened();
    return this._withStoreLock(async () => {
      let entry = null; let damaged = false;
      try { entry = await this._readEntry(name); } catch { damaged = true; } // a damaged entry goes too
      const existed = !!entry || damaged || !!(await this._legacyMeta(name));
      await fs.rm(this._entryFile(name), { force: true });
      await Promise.all(this._legacyFiles(name).map((f) => fs.rm(f, { force: true })));
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
    const st = await lstatOrNull(container);
    if (!st || !st.isFile()) return null;
    let side = null;
    try {
      const s = JSON.parse(await readRegular(sidecar, 'Checkpoint metadata', 'utf8'));
      if (s && s.name === name && s.size === st.size && s.mtimeMs === st.mtimeMs && s.meta && typeof s.meta === 'object') side = s;
    } catch { /* missing or damaged */ }
    const meta = side ? { ...side.meta, size: st.size }
      : { notebook: null, createdMs: Math.round(st.mtimeMs), size: st.size, metadataMissing: true };
    return { meta, file: container };
  }

  async _getLegacy(name) {
    const legacy = await this._legacyMeta(name);
    if (!legacy) return null;
    let buf;
    try {
      buf = await readRegular(legacy.file, `Checkpoint "${name}"`);
    } catch (err) {
      if (err.code === 'unsafe') throw err;
      throw new Error(`Reading checkpoint "${name}" from ${legacy.file} failed: ${err.message}`);
    }
    if (buf === null) return null;
    const bytes = asView(buf);
    return { bytes, meta: { ...legacy.meta, size: bytes.byteLength }, signature: { state: 'unsigned', keyId: null }, damaged: [] };
  }

  // ---- retention settings, housekeeping -----------------------------------------------------

  async _retentionSettings() {
    try {
      const s = JSON.parse(await readRegular(path.join(this.dir, 'retention.json'), 'The retention settings', 'utf8'));
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
      await this._writeFile('', path.join(this.dir, 'retention.json'), [Buffer.from(JSON.stringify(s, null, 1) + '\n')]);
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
      const stale = async (sub) => {
        for (const f of await this._readdir(sub)) {
          const m = f.startsWith(TMP_PREFIX) && /^\.tmp-(\d+)-/.exec(f);
          if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]))) await removeOwn(path.join(this.dir, sub, f));
        }
      };
      await Promise.all(['', 'entries', 'records', 'locks'].map(stale));
      for (const sub of ['locks', '']) {
        for (const f of await this._readdir(sub)) {
          if (!(sub === 'locks' && f.endsWith('.lock')) && !f.includes('.lock.break-')) continue;
          const file = path.join(this.dir, sub, f);
          await breakStale(file, await readHolder(file));
        }
      }
      const files = await this._readdir('records');
      const records = files.filter(isRecordKey);
      const present = new Set(records);
      for (const f of files.filter((x) => x.endsWith('.damaged') && !present.has(x.slice(0, -8)))) {
        await removeOwn(path.join(this.dir, 'records', f)); // its record is gone
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
      await checkFolder(path.join(this.dir, 'records'), 'The store folder');
      const buf = await readRegular(this._recordFile(key), 'Record file');
      if (buf === null) continue;
      if (nodeRecordKey(asView(buf)) !== key) {
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
    for (const k of records) recordBytes += (await lstatOrNull(this._recordFile(k)).catch(() => null))?.size ?? 0;
    const entries = (await this._readdir('entries')).filter((f) => f.endsWith('.json') && !f.startsWith('.')).length;
    return { checkpoints: entries, records: records.length, recordBytes };
  }

  // The first use of a store sweeps what dead writers left behind (best effort).
  async _opened() {
    if (this._swept) return;
    this._swept = true;
    if ((await this._readdir()).length === 0) return;
    await this.sweep().catch(() => {});
  }

  async close() {}
}

/**
 * recordKey() of indexeddb.mjs ("Record keys": SHA-256 of the length and the 4 MiB leaves'
 * SHA-256s) computed with node:crypto: the same key, for the reads this store checks, without
 * WebCrypto's cost per call (measured ~20x less for 1 KiB records; tests/node/store-tamper
 * checks the two agree).
 */
export function nodeRecordKey(u8) {
  const top = createHash('sha256');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(u8.byteLength));
  top.update(length);
  for (let at = 0; at < u8.byteLength; at += KEY_LEAF_SIZE) top.update(createHash('sha256').update(u8.subarray(at, at + KEY_LEAF_SIZE)).digest());
  return top.digest('hex');
}

// A Uint8Array over a Buffer's bytes (new Uint8Array(buffer) would copy them).
function asView(buf) {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

// The pieces as runs of Uint8Arrays to write one after the other: plain views together, a
// live view as copies of LIVE_CHUNK bytes, each made when the previous run is written.
function* writable(pieces) {
  let run = [];
  for (const p of pieces) {
    if (p.byteLength === 0) continue;
    if (ArrayBuffer.isView(p)) { run.push(p); continue; }
    if (run.length) yield run;
    run = [];
    for (let at = 0; at < p.byteLength; at += LIVE_CHUNK) yield [pieceBytes(p).slice(at, at + LIVE_CHUNK)];
  }
  if (run.length) yield run;
}

function skipWritten(pieces, n) {
  const out = [];
  for (const p of pieces) {
    if (n >= p.byteLength) { n -= p.byteLength; continue; }
    out.push(n > 0 ? p.subarray(n) : p);
    n = 0;
  }
  return out;
}

// An entry document, checked, with head/tail decoded; null if it is not a valid one for `name`.
function parseEntry(text, name) {
  let d;
  try { d = JSON.parse(text); } catch { return null; }
  if (!d || d.format !== ENTRY_FORMAT || d.version !== ENTRY_VERSION || d.name !== name ||
      typeof d.head !== 'string' || typeof d.tail !== 'string' || !Array.isArray(d.records) ||
      !d.meta || typeof d.meta !== 'object') return null;
  try {
    const e = checkEntry({ head: Buffer.from(d.head, 'base64'), tail: Buffer.from(d.tail, 'base64'), records: d.records });
    if (e.size !== d.size) return null;
    return { name, size: e.size, head: new Uint8Array(e.head), tail: new Uint8Array(e.tail), records: e.records, meta: d.meta,
      fixedBytes: e.head.byteLength + e.tail.byteLength, sig: d.sig ?? null };
  } catch {
    return null;
  }
}

// Reads record file `file` (expected `length` bytes) into out[at...]; a problem or null.
async function readRecordInto(file, length, out, at) {
  let opened;
  try {
    opened = await openRegular(file, 'Record file');
  } catch (err) {
    if (err.code === 'unsafe') throw err;
    return `cannot be read (${err.message})`;
  }
  if (!opened) return 'is missing';
  const { fh, st: { size } } = opened;
  try {
    if (size !== length) return `holds ${size} bytes instead of ${length}`;
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(out, at + got, length - got, got);
      if (bytesRead === 0) return `ended after ${got} of ${length} bytes`;
      got += bytesRead;
    }
    return null;
  } finally {
    await fh.close();
  }
}
