// MemoryStore: checkpoints in a Map (tests, and the default when nothing persistent exists).
// Bytes are copied in and out so callers can never change a stored checkpoint by accident.
import { checkName, plainMeta, toBytes, byNewest, expiredNames, checkKeepLast } from './common.mjs';

export class MemoryStore {
  constructor({ keepLast } = {}) {
    this.keepLast = checkKeepLast(keepLast);
    this._entries = new Map();
  }

  async put(name, bytes, meta = {}) {
    checkName(name);
    const data = toBytes(bytes).slice();
    const m = plainMeta(meta, data.byteLength);
    for (const old of expiredNames(await this.list(), name, m, this.keepLast)) this._entries.delete(old);
    this._entries.set(name, { bytes: data, meta: m });
  }

  async get(name) {
    checkName(name);
    const e = this._entries.get(name);
    return e ? { bytes: e.bytes.slice(), meta: structuredClone(e.meta) } : null;
  }

  async list({ notebook } = {}) {
    return [...this._entries].map(([name, e]) => ({ name, meta: structuredClone(e.meta) }))
      .filter((e) => notebook == null || e.meta.notebook === notebook)
      .sort(byNewest);
  }

  async delete(name) {
    checkName(name);
    return this._entries.delete(name);
  }

  async close() {}
}
