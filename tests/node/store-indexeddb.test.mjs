// IndexedDBStore on fake-indexeddb (Node). Real IndexedDB, Web Locks and quota are exercised
// in Chromium by tests/browser/store-indexeddb.test.mjs. Each test gets its own IDBFactory,
// i.e. an empty "browser".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { IDBFactory, IDBObjectStore, IDBDatabase } from 'fake-indexeddb';
import { IndexedDBStore, SCHEMA_VERSION } from '../../js/store/indexeddb.mjs';
import { IndexedDBStore as IndexedDBStoreV1 } from './store-fixtures/v1/indexeddb.mjs';
import { IndexedDBStore as IndexedDBStoreV2 } from './store-fixtures/v2/indexeddb.mjs';
import { storeContract, payload, formatTwo, expectedKey, assertWhole } from './store-contract.mjs';

// Small chunks so that a few KB already spans several chunks.
const CHUNK = 1000;
storeContract('IndexedDBStore', (opts = {}) => new IndexedDBStore({ indexedDB: new IDBFactory(), chunkSize: CHUNK, ...opts }));

function open(idb, dbName = 'elastic-lite') {
  return new Promise((resolve, reject) => {
    const r = idb.open(dbName);
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
  });
}

/** Every row of every object store, read behind the store's back. */
async function rawDump(idb, dbName = 'elastic-lite') {
  const db = await open(idb, dbName);
  try {
    const names = [...db.objectStoreNames];
    const tx = db.transaction(names);
    const out = {};
    await Promise.all(names.map((n) => new Promise((resolve) => {
      const r = tx.objectStore(n).getAll();
      r.onsuccess = () => { out[n] = r.result; resolve(); };
    })));
    return out;
  } finally { db.close(); }
}

/**
 * The bookkeeping is exact (schema v3): every body lists in `keys` each record it names once,
 * every record named has its row and all its chunks and nothing else, and a record no body
 * names is pinned (its row's pinnedMs, or the pins row): the sweep finds it. No row keeps the
 * count of schema v2.
 */
async function assertConsistent(idb) {
  const d = await rawDump(idb);
  const named = new Set();
  for (const row of d.checkpoints) {
    if (row.v !== 2) continue;
    const body = d.bodies.find((b) => b.name === row.name);
    assert.ok(body, `checkpoint "${row.name}" has its body`);
    const keys = [...new Set(body.records.map((r) => r.key))];
    assert.deepEqual([...body.keys].sort(), keys.sort(), `the body of "${row.name}" lists its record keys`);
    for (const k of keys) named.add(k);
  }
  assert.equal(d.bodies.length, d.checkpoints.filter((r) => r.v === 2).length, 'no body without its checkpoint');
  const rows = new Map(d.records.map((r) => [r.key, r]));
  const pins = d.settings.find((s) => s.id === 'pins')?.keys ?? {};
  for (const k of named) assert.ok(rows.has(k), `record ${k.slice(0, 8)} is stored`);
  for (const r of d.records) {
    assert.equal(r.refs, undefined, `record ${r.key.slice(0, 8)} has no count`);
    if (!named.has(r.key)) assert.ok(r.pinnedMs > 0 || r.key in pins, `record ${r.key.slice(0, 8)} is unused and not pinned`);
    const chunks = d.recordChunks.filter((c) => c.key === r.key).sort((a, b) => a.seq - b.seq);
    assert.deepEqual(chunks.map((c) => c.seq), [...Array(r.chunkCount).keys()], `record ${r.key.slice(0, 8)} has its chunks`);
    assert.equal(chunks.reduce((n, c) => n + c.data.byteLength, 0), r.length);
  }
  assert.deepEqual(d.recordChunks.filter((c) => !rows.has(c.key)), [], 'no chunk without its record');
  return d;
}

/** The record rows no body names (schema v3: what the sweep may free once unpinned). */
function unusedRows(d) {
  const named = new Set(d.bodies.flatMap((b) => b.records.map((r) => r.key)));
  return d.records.filter((r) => !named.has(r.key));
}

/**
 * Patches fake-indexeddb's put() and delete() for the duration of fn. `hook(store, value)` may
 * throw (a synchronous failure) or return a replacement request (an asynchronous one);
 * returning undefined lets the real call run.
 */
async function withWriteHook(hook, fn) {
  const put = IDBObjectStore.prototype.put;
  const del = IDBObjectStore.prototype.delete;
  IDBObjectStore.prototype.put = function hooked(value, key) {
    const r = hook(this, value);
    return r === undefined ? put.call(this, value, key) : r;
  };
  IDBObjectStore.prototype.delete = function hooked(key) {
    const r = hook(this, undefined);
    return r === undefined ? del.call(this, key) : r;
  };
  try { return await fn(); } finally {
    IDBObjectStore.prototype.put = put;
    IDBObjectStore.prototype.delete = del;
  }
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

test('schema: a fresh database is created at the current version with its object stores', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb });
  await store.list();
  const db = await store._open();
  assert.equal(db.version, SCHEMA_VERSION);
  assert.deepEqual([...db.objectStoreNames].sort(), ['bodies', 'checkpoints', 'chunks', 'recordChunks', 'records', 'settings']);
  await store.close();
});

test('schema: a database from a newer elastic-lite is refused with a clear message', async () => {
  const idb = new IDBFactory();
  await new Promise((resolve) => { const r = idb.open('elastic-lite', SCHEMA_VERSION + 1); r.onsuccess = () => { r.result.close(); resolve(); }; });
  const store = new IndexedDBStore({ indexedDB: idb });
  await assert.rejects(store.list(), /written by a newer elastic-lite.*reload the page/);
});

test('upgrade: checkpoints saved with schema v1 are converted, byte for byte, metadata and all', async () => {
  const idb = new IDBFactory();
  const v1 = new IndexedDBStoreV1({ indexedDB: idb, chunkSize: CHUNK });
  const saved = {
    'big one': [payload(5 * CHUNK + 7, 1), { notebook: 'a.ipynb', createdMs: 10, names: ['x', 'y'], variables: 2 }],
    small: [payload(10, 2), { notebook: 'a.ipynb', createdMs: 20 }],
    'no notebook': [payload(0, 3), { createdMs: 30 }],
    twin: [payload(10, 2), { notebook: 'b.ipynb', createdMs: 40 }], // same bytes as "small"
  };
  for (const [name, [bytes, meta]] of Object.entries(saved)) await v1.put(name, bytes, meta);
  const listedBefore = await v1.list();
  await v1.close();

  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  assert.deepEqual(await store.list(), listedBefore, 'the same list, same metadata');
  for (const [name, [bytes, meta]] of Object.entries(saved)) {
    const got = await store.get(name);
    assert.deepEqual(got.bytes, bytes, name);
    assert.equal(got.meta.notebook, meta.notebook ?? null);
    assert.deepEqual((await store.getEntry(name)).records.map((r) => r.key), bytes.byteLength ? [expectedKey(bytes)] : []);
  }
  const d = await assertConsistent(idb);
  assert.deepEqual(d.chunks, [], 'the v1 chunks are gone');
  assert.equal(d.records.length, 2, '"small" and "twin" share one record; the empty one has none');
  assert.deepEqual(await store.list({ notebook: 'a.ipynb' }), listedBefore.filter((e) => e.meta.notebook === 'a.ipynb'));
  assert.equal(await store.delete('small'), true);
  assert.deepEqual((await store.get('twin')).bytes, payload(10, 2));
  await store.close();
});

test('upgrade: a schema-v2 store (counts in record rows) opens as v3, every checkpoint byte for byte, ' +
  'signatures valid, shared records kept, an unused record swept once its pin expires', async () => {
  const idb = new IDBFactory();
  const v2 = new IndexedDBStoreV2({ indexedDB: idb, chunkSize: CHUNK });
  const shared = payload(2500, 1);
  const a = formatTwo([shared, payload(300, 2)], { seed: 1 });
  const b = formatTwo([shared, payload(400, 3)], { seed: 2 });
  await v2.put('a', a.bytes, { notebook: 'n.ipynb', createdMs: 1 }, { sign: true });
  await v2.put('b', b.bytes, { createdMs: 2 });
  // a point: one record written beside the ones of "a", committed signed
  const ea = await v2.getEntry('a');
  const [fresh] = await v2.putRecords([payload(500, 4)]);
  await v2.commit('p', { head: ea.head, tail: ea.tail, records: [...ea.records, { key: fresh, length: 500 }], meta: { createdMs: 3 } });
  const [orphan] = await v2.putRecords([payload(600, 5)]); // a writer that died before its commit
  const before = await v2.list();
  const bytes = {};
  for (const e of before) bytes[e.name] = (await v2.get(e.name)).bytes;
  await v2.close();
  assert.ok((await rawDump(idb)).records.every((r) => Number.isInteger(r.refs)), 'the v2 rows have counts');

  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  assert.deepEqual(await store.list(), before, 'the same list, same metadata');
  for (const e of before) {
    const got = await store.get(e.name);
    assert.deepEqual(got.bytes, bytes[e.name], e.name);
    assert.equal((await store.getEntry(e.name)).signature.state, e.name === 'b' ? 'unsigned' : 'valid', e.name);
  }
  const db = await store._open();
  assert.equal(db.version, SCHEMA_VERSION);
  assert.deepEqual([...db.transaction(['bodies']).objectStore('bodies').indexNames], ['keys']);
  assert.deepEqual([...db.transaction(['records']).objectStore('records').indexNames], ['pinned']);
  const d = await assertConsistent(idb);
  assert.ok(d.records.some((r) => r.key === orphan), 'the unused record waits for its pin to expire');
  // deleting frees what no other checkpoint names, and only that
  await store.delete('b');
  assert.deepEqual((await store.get('a')).bytes, bytes.a, '"a" keeps the record it shared with "b"');
  await store.delete('p');
  await assertConsistent(idb);
  await store.close();
  const later = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK, orphanGraceMs: 0 });
  await later.sweep();
  assert.deepEqual((await rawDump(idb)).records.map((r) => r.key).sort(), ea.records.map((r) => r.key).sort(),
    'left: the records of "a"; the unused one swept');
  await later.delete('a');
  assert.equal((await later.stats()).records, 0);
  await later.close();
});

test('upgrade: a conversion that fails part-way leaves the v1 checkpoint readable, and is finished later', async () => {
  const idb = new IDBFactory();
  const v1 = new IndexedDBStoreV1({ indexedDB: idb, chunkSize: CHUNK });
  await v1.put('first', payload(3 * CHUNK, 1), { createdMs: 1 });
  await v1.put('second', payload(2 * CHUNK, 2), { createdMs: 2 });
  await v1.put('damaged', payload(2 * CHUNK, 3), { createdMs: 3 });
  await v1.close();
  // A v1 checkpoint that lost a chunk cannot be converted; it stays as it is.
  const db = await open(idb);
  await new Promise((resolve) => { const tx = db.transaction('chunks', 'readwrite'); tx.objectStore('chunks').delete(['damaged', 1]); tx.oncomplete = resolve; });
  db.close();

  // The quota runs out while "second" is being converted.
  let failed = 0;
  await withWriteHook((os, value) => {
    if (os.name === 'recordChunks' && value && value.key === expectedKey(payload(2 * CHUNK, 2))) {
      failed += 1;
      throw new DOMException('full', 'QuotaExceededError');
    }
    return undefined;
  }, async () => {
    const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
    assert.deepEqual((await store.list()).map((e) => e.name), ['damaged', 'second', 'first']);
    assert.deepEqual((await store.get('second')).bytes, payload(2 * CHUNK, 2), 'read the v1 way meanwhile');
    assert.deepEqual((await store.getEntry('second')).tail, payload(2 * CHUNK, 2));
    await store.close();
  });
  assert.ok(failed >= 1);
  let d = await rawDump(idb);
  assert.deepEqual(d.checkpoints.map((r) => [r.name, r.v ?? 1]).sort(), [['damaged', 1], ['first', 2], ['second', 1]]);

  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  assert.deepEqual((await store.get('second')).bytes, payload(2 * CHUNK, 2));
  await assert.rejects(store.get('damaged'), /Checkpoint "damaged" .* is corrupted: it was saved by an older elastic-lite and some of its data is missing/);
  d = await assertConsistent(idb);
  assert.deepEqual(d.checkpoints.map((r) => [r.name, r.v ?? 1]).sort(), [['damaged', 1], ['first', 2], ['second', 2]]);
  assert.equal(await store.delete('damaged'), true);
  assert.deepEqual((await rawDump(idb)).chunks, []);
  await store.close();
});

test('chunks: a record is stored in chunks of chunkSize; a view stores only what it shows', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  await store.put('big', payload(10 * CHUNK + 1, 3), {});
  assert.equal((await rawDump(idb)).recordChunks.length, 11);
  assert.deepEqual((await store.get('big')).bytes, payload(10 * CHUNK + 1, 3));
  await store.put('big', payload(2 * CHUNK, 4), {}); // overwrite frees the old record
  assert.equal((await rawDump(idb)).recordChunks.length, 2);
  const heap = payload(50_000, 5);
  await store.put('view', heap.subarray(100, 2600), {});
  assert.deepEqual((await store.get('view')).bytes, heap.slice(100, 2600));
  const d = await rawDump(idb);
  assert.ok(d.recordChunks.every((c) => c.data.buffer.byteLength <= CHUNK), 'no chunk drags a whole buffer along');
  await store.delete('big'); await store.delete('view');
  assert.equal((await rawDump(idb)).recordChunks.length, 0);
  await store.close();
});

test('pieces of chunk size that own their buffers are stored as they are: no copy inside the store', async () => {
  const store = new IndexedDBStore({ indexedDB: new IDBFactory(), chunkSize: CHUNK });
  const pieces = [payload(CHUNK, 1), payload(CHUNK, 2), payload(300, 3)]; // as JsStore sends them
  const stored = [];
  await withWriteHook((os, value) => { if (os.name === 'recordChunks' && value) stored.push(value.data); return undefined; },
    () => store.putRecords([pieces]));
  assert.equal(stored.length, 3);
  stored.forEach((data, i) => assert.equal(data.buffer, pieces[i].buffer, `chunk ${i} is the caller's memory itself`));
  // A view into a larger buffer must be copied (structured clone would store the whole buffer).
  const heap = payload(5 * CHUNK, 4);
  stored.length = 0;
  await withWriteHook((os, value) => { if (os.name === 'recordChunks' && value) stored.push(value.data); return undefined; },
    () => store.putRecords([heap.subarray(10, 10 + CHUNK)]));
  assert.equal(stored.length, 1);
  assert.notEqual(stored[0].buffer, heap.buffer);
  assert.equal(stored[0].buffer.byteLength, CHUNK);
  await store.close();
});

// ---- failures at every write ------------------------------------------------------------------

const S = payload(2500, 1);
const V = {
  nb1: formatTwo([S, payload(300, 2)], { seed: 1 }).bytes,
  nb2: formatTwo([S, payload(1400, 3)], { seed: 2 }).bytes,
  other: formatTwo([S, payload(500, 4)], { seed: 3 }).bytes,
  x: formatTwo([payload(1600, 5)], { seed: 4 }).bytes,
};
const STREAMED = formatTwo([S, payload(2700, 7)], { seed: 5 });
const VERSIONS = { nb: [V.nb1, V.nb2], s: [STREAMED.bytes], other: [V.other], x: [V.x] };

// Overwrite, a streamed write (two putRecords batches, then commit), a put that expires the
// oldest checkpoint of its notebook (keepLast 2), a delete.
async function scenario(store) {
  await store.put('nb', V.nb2, { notebook: 'n', createdMs: 5 });
  const lock = await store.lock('s');
  try {
    const [r0, r1] = STREAMED.records;
    const keys = await store.putRecords([r0]);
    keys.push(...(await store.putRecords([[r1.subarray(0, 1000), r1.subarray(1000)]])));
    await store.commit('s', {
      head: STREAMED.bytes.subarray(0, 64), tail: STREAMED.bytes.subarray(64 + r0.byteLength + r1.byteLength),
      records: keys.map((key, i) => ({ key, length: STREAMED.records[i].byteLength })), meta: { notebook: 'n', createdMs: 6 },
    });
  } finally { lock.release(); }
  await store.put('x', V.x, { notebook: 'n', createdMs: 7 });
  await store.delete('other');
}

async function seeded() {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK, keepLast: 2 });
  await store.put('nb', V.nb1, { notebook: 'n', createdMs: 1 });
  await store.put('other', V.other, { createdMs: 2 });
  return { idb, store };
}

for (const mode of ['quota, synchronous', 'quota, asynchronous', 'transaction aborted']) {
  test(`a failure at every write (${mode}) leaves every listed checkpoint whole and the counts exact`, async () => {
    let failAt = 1;
    for (;; failAt += 1) {
      const { idb, store } = await seeded();
      let writes = 0;
      let failure = null;
      await withWriteHook((os) => {
        writes += 1;
        if (writes !== failAt) return undefined;
        if (mode === 'transaction aborted') { os.transaction.abort(); throw new DOMException('aborted', 'AbortError'); }
        const err = new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        if (mode === 'quota, synchronous') throw err;
        return failingRequest(os, err);
      }, async () => { failure = await scenario(store).then(() => null, (e) => e); });
      await store.close();
      const after = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK, orphanGraceMs: 0 });
      const names = await assertWhole(after, VERSIONS);
      await assertConsistent(idb);
      await after.sweep();
      const d = await assertConsistent(idb);
      assert.deepEqual(unusedRows(d), [], `write ${failAt}: nothing left unused after the sweep`);
      await after.close();
      if (!failure) {
        assert.deepEqual(names, ['s', 'x']);
        break;
      }
      if (mode !== 'transaction aborted') {
        assert.match(failure.message, /^Not enough browser storage to save|^Deleting checkpoint "other" failed \(.*\); it is still stored, unchanged\./, `write ${failAt}`);
      }
    }
    assert.ok(failAt > 30, `${failAt - 1} writes, each one failed once`);
  });
}

test('quota: a clear message with needed and free bytes, nothing lost', async (t) => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const old = payload(2 * CHUNK, 1);
  await store.put('q', old, { notebook: 'x', createdMs: 1 });
  await store.put('other', payload(500, 2), { notebook: 'y', createdMs: 1 });
  const estimate = { quota: 5000, usage: 3000 }; // navigator.storage.estimate(), as browsers give it
  withNavigator(t, { storage: { estimate: async () => estimate } });
  let used = 0;
  await withWriteHook((os, value) => {
    if (os.name !== 'recordChunks' || !value) return undefined;
    used += value.data.byteLength;
    return used <= 4 * CHUNK ? undefined : failingRequest(os, new DOMException('The quota has been exceeded.', 'QuotaExceededError'));
  }, async () => {
    const err = await store.put('q', payload(6 * CHUNK, 3), { notebook: 'x', createdMs: 2 }).then(() => null, (e) => e);
    assert.ok(err, 'put must fail');
    assert.equal(err.name, 'QuotaExceededError');
    assert.equal(err.code, 'quota');
    assert.match(err.message, /Not enough browser storage to save checkpoint "q": it needs 6000 bytes/);
    assert.match(err.message, /about 2000 bytes \(2\.0 KiB\) free of a 5000 bytes \(4\.9 KiB\) quota/);
    assert.match(err.message, /Delete old checkpoints \(elastic-lite rm NAME.*The previous checkpoint "q", if any, is unchanged/);
    assert.match(err.message, /save checkpoints to a folder on disk instead \("Save checkpoints to a folder…"/);
    assert.equal(err.needed, 6000);
    assert.equal(err.free, 2000);
    // An estimate that contradicts the refusal is not presented as free space.
    estimate.usage = 0; estimate.quota = 10 ** 10;
    used = 0;
    const err2 = await store.put('q', payload(6 * CHUNK, 3), { notebook: 'x', createdMs: 2 }).then(() => null, (e) => e);
    assert.match(err2.message, /estimates about .* free .* but refused the write: its real limit for this site is lower/);
  });
  withNavigator(t, undefined);
  await withWriteHook((os) => (os.name === 'recordChunks' ? failingRequest(os, new DOMException('full', 'QuotaExceededError')) : undefined),
    async () => { await assert.rejects(store.put('q2', payload(10, 1), {}), /needs 10 bytes, free space unknown/); });
  assert.deepEqual((await store.get('q')).bytes, old);
  assert.deepEqual((await store.get('other')).bytes, payload(500, 2));
  assert.equal(await store.get('q2'), null);
  await assertConsistent(idb);
  await store.close();
});

test('a corrupted checkpoint (missing chunk, wrong size, missing record, bad row) is reported clearly', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const bytes = payload(3 * CHUNK, 1);
  await store.put('c', bytes, {});
  const key = expectedKey(bytes);
  const db = await store._open();
  const tamper = (fn) => new Promise((resolve) => {
    const tx = db.transaction(['checkpoints', 'records', 'recordChunks'], 'readwrite');
    fn(tx.objectStore('checkpoints'), tx.objectStore('records'), tx.objectStore('recordChunks'));
    tx.oncomplete = resolve;
  });
  // a chunk or a record gone is a lost checkpoint (removed behind the store's back), not damage
  await tamper((_c, _r, chunks) => chunks.delete([key, 1]));
  await assert.rejects(store.get('c'), (e) => e.code === 'lost' && /^Checkpoint "c" is lost: 1 of its 1 records are no longer/.test(e.message));
  await tamper((_c, _r, chunks) => chunks.put({ key, seq: 1, data: new Uint8Array(10) }));
  await assert.rejects(store.get('c'), /Checkpoint "c" in IndexedDB database "elastic-lite" is corrupted: record .* chunk 1 holds 10 bytes instead of 1000/);
  await tamper((_c, records) => records.delete(key));
  await assert.rejects(store.get('c'), (e) => e.code === 'lost' && /removed by the browser or cleared/.test(e.message));
  await tamper((rows) => rows.put({ name: 'c', v: 2, size: 'lots' }));
  await assert.rejects(store.get('c'), (e) => e.code === 'corrupted' && /its metadata record is malformed/.test(e.message));
  // The corrupted checkpoint can still be deleted, and what is left of it is swept.
  assert.equal(await store.delete('c'), true);
  await store.close();
  const after = new IndexedDBStore({ indexedDB: idb, orphanGraceMs: 0 });
  await after.sweep();
  const d = await rawDump(idb);
  assert.deepEqual([d.checkpoints, d.bodies, d.records], [[], [], []]);
  await after.close();
});

test('lost checkpoints: records removed behind the store\'s back are named in list, get and readRecords', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const a = formatTwo([payload(2500, 1), payload(700, 2)]).bytes;
  const b = formatTwo([payload(900, 3)]).bytes;
  await store.put('a', a, { notebook: 'n', createdMs: 2 });
  await store.put('b', b, { notebook: 'n', createdMs: 1 });
  await store.put('c', payload(300, 4), { notebook: 'm', createdMs: 3 });
  assert.deepEqual((await store.list()).map((e) => [e.name, 'lost' in e]), [['c', false], ['a', false], ['b', false]]);
  const db = await store._open();
  const tamper = (names, fn) => new Promise((resolve) => {
    const tx = db.transaction(names, 'readwrite');
    fn(...names.map((n) => tx.objectStore(n)));
    tx.oncomplete = resolve;
  });
  const entryA = await store.getEntry('a');
  // one chunk of one record of "a" gone (records are chunked by 1000 bytes)
  const big = entryA.records.find((r) => r.length > CHUNK);
  await tamper(['recordChunks'], (chunks) => chunks.delete([big.key, 2]));
  let listed = await store.list({ notebook: 'n' });
  assert.deepEqual(listed.map((e) => [e.name, e.lost ?? null]), [['a', { missing: 1, records: 2 }], ['b', null]]);
  const err = await store.get('a').then(() => null, (e) => e);
  assert.equal(err?.code, 'lost', String(err));
  assert.match(err.message, /^Checkpoint "a" is lost: 1 of its 2 records are no longer in this browser's storage \(IndexedDB database "elastic-lite"\); they were removed by the browser or cleared/);
  assert.match(err.message, /Delete it .*Export, or a folder store/);
  assert.doesNotMatch(err.message, /damaged|corrupted/);
  // getEntry() gives the entry (no record is read); reading the record says it is gone
  assert.equal((await store.getEntry('a')).records.length, 2);
  const chunkErr = await store.readRecords([big.key]).then(() => null, (e) => e);
  assert.equal(chunkErr?.code, 'missing-record', String(chunkErr));
  assert.match(chunkErr.message, /removed by the browser or cleared/);
  // the streamed restore's read (chunks as stored) says the same, not "damaged"
  const streamErr = await store.readRecordChunks([big.key]).then(() => null, (e) => e);
  assert.equal(streamErr?.code, 'missing-record', String(streamErr));
  assert.match(streamErr.message, /removed by the browser or cleared/);
  // the whole "records" object store emptied (as clearing it from the developer tools does)
  await tamper(['records'], (records) => records.clear());
  listed = await store.list();
  assert.deepEqual(listed.map((e) => [e.name, e.lost ?? null]),
    [['c', { missing: 1, records: 1 }], ['a', { missing: 2, records: 2 }], ['b', { missing: 1, records: 1 }]]);
  const readErr = await store.readRecords([entryA.records[0].key]).then(() => null, (e) => e);
  assert.equal(readErr.code, 'missing-record');
  assert.match(readErr.message, /removed by the browser or cleared/);
  const streamRowErr = await store.readRecordChunks([entryA.records[0].key]).then(() => null, (e) => e);
  assert.equal(streamRowErr?.code, 'missing-record');
  assert.match(streamRowErr.message, /removed by the browser or cleared/);
  // its list of records itself gone
  await tamper(['bodies'], (bodies) => bodies.delete('b'));
  assert.deepEqual((await store.list({ notebook: 'n' })).find((e) => e.name === 'b').lost, { missing: null, records: null });
  await assert.rejects(store.getEntry('b'), (e) => e.code === 'lost' && /^Checkpoint "b" is lost: its data is no longer/.test(e.message));
  // a record whose chunks are gone (its row left) is not "stored": the next save writes it again
  const c = formatTwo([payload(2200, 5)]).bytes;
  await store.put('d', c, { notebook: 'm', createdMs: 4 });
  const [dKey] = (await store.getEntry('d')).records.map((r) => r.key);
  await tamper(['recordChunks'], (chunks) => chunks.delete([dKey, 1]));
  assert.deepEqual(await store.hasRecords([dKey]), [false]);
  await store.put('d2', c, { notebook: 'm', createdMs: 5 });
  assert.deepEqual(await store.hasRecords([dKey]), [true]);
  assert.deepEqual((await store.get('d')).bytes, c, 'the rewrite repaired the lost one too');
  assert.equal(await store.delete('d') && await store.delete('d2'), true);
  // many entries and records (read in bulk: all bodies, record rows and chunk keys at once)
  const many = Array.from({ length: 17 }, (_, i) => formatTwo([payload(1500, 10 + i)]).bytes);
  for (const [i, bytes] of many.entries()) await store.put(`many${i}`, bytes, { notebook: 'bulk', createdMs: 100 + i });
  const [k3] = (await store.getEntry('many3')).records.map((r) => r.key);
  const [k5] = (await store.getEntry('many5')).records.map((r) => r.key);
  await tamper(['records', 'recordChunks'], (records, chunks) => { records.delete(k3); chunks.delete([k5, 1]); });
  assert.deepEqual((await store.list({ notebook: 'bulk' })).filter((e) => e.lost).map((e) => [e.name, e.lost]),
    [['many5', { missing: 1, records: 1 }], ['many3', { missing: 1, records: 1 }]]);
  for (let i = 0; i < many.length; i += 1) await store.delete(`many${i}`);
  // lost checkpoints are deleted like any other, and nothing of them is left
  for (const name of ['a', 'b', 'c']) assert.equal(await store.delete(name), true);
  assert.deepEqual(await store.list(), []);
  await store.close();
});

test('readRecordInto: ranges of a record read into given memory across chunks, checked, damage and loss said plainly', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const rec = payload(3500, 9);
  const [key] = await store.putRecords([rec]);
  // a live view (as Python hands its memory over) and a plain array, across chunk borders
  const a = new Uint8Array(1200); const b = new Uint8Array(2300);
  const live = { byteLength: a.byteLength, view: () => a };
  assert.equal(await store.readRecordInto(key, [{ at: 0, view: live }, { at: 1200, view: b }]), true);
  assert.deepEqual([...a, ...b], [...rec]);
  // unchecked: any ranges
  const mid = new Uint8Array(10);
  assert.equal(await store.readRecordInto(key, [{ at: 995, view: mid }], { check: false }), true);
  assert.deepEqual(mid, rec.subarray(995, 1005));
  // checked ranges must cover the record in order; ranges outside it are refused
  await assert.rejects(store.readRecordInto(key, [{ at: 0, view: a }]), /must cover the record in order/);
  await assert.rejects(store.readRecordInto(key, [{ at: 3495, view: mid }], { check: false }), /lies outside record/);
  // one byte changed inside the store: false, and the record is marked (written again next time)
  const db = await store._open();
  const tamper = (fn) => new Promise((resolve) => {
    const tx = db.transaction(['recordChunks'], 'readwrite');
    fn(tx.objectStore('recordChunks'));
    tx.oncomplete = resolve;
  });
  await tamper((chunks) => { const g = chunks.get([key, 2]); g.onsuccess = () => { g.result.data[3] ^= 1; chunks.put(g.result); }; });
  assert.equal(await store.readRecordInto(key, [{ at: 0, view: new Uint8Array(3500) }]), false);
  assert.deepEqual(await store.hasRecords([key]), [false]);
  // a chunk gone, or the record: 'missing-record', as the other reads say it
  await tamper((chunks) => chunks.delete([key, 1]));
  const gone = await store.readRecordInto(key, [{ at: 0, view: new Uint8Array(3500) }]).then(() => null, (e) => e);
  assert.equal(gone?.code, 'missing-record', String(gone));
  assert.match(gone.message, /removed by the browser or cleared/);
  const none = await store.readRecordInto('0'.repeat(64), [{ at: 0, view: new Uint8Array(1) }]).then(() => null, (e) => e);
  assert.equal(none?.code, 'missing-record');
  await store.close();
});

test('storageStatus: persisted() and estimate() as the browser says them; null without navigator.storage', async (t) => {
  const store = new IndexedDBStore({ indexedDB: new IDBFactory() });
  withNavigator(t, { storage: { persisted: async () => false, estimate: async () => ({ usage: 1500, quota: 10_000 }) } });
  assert.deepEqual(await store.storageStatus(), { persistent: false, used: 1500, quota: 10_000 });
  withNavigator(t, { storage: { persisted: async () => { throw new Error('no'); }, estimate: async () => ({}) } });
  assert.deepEqual(await store.storageStatus(), { persistent: null, used: null, quota: null });
  withNavigator(t, {});
  assert.equal(await store.storageStatus(), null);
  await store.close();
});

test('two stores on one database see each other, and share one writer lock per name (like two tabs)', async () => {
  const idb = new IDBFactory();
  const a = new IndexedDBStore({ indexedDB: idb, lockTimeoutMs: 20 });
  const b = new IndexedDBStore({ indexedDB: idb, lockTimeoutMs: 20 });
  await a.put('shared', payload(20, 1), {});
  assert.deepEqual((await b.get('shared')).bytes, payload(20, 1));
  const held = await a.lock('shared');
  await assert.rejects(b.put('shared', payload(20, 2), {}), (e) => e.code === 'busy');
  held.release();
  await b.put('shared', payload(20, 2), {});
  await a.close(); await b.close();
  const c = new IndexedDBStore({ indexedDB: idb });
  assert.deepEqual((await c.get('shared')).bytes, payload(20, 2));
  await c.close();
});

// Puts and deletes of rows of object store `name` while fn runs.
async function rowWrites(name, fn) {
  let n = 0;
  await withWriteHook((store) => { if (store.name === name) n += 1; }, fn);
  return n;
}

test('a point\'s pins and counts: hasRecords pins found records in one row, not by rewriting each; ' +
  'another tab\'s delete keeps them until the commit; the commit writes only rows whose pin changes', async () => {
  const idb = new IDBFactory();
  const writer = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const other = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK }); // another tab
  const parts = [payload(300, 1), payload(400, 2), payload(500, 3)];
  const old = formatTwo(parts, { seed: 1 });
  await other.put('old', old.bytes, {});
  const entry = await other.getEntry('old');
  const keys = entry.records.map((r) => r.key);
  let found;
  assert.equal(await rowWrites('records', async () => { found = await writer.hasRecords(keys); }), 0,
    'no record row is rewritten to pin it');
  assert.deepEqual(found, [true, true, true]);
  await other.delete('old');
  assert.equal((await other.stats()).records, 3, 'pinned by the writer: not freed by another tab\'s delete');
  await assertConsistent(idb);
  const [added] = await writer.putRecords([payload(600, 4)]);
  const next = { ...entry, records: [...entry.records, { key: added, length: 600 }], meta: {} };
  // every row's pin ends here (the writer's three, kept by the delete, and the new one's)
  assert.equal(await rowWrites('records', () => writer.commit('new', next)), 4);
  await assertConsistent(idb);
  // the next point: the same records found again, one more written; only that one's row changes
  await writer.hasRecords(next.records.map((r) => r.key));
  const [third] = await writer.putRecords([payload(700, 5)]);
  assert.equal(await rowWrites('records', () => writer.commit('new', { ...next, records: [...next.records, { key: third, length: 700 }] })), 1,
    'rows that were not pinned are not written again');
  await assertConsistent(idb);
  // a point under a new name (outside a notebook, each point is one): the records it shares
  // with other checkpoints are used by the body naming them, no row of theirs is written
  const [fourth] = await writer.putRecords([payload(800, 6)]);
  const named = { ...next, records: [...next.records, { key: fourth, length: 800 }] };
  assert.equal(await rowWrites('records', () => writer.commit('newer', named)), 1,
    'only the row of the record it wrote (unpinned), not one per shared record');
  await assertConsistent(idb);
  await other.delete('newer');
  assert.equal((await other.stats()).records, 5, 'its records still named by "new" stay; its own is freed');
  await other.delete('new');
  assert.equal((await other.stats()).records, 0, 'the commit unpinned them: freed at once by the delete');
  // pins of a writer that never commits last the grace time, then the sweep frees the records
  await other.put('again', old.bytes, {});
  await writer.hasRecords(keys);
  await other.delete('again');
  assert.equal((await other.stats()).records, 3);
  await writer.close(); await other.close();
  const later = new IndexedDBStore({ indexedDB: idb, orphanGraceMs: 0 });
  await new Promise((r) => { setTimeout(r, 5); });
  await later.sweep(); // (opening sweeps too)
  assert.equal((await later.stats()).records, 0, 'an abandoned writer\'s pins expire');
  await assertConsistent(idb);
  await later.close();
});

// Requests issued on object store `name` (reads and writes) while fn runs.
async function requestsOn(name, fn) {
  const methods = ['get', 'getAll', 'getAllKeys', 'count', 'put', 'delete'];
  const saved = methods.map((m) => IDBObjectStore.prototype[m]);
  let n = 0;
  methods.forEach((m, i) => {
    IDBObjectStore.prototype[m] = function counted(...args) { if (this.name === name) n += 1; return saved[i].apply(this, args); };
  });
  try { await fn(); } finally { methods.forEach((m, i) => { IDBObjectStore.prototype[m] = saved[i]; }); }
  return n;
}

test('a point\'s ~100 records are looked up in bulk by hasRecords and commit (a few requests, not two per ' +
  'record), with the same verdicts: a row gone, a chunk gone, a damaged record are not stored; a larger store key by key', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const records = Array.from({ length: 40 }, (_, i) => payload(i % 4 === 0 ? 2500 : 300 + i, 10 + i));
  const keys = await store.putRecords(records);
  const entry = (recs) => ({ head: new Uint8Array(64), tail: new Uint8Array(64), records: recs, meta: {} });
  await store.commit('p1', entry(keys.map((key, i) => ({ key, length: records[i].byteLength }))));
  const db = await store._open();
  const tamper = (fn) => new Promise((resolve) => {
    const tx = db.transaction(['records', 'recordChunks'], 'readwrite');
    fn(tx.objectStore('records'), tx.objectStore('recordChunks'));
    tx.oncomplete = resolve;
  });
  // behind the store's back: record 0 (3 chunks) lost its chunk 1, record 1's row is gone,
  // record 2 is marked damaged
  await tamper((rows, chunks) => { chunks.delete([keys[0], 1]); rows.delete(keys[1]); });
  await store._markDamaged([keys[2]]);
  let found;
  const asked = await requestsOn('records', async () => { found = await store.hasRecords(keys); })
    + await requestsOn('recordChunks', () => {});
  const want = keys.map((_, i) => i > 2);
  assert.deepEqual(found, want);
  assert.ok(asked <= 4, `hasRecords read the rows in bulk (${asked} requests on "records")`);
  assert.ok(await requestsOn('recordChunks', () => store.hasRecords(keys)) <= 2, 'and the chunks\' presence in one read');
  // the commit of the next point counts 37 records: its reads of their rows are bulk too
  const next = keys.slice(3);
  const reads = await requestsOn('records', () => store.commit('p2', entry(next.map((key) => ({ key, length: records[keys.indexOf(key)].byteLength })))));
  assert.ok(reads <= 4 + next.length, `commit: ${reads} requests on "records" (its writes: one per count changed)`);
  const missing = await store.commit('p3', entry(keys.slice(1).map((key, i) => ({ key, length: records[i + 1].byteLength })))).then(() => null, (e) => e);
  assert.equal(missing?.code, 'missing-record', String(missing));
  // a store holding far more rows than are asked for is read key by key, with the same verdicts
  const many = await store.putRecords(Array.from({ length: 20 * 40 }, (_, i) => payload(64, 1000 + i)));
  assert.deepEqual(await store.hasRecords([...keys, many[0]]), [...want, true]);
  const perKey = await requestsOn('records', () => store.hasRecords(keys));
  assert.ok(perKey >= keys.length, `key by key in a large store (${perKey} requests)`);
  await store.discardRecords(many);
  await store.close();
});

// The requests (method names) issued on every object store while fn runs, in order.
async function opsDuring(fn) {
  const methods = ['get', 'getAll', 'getAllKeys', 'count', 'openCursor', 'put', 'delete'];
  const saved = methods.map((m) => IDBObjectStore.prototype[m]);
  const ops = [];
  methods.forEach((m, i) => {
    IDBObjectStore.prototype[m] = function traced(...args) { ops.push(m); return saved[i].apply(this, args); };
  });
  try { await fn(); } finally { methods.forEach((m, i) => { IDBObjectStore.prototype[m] = saved[i]; }); }
  return ops;
}

test('a point in one transaction: commit() writes the new records it is given beside the entry, and checks ' +
  'that every record it names is whole (row, chunks, not damaged): a writer need not ask hasRecords first', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  assert.equal(store.checksAtCommit, true);
  const a = payload(2500, 1); const b = payload(300, 2); const c = payload(400, 3);
  const [ka, kb] = await store.putRecords([a, b]);
  const head = new Uint8Array(64); const tail = new Uint8Array(64);
  const rec = (key, bytes) => ({ key, length: bytes.byteLength });
  await store.commit('p1', { head, tail, records: [rec(ka, a), rec(kb, b)], meta: {} });
  // the next point: a and b remembered, c new, all in ONE transaction
  let keys;
  const transaction = IDBDatabase.prototype.transaction;
  let transactions = 0;
  IDBDatabase.prototype.transaction = function counted(...args) { transactions += 1; return transaction.apply(this, args); };
  try {
    keys = await store.commit('p2', { head, tail, records: [rec(ka, a), { key: null, length: c.byteLength }, rec(kb, b)], meta: {} }, { records: [c] });
  } finally { IDBDatabase.prototype.transaction = transaction; }
  assert.equal(transactions, 1, 'records, counts and entry in one transaction');
  // and its reads all go out before its first write (one round trip of reads, not one per step):
  // the next point, a new name, one new record
  const d0 = payload(450, 5);
  const ops = await opsDuring(() => store.commit('p2b', { head, tail, records: [rec(ka, a), { key: null, length: d0.byteLength }], meta: {} }, { records: [d0] }));
  const firstWrite = ops.findIndex((o) => o === 'put' || o === 'delete');
  assert.ok(firstWrite > 0, ops.join());
  assert.deepEqual(ops.slice(firstWrite).filter((o) => o !== 'put' && o !== 'delete'), [], `no read after the first write: ${ops.join()}`);
  assert.equal(keys.length, 1);
  assert.deepEqual((await store.getEntry('p2')).records.map((r) => r.key), [ka, keys[0], kb]);
  assert.deepEqual([...await store.readRecords([keys[0]])], [c]);
  await assertConsistent(idb);
  // a record named but not whole: missing-record, and nothing of that commit is kept (its new record neither)
  const db = await store._open();
  await new Promise((resolve) => { const tx = db.transaction(['recordChunks'], 'readwrite'); tx.objectStore('recordChunks').delete([ka, 1]); tx.oncomplete = resolve; });
  const d = payload(500, 4);
  const before = (await store.stats()).records;
  const err = await store.commit('p3', { head, tail, records: [rec(ka, a), { key: null, length: d.byteLength }], meta: {} }, { records: [d] }).then(() => null, (e) => e);
  assert.equal(err?.code, 'missing-record', String(err));
  assert.deepEqual(err.keys, [ka]);
  assert.match(err.message, /1 of them found damaged or partly removed/);
  assert.equal(await store.getEntry('p3'), null);
  assert.equal((await store.stats()).records, before, 'the record it was to write is not left behind');
  await store._markDamaged([kb]);
  const damaged = await store.commit('p4', { head, tail, records: [rec(kb, b)], meta: {} }).then(() => null, (e) => e);
  assert.deepEqual(damaged?.keys, [kb]);
  // written again (as a writer does after asking hasRecords), the commit goes through
  const [again] = await store.putRecords([b]);
  await store.commit('p4', { head, tail, records: [rec(again, b)], meta: {} });
  // records and entry must agree
  await assert.rejects(store.commit('p5', { head, tail, records: [{ key: null, length: 1 }], meta: {} }, { records: [d] }), /new record 0 is 500 bytes, the entry says 1/);
  await assert.rejects(store.commit('p5', { head, tail, records: [], meta: {} }, { records: [d] }), /gives 1 records, the entry names 0 new ones/);
  await store.close();
});

test('durability: an automatic point (meta.auto) commits relaxed; a checkpoint a person asked for, and every other write, strict', async () => {
  const store = new IndexedDBStore({ indexedDB: new IDBFactory(), chunkSize: CHUNK });
  const head = new Uint8Array(64); const tail = new Uint8Array(64);
  const a = payload(700, 1); const b = payload(800, 2);
  const transaction = IDBDatabase.prototype.transaction;
  const writes = [];
  IDBDatabase.prototype.transaction = function seen(stores, mode, options) {
    if (mode === 'readwrite') writes.push(options?.durability ?? 'default');
    return transaction.call(this, stores, mode, options);
  };
  const during = async (fn) => { writes.length = 0; await fn(); return [...writes]; };
  try {
    // (the first commit also makes this browser's signing key: its own write, strict)
    const asked = await during(() => store.commit('mine', { head, tail, records: [{ key: null, length: b.byteLength }], meta: { keep: true } }, { records: [b] }));
    assert.equal(asked.at(-1), 'strict');
    assert.deepEqual([...new Set(asked)], ['strict']);
    const point = await during(() => store.commit('point', { head, tail, records: [{ key: null, length: a.byteLength }], meta: { auto: true } }, { records: [a] }));
    assert.deepEqual(point, ['relaxed']);
    assert.deepEqual(await during(() => store.putRecords([payload(900, 3)])), ['strict']);
    assert.deepEqual([...new Set(await during(() => store.delete('point')))], ['strict']);
  } finally { IDBDatabase.prototype.transaction = transaction; }
  assert.deepEqual([...await store.readRecords([(await store.getEntry('mine')).records[0].key])], [b]);
  await store.close();
});

test('a notebook\'s points under retention: the removal of the oldest is counted in the commit\'s one transaction ' +
  '(predicted from the last commit, checked in the transaction); an expired point put back is a rollback; ' +
  'another tab\'s point meanwhile: predicted wrong, made again, counted right', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK });
  const other = new IndexedDBStore({ indexedDB: idb, chunkSize: CHUNK }); // another tab
  await store.setRetention('n.ipynb', { keepLast: 2, maxBytes: 1 << 30 });
  const head = new Uint8Array(64); const tail = new Uint8Array(64);
  const [ks] = await store.putRecords([payload(700, 1)]);
  const point = (s, name, i) => s.commit(name, { head, tail, records: [{ key: ks, length: 700 }, { key: null, length: 300 }],
    meta: { notebook: 'n.ipynb', createdMs: i } }, { records: [payload(300, 100 + i)] });
  const transaction = IDBDatabase.prototype.transaction;
  const txs = async (fn) => {
    let n = 0;
    IDBDatabase.prototype.transaction = function counted(...args) { n += 1; return transaction.apply(this, args); };
    try { await fn(); } finally { IDBDatabase.prototype.transaction = transaction; }
    return n;
  };
  const db = await store._open();
  const rowOf = (name) => new Promise((resolve) => {
    const tx = db.transaction(['checkpoints', 'bodies']); const out = {};
    tx.objectStore('checkpoints').get(name).onsuccess = (e) => { out.row = e.target.result; };
    tx.objectStore('bodies').get(name).onsuccess = (e) => { out.body = e.target.result; };
    tx.oncomplete = () => resolve(out);
  });
  // an entry put back, or taken away again, behind the store's back (its counts left as they are)
  const putBack = (saved, away = false) => new Promise((resolve) => {
    const tx = db.transaction(['checkpoints', 'bodies'], 'readwrite');
    for (const [store, value] of [['checkpoints', saved.row], ['bodies', saved.body]]) {
      if (away) tx.objectStore(store).delete(value.name); else tx.objectStore(store).put(value);
    }
    tx.oncomplete = resolve;
  });
  for (let i = 1; i <= 3; i += 1) await point(store, `p${i}`, i);
  assert.deepEqual((await store.list()).map((e) => e.name), ['p3', 'p2'], 'p1 expired');
  const p2 = await rowOf('p2');
  // a checkpoint of another notebook names p2's own record: p2's removal must keep it
  await store.commit('keep', { head, tail, records: [p2.body.records[1]], meta: { notebook: 'other.ipynb', createdMs: 3.5 } });
  let n4;
  const ops = await opsDuring(async () => { n4 = await txs(() => point(store, 'p4', 4)); });
  assert.equal(n4, 1, 'one transaction for a point that removes the oldest');
  // its reads (the bodies retention weighs, whether the oldest's records are still named
  // elsewhere) all go out before its first write
  const firstWrite = ops.findIndex((o) => o === 'put' || o === 'delete');
  assert.deepEqual(ops.slice(firstWrite).filter((o) => o !== 'put' && o !== 'delete'), [], `no read after the first write: ${ops.join()}`);
  assert.deepEqual((await store.list({ notebook: 'n.ipynb' })).map((e) => e.name), ['p4', 'p3']);
  assert.deepEqual((await store.readRecords([p2.body.records[1].key])).damaged ?? [], [], 'the record "keep" shares with p2 is kept');
  await assertConsistent(idb);
  await store.delete('keep');
  await putBack(p2);
  assert.equal((await store.getEntry('p2')).signature.state, 'rollback', 'p2 put back: its removal was counted');
  await putBack(p2, true);
  await point(store, 'p5', 5);
  const p5 = await rowOf('p5');
  // another tab's point in between: it removes p4; this store predicts p4 for its next point,
  // which finds p5 to remove, and is made again
  await point(other, 'q6', 6);
  assert.ok(await txs(() => point(store, 'p7', 7)) >= 2, 'the mispredicted transaction was abandoned');
  assert.deepEqual((await store.list()).map((e) => e.name), ['p7', 'q6']);
  await assertConsistent(idb);
  await putBack(p5);
  assert.equal((await store.getEntry('p5')).signature.state, 'rollback', 'p5 put back: its removal was counted');
  await store.close(); await other.close();
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
