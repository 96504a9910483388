// The signed counter of every store (issue 19): an own signed entry put back after a newer one
// (or after its delete) is reported as a rollback, never "valid"; two writers of one name: the
// one that finds the name changed since it started is told (StoreError 'conflict'), never a
// silent replace; a replaced signing key is said once, plainly (takeNotices()), and the
// entries of the old key carry keyChanged. Directory, memory and IndexedDB (fake-indexeddb).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import { DirectoryStore, nameToStem } from '../../js/store/directory.mjs';
import { MemoryStore } from '../../js/store/memory.mjs';
import { IndexedDBStore } from '../../js/store/indexeddb.mjs';
import { formatTwo, payload } from './store-contract.mjs';
import { tempDir } from '../helpers/tempdir.mjs';

// Two versions of one checkpoint that share their records (only the head differs), so an old
// entry put back still finds every record it names.
const shared = [payload(3000, 1), payload(200, 2)];
const v1 = formatTwo(shared, { seed: 1 }).bytes;
const v2 = formatTwo(shared, { seed: 2 }).bytes;

/** Copy out / put back the stored entry of `name`, where each store keeps it. */
async function takeEntry(store, name) {
  if (store instanceof MemoryStore) return structuredClone(store._entries.get(name));
  if (store instanceof DirectoryStore) return fs.readFile(path.join(store.dir, 'entries', `${nameToStem(name)}.json`));
  const db = await store._open();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(['checkpoints', 'bodies'], 'readonly');
    const out = {};
    tx.objectStore('checkpoints').get(name).onsuccess = (e) => { out.row = e.target.result; };
    tx.objectStore('bodies').get(name).onsuccess = (e) => { out.body = e.target.result; };
    tx.oncomplete = () => resolve(out); tx.onerror = () => reject(tx.error);
  });
}

async function putBack(store, name, saved) {
  if (store instanceof MemoryStore) {
    for (const r of saved.records) store._records.get(r.key).refs += 1;
    store._entries.set(name, structuredClone(saved));
    return;
  }
  if (store instanceof DirectoryStore) { await fs.writeFile(path.join(store.dir, 'entries', `${nameToStem(name)}.json`), saved); return; }
  const db = await store._open();
  await new Promise((resolve, reject) => {
    const tx = db.transaction(['checkpoints', 'bodies'], 'readwrite');
    tx.objectStore('checkpoints').put(saved.row);
    tx.objectStore('bodies').put(saved.body);
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
}

let dbs = 0;
const stores = {
  directory: async () => new DirectoryStore(path.join(await tempDir('el-rollback-'), 'store'), { orphanGraceMs: 60_000 }),
  memory: async () => new MemoryStore({ orphanGraceMs: 60_000 }),
  indexeddb: async () => new IndexedDBStore({ indexedDB: new IDBFactory(), dbName: `rollback-${dbs += 1}`, orphanGraceMs: 60_000 }),
};

for (const [kind, make] of Object.entries(stores)) {
  test(`${kind}: an own signed entry put back after a newer one, or after its delete, is a rollback`, async () => {
    const store = await make();
    await store.put('cp', v1, { createdMs: 1 }, { sign: true });
    const old = await takeEntry(store, 'cp');
    assert.equal((await store.getEntry('cp')).signature.state, 'valid');
    await store.put('cp', v2, { createdMs: 2 }, { sign: true });
    const newer = await takeEntry(store, 'cp');
    const g2 = await store.generation('cp');
    assert.ok(g2 >= 2);

    await putBack(store, 'cp', old);
    const sig = (await store.getEntry('cp')).signature;
    assert.equal(sig.state, 'rollback');
    assert.ok(sig.generation < sig.latest && sig.latest === g2, JSON.stringify(sig));
    assert.equal((await store.get('cp')).signature.state, 'rollback');
    assert.deepEqual((await store.get('cp')).bytes, v1, 'the bytes are there: it is the trust in them that is gone');

    await putBack(store, 'cp', newer);
    assert.equal((await store.getEntry('cp')).signature.state, 'valid', 'the latest one is own again');
    assert.equal(await store.delete('cp'), true);
    await putBack(store, 'cp', newer);
    assert.equal((await store.getEntry('cp')).signature.state, 'rollback', 'a deleted entry put back');

    // adopting it (a person confirmed it) makes it current again
    assert.equal(await store.sign('cp'), true);
    assert.equal((await store.getEntry('cp')).signature.state, 'valid');
    await store.close();
  });

  test(`${kind}: two writers of one name: the one that finds it changed since it started is told, nothing replaced`, async () => {
    const store = await make();
    assert.equal(await store.generation('n'), 0);
    const startedA = await store.generation('n'); // writer A starts (e.g. a long notebook run)
    const startedB = await store.generation('n'); // writer B starts
    await store.put('n', v1, { by: 'B' }, { sign: true, expect: startedB }); // B finishes first
    const err = await store.put('n', v2, { by: 'A' }, { sign: true, expect: startedA }).then(() => null, (e) => e);
    assert.ok(err, 'A must be told');
    assert.equal(err.code, 'conflict');
    assert.match(err.message, /Checkpoint "n" was saved by another writer while this one was working .*This save was not kept/);
    assert.equal((await store.get('n')).meta.by, 'B', 'B\'s save stands');

    // the same through expect() (a host that does not call commit itself) and commit()
    const g = await store.generation('n');
    store.expect('n', g);
    const [key] = await store.putRecords([shared[0]]);
    await store.commit('n', { records: [{ key, length: shared[0].byteLength }], meta: { by: 'C' } });
    store.expect('n', g); // stale now
    await assert.rejects(store.commit('n', { records: [{ key, length: shared[0].byteLength }], meta: { by: 'D' } }),
      (e) => e.code === 'conflict');
    assert.equal((await store.get('n')).meta.by, 'C');
    // without an expectation, the last writer wins as before (the lock orders them)
    await store.commit('n', { records: [{ key, length: shared[0].byteLength }], meta: { by: 'E' } });
    assert.equal((await store.get('n')).meta.by, 'E');
    await store.close();
  });
}

test('directory: a counter removed or replaced to hide a rollback: own entries with a generation read as rollback', async () => {
  const store = await stores.directory();
  await store.put('cp', v1, {}, { sign: true });
  const old = await takeEntry(store, 'cp');
  await store.put('cp', v2, {}, { sign: true });
  await putBack(store, 'cp', old);
  const counter = path.join(store.dir, 'counter.json');
  const saved = await fs.readFile(counter);
  await fs.rm(counter);
  assert.equal((await new DirectoryStore(store.dir).getEntry('cp')).signature.state, 'rollback');
  const doc = JSON.parse(saved);
  doc.names.cp = 1; // edited to say the old one is the latest: its MAC no longer matches
  await fs.writeFile(counter, JSON.stringify(doc));
  assert.equal((await new DirectoryStore(store.dir).getEntry('cp')).signature.state, 'rollback');
});

test('directory: a replaced signing key is said once, plainly; the old key\'s entries carry keyChanged', async () => {
  const store = await stores.directory();
  await store.put('mine', v1, {}, { sign: true });
  await fs.rm(path.join(store.dir, 'signing-key')); // replaced (or lost): the next signed write makes a new one
  const again = new DirectoryStore(store.dir);
  await again.put('new', v2, {}, { sign: true });
  const sig = (await again.getEntry('mine')).signature;
  assert.equal(sig.state, 'other-key');
  assert.equal(sig.keyChanged, true);
  assert.equal((await again.getEntry('new')).signature.state, 'valid');
  // said once per store object, by whoever first looks at an entry
  const fresh = new DirectoryStore(store.dir);
  await fresh.getEntry('mine');
  await fresh.getEntry('new');
  const notices = fresh.takeNotices();
  assert.equal(notices.length, 1);
  assert.match(notices[0], /^The signing key of the checkpoint store .* changed \(it was [0-9a-f]{16}, it is [0-9a-f]{16}\): the checkpoints signed with the old key now count as foreign/);
  assert.deepEqual(fresh.takeNotices(), []);
  // a key deleted and not (yet) made again: said too
  await fs.rm(path.join(store.dir, 'signing-key'));
  const gone = new DirectoryStore(store.dir);
  await gone.getEntry('new');
  assert.match(gone.takeNotices()[0], /changed \(it was [0-9a-f]{16}, it is gone\)/);
});

test('indexeddb: a replaced signing key is said once; the old key\'s entries carry keyChanged', async () => {
  const idb = new IDBFactory();
  const store = new IndexedDBStore({ indexedDB: idb, dbName: 'keychange' });
  await store.put('mine', v1, {}, { sign: true });
  const db = await store._open();
  await new Promise((resolve, reject) => {
    const tx = db.transaction('settings', 'readwrite');
    tx.objectStore('settings').delete('signing-key');
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
  await store.close();
  const again = new IndexedDBStore({ indexedDB: idb, dbName: 'keychange' });
  await again.put('new', v2, {}, { sign: true });
  const sig = (await again.getEntry('mine')).signature;
  assert.deepEqual([sig.state, sig.keyChanged], ['other-key', true]);
  await again.close();
  const fresh = new IndexedDBStore({ indexedDB: idb, dbName: 'keychange' });
  await fresh.getEntry('mine');
  assert.equal(fresh.takeNotices().length, 1);
  assert.deepEqual(fresh.takeNotices(), []);
  await fresh.close();
});
