// Helpers shared by MemoryStore and DirectoryStore. IndexedDBStore must stay a module without
// imports (it is also loaded from a Blob URL inside Pyodide), so the shared pieces live there
// and are re-exported here: every store accepts the same names and metadata.
import { checkName, plainMeta, toBytes, byNewest } from './indexeddb.mjs';

export { checkName, plainMeta, toBytes, byNewest };

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
