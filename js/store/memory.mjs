// MemoryStore: checkpoints in this JS realm's memory (tests, and the default when nothing
// persistent exists). Same model as the other stores: records once by key with reference
// counts, entries naming them. Bytes are copied in and out, so a caller can never change a
// stored checkpoint by accident. Every operation finishes its changes without yielding in
// between, so each is atomic for the other callers of this realm. Its signing key (see
// "Signatures" in indexeddb.mjs) lives and dies with the store object.
import {
  checkName, plainMeta, toBytes, byNewest, splitContainer, prepareRecords, pieceBytes, checkEntry, distinctKeys,
  isRecordKey, missingRecordError, storeError, checkRetention, defaultRetention, expiredByRetention, recordKey,
  holdLock, DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_ORPHAN_GRACE_MS, newSigningKey, signEntry, signatureState,
  sameBytes, checkRecordsRead, checkRecordList, generationOf, counterVerdict, conflictError, StoreNotes,
} from './common.mjs';

let storeIds = 0;

export class MemoryStore {
  /**
   * @param {object} [options] retention / keepLast, lockTimeoutMs, orphanGraceMs as for IndexedDBStore
   */
  constructor({ retention, keepLast, lockTimeoutMs = DEFAULT_LOCK_TIMEOUT_MS,
    orphanGraceMs = DEFAULT_ORPHAN_GRACE_MS } = {}) {
    this.retention = defaultRetention(retention, keepLast);
    this.lockTimeoutMs = lockTimeoutMs;
    this.orphanGraceMs = orphanGraceMs;
    this._id = (storeIds += 1);
    this._records = new Map(); // key -> { bytes, refs, pinnedMs }
    this._entries = new Map(); // name -> { head, records, tail, meta, size }
    this._settings = new Map(); // notebook (null: default) -> policy
    this._signing = null; // promise of {key, keyId}, made on first use
    // The counter (see "The signed counter" in indexeddb.mjs): kept in this object, whose
    // realm could change anything anyway, so it needs no MAC of its own.
    this._counter = { trusted: true, generation: 0, names: {}, previousKeyIds: [] };
    this._notes = new StoreNotes();
  }

  /** The generation of checkpoint `name` now (0: none, or saved before generations). */
  async generation(name) {
    checkName(name);
    return generationOf(this._entries.get(name)?.meta);
  }

  /** The next commit of `name` fails with 'conflict' unless `name` is still at `generation`. */
  expect(name, generation) { this._notes.expect(name, generation); }

  /** Notices a host should show once (a changed key): none here, the key lives with the object. */
  takeNotices() { return []; }

  _nextGeneration() {
    this._counter.generation += 1;
    return this._counter.generation;
  }

  _signingKey() {
    this._signing ??= newSigningKey();
    return this._signing;
  }

  get keepLast() { return this.retention?.keepLast ?? null; }

  /** putRecords takes live views (see recordPieces in indexeddb.mjs). */
  get livePieces() { return true; }

  lock(name, { timeoutMs = this.lockTimeoutMs } = {}) {
    checkName(name);
    return holdLock(`elastic-lite:memory-${this._id}:${name}`, { timeoutMs, what: `Checkpoint "${name}"` });
  }

  async putRecords(records) {
    const prepared = await prepareRecords(records);
    const now = Date.now();
    for (const r of prepared) {
      const known = this._records.get(r.key);
      // reused only once its bytes are checked to be these (see "Checking what is read")
      if (known && !known.damaged && sameBytes(r.pieces, known.bytes)) { known.pinnedMs = now; continue; }
      const bytes = new Uint8Array(r.length);
      let at = 0;
      for (const p of r.pieces) { bytes.set(pieceBytes(p), at); at += p.byteLength; }
      this._records.set(r.key, { bytes, refs: known ? known.refs : 0, pinnedMs: now });
    }
    return prepared.map((r) => r.key);
  }

  async hasRecords(keys) {
    const now = Date.now();
    return [...keys].map((k) => {
      if (!isRecordKey(k)) throw new Error(`Not a record key: ${JSON.stringify(k)}.`);
      const r = this._records.get(k);
      if (r && !r.damaged) r.pinnedMs = now;
      return !!r && !r.damaged;
    });
  }

  async commit(name, entry, { retention, sign = true, expect } = {}) {
    checkName(name);
    const e = checkEntry(entry);
    const meta = { ...plainMeta(entry.meta, e.size), generation: this._nextGeneration() };
    const sig = sign ? await signEntry(await this._signingKey(), name, e, meta) : null;
    this._commitNow(name, e, meta, retention, sig, expect);
  }

  async put(name, bytes, meta = {}, { sign = false, expect } = {}) {
    checkName(name);
    const parts = splitContainer(bytes);
    const lock = await this.lock(name);
    try {
      const keys = await this.putRecords(parts.records);
      const e = checkEntry({ head: parts.head, tail: parts.tail,
        records: keys.map((key, i) => ({ key, length: parts.records[i].byteLength })) });
      const m = { ...plainMeta(meta, e.size), generation: this._nextGeneration() };
      this._commitNow(name, e, m, undefined, sign ? await signEntry(await this._signingKey(), name, e, m) : null, expect);
    } finally {
      lock.release();
    }
  }

  /** Signs the entry of `name` as this store's own (a foreign checkpoint a person confirmed). */
  async sign(name) {
    checkName(name);
    const lock = await this.lock(name);
    try {
      const e = this._entries.get(name);
      if (!e) return false;
      // adopted: a new generation, so that what the counter said of the name holds again
      const meta = { ...e.meta, generation: this._nextGeneration() };
      const sig = await signEntry(await this._signingKey(), name, e, meta);
      if (this._entries.get(name) !== e) return false; // replaced meanwhile (a writer without the lock)
      Object.assign(e, { meta, sig });
      this._counter.names[name] = meta.generation;
      return true;
    } finally {
      lock.release();
    }
  }

  async _signatureOf(name, e) {
    return counterVerdict(await signatureState(this._signing && await this._signing, name, e, e.meta, e.sig), name, e.meta, this._counter);
  }

  // The whole commit, without yielding: check, count, replace, retention, free.
  _commitNow(name, e, meta, retentionOverride, sig = null, expect = undefined) {
    const expected = this._notes.takeExpected(name, expect);
    const found = generationOf(this._entries.get(name)?.meta);
    if (expected !== undefined && expected !== found) throw conflictError(name, expected, found);
    const keys = distinctKeys(e.records);
    const missing = keys.filter((k) => !this._records.has(k));
    if (missing.length) throw missingRecordError(name, missing);
    for (const k of keys) Object.assign(this._records.get(k), { refs: this._records.get(k).refs + 1, pinnedMs: 0 });
    this._drop(name);
    this._entries.set(name, { head: e.head.slice(), records: e.records, tail: e.tail.slice(), meta, size: e.size, sig });
    if (meta.notebook != null) {
      const policy = retentionOverride !== undefined ? checkRetention(retentionOverride)
        : (this._settings.get(meta.notebook) ?? this._settings.get(null) ?? this.retention);
      const mine = [...this._entries].filter(([, x]) => x.meta.notebook === meta.notebook).map(([n, x]) => ({
        name: n, createdMs: x.meta.createdMs, fixedBytes: x.head.byteLength + x.tail.byteLength,
        bytes: () => x.records.map((r) => [r.key, r.length]), exempt: x.meta.keep === true,
      }));
      for (const old of expiredByRetention(mine, name, policy)) { this._drop(old); this._counter.names[old] = meta.generation; }
    }
    this._counter.names[name] = meta.generation;
  }

  _drop(name) {
    const old = this._entries.get(name);
    if (!old) return false;
    this._entries.delete(name);
    for (const k of distinctKeys(old.records)) {
      const rec = this._records.get(k);
      rec.refs -= 1;
      if (this._freeable(rec)) this._records.delete(k);
    }
    return true;
  }

  async get(name) {
    checkName(name);
    const e = this._entries.get(name);
    if (!e) return null;
    const out = new Uint8Array(e.size);
    out.set(e.head, 0);
    let at = e.head.byteLength;
    for (const r of e.records) { out.set(this._records.get(r.key).bytes, at); at += r.length; }
    out.set(e.tail, at);
    const damaged = await checkRecordsRead(out, e.head.byteLength, e.records);
    this._markDamaged(damaged.map((d) => d.key));
    return { bytes: out, meta: structuredClone(e.meta), signature: await this._signatureOf(name, e), damaged };
  }

  async getEntry(name) {
    checkName(name);
    const e = this._entries.get(name);
    return e ? { name, head: e.head.slice(), records: e.records.map((r) => ({ ...r })), tail: e.tail.slice(),
      meta: structuredClone(e.meta), size: e.size, signature: await this._signatureOf(name, e) } : null;
  }

  async readRecords(keys) {
    const list = [...keys];
    const missing = list.filter((k) => !this._records.has(k));
    if (missing.length) throw storeError('missing-record', `${missing.length} record(s) are not in the store: ${missing.slice(0, 2).join(', ')}.`, { keys: missing });
    const out = await checkRecordList(list, list.map((k) => this._records.get(k).bytes.slice()));
    this._markDamaged(out.damaged);
    return out;
  }

  _markDamaged(keys) {
    for (const k of keys) { const r = this._records.get(k); if (r) r.damaged = true; }
  }

  async list({ notebook } = {}) {
    return [...this._entries].map(([name, e]) => ({ name, meta: structuredClone(e.meta) }))
      .filter((e) => notebook == null || e.meta.notebook === notebook)
      .sort(byNewest);
  }

  async delete(name) {
    checkName(name);
    const existed = this._drop(name);
    if (existed) this._counter.names[name] = this._nextGeneration();
    return existed;
  }

  async setRetention(notebook, policy) {
    const p = checkRetention(policy);
    if (p) this._settings.set(notebook ?? null, p); else this._settings.delete(notebook ?? null);
  }

  async getRetention(notebook) {
    return (notebook != null ? this._settings.get(notebook) : undefined) ?? this._settings.get(null) ?? this.retention;
  }

  // Unless a writer pinned it (putRecords, hasRecords) less than orphanGraceMs ago.
  _freeable(rec) {
    return rec.refs === 0 && !(Date.now() - rec.pinnedMs < this.orphanGraceMs);
  }

  async sweep() {
    let freed = 0;
    for (const [k, r] of this._records) if (this._freeable(r)) { this._records.delete(k); freed += 1; }
    return freed;
  }

  // Records here change only by a bug of the caller's (a view kept and written into): checked
  // all the same, like the persistent stores.
  async verifyRecords(keys) {
    const list = [...new Set(keys)];
    const damaged = [];
    for (const k of list) {
      const r = this._records.get(k);
      if (r && await recordKey(r.bytes) !== k) { this._markDamaged([k]); damaged.push(k); }
    }
    return { checked: list.length, damaged };
  }

  async discardRecords(keys) {
    let freed = 0;
    for (const k of new Set(keys)) {
      const r = this._records.get(k);
      if (r && r.refs === 0) { this._records.delete(k); freed += 1; }
    }
    return freed;
  }

  async stats() {
    let recordBytes = 0;
    for (const r of this._records.values()) recordBytes += r.bytes.byteLength;
    return { checkpoints: this._entries.size, records: this._records.size, recordBytes };
  }

  async close() {}
}
