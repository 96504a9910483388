// IndexedDBStore on fake-indexeddb (Node). The real IndexedDB is exercised in Chromium by the
// demo and extension tests. Each test gets its own IDBFactory, i.e. an empty "browser".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { IDBFactory, IDBObjectStore } from 'fake-indexeddb';
import { IndexedDBStore, SCHEMA_VERSION } from '../../js/store/indexeddb.mjs';
import { storeContract, payload } from './store-contract.mjs';

// Small chunks so that a few KB already spans several chunks.
const CHUNK = 1000;
storeContract('IndexedDBStore', (opts = {}) => new IndexedDBStore({ indexedDB: new IDBFactory(), chunkSize: CHUNK, ...opts }));

/** Every chunk key [name, seq] in the database, read behind the store's back. */
async function chunkKeys(idb, dbName = 'elastic-lite') {
  const db = await new Promise((resolve, reject) => {
    const r = idb.open(dbName);
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
  });
  try {
    return await new Promise((resolve, reject) => {
      const r = db.transaction('chunks').objectStore('chunks').getAllKeys();
      r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
    });
  } finally { db.close(); }
}

/**
 * Patches fake-indexeddb's put() for the duration of fn. `hook(store, value)` may throw (a
 * synchronous failure) or return a replacement request (an asynchronous one); returning
 * undefined lets the real put run.
 */
async function withPutHook(hook, fn) {
  const orig = IDBObjectStore.prototype.put;
  IDBObjectStore.prototype.put = function put(value, key) {
    const r = hook(this, value);
    return r === undefined ? orig.call(this, value, key) : r;
  };
  try { return await fn(); } finally { IDBObjectStore.prototype.put = orig; }
}

// An asynchronous request failure the way browsers report quota: the request fails with the
// DOMException, and (unless handled) the transaction aborts with it as tx.error.
function failingRequest(objectStore, err) {
  return objectStore.transaction._execRequestAsync({ operation: () => { throw err; }, source: objectStore });
}

// Sets globalThis.navigator (Node 20 has none; newer Node has one without storage) for one test.
function withNavigator(t, value) {
  const had = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  Object.defineProperty(globalThis, 'navigator', { value, configurable: true, writable: true });
  t.after(() => {
    if (had) Object.defineProperty(globalThis, 'navigator', had);
    else delete globalThis.navigator;
  });
}

test('schema: a fresh database is created at the current version with both object stores', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb });
  await store.list();
  const db = await store._open();
  assert.equal(db.version, SCHEMA_VERSION);
  assert.deepEqual([...db.objectStoreNames].sort(), ['checkpoints', 'chunks']);
  await store.close();
});

test('schema: a database from a newer elastic-lite is refused with a clear message', async () => {
  const idb = new IDBFactory();
  await new Promise((resolve) => { const r = idb.open('elastic-lite', SCHEMA_VERSION + 1); r.onsuccess = () => { r.result.close(); resolve(); }; });
  const store = new IndexedDBStore({ indexedDB: idb });
  await assert.rejects(store.list(), /written by a newer elastic-lite.*reload the page/);
});

test('a large payload is split into chunks of chunkSize', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  await store.put('big', payload(10 * CHUNK + 1, 3), {});
  assert.equal((await chunkKeys(idb)).length, 11);
  assert.deepEqual((await store.get('big')).bytes, payload(10 * CHUNK + 1, 3));
  await store.put('big', payload(2 * CHUNK, 4), {}); // overwrite drops the old chunks
  assert.equal((await chunkKeys(idb)).length, 2);
  await store.delete('big');
  assert.equal((await chunkKeys(idb)).length, 0);
  await store.close();
});

test('a view into a larger buffer stores only the viewed bytes', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const heap = payload(50_000, 5);
  await store.put('view', heap.subarray(100, 2600), {});
  const got = await store.get('view');
  assert.deepEqual(got.bytes, heap.slice(100, 2600));
  await store.close();
});

test('crash between chunk writes and metadata: old checkpoint whole, no orphan chunks', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const old = payload(3 * CHUNK, 1);
  await store.put('nb', old, { notebook: 'x', createdMs: 1 });

  // 1. the transaction is aborted just as the metadata is about to be written (a closed tab)
  let aborted = 0;
  await withPutHook((os) => {
    if (os.name === 'checkpoints') { aborted += 1; os.transaction.abort(); throw new DOMException('aborted', 'AbortError'); }
    return undefined;
  }, async () => {
    await assert.rejects(store.put('nb', payload(7 * CHUNK, 2), { notebook: 'x', createdMs: 2 }),
      /Saving checkpoint "nb" to IndexedDB failed.*previous checkpoint of that name, if any, is unchanged/);
  });
  assert.equal(aborted, 1);

  // 2. an exception in the middle of the chunk writes
  let n = 0;
  await withPutHook((os) => {
    if (os.name === 'chunks' && ++n === 4) throw new Error('simulated crash mid-write');
    return undefined;
  }, async () => {
    await assert.rejects(store.put('nb', payload(7 * CHUNK, 2), {}), /simulated crash mid-write/);
  });

  const got = await store.get('nb');
  assert.deepEqual(got.bytes, old);
  assert.equal(got.meta.createdMs, 1);
  const keys = await chunkKeys(idb);
  assert.deepEqual(keys, [['nb', 0], ['nb', 1], ['nb', 2]]);
  await store.close();
});

for (const mode of ['synchronous', 'asynchronous']) {
  test(`quota failure (${mode}): clear message with needed and free bytes, nothing lost`, async (t) => {
    const idb = new IDBFactory();
    const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
    const old = payload(2 * CHUNK, 1);
    await store.put('q', old, { notebook: 'x', createdMs: 1 });
    await store.put('other', payload(500, 2), { notebook: 'y', createdMs: 1 });

    // navigator.storage.estimate(), as browsers (page and worker) provide it.
    const estimate = { quota: 5000, usage: 3000 };
    withNavigator(t, { storage: { estimate: async () => estimate } });

    const budget = 4 * CHUNK; // bytes the "disk" accepts in one put
    let used = 0;
    await withPutHook((os, value) => {
      if (os.name !== 'chunks') return undefined;
      used += value.data.byteLength;
      if (used <= budget) return undefined;
      const err = new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      if (mode === 'synchronous') throw err;
      return failingRequest(os, err);
    }, async () => {
      const err = await store.put('q', payload(6 * CHUNK, 3), { notebook: 'x', createdMs: 2 }).then(() => null, (e) => e);
      assert.ok(err, 'put must fail');
      assert.equal(err.name, 'QuotaExceededError');
      assert.match(err.message, /Not enough browser storage to save checkpoint "q": it needs 6000 bytes/);
      assert.match(err.message, /about 2000 bytes \(2\.0 KiB\) free of a 5000 bytes \(4\.9 KiB\) quota/);
      assert.match(err.message, /Delete old checkpoints \(elastic-lite rm NAME/);
      assert.equal(err.needed, 6000);
      assert.equal(err.free, 2000);
      // An estimate that contradicts the refusal is not presented as free space.
      estimate.usage = 0; estimate.quota = 10 ** 10;
      const err2 = await store.put('q', payload(6 * CHUNK, 3), { notebook: 'x', createdMs: 2 }).then(() => null, (e) => e);
      assert.match(err2.message, /estimates about .* free .* but refused the write: its real limit for this site is lower/);
    });

    assert.deepEqual((await store.get('q')).bytes, old);
    assert.deepEqual((await store.get('other')).bytes, payload(500, 2));
    assert.equal((await chunkKeys(idb)).length, 3);
    await store.close();
  });
}

test('quota failure without navigator.storage says free space is unknown', async (t) => {
  const store = new IndexedDBStore({ indexedDB: new IDBFactory(), chunkSize: CHUNK });
  withNavigator(t, undefined);
  await withPutHook((os) => {
    if (os.name === 'chunks') throw new DOMException('full', 'QuotaExceededError');
    return undefined;
  }, async () => {
    await assert.rejects(store.put('q', payload(10, 1), {}), /needs 10 bytes, free space unknown/);
  });
  assert.equal(await store.get('q'), null);
  await store.close();
});

test('retention runs in the same transaction: a failed put expires nothing', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK, keepLast: 1 });
  await store.put('a1', payload(10, 1), { notebook: 'a', createdMs: 1 });
  await withPutHook((os) => {
    if (os.name === 'checkpoints') throw new DOMException('full', 'QuotaExceededError');
    return undefined;
  }, async () => {
    await assert.rejects(store.put('a2', payload(10, 2), { notebook: 'a', createdMs: 2 }), /Not enough browser storage/);
  });
  assert.deepEqual((await store.list()).map((e) => e.name), ['a1']);
  await store.put('a2', payload(10, 2), { notebook: 'a', createdMs: 2 });
  assert.deepEqual((await store.list()).map((e) => e.name), ['a2']);
  assert.deepEqual(await chunkKeys(idb), [['a2', 0]]);
  await store.close();
});

test('a corrupted entry (missing chunk, wrong size, bad record) is reported clearly', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  await store.put('c', payload(3 * CHUNK, 1), {});
  const db = await store._open();
  const tamper = (fn) => new Promise((resolve) => {
    const tx = db.transaction(['checkpoints', 'chunks'], 'readwrite');
    fn(tx.objectStore('checkpoints'), tx.objectStore('chunks'));
    tx.oncomplete = resolve;
  });

  await tamper((_m, chunks) => chunks.delete(['c', 1]));
  await assert.rejects(store.get('c'), /Checkpoint "c" in IndexedDB database "elastic-lite" is corrupted: expected 3 chunks, found 2.*elastic-lite rm "c"/);

  await tamper((_m, chunks) => chunks.put({ name: 'c', seq: 1, data: new Uint8Array(10) }));
  await assert.rejects(store.get('c'), /is corrupted: chunks hold 2010 bytes, the metadata says 3000/);

  await tamper((meta) => meta.put({ name: 'c', size: 'lots' }));
  await assert.rejects(store.get('c'), /is corrupted: its metadata record is malformed/);

  // The corrupted entry can still be deleted, and takes its chunks with it.
  assert.equal(await store.delete('c'), true);
  assert.deepEqual(await chunkKeys(idb), []);
  await store.close();
});

test('two stores on one database see each other and a reopened store sees the data', async () => {
  const idb = new IDBFactory();
  const a = new IndexedDBStore({ indexedDB: idb });
  const b = new IndexedDBStore({ indexedDB: idb });
  await a.put('shared', payload(20, 1), {});
  assert.deepEqual((await b.get('shared')).bytes, payload(20, 1));
  await a.close(); await b.close();
  const c = new IndexedDBStore({ indexedDB: idb });
  assert.equal((await c.list()).length, 1);
  await c.close();
});

test('no IndexedDB at all: a clear error', () => {
  assert.throws(() => new IndexedDBStore({ indexedDB: null }), /IndexedDB is not available here/);
});

test('the module is self-contained: it works loaded from a data: URL, as Python and the extension load it', async () => {
  const src = await fs.readFile(new URL('../../js/store/indexeddb.mjs', import.meta.url), 'utf8');
  assert.doesNotMatch(src, /^\s*import\s|\bimport\s*\(/m, 'no static or dynamic imports');
  const mod = await import(`data:text/javascript;base64,${Buffer.from(src).toString('base64')}`);
  const store = new mod.IndexedDBStore({ indexedDB: new IDBFactory() });
  await store.put('x', Uint8Array.from([1, 2, 3]), { notebook: 'n' });
  assert.deepEqual((await store.get('x')).bytes, Uint8Array.from([1, 2, 3]));
  await store.close();
});
