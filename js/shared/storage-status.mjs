// The browser storage the checkpoints live in, as the sidebar and the demo show it: whether the
// browser keeps it (persistent) and how much is used and left, in one line, and the mark of a
// listed checkpoint whose data the browser removed. The same words as %checkpoints
// (py/elastic_lite/session/storage_status.py); tests/vectors/storage-line.json keeps the two in step.
//
// An origin's IndexedDB is best-effort storage unless the page was granted persistence: the
// browser may evict it whole when space runs low (Safari also after days without a visit).
// navigator.storage.persist() exists only in a page (not in the kernel's worker); browsers may
// grant it silently (Chromium, by their own heuristics) or ask the person (Firefox), and some
// want a user gesture: askPersistence() is called once the first checkpoint is saved, and
// again from a button.

/** {persistent, used, quota} as the page's browser says them (each null when it does not); null without navigator.storage. */
export async function storageStatus(storage = globalThis.navigator?.storage) {
  if (!storage) return null;
  const call = async (fn) => {
    try { return typeof storage[fn] === 'function' ? await storage[fn]() : null; } catch { return null; }
  };
  const [persisted, est] = await Promise.all([call('persisted'), call('estimate')]);
  const num = (v) => (Number.isFinite(v) ? v : null);
  return { persistent: typeof persisted === 'boolean' ? persisted : null, used: num(est?.usage), quota: num(est?.quota) };
}

/** The words of the button that asks the browser to keep the checkpoints (sidebar and demo). */
export const KEEP_LABEL = 'Keep checkpoints (ask the browser not to evict them)';
export const KEEP_TITLE = 'Ask the browser to keep this site\'s storage even when space runs low (navigator.storage.persist())';

/** Appended to the storage line once the browser declined (`copies`: where the page keeps copies). */
export function declinedText(copies = 'with Export or in a folder') {
  return `. The browser declined to keep it: keep copies ${copies}.`;
}

/** Whether the button is shown: the browser says the storage is not persistent and persist() can be asked. */
export function canAskToKeep(status, storage = globalThis.navigator?.storage) {
  return !!status && status.persistent === false && typeof storage?.persist === 'function';
}

let asked = null;

/**
 * Asks the browser to keep this origin's storage (navigator.storage.persist()) once per page
 * (`again`: from a button, a user gesture, ask anew); resolves to what it answered, null where
 * it cannot be asked. Never throws: persistence is best effort.
 */
export function askPersistence({ again = false, storage = globalThis.navigator?.storage } = {}) {
  if (!storage || typeof storage.persist !== 'function') return Promise.resolve(null);
  if (!asked || again) asked = storage.persist().then((v) => v === true, () => null);
  return asked;
}

/** '512 B', '3.4 MiB': binary units, one decimal rounded half up (the Python copy's rule). */
export function sizeText(n) {
  const bytes = Math.trunc(n);
  if (bytes < 1024) return `${bytes} B`;
  let unit = 1024; let name = 'KiB';
  for (const next of ['MiB', 'GiB', 'TiB']) {
    if (bytes < unit * 1024) break;
    unit *= 1024; name = next;
  }
  const tenths = Math.floor((bytes * 10 + Math.floor(unit / 2)) / unit);
  return `${Math.floor(tenths / 10)}.${tenths % 10} ${name}`;
}

const isSize = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** The one line about the storage (`status` as storageStatus() gives it); '' without one. */
export function storageLine(status) {
  if (!status) return '';
  const words = status.persistent === true ? 'persistent (the browser keeps checkpoints until you delete them)'
    : status.persistent === false ? 'not persistent (the browser may remove checkpoints when space runs low)'
      : 'persistence unknown';
  let line = `Browser storage: ${words}`;
  if (isSize(status.used) && isSize(status.quota)) {
    line += ` · ${sizeText(status.used)} used, ${sizeText(Math.max(0, status.quota - status.used))} left`;
  } else if (isSize(status.used)) {
    line += ` · ${sizeText(status.used)} used`;
  }
  return line;
}

/**
 * The mark of a listed checkpoint whose data is gone (`lost` as the store's list() gives it:
 * `store: 'folder'` when its record files are gone from a folder store); '' when it is not.
 */
export function lostText(lost) {
  if (!lost) return '';
  const how = lost.records ? ` (${lost.missing} of ${lost.records} records gone)` : '';
  return `lost: its data was removed ${lost.store === 'folder' ? 'from the folder' : 'by the browser'}${how}`;
}

/**
 * The sentence over the lost checkpoints among `entries` (each `lost` as list() gives it), or
 * '' when none is: how many, what removed them, that they cannot be restored.
 */
export function lostSummary(entries) {
  const lost = (entries ?? []).filter((e) => e && e.lost);
  if (!lost.length) return '';
  const folder = lost.filter((e) => e.lost.store === 'folder').length;
  const why = [
    ...(lost.length > folder ? ['removed by the browser (storage running low, days without a visit in Safari) or cleared'] : []),
    ...(folder ? ['deleted from the folder (by hand, or by a sync or cleanup tool)'] : []),
  ].join(', or ');
  return `${lost.length} checkpoint${lost.length === 1 ? ' is' : 's are'} lost: ${lost.length === 1 ? 'its' : 'their'} data was ${why}. ` +
    `${lost.length === 1 ? 'It cannot' : 'They cannot'} be restored; delete ${lost.length === 1 ? 'it' : 'them'}.`;
}

// ---- the whole store removed ----------------------------------------------------------------
//
// When the browser evicts an origin it removes all of its IndexedDB at once: the store's
// database is then simply empty, and nothing inside it can tell. localStorage is kept apart:
// Chromium and Firefox do not evict it under storage pressure (it has its own small limit), so a
// mark kept in both says what happened: once a checkpoint is saved in this browser, a small
// database holds an id and localStorage the same id with the time; a page that finds the id in
// localStorage but a fresh database knows the browser removed this site's storage (or someone
// cleared it) after that time. Where localStorage goes too (Safari's limit on script-writable
// storage, "clear site data") both marks are gone and nothing is claimed.

const MARK_KEY = 'elastic-lite:saved-in-this-browser';
const MARK_DB = 'elastic-lite-mark';

function markDb(idb) {
  return new Promise((resolve, reject) => {
    const req = idb.open(MARK_DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore('mark');
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

// The database's id (made now when `create` and there is none), or null.
async function dbMark(idb, create) {
  const db = await markDb(idb);
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction('mark', 'readwrite');
      const store = tx.objectStore('mark');
      let id = null;
      const get = store.get('id');
      get.onsuccess = () => {
        id = typeof get.result === 'string' ? get.result : null;
        if (id === null && create) store.put(id = globalThis.crypto.randomUUID(), 'id');
      };
      tx.oncomplete = () => resolve(id);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

function lsMark(ls) {
  try {
    const m = JSON.parse(ls.getItem(MARK_KEY) ?? 'null');
    return m && typeof m.id === 'string' && Number.isFinite(m.sinceMs) ? m : null;
  } catch {
    return null;
  }
}

let removedOnce = null;

/**
 * {sinceMs} when checkpoints were saved in this browser's storage (since that time) and this
 * site's IndexedDB has been removed since, else null. Checked once per page (`again`: anew);
 * the mark is then forgotten, so it is said in this page only. Never throws.
 */
export function storageRemoved({ indexedDB = globalThis.indexedDB, localStorage = globalThis.localStorage, again = false } = {}) {
  if (!removedOnce || again) {
    removedOnce = (async () => {
      const had = lsMark(localStorage);
      if (!had) return null;
      const id = await dbMark(indexedDB, false);
      if (id === had.id) return null;
      localStorage.removeItem(MARK_KEY);
      return id === null ? { sinceMs: had.sinceMs } : null; // another id: not ours to judge
    })().catch(() => null);
  }
  return removedOnce;
}

/** Remembers that this browser's storage holds checkpoints (after the page has looked for a removal). Never throws. */
export async function markSaved({ indexedDB = globalThis.indexedDB, localStorage = globalThis.localStorage, now = Date.now() } = {}) {
  try {
    await storageRemoved({ indexedDB, localStorage });
    const id = await dbMark(indexedDB, true);
    if (lsMark(localStorage)?.id !== id) localStorage.setItem(MARK_KEY, JSON.stringify({ id, sinceMs: now }));
  } catch { /* best effort: no localStorage here, or it is full */ }
}

/** What the page says when storageRemoved() found the store removed (`gone`: its answer). */
export function removedText(gone) {
  return `The checkpoints saved in this browser since ${new Date(gone.sinceMs).toLocaleString()} are gone: the browser ` +
    'removed this site\'s storage (browsers may when space runs low, Safari after days without a visit), or it was ' +
    'cleared. Keep copies outside the browser: Export, or save checkpoints to a folder.';
}
