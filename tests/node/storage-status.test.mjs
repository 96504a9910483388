// The browser-storage line and the lost mark (js/shared/storage-status.mjs) against the golden
// vectors that tests/py/test_storage_status.py checks the Python copy (%checkpoints) against,
// and askPersistence(): asked once per page, again from a button, never throwing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { askPersistence, lostText, sizeText, storageLine, storageStatus } from '../../js/shared/storage-status.mjs';

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
