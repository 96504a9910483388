// The browser-storage line and the lost mark (js/shared/storage-status.mjs) against the golden
// vectors that tests/py/test_storage_status.py checks the Python copy (%checkpoints) against,
// and askPersistence(): asked once per page, again from a button, never throwing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  askPersistence, canAskToKeep, declinedText, lostSummary, lostText, sizeText, storageLine, storageStatus,
  markSaved, storageRemoved, removedText,
} from '../../js/shared/storage-status.mjs';
import { IDBFactory } from 'fake-indexeddb';

const vectors = JSON.parse(fs.readFileSync(new URL('../vectors/storage-line.json', import.meta.url), 'utf8'));

test('storage line, sizes and the lost mark: the golden vectors', () => {
  for (const [n, text] of vectors.sizes) assert.equal(sizeText(n), text, String(n));
  for (const c of vectors.lines) assert.equal(storageLine(c.status), c.line, c.why);
  for (const c of vectors.lost) assert.equal(lostText(c.lost), c.text, JSON.stringify(c.lost));
});

test('storageStatus: what persisted() and estimate() say, null where the browser does not say', async () => {
  assert.equal(await storageStatus(null), null);
  assert.deepEqual(await storageStatus({ persisted: async () => true, estimate: async () => ({ usage: 5, quota: 9 }) }),
    { persistent: true, used: 5, quota: 9 });
  assert.deepEqual(await storageStatus({ persisted: async () => { throw new Error('denied'); } }),
    { persistent: null, used: null, quota: null });
});

test('askPersistence: once per page, again when asked from a button; a refusal or a failure is an answer, not an error', async () => {
  let calls = 0;
  const storage = { persist: async () => { calls += 1; return calls > 1; } };
  assert.equal(await askPersistence({ storage }), false);
  assert.equal(await askPersistence({ storage }), false, 'not asked a second time');
  assert.equal(calls, 1);
  assert.equal(await askPersistence({ storage, again: true }), true);
  assert.equal(await askPersistence({ storage: { persist: async () => { throw new Error('no gesture'); } }, again: true }), null);
  assert.equal(await askPersistence({ storage: {} }), null, 'no persist() (a worker)');
});

test('lostSummary: how many are lost and what removed them, the browser or a folder; canAskToKeep; declinedText', () => {
  const browser = { missing: 1, records: 2 };
  const folder = { missing: 2, records: 2, store: 'folder' };
  assert.equal(lostSummary([{ name: 'a' }]), '');
  assert.equal(lostSummary([{ name: 'a', lost: browser }, { name: 'b' }]),
    '1 checkpoint is lost: its data was removed by the browser (storage running low, days without a visit in Safari) ' +
    'or cleared. It cannot be restored; delete it.');
  assert.equal(lostSummary([{ lost: folder }, { lost: folder }]),
    '2 checkpoints are lost: their data was deleted from the folder (by hand, or by a sync or cleanup tool). ' +
    'They cannot be restored; delete them.');
  assert.match(lostSummary([{ lost: browser }, { lost: folder }]), /^2 checkpoints are lost: their data was removed by the browser .* or cleared, or deleted from the folder/);
  const storage = { persist: async () => true };
  assert.equal(canAskToKeep({ persistent: false }, storage), true);
  assert.equal(canAskToKeep({ persistent: true }, storage), false);
  assert.equal(canAskToKeep({ persistent: null }, storage), false, 'unknown: nothing to ask');
  assert.equal(canAskToKeep({ persistent: false }, {}), false, 'no persist() here');
  assert.equal(canAskToKeep(null, storage), false);
  assert.equal(declinedText(), '. The browser declined to keep it: keep copies with Export or in a folder.');
  assert.equal(declinedText('with Export'), '. The browser declined to keep it: keep copies with Export.');
});

/** localStorage as a page has it (strings by key). */
function fakeLocalStorage() {
  const m = new Map();
  return { getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, String(v)), removeItem: (k) => m.delete(k) };
}

test('storageRemoved: the whole IndexedDB removed (as eviction does) while localStorage stays is found and said once; nothing is claimed otherwise', async () => {
  const localStorage = fakeLocalStorage();
  let indexedDB = new IDBFactory();
  const check = () => storageRemoved({ indexedDB, localStorage, again: true });
  assert.equal(await check(), null, 'nothing saved yet');
  await markSaved({ indexedDB, localStorage, now: 1000 });
  assert.equal(await check(), null, 'the marks agree');
  await markSaved({ indexedDB, localStorage, now: 2000 });
  assert.equal(JSON.parse(localStorage.getItem('elastic-lite:saved-in-this-browser')).sinceMs, 1000, 'the first save\'s time is kept');
  indexedDB = new IDBFactory(); // the origin's databases removed, localStorage kept (Chromium's eviction)
  assert.deepEqual(await check(), { sinceMs: 1000 });
  assert.equal(await check(), null, 'said once');
  assert.match(removedText({ sinceMs: 1000 }), /^The checkpoints saved in this browser since .* are gone: the browser removed this site's storage .*, or it was cleared\. Keep copies outside the browser: Export, or save checkpoints to a folder\.$/);
  // saved again: a new mark; both gone (Safari, "clear site data"): nothing to say
  await markSaved({ indexedDB, localStorage, now: 3000 });
  assert.equal(await check(), null);
  assert.equal(await storageRemoved({ indexedDB: new IDBFactory(), localStorage: fakeLocalStorage(), again: true }), null);
  // no localStorage, or a failing one: null, never a throw
  assert.equal(await storageRemoved({ indexedDB, localStorage: undefined, again: true }), null);
  await markSaved({ indexedDB, localStorage: { getItem() { throw new Error('denied'); } } });
});
