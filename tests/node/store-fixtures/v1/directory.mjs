// DirectoryStore: checkpoints as files in one directory (Node: the CLI, tests).
//
//   <dir>/<stem>.elc        the checkpoint container, byte for byte what the core wrote (so a
//                           file can be copied out, inspected or verified as it is)
//   <dir>/<stem>.meta.json  { name, size, sha256, mtimeMs, meta }  the store's metadata
//
// <stem> is the name percent-encoded (only A-Z a-z 0-9 _ - and non-leading dots stay as
// they are), so no name can reach outside <dir> and two names never share a file.
//
// Crash safety: every file is written to a temporary name (".tmp-<pid>-..."), fsynced, then
// renamed over the real name, and the directory is fsynced. The container's rename is the
// commit point: a crash before it leaves the previous checkpoint whole; a crash between it and
// the metadata rename leaves the NEW container whole with stale metadata, which is detected
// (size/mtime/sha256 recorded in the metadata no longer match) and replaced by metadata derived
// from the file. Temporary files of dead processes are removed the next time a store opens the
// directory.
import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { checkName, plainMeta, toBytes, byNewest, expiredNames, checkKeepLast } from './common.mjs';

const CONTAINER = '.elc';
const SIDECAR = '.meta.json';
const TMP_PREFIX = '.tmp-';
const MAX_STEM = 200; // file names are limited to 255 bytes; leave room for suffixes

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

function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (err) { return err.code === 'EPERM'; }
}

export class DirectoryStore {
  /**
   * @param {string} dir directory holding the checkpoints (created on first write)
   * @param {object} [options]
   * @param {number} [options.keepLast] keep only the newest N checkpoints per meta.notebook
   */
  constructor(dir, { keepLast } = {}) {
    if (typeof dir !== 'string' || dir === '') throw new Error('DirectoryStore needs a directory path.');
    this.dir = path.resolve(dir);
    this.keepLast = checkKeepLast(keepLast);
    this._swept = false;
  }

  _paths(name) {
    const stem = nameToStem(name);
    return { container: path.join(this.dir, stem + CONTAINER), sidecar: path.join(this.dir, stem + SIDECAR) };
  }

  async _readdir() {
    try {
      return await fs.readdir(this.dir);
    } catch (err) {
      if (err.code === 'ENOENT') return [];
      if (err.code === 'ENOTDIR') throw new Error(`Checkpoint store ${this.dir} is not a directory; pass --store DIR with a directory.`);
      throw err;
    }
  }

  /** Removes temporary files left behind by processes that died mid-write (once per store). */
  async _sweep() {
    if (this._swept) return;
    this._swept = true;
    for (const f of await this._readdir()) {
      const m = f.startsWith(TMP_PREFIX) && /^\.tmp-(\d+)-/.exec(f);
      if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]))) {
        await fs.rm(path.join(this.dir, f), { force: true });
      }
    }
  }

  // fsync of the directory makes the renames durable (Linux, macOS). Some platforms cannot
  // open or sync a directory; there the rename alone is the best available.
  async _syncDir() {
    let fh;
    try {
      fh = await fs.open(this.dir, 'r');
      await fh.sync();
    } catch (err) {
      if (!['EISDIR', 'EPERM', 'EINVAL', 'EBADF', 'EACCES'].includes(err.code)) throw err;
    } finally {
      await fh?.close();
    }
  }

  /** Writes data to a fresh temporary file in the store directory, fsynced; returns its path. */
  async _writeTemp(stem, suffix, data) {
    const tmp = path.join(this.dir, `${TMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}-${stem}${suffix}`);
    const fh = await fs.open(tmp, 'wx', 0o644);
    try {
      await fh.writeFile(data);
      await fh.sync();
      return { tmp, stat: await fh.stat() };
    } catch (err) {
      await fh.close().catch(() => {});
      await fs.rm(tmp, { force: true });
      throw err;
    } finally {
      await fh.close().catch(() => {}); // no-op when already closed above
    }
  }

  async put(name, bytes, meta = {}) {
    const { container, sidecar } = this._paths(name);
    const stem = path.basename(container, CONTAINER);
    const data = toBytes(bytes);
    const m = plainMeta(meta, data.byteLength);
    await fs.mkdir(this.dir, { recursive: true });
    await this._sweep();
    const expired = expiredNames(await this.list(), name, m, this.keepLast);
    const temps = [];
    try {
      const c = await this._writeTemp(stem, CONTAINER, data);
      temps.push(c.tmp);
      const side = {
        name, size: data.byteLength, mtimeMs: c.stat.mtimeMs,
        sha256: createHash('sha256').update(data).digest('hex'), meta: m,
      };
      const s = await this._writeTemp(stem, SIDECAR, JSON.stringify(side, null, 1) + '\n');
      temps.push(s.tmp);
      await fs.rename(c.tmp, container); // the commit point
      temps.shift();
      await fs.rename(s.tmp, sidecar);
      temps.shift();
      await this._syncDir();
    } catch (err) {
      await Promise.all(temps.map((t) => fs.rm(t, { force: true })));
      throw await this._writeError(name, data.byteLength, err);
    }
    for (const old of expired) await this.delete(old);
  }

  async _writeError(name, needed, err) {
    if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
      let free = null;
      try { const s = await fs.statfs(this.dir); free = s.bavail * s.bsize; } catch { /* best effort */ }
      const e = new Error(`Not enough disk space in ${this.dir} to save checkpoint "${name}": it needs ` +
        `${fmtBytes(needed)}, ${free == null ? 'free space unknown' : `${fmtBytes(free)} free`}. Delete old ` +
        `checkpoints (elastic-lite rm NAME) or free disk space, and try again. The previous checkpoint ` +
        `"${name}", if any, is unchanged.`);
      e.code = err.code; e.needed = needed; e.free = free;
      return e;
    }
    const e = new Error(`Saving checkpoint "${name}" in ${this.dir} failed (${err.message}); the previous ` +
      'checkpoint of that name, if any, is unchanged.');
    e.code = err.code; e.cause = err;
    return e;
  }

  /** Reads the metadata file; null when it is missing, unreadable or not ours. */
  async _readSidecar(file, name) {
    try {
      const s = JSON.parse(await fs.readFile(file, 'utf8'));
      if (s && s.name === name && Number.isSafeInteger(s.size) && typeof s.sha256 === 'string' &&
          s.meta && typeof s.meta === 'object') return s;
    } catch { /* missing or damaged metadata is replaced by metadata derived from the file */ }
    return null;
  }

  // Metadata for a container whose metadata file is missing or stale (e.g. a crash between
  // the two renames of put, or a file copied into the directory by hand).
  static _derivedMeta(stat) {
    return { notebook: null, createdMs: Math.round(stat.mtimeMs), size: stat.size, metadataMissing: true };
  }

  async get(name) {
    const { container, sidecar } = this._paths(name);
    let bytes;
    try {
      bytes = new Uint8Array(await fs.readFile(container));
    } catch (err) {
      if (err.code === 'ENOENT') return null;
      throw new Error(`Reading checkpoint "${name}" from ${container} failed: ${err.message}`);
    }
    const side = await this._readSidecar(sidecar, name);
    const ok = side && side.size === bytes.byteLength &&
      side.sha256 === createHash('sha256').update(bytes).digest('hex');
    const meta = ok ? { ...side.meta, size: bytes.byteLength }
      : DirectoryStore._derivedMeta({ ...(await fs.stat(container)), size: bytes.byteLength });
    return { bytes, meta };
  }

  async list({ notebook } = {}) {
    await this._sweep();
    const out = [];
    for (const f of await this._readdir()) {
      if (!f.endsWith(CONTAINER) || f.startsWith('.')) continue;
      const stem = f.slice(0, -CONTAINER.length);
      const name = stemToName(stem);
      if (name === null) continue;
      let st;
      try { st = await fs.stat(path.join(this.dir, f)); } catch { continue; } // deleted meanwhile
      if (!st.isFile()) continue;
      const side = await this._readSidecar(path.join(this.dir, stem + SIDECAR), name);
      // Cheap staleness check here (size + mtime); get() also compares the sha256.
      const fresh = side && side.size === st.size && side.mtimeMs === st.mtimeMs;
      const meta = fresh ? { ...side.meta, size: st.size } : DirectoryStore._derivedMeta(st);
      if (notebook == null || meta.notebook === notebook) out.push({ name, meta });
    }
    return out.sort(byNewest);
  }

  async delete(name) {
    const { container, sidecar } = this._paths(name);
    let existed = true;
    try {
      await fs.unlink(container); // first: without its container the checkpoint is gone
    } catch (err) {
      if (err.code !== 'ENOENT') throw new Error(`Deleting checkpoint "${name}" failed: ${err.message}`);
      existed = false;
    }
    await fs.rm(sidecar, { force: true });
    if (existed) await this._syncDir();
    return existed;
  }

  async close() {}
}
