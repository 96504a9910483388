// FolderStore: checkpoints in a folder on disk that the person picked in the browser (File
// System Access API: a FileSystemDirectoryHandle from showDirectoryPicker(), Chromium), in
// exactly the layout of the Node directory store (docs/STORE-LAYOUT.md): the `elastic-lite` CLI
// reads a folder this store wrote (`elastic-lite ls --store DIR`) and this store reads one the
// CLI wrote. What the files mean is layout.mjs (LayoutStore); this file says how a directory
// handle reads and writes them. It runs wherever the handle is: a page, a worker (a handle is
// structured-cloneable: posted in a message or kept in IndexedDB), and in Node tests over a
// handle backed by node:fs.
//
// What a directory handle cannot do, and what this store does instead:
//   - Modes, owners, links: the browser makes the files and folders (Chromium on Linux: files
//     0600, folders 0700 whatever the umask, see docs/STORE-LAYOUT.md) and never hands out a
//     link; the checks of nofollow.mjs are the CLI's.
//   - Temporary name + rename: a FileSystemWritableFileStream writes to a swap file
//     ("<name>.crswap") and replaces the file whole on close(); a writer that dies leaves the
//     swap file, which the sweep removes once it is older than orphanGraceMs.
//   - fsync: the browser decides; a crash of the machine can lose the last writes, never mix
//     two versions of a file.
//   - Pins (a record's mtime): a file's mtime cannot be set. A record's pin is its last write
//     time, or what this store object set it to (kept in memory): records written or found by
//     a writer in another tab or process are protected by their write time only, so a delete
//     racing such a writer can free a record it found; its commit then fails with
//     'missing-record' (and the writer writes again), never commits an entry without records.
//   - Exclusive create (the lock files): a lock is first taken with the Web Locks API (every
//     tab and worker of this origin), then its file is written naming the holder
//     {pid: 0, host: "browser <origin>", token, sinceMs}. A lock file of this origin found while
//     holding the Web Lock is a dead tab's: taken over. A lock file of a CLI process (or of
//     another origin) is waited for, then the writer is told which file to remove. The CLI never
//     breaks a browser's lock file (another host), it waits and names it. Between the check and
//     the write of a lock file there is no atomic step: a browser and a CLI process taking one
//     lock in the same instant can both proceed (one of the two commits wins whole).
//   - The signing key: the folder's own signing-key file, as the CLI's (a folder written by
//     either side is signed with the same key: both see its checkpoints as their own). The
//     browser cannot check who can read the file; docs/SECURITY.md says what trust that gives.
import { LayoutStore, TMP_PREFIX, LIVE_CHUNK, randomHex } from './layout.mjs';
import { recordKey, storeError, pieceBytes, holdLock } from './common.mjs';

const SWAP_SUFFIX = '.crswap';
const HOLDER_HOST = () => `browser ${globalThis.location?.origin ?? 'unknown'}`;
const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

function isNotFound(err) { return err && (err.name === 'NotFoundError' || err.code === 'ENOENT'); }
function isWrongKind(err) { return err && (err.name === 'TypeMismatchError' || err.code === 'ENOTDIR' || err.code === 'EISDIR'); }

export class FolderStore extends LayoutStore {
  /**
   * @param {FileSystemDirectoryHandle} handle the store's folder (read and write permission granted)
   * @param {object} [options] retention / keepLast, lockTimeoutMs, orphanGraceMs as for IndexedDBStore
   */
  constructor(handle, options = {}) {
    if (!handle || handle.kind !== 'directory' || typeof handle.getFileHandle !== 'function') {
      throw new Error('FolderStore needs a folder (a FileSystemDirectoryHandle, e.g. from showDirectoryPicker()).');
    }
    super(`the folder "${handle.name}"`, options);
    this.handle = handle;
    this._pins = new Map(); // record file -> pin time (ms) set by this object
  }

  // ---- the layout's file operations over a directory handle (see layout.mjs) ----------------

  _show(rel) { return `${this.handle.name}/${rel}`; }
  _recordKeyOf(u8) { return recordKey(u8); }
  _keyShow() { return this._show('signing-key'); }

  // [folder handle or null, file name] of `rel`; `create` makes the folder.
  async _parent(rel, create = false) {
    const at = rel.lastIndexOf('/');
    if (at < 0) return [this.handle, rel];
    return [await this._folder(rel.slice(0, at), create), rel.slice(at + 1)];
  }

  // The handle of sub-folder `sub` ('' is the store), null when absent; a file there is refused.
  async _folder(sub, create = false) {
    if (!sub) return this.handle;
    try {
      return await this.handle.getDirectoryHandle(sub, { create });
    } catch (err) {
      if (isNotFound(err)) return null;
      if (isWrongKind(err)) throw this._unsafe(sub, 'The store folder', 'not a folder');
      throw err;
    }
  }

  _unsafe(rel, what, kind) {
    return storeError('unsafe', `${what} ${this._show(rel)} is ${kind}, not a file of the store. Nothing was read ` +
      `or written through it. Remove ${this._show(rel)}, and try again.`);
  }

  // The FileSystemFileHandle of `rel`, null when absent; a folder there is refused.
  async _fileHandle(rel, what, create = false) {
    const [dir, name] = await this._parent(rel, create);
    if (!dir) return null;
    try {
      return await dir.getFileHandle(name, { create });
    } catch (err) {
      if (isNotFound(err)) return null;
      if (isWrongKind(err)) throw this._unsafe(rel, what, 'a folder');
      throw err;
    }
  }

  async _file(rel, what) {
    const fh = await this._fileHandle(rel, what);
    return fh && fh.getFile();
  }

  async _readFile(rel, what, utf8 = false) {
    const file = await this._file(rel, what);
    if (!file) return null;
    return utf8 ? file.text() : new Uint8Array(await file.arrayBuffer());
  }

  async _openFile(rel, what) {
    const file = await this._file(rel, what);
    if (!file) return null;
    return {
      size: file.size,
      async read(buf, offset, length, position) {
        const got = new Uint8Array(await file.slice(position, position + length).arrayBuffer());
        buf.set(got, offset);
        return got.byteLength;
      },
      async close() {},
    };
  }

  async _stat(rel) {
    const [dir, name] = await this._parent(rel).catch(() => [null, null]);
    if (!dir) return null;
    let file;
    try {
      file = await (await dir.getFileHandle(name)).getFile();
    } catch (err) {
      if (isNotFound(err)) return null;
      if (isWrongKind(err)) return { file: false, size: 0, mtimeMs: 0 };
      throw err;
    }
    return { file: true, size: file.size, mtimeMs: this._pins.get(rel) ?? file.lastModified };
  }

  async _remove(rel) {
    const [dir, name] = await this._parent(rel).catch(() => [null, null]);
    this._pins.delete(rel);
    if (!dir) return;
    try { await dir.removeEntry(name); } catch (err) { if (!isNotFound(err)) throw err; }
  }

  async _removeOwn(rel) {
    if ((await this._stat(rel))?.file) await this._remove(rel);
  }

  async _touch(rel, date) { this._pins.set(rel, date.getTime()); }

  async _checkFolder(sub) { return !!(await this._folder(sub)); }

  async _createMarker(rel) { await this._fileHandle(rel, 'The damage marker', true); }

  async _readdir(sub = '') {
    const dir = await this._folder(sub);
    if (!dir) return [];
    const out = [];
    for await (const name of dir.keys()) out.push(name);
    return out;
  }

  async _mkdirs() {
    for (const sub of ['entries', 'records', 'locks']) await this._folder(sub, true);
  }

  async _syncDir() {}

  /** Replaces file `rel` whole by `pieces` (the browser's swap file, then one move on close). */
  async _writeFile(sub, rel, pieces) {
    const fh = await this._fileHandle(rel, 'The store file', true);
    const out = await fh.createWritable({ keepExistingData: false });
    try {
      for (const p of pieces) {
        if (p.byteLength === 0) continue;
        if (ArrayBuffer.isView(p)) { await out.write(p); continue; }
        // a live view (memory that may move while a write is in flight): copies, a chunk at a time
        for (let at = 0; at < p.byteLength; at += LIVE_CHUNK) await out.write(pieceBytes(p).slice(at, at + LIVE_CHUNK));
      }
      await out.close();
    } catch (err) {
      await out.abort().catch(() => {});
      throw err;
    }
    this._pins.delete(rel);
  }

  async _storageError(name, needed, err) {
    return err && err.name === 'QuotaExceededError' ? this._fullError(name, needed, err, null) : null;
  }

  // ---- locks: Web Locks within the origin, a lock file for the CLI --------------------------

  _webLockName(rel) { return `elastic-lite:folder:${this.handle.name}:${rel}`; }

  async _readHolder(rel) {
    const t = await this._readFile(rel, 'Lock file', true);
    if (t === null) return null;
    try {
      const h = JSON.parse(t);
      if (h && typeof h.token === 'string' && typeof h.host === 'string') return h;
    } catch { /* not ours: a live holder we cannot identify */ }
    return { unreadable: true };
  }

  async _acquireLock(rel, { timeoutMs, what }) {
    const deadline = Date.now() + timeoutMs;
    const web = await holdLock(this._webLockName(rel), { timeoutMs, what });
    const holder = { pid: 0, host: HOLDER_HOST(), token: `browser-${randomHex(8)}`, sinceMs: Date.now() };
    try {
      let delay = 2;
      for (;;) {
        const other = await this._readHolder(rel);
        // none, or this origin's (we hold its Web Lock: its tab or worker is gone)
        if (!other || other.host === holder.host) break;
        if (Date.now() >= deadline) {
          const who = other.unreadable ? 'an unknown holder' : `process ${other.pid} on ${other.host}` +
            (other.sinceMs ? ` (since ${new Date(other.sinceMs).toISOString()})` : '');
          throw storeError('busy', `${what} is being saved by ${who}; waited ${(timeoutMs / 1000).toFixed(timeoutMs < 1000 ? 2 : 0)} s ` +
            `for it to finish. Try again in a moment. If no elastic-lite process is running, remove the lock file ${this._show(rel)}.`);
        }
        await sleep(delay);
        delay = Math.min(delay * 2, 50);
      }
      await this._writeFile('', rel, [new TextEncoder().encode(JSON.stringify(holder))]);
    } catch (err) {
      web.release();
      throw err;
    }
    let released = false;
    return {
      file: this._show(rel),
      holder,
      release: async () => {
        if (released) return;
        released = true;
        try {
          const now = await this._readHolder(rel);
          if (now && now.token === holder.token) await this._remove(rel);
        } finally {
          web.release();
        }
      },
    };
  }

  // Lock files of this origin's dead tabs (their Web Lock is free), the swap files of writers
  // that died (older than orphanGraceMs), and temporary files of the CLI's dead processes are
  // left to the CLI (it can tell whether their process lives).
  async _sweepLeftovers() {
    const locks = (await this._readdir('locks')).filter((f) => f.endsWith('.lock')).map((f) => `locks/${f}`);
    for (const rel of locks) {
      const h = await this._readHolder(rel).catch(() => null);
      if (!h || h.host !== HOLDER_HOST()) continue;
      let web;
      try { web = await holdLock(this._webLockName(rel), { timeoutMs: 50, what: rel }); } catch { continue; }
      try {
        const now = await this._readHolder(rel);
        if (now && now.token === h.token) await this._remove(rel);
      } finally {
        web.release();
      }
    }
    for (const sub of ['', 'entries', 'records', 'locks']) {
      for (const f of await this._readdir(sub)) {
        if (!f.endsWith(SWAP_SUFFIX) || f.startsWith(TMP_PREFIX)) continue;
        const rel = sub ? `${sub}/${f}` : f;
        const st = await this._stat(rel).catch(() => null);
        if (st && st.file && Date.now() - st.mtimeMs > this.orphanGraceMs) await this._remove(rel);
      }
    }
  }

  // ---- the signing key's file ---------------------------------------------------------------

  async _readKeyText() { return this._readFile('signing-key', 'The signing key', true); }

  // No exclusive create through a handle: written only when there is still none, whole (swap
  // file, then one move), so two writers making one at once end with one of the two (each
  // reads back the one there before signing).
  async _makeKeyFile(docText) {
    if (await this._readKeyText() !== null) return;
    await this._writeFile('', 'signing-key', [new TextEncoder().encode(docText)]);
  }
}

// ---- the folder a person picked, remembered in this origin (page and kernel worker) ---------
//
// A FileSystemDirectoryHandle is structured-cloneable: it is kept in this origin's IndexedDB
// (database "elastic-lite-folder", object store "folder"), where the page puts it after the
// picker and the kernel's worker reads it back. With it, per notebook (its key), whether the
// folder is that notebook's store. Permission: the page asks for it (requestPermission needs
// a click); a worker can only query it, and uses the folder only while it is granted.

const CHOICE_DB = 'elastic-lite-folder';
const CHOICE_STORE = 'folder';

function choiceDb() {
  return new Promise((resolve, reject) => {
    const req = globalThis.indexedDB.open(CHOICE_DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(CHOICE_STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function choiceOp(mode, fn) {
  const db = await choiceDb();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(CHOICE_STORE, mode);
      const req = fn(tx.objectStore(CHOICE_STORE));
      tx.oncomplete = () => resolve(req?.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

/** Remembers `handle` as this origin's checkpoint folder (null: forgets it). */
export function rememberFolder(handle) {
  return choiceOp('readwrite', (s) => (handle ? s.put(handle, 'handle') : s.delete('handle')));
}

/** The remembered folder's handle, or null. */
export async function rememberedFolder() {
  return (await choiceOp('readonly', (s) => s.get('handle'))) ?? null;
}

/** Whether notebook `key` keeps its checkpoints in the folder (true) or in the browser (false). */
export function setFolderDefault(key, on) {
  return choiceOp('readwrite', (s) => (on ? s.put(true, `notebook:${key}`) : s.delete(`notebook:${key}`)));
}

export async function folderIsDefault(key) {
  return (await choiceOp('readonly', (s) => s.get(`notebook:${key}`))) === true;
}

/** 'granted', 'prompt' or 'denied' for reading and writing the folder; `request` asks (a click). */
export async function folderPermission(handle, { request = false } = {}) {
  if (typeof handle.queryPermission !== 'function') return 'granted';
  const state = await handle.queryPermission({ mode: 'readwrite' });
  if (state !== 'prompt' || !request) return state;
  return handle.requestPermission({ mode: 'readwrite' });
}

/**
 * The store of notebook `key` when it is the folder: {store, folder, state} — store a
 * FolderStore when the folder is remembered, chosen for the notebook and permission is
 * granted; otherwise store null and state says why ('none', 'browser', 'prompt', 'denied').
 */
export async function folderStoreFor(key, options) {
  const handle = await rememberedFolder();
  if (!handle) return { store: null, folder: null, state: 'none' };
  if (!(await folderIsDefault(key))) return { store: null, folder: handle.name, state: 'browser' };
  const state = await folderPermission(handle);
  return { store: state === 'granted' ? new FolderStore(handle, options) : null, folder: handle.name, state };
}

/**
 * Copies every checkpoint of store `from` into store `to` (a backup: "Copy all checkpoints to
 * the folder"): records by key (those `to` holds already are not sent again), then the entry.
 * A checkpoint `from` vouches for (its signature valid there) is signed by `to` as its own;
 * any other stays foreign (unsigned). One whose records do not match their keys is not copied.
 * One listed lost (its data gone) is not copied either.
 * Returns {copied: [name], same: [name], damaged: [name], lost: [name]}.
 */
export async function copyCheckpoints(from, to) {
  const out = { copied: [], same: [], damaged: [], lost: [] };
  for (const { name, lost } of await from.list()) {
    if (lost) { out.lost.push(name); continue; } // its data is gone: nothing to copy
    const entry = await from.getEntry(name);
    if (!entry) continue;
    const there = await to.getEntry(name).catch(() => null);
    if (there && sameEntry(there, entry)) { out.same.push(name); continue; }
    const keys = entry.records.map((r) => r.key);
    const unique = [...new Set(keys)];
    const held = await to.hasRecords(unique);
    const send = unique.filter((_, i) => !held[i]);
    const bytes = send.length ? await from.readRecords(send) : [];
    if (bytes.damaged?.length) { out.damaged.push(name); continue; }
    if (bytes.length) await to.putRecords(bytes);
    const { generation, ...meta } = entry.meta; // the generation is the target store's own
    await to.commit(name, { head: entry.head, records: entry.records, tail: entry.tail, meta },
      { sign: entry.signature?.state === 'valid', retention: null });
    out.copied.push(name);
  }
  return out;
}

function sameEntry(a, b) {
  const bytesEqual = (x, y) => x.byteLength === y.byteLength && x.every((v, i) => v === y[i]);
  return a.size === b.size && bytesEqual(a.head, b.head) && bytesEqual(a.tail, b.tail) &&
    a.records.length === b.records.length && a.records.every((r, i) => r.key === b.records[i].key) &&
    a.meta?.createdMs === b.meta?.createdMs;
}
