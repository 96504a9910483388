// A FileSystemDirectoryHandle (File System Access API) over a real folder, for Node tests of
// FolderStore: the part of the API the store uses, behaving as Chromium's does — errors are
// DOMExceptions named NotFoundError / TypeMismatchError, a writable writes a swap file
// "<name>.crswap" and moves it over the file on close() (abort() drops it), files are made
// 0600 and folders 0700 (Chromium on Linux), getFile() is a snapshot (a Blob with size and
// lastModified).
import fs from 'node:fs/promises';
import { openAsBlob } from 'node:fs';
import path from 'node:path';

const notFound = (p) => new DOMException(`A requested file or directory could not be found: ${p}`, 'NotFoundError');
const mismatch = (p) => new DOMException(`The path supplied exists, but was not an entry of requested type: ${p}`, 'TypeMismatchError');

async function kindOf(p) {
  const st = await fs.lstat(p).catch((err) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
  return st && (st.isDirectory() ? 'directory' : 'file');
}

function checkName(name) {
  if (typeof name !== 'string' || !name || name === '.' || name === '..' || name.includes('/')) throw new TypeError(`Name is not allowed: ${name}`);
}

export class NodeFileHandle {
  constructor(file) { this.kind = 'file'; this.name = path.basename(file); this._path = file; }

  async getFile() {
    if (await kindOf(this._path) !== 'file') throw notFound(this._path);
    const st = await fs.stat(this._path);
    const blob = await openAsBlob(this._path);
    return Object.assign(blob, { name: this.name, lastModified: st.mtimeMs });
  }

  async createWritable({ keepExistingData = false } = {}) {
    const swap = `${this._path}.crswap`;
    if (keepExistingData) await fs.copyFile(this._path, swap); else await fs.writeFile(swap, new Uint8Array(0), { mode: 0o600 });
    const fh = await fs.open(swap, 'r+');
    let at = 0;
    return {
      async write(data) {
        const bytes = typeof data === 'string' ? Buffer.from(data) : data instanceof Blob ? new Uint8Array(await data.arrayBuffer()) : data;
        for (let done = 0; done < bytes.byteLength;) {
          const { bytesWritten } = await fh.write(bytes, done, bytes.byteLength - done, at);
          done += bytesWritten; at += bytesWritten;
        }
      },
      close: async () => { await fh.close(); await fs.rename(swap, this._path); },
      abort: async () => { await fh.close(); await fs.rm(swap, { force: true }); },
    };
  }
}

export class NodeDirectoryHandle {
  /** @param {string} dir an existing folder */
  constructor(dir, name = path.basename(dir)) { this.kind = 'directory'; this.name = name; this._path = dir; }

  async getDirectoryHandle(name, { create = false } = {}) {
    checkName(name);
    const p = path.join(this._path, name);
    const kind = await kindOf(p);
    if (kind === 'file') throw mismatch(p);
    if (!kind) {
      if (!create) throw notFound(p);
      await fs.mkdir(p, { mode: 0o700 }).catch((err) => { if (err.code !== 'EEXIST') throw err; });
    }
    return new NodeDirectoryHandle(p);
  }

  async getFileHandle(name, { create = false } = {}) {
    checkName(name);
    const p = path.join(this._path, name);
    const kind = await kindOf(p);
    if (kind === 'directory') throw mismatch(p);
    if (!kind) {
      if (!create) throw notFound(p);
      await fs.writeFile(p, new Uint8Array(0), { mode: 0o600, flag: 'wx' }).catch((err) => { if (err.code !== 'EEXIST') throw err; });
    }
    return new NodeFileHandle(p);
  }

  async removeEntry(name, { recursive = false } = {}) {
    checkName(name);
    const p = path.join(this._path, name);
    const kind = await kindOf(p);
    if (!kind) throw notFound(p);
    await fs.rm(p, { recursive });
  }

  async* keys() { for (const n of await fs.readdir(this._path)) yield n; }

  async* entries() {
    for (const n of await fs.readdir(this._path)) {
      const p = path.join(this._path, n);
      yield [n, (await kindOf(p)) === 'directory' ? new NodeDirectoryHandle(p) : new NodeFileHandle(p)];
    }
  }

  async* values() { for await (const [, h] of this.entries()) yield h; }
}
