// DirectoryStore: checkpoints as files in one directory (Node: the CLI, tests), in the layout
// of docs/STORE-LAYOUT.md. What the files mean (entries, records by key, the signed counter,
// retention, pins, the sweep) is written once, in layout.mjs (LayoutStore), for this store and
// for the browser's FolderStore (folder.mjs); this file says how Node's fs reads and writes
// them. The signing key is <dir>/signing-key (mode 0600) unless the option keyFile or
// $ELASTIC_LITE_KEY_FILE (relative: to the working directory) puts it elsewhere (e.g. a
// per-user file, so that a copy of the directory carries none).
//
// Nothing here reaches outside <dir> (nofollow.mjs): folders are 0700 and files 0600 whatever
// the umask; no link is followed (files are opened with O_NOFOLLOW and checked through the
// descriptor, created with O_EXCL, folders checked with lstat), and a link where the store's
// own file or folder belongs is refused ('unsafe'); the sweep and the .damaged markers touch
// only regular files inside the real records/. Records read are checked with nodeRecordKey.
//
// Crash safety: every file is written under a temporary name (".tmp-<pid>-..."), fsynced, then
// renamed, and its directory fsynced; a kill at any point leaves each checkpoint either as it
// was or as it was being saved. A record's pin is its mtime (lutimes). Temporary and lock files
// of dead processes are removed by the sweep.
import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { pieceBytes, storeError, KEY_LEAF_SIZE } from './common.mjs';
import { LayoutStore, nameToStem, stemToName, TMP_PREFIX, LIVE_CHUNK, randomHex } from './layout.mjs';
import { acquireLockFile, breakStale, readHolder, pidAlive } from './lockfile.mjs';
import {
  openRegular, readRegular, createExclusive, lstatOrNull, removeOwn, ensureFolder, checkFolder, unsafePath,
} from './nofollow.mjs';

export { nameToStem, stemToName };

const SUBDIRS = ['entries', 'records', 'locks'];

export class DirectoryStore extends LayoutStore {
  /**
   * @param {string} dir directory holding the checkpoints (created on first write)
   * @param {object} [options] retention / keepLast, lockTimeoutMs, orphanGraceMs as for
   *   IndexedDBStore; keyFile: the signing key's file (default: $ELASTIC_LITE_KEY_FILE, else
   *   <dir>/signing-key)
   */
  constructor(dir, options = {}) {
    if (typeof dir !== 'string' || dir === '') throw new Error('DirectoryStore needs a directory path.');
    super(path.resolve(dir), options);
    // A key file given by option or environment is relative to the working directory, never to
    // the store (a relative key path must not land inside the folder whose writers it guards).
    const given = options.keyFile || process.env.ELASTIC_LITE_KEY_FILE;
    this.keyFile = given ? path.resolve(given) : path.join(this.dir, 'signing-key');
  }

  // ---- the layout's file operations over node:fs (see layout.mjs) ---------------------------

  _abs(rel) { return path.join(this.dir, rel); }
  _show(rel) { return this._abs(rel); }
  _recordKeyOf(u8) { return nodeRecordKey(u8); }

  async _readFile(rel, what, utf8 = false) {
    const buf = await readRegular(this._abs(rel), what, utf8 ? 'utf8' : undefined);
    return buf === null || utf8 ? buf : asView(buf);
  }

  async _openFile(rel, what) {
    const opened = await openRegular(this._abs(rel), what);
    if (!opened) return null;
    const { fh, st } = opened;
    return {
      size: st.size,
      read: async (buf, offset, length, position) => (await fh.read(buf, offset, length, position)).bytesRead,
      close: () => fh.close(),
    };
  }

  async _stat(rel) {
    const st = await lstatOrNull(this._abs(rel));
    return st && { file: st.isFile(), size: st.size, mtimeMs: st.mtimeMs };
  }

  async _remove(rel) { await fs.rm(this._abs(rel), { force: true }); }
  async _removeOwn(rel) { await removeOwn(this._abs(rel)); }
  async _touch(rel, date) { await fs.lutimes(this._abs(rel), new Date(), date); }
  async _checkFolder(sub) { return checkFolder(this._abs(sub), 'The store folder'); }

  // Created without following a link, kept if it is already there as a regular file; a link or
  // anything else there is refused.
  async _createMarker(rel) {
    const marker = this._abs(rel);
    try {
      await (await createExclusive(marker)).close();
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const st = await fs.lstat(marker);
      if (!st.isFile()) throw unsafePath(marker, 'The damage marker', st.isSymbolicLink() ? 'a symbolic link' : 'not a regular file');
    }
  }

  _acquireLock(rel, options) { return acquireLockFile(this._abs(rel), options); }

  // The temporary files and locks of dead processes.
  async _sweepLeftovers() {
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
  }

  async _storageError(name, needed, err) {
    if (err.code !== 'ENOSPC' && err.code !== 'EDQUOT') return null;
    let free = null;
    try { const s = await fs.statfs(this.dir); free = s.bavail * s.bsize; } catch { /* best effort */ }
    return this._fullError(name, needed, err, free);
  }

  // ---- the signing key's file ---------------------------------------------------------------

  _keyShow() { return this.keyFile; }

  // The key file's text, null if there is none; opened once (never through a link), checked
  // through that descriptor (a regular file, this user's, nobody else may read it) and read
  // from it: no second look at the path that another file could be swapped in between.
  async _readKeyText() {
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

  // Written whole to a temporary file (0600) and hard-linked to its name: two processes making
  // one at once both end with the first.
  async _makeKeyFile(docText) {
    const keyDir = path.dirname(this.keyFile);
    if (keyDir === this.dir) await this._mkdirs(); else await ensureFolder(keyDir, 'The signing key\'s folder', { parents: true });
    const tmp = `${this.keyFile}${TMP_PREFIX}${process.pid}-${randomHex(6)}`;
    const fh = await createExclusive(tmp);
    try {
      await fh.writeFile(docText);
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

  // ---- folders and whole files --------------------------------------------------------------

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

  /** Writes `pieces` to a fresh fsynced temporary file in `sub`, renames it to `rel`. */
  async _writeFile(sub, rel, pieces) {
    const tmp = path.join(this.dir, sub, `${TMP_PREFIX}${process.pid}-${randomHex(6)}`);
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
      await fs.rename(tmp, this._abs(rel));
    } catch (err) {
      await fh.close().catch(() => {});
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }
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
