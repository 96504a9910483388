// Helpers shared by MemoryStore and DirectoryStore. IndexedDBStore keeps its own copies of
// plainMeta/toBytes/byNewest because it must stay a module without imports; the name rule is
// re-exported from it here, so every store accepts exactly the same names.
export { checkName } from './indexeddb.mjs';

/** Plain-data copy of a checkpoint's metadata, with size, createdMs and notebook filled in. */
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

/** Newest first; ties broken by name so the order is stable. */
export function byNewest(a, b) {
  return (b.meta.createdMs ?? 0) - (a.meta.createdMs ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/**
 * Names to delete so that, after `name` is saved with `meta`, at most keepLast checkpoints of
 * meta.notebook remain. The checkpoint just saved is always kept. Checkpoints without a
 * notebook are never deleted by retention (they were named by hand).
 */
export function expiredNames(entries, name, meta, keepLast) {
  if (keepLast == null || meta.notebook == null) return [];
  return entries.filter((e) => e.name !== name && e.meta.notebook === meta.notebook)
    .sort(byNewest).slice(keepLast - 1).map((e) => e.name);
}

export function checkKeepLast(keepLast) {
  if (keepLast != null && !(Number.isInteger(keepLast) && keepLast >= 1)) {
    throw new Error(`keepLast must be a whole number >= 1, not ${keepLast}.`);
  }
  return keepLast ?? null;
}
