// IndexedDBStore: checkpoints in the browser's IndexedDB (page or web worker).
//
// This file must stay ONE self-contained ES module with no imports at all: it is shipped
// inside the Python wheel and imported from Python through a data:/Blob URL (where relative
// imports cannot resolve), and it is bundled by the JupyterLab extension. It uses no DOM API,
// only `indexedDB` and (when present) `navigator.storage`, so it also runs in workers.
//
// Layout (schema v1):
//   "checkpoints"  keyPath "name"            { name, notebook, createdMs, size, chunkCount,
//                                              chunkSize, meta }     index "notebook"
//   "chunks"       keyPath ["name", "seq"]   { name, seq, data: Uint8Array }   index "name"
//
// Payloads are split into chunks of a few MiB so a checkpoint of hundreds of MB is never one
// giant structured-clone value. put() is ONE readwrite transaction: delete the old chunks of
// that name, write the new chunks, write the metadata record LAST. IndexedDB transactions are
// atomic, so an abort, a crash, a closed tab or a QuotaExceededError rolls everything back: the
// previous checkpoint of that name stays whole and no orphan chunk survives.

export const SCHEMA_VERSION = 1;
export const DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024;
const META = 'checkpoints';
const CHUNKS = 'chunks';
const MAX_NAME_LENGTH = 200;

// One function per schema step: MIGRATIONS[v] upgrades a database at version v to v + 1.
// A future v2 appends a function here (it gets the version-change transaction, so it can read
// and rewrite the v1 records with cursors); opening then runs every missing step in order.
const MIGRATIONS = [
  // 0 -> 1: the initial layout.
  (db) => {
    const meta = db.createObjectStore(META, { keyPath: 'name' });
    meta.createIndex('notebook', 'notebook', { unique: false });
    const chunks = db.createObjectStore(CHUNKS, { keyPath: ['name', 'seq'] });
    chunks.createIndex('name', 'name', { unique: false });
  },
];

/** Throws a clear Error unless `name` can be a checkpoint name (same rule in every store). */
export function checkName(name) {
  if (typeof name !== 'string' || name.length === 0) {
    throw new Error(`Invalid checkpoint name ${JSON.stringify(name)}: a name must be a non-empty string.`);
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new Error(`Invalid checkpoint name: ${name.length} characters, at most ${MAX_NAME_LENGTH} are allowed.`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw new Error(`Invalid checkpoint name ${JSON.stringify(name)}: control characters are not allowed.`);
  }
  return name;
}

// Meta is stored as plain data (a JSON copy) so it is structured-cloneable whatever the caller
// passed (a converted Python dict, an object with methods...), and detached from the caller.
export function plainMeta(meta, size) {
  const copy = meta == null ? {} : JSON.parse(JSON.stringify(meta));
  if (typeof copy !== 'object' || Array.isArray(copy)) throw new Error('Checkpoint metadata must be an object.');
  copy.size = size;
  if (typeof copy.createdMs !== 'number') copy.createdMs = Date.now();
  if (copy.notebook === undefined) copy.notebook = null;
  return copy;
}

export function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new Error('Checkpoint bytes must be a Uint8Array.');
}

function fmtBytes(n) {
  if (n == null || !Number.isFinite(n)) return 'unknown';
  if (n < 1024) return `${n} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024; let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return `${n} bytes (${v.toFixed(1)} ${units[u]})`;
}

function isQuotaError(err) {
  return !!err && (err.name === 'QuotaExceededError' || err.code === 22 ||
    err.name === 'NS_ERROR_DOM_QUOTA_REACHED');
}

function reqPromise(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export function byNewest(a, b) {
  return (b.meta.createdMs ?? 0) - (a.meta.createdMs ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export class IndexedDBStore {
  /**
   * @param {object} [options]
   * @param {string} [options.dbName] database name (default 'elastic-lite')
   * @param {number} [options.keepLast] keep only the newest N checkpoints per meta.notebook
   * @param {IDBFactory} [options.indexedDB] default globalThis.indexedDB (tests pass fake-indexeddb)
   * @param {number} [options.chunkSize] bytes per chunk (default 4 MiB)
   */
  constructor({ dbName = 'elastic-lite', keepLast, indexedDB = globalThis.indexedDB,
    chunkSize = DEFAULT_CHUNK_SIZE } = {}) {
    if (!indexedDB) {
      throw new Error('IndexedDB is not available here; use IndexedDBStore in a browser page or worker ' +
        '(or pass { indexedDB }), or use DirectoryStore/MemoryStore.');
    }
    if (keepLast != null && !(Number.isInteger(keepLast) && keepLast >= 1)) {
      throw new Error(`keepLast must be a whole number >= 1, not ${keepLast}.`);
    }
    if (!(Number.isInteger(chunkSize) && chunkSize >= 1)) throw new Error('chunkSize must be a positive integer.');
    this.dbName = dbName;
    this.keepLast = keepLast ?? null;
    this.chunkSize = chunkSize;
    this._idb = indexedDB;
    this._db = null;
  }

  /** Opens (and creates or upgrades) the database once. */
  _open() {
    if (this._db) return this._db;
    this._db = new Promise((resolve, reject) => {
      let req;
      try {
        req = this._idb.open(this.dbName, SCHEMA_VERSION);
      } catch (err) {
        reject(new Error(`Cannot open IndexedDB database "${this.dbName}": ${err.message}`));
        return;
      }
      req.onupgradeneeded = (event) => {
        const db = req.result;
        for (let v = event.oldVersion; v < SCHEMA_VERSION; v += 1) MIGRATIONS[v](db, req.transaction);
      };
      req.onsuccess = () => {
        const db = req.result;
        // Another tab running a newer elastic-lite wants to upgrade: step aside instead of
        // blocking it; the next call here reopens (and fails clearly if the schema is newer).
        db.onversionchange = () => { db.close(); this._db = null; };
        resolve(db);
      };
      req.onerror = () => {
        const err = req.error;
        this._db = null;
        if (err && err.name === 'VersionError') {
          reject(new Error(`The IndexedDB database "${this.dbName}" was written by a newer elastic-lite ` +
            `(its schema is newer than v${SCHEMA_VERSION}); reload the page to use the newer version.`));
        } else {
          reject(new Error(`Cannot open IndexedDB database "${this.dbName}": ${err ? err.message || err.name : 'unknown error'}`));
        }
      };
      req.onblocked = () => {
        // Only happens while an old connection that ignores versionchange is open elsewhere.
        console.warn(`elastic-lite: waiting for other tabs to close database "${this.dbName}" to upgrade it`);
      };
    });
    return this._db;
  }

  async put(name, bytes, meta = {}) {
    checkName(name);
    const src = toBytes(bytes);
    const size = src.byteLength;
    const record = {
      name,
      meta: plainMeta(meta, size),
      size,
      chunkSize: this.chunkSize,
      chunkCount: Math.ceil(size / this.chunkSize),
    };
    record.notebook = record.meta.notebook ?? undefined;
    record.createdMs = record.meta.createdMs;
    if (record.notebook === undefined) delete record.notebook; // null is not a valid index key
    // Copy every chunk now, before any await: structured clone of a view would copy its WHOLE
    // underlying buffer (for bytes viewed out of Pyodide's heap that is the wasm memory), and
    // the caller's buffer may be detached or reused once we yield.
    const chunks = [];
    for (let off = 0; off < size; off += this.chunkSize) {
      chunks.push(src.slice(off, Math.min(size, off + this.chunkSize)));
    }
    const db = await this._open();
    try {
      await this._write(db, record, chunks);
    } catch (err) {
      if (isQuotaError(err)) throw await quotaError(name, size, err);
      throw new Error(`Saving checkpoint "${name}" to IndexedDB failed (${err && (err.message || err.name)}); ` +
        'the previous checkpoint of that name, if any, is unchanged.');
    }
  }

  /** The one transaction of put(): retention, old chunks out, new chunks in, metadata last. */
  _write(db, record, chunks) {
    return new Promise((resolve, reject) => {
      // 'strict': a checkpoint is worth one flush to disk before put() reports success
      // (browsers may default to 'relaxed', which can lose the last commits on power loss).
      const tx = db.transaction([META, CHUNKS], 'readwrite', { durability: 'strict' });
      const metaStore = tx.objectStore(META);
      const chunkStore = tx.objectStore(CHUNKS);
      let failure = null;
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(failure || tx.error || new DOMException('transaction aborted', 'AbortError'));
      const fail = (err) => {
        if (!failure) failure = err;
        try { tx.abort(); } catch { /* already finished */ }
      };
      try {
        // Retention first: it needs a read, and doing it here keeps it in the same atomic unit.
        if (this.keepLast != null && record.notebook !== undefined) {
          const req = metaStore.index('notebook').getAll(record.notebook);
          req.onsuccess = () => {
            try {
              const others = req.result.filter((r) => r.name !== record.name)
                .map((r) => ({ name: r.name, meta: r.meta || { createdMs: r.createdMs } }))
                .sort(byNewest);
              for (const old of others.slice(this.keepLast - 1)) deleteEntry(metaStore, chunkStore, old.name);
              writeNew();
            } catch (err) { fail(err); }
          };
        } else {
          writeNew();
        }
      } catch (err) { fail(err); }

      function writeNew() {
        const del = chunkStore.index('name').openKeyCursor(record.name);
        del.onsuccess = () => {
          const cur = del.result;
          if (cur) { chunkStore.delete(cur.primaryKey); cur.continue(); return; }
          try {
            chunks.forEach((data, seq) => chunkStore.put({ name: record.name, seq, data }));
            metaStore.put(record); // LAST: a checkpoint without its metadata does not exist
          } catch (err) { fail(err); }
        };
      }
    });
  }

  async get(name) {
    checkName(name);
    const db = await this._open();
    const where = `Checkpoint "${name}" in IndexedDB database "${this.dbName}"`;
    const fix = `Delete it (elastic-lite rm "${name}", or Delete in the checkpoints panel) and checkpoint again.`;
    return new Promise((resolve, reject) => {
      const tx = db.transaction([META, CHUNKS], 'readonly');
      const metaStore = tx.objectStore(META);
      const chunkStore = tx.objectStore(CHUNKS);
      let result = null; let problem = null;
      tx.oncomplete = () => (problem ? reject(new Error(`${where} is corrupted: ${problem}. ${fix}`)) : resolve(result));
      tx.onabort = () => reject(new Error(`Reading ${where} failed: ${tx.error ? tx.error.message || tx.error.name : 'aborted'}.`));
      const mreq = metaStore.get(name);
      mreq.onsuccess = () => {
        const rec = mreq.result;
        if (rec === undefined) return; // absent: resolve(null)
        const okRecord = rec && typeof rec === 'object' && Number.isSafeInteger(rec.size) && rec.size >= 0 &&
          Number.isSafeInteger(rec.chunkCount) && rec.chunkCount >= 0 && rec.meta && typeof rec.meta === 'object';
        if (!okRecord) { problem = 'its metadata record is malformed'; return; }
        const out = new Uint8Array(rec.size);
        let filled = 0; let seen = 0;
        const creq = chunkStore.index('name').count(name);
        creq.onsuccess = () => {
          if (creq.result !== rec.chunkCount) {
            problem = `expected ${rec.chunkCount} chunks, found ${creq.result}`;
          }
        };
        for (let seq = 0; seq < rec.chunkCount; seq += 1) {
          const r = chunkStore.get([name, seq]);
          r.onsuccess = () => {
            if (problem) return;
            const data = r.result && r.result.data;
            if (!(data instanceof Uint8Array) && !(data instanceof ArrayBuffer)) {
              problem = `chunk ${seq} of ${rec.chunkCount} is missing`; return;
            }
            const u8 = data instanceof Uint8Array ? data : new Uint8Array(data);
            if (filled + u8.byteLength > rec.size) { problem = `chunk ${seq} runs past the recorded size of ${rec.size} bytes`; return; }
            out.set(u8, filled); filled += u8.byteLength; seen += 1;
            if (seen === rec.chunkCount) {
              if (filled !== rec.size) problem = `chunks hold ${filled} bytes, the metadata says ${rec.size}`;
              else result = { bytes: out, meta: { ...rec.meta, size: rec.size } };
            }
          };
        }
        if (rec.chunkCount === 0) {
          if (rec.size !== 0) problem = `no chunks for ${rec.size} bytes`;
          else result = { bytes: out, meta: { ...rec.meta, size: 0 } };
        }
      };
    });
  }

  async list({ notebook } = {}) {
    const db = await this._open();
    const recs = await new Promise((resolve, reject) => {
      const tx = db.transaction([META], 'readonly');
      const store = tx.objectStore(META);
      const req = notebook == null ? store.getAll() : store.index('notebook').getAll(notebook);
      tx.oncomplete = () => resolve(req.result);
      tx.onabort = () => reject(new Error(`Listing checkpoints failed: ${tx.error ? tx.error.message : 'aborted'}`));
    });
    return recs.filter((r) => r && typeof r.name === 'string')
      .map((r) => ({ name: r.name, meta: { ...(r.meta || {}), size: r.size } }))
      .sort(byNewest);
  }

  async delete(name) {
    checkName(name);
    const db = await this._open();
    return new Promise((resolve, reject) => {
      const tx = db.transaction([META, CHUNKS], 'readwrite');
      const metaStore = tx.objectStore(META);
      let existed = false;
      metaStore.count(name).onsuccess = (e) => { existed = e.target.result > 0; };
      deleteEntry(metaStore, tx.objectStore(CHUNKS), name);
      tx.oncomplete = () => resolve(existed);
      tx.onabort = () => reject(new Error(`Deleting checkpoint "${name}" failed: ${tx.error ? tx.error.message : 'aborted'}`));
    });
  }

  async close() {
    const pending = this._db;
    this._db = null;
    if (pending) (await pending).close();
  }
}

// Deletes a checkpoint's metadata and every chunk of it (also chunks a bug left behind).
function deleteEntry(metaStore, chunkStore, name) {
  metaStore.delete(name);
  const cur = chunkStore.index('name').openKeyCursor(name);
  cur.onsuccess = () => {
    const c = cur.result;
    if (c) { chunkStore.delete(c.primaryKey); c.continue(); }
  };
}

async function quotaError(name, needed, cause) {
  let free = null; let quota = null;
  try {
    const storage = globalThis.navigator && globalThis.navigator.storage;
    if (storage && typeof storage.estimate === 'function') {
      const est = await storage.estimate();
      if (Number.isFinite(est.quota) && Number.isFinite(est.usage)) {
        quota = est.quota; free = Math.max(0, est.quota - est.usage);
      }
    }
  } catch { /* the estimate is best effort */ }
  // The estimate is the browser's guess and can contradict the refusal (Chromium reports its
  // disk-wide figure even when the site's own limit is far lower): say so instead of
  // claiming gigabytes are free while the write just failed.
  const freeText = free == null ? 'free space unknown (navigator.storage.estimate() is not available)'
    : free >= needed
      ? `the browser estimates about ${fmtBytes(free)} free of a ${fmtBytes(quota)} quota, but refused ` +
        'the write: its real limit for this site is lower'
      : `the browser estimates about ${fmtBytes(free)} free of a ${fmtBytes(quota)} quota`;
  const err = new Error(`Not enough browser storage to save checkpoint "${name}": it needs ${fmtBytes(needed)}, ` +
    `${freeText}. Delete old checkpoints (elastic-lite rm NAME, or Delete in the checkpoints panel) ` +
    `and try again. The previous checkpoint "${name}", if any, is unchanged.`);
  err.name = 'QuotaExceededError';
  err.needed = needed;
  err.free = free;
  err.cause = cause;
  return err;
}
