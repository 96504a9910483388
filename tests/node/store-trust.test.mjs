// Signatures in every JS store (MemoryStore, DirectoryStore, IndexedDBStore on fake-indexeddb):
// commit signs (restore treats the entry as the store's own), put does not unless asked (an
// import is foreign), sign() adopts an entry; an entry changed after signing is 'invalid', one
// signed by another store is 'other-key'. The IndexedDB key is a non-extractable CryptoKey
// shared by every store object of the database; the directory's key file is private (0600) and
// a readable one is refused; two writers making the key at once end up with one key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import { MemoryStore } from '../../js/store/memory.mjs';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { IndexedDBStore } from '../../js/store/indexeddb.mjs';
import { signedBytes, canonicalJson } from '../../js/store/common.mjs';
import { tempDir } from '../helpers/tempdir.mjs';

const FILE = new Uint8Array(300).map((_, i) => (i * 7) & 0xff); // any bytes: kept as one record

async function commitOwn(store, name, meta = { notebook: 'nb.ipynb', createdMs: 1 }) {
  const [key] = await store.putRecords([FILE]);
  await store.commit(name, { head: new Uint8Array([1, 2]), records: [{ key, length: FILE.byteLength }], tail: new Uint8Array([3]), meta });
}

const kinds = {
  memory: async () => ({ store: new MemoryStore(), again: null }),
  directory: async () => {
    const dir = await tempDir('el-store-trust-');
    return { store: new DirectoryStore(dir), again: () => new DirectoryStore(dir), dir };
  },
  indexeddb: async () => {
    const idb = new IDBFactory();
    return { store: new IndexedDBStore({ indexedDB: idb }), again: () => new IndexedDBStore({ indexedDB: idb }) };
  },
};

for (const [kind, make] of Object.entries(kinds)) {
  test(`${kind}: commit signs, put does not unless asked, sign() adopts`, async () => {
    const { store, again } = await make();
    await commitOwn(store, 'own');
    assert.equal((await store.get('own')).signature.state, 'valid');
    assert.equal((await store.getEntry('own')).signature.state, 'valid');
    await store.put('imported', FILE, { imported: 'x.elc' });
    assert.equal((await store.get('imported')).signature.state, 'unsigned');
    await store.put('vouched', FILE, {}, { sign: true });
    assert.equal((await store.get('vouched')).signature.state, 'valid');
    await commitOwn(store, 'plain', {});
    assert.equal(await store.sign('imported'), true);
    assert.equal((await store.get('imported')).signature.state, 'valid');
    assert.equal(await store.sign('absent'), false);
    const { keyId } = (await store.get('own')).signature;
    assert.match(keyId, /^[0-9a-f]{16}$/);
    if (again) {
      // another store object on the same storage: the same key, so the same verdict
      const other = again();
      assert.deepEqual((await other.get('own')).signature, { state: 'valid', keyId });
    }
    // commit without signing (a writer that vouches for nothing) stays foreign
    const [key] = await store.putRecords([FILE]);
    await store.commit('unsigned', { head: new Uint8Array(0), records: [{ key, length: FILE.byteLength }], tail: new Uint8Array(0), meta: {} }, { sign: false });
    assert.equal((await store.get('unsigned')).signature.state, 'unsigned');
  });

  test(`${kind}: two stores sign with two keys`, async () => {
    const { store } = await make();
    const { store: elsewhere } = await make();
    await commitOwn(elsewhere, 'theirs');
    await commitOwn(store, 'mine');
    assert.notEqual((await store.get('mine')).signature.keyId, (await elsewhere.get('theirs')).signature.keyId);
  });
}

test('the signed bytes cover name, head, record keys and lengths, tail and canonical metadata', () => {
  const e = { head: new Uint8Array([1]), records: [{ key: 'a'.repeat(64), length: 5 }], tail: new Uint8Array([2]) };
  const base = signedBytes('n', e, { b: 1, a: [2, { d: 3, c: 4 }] });
  // byte for byte what Python's store.signing.signed_bytes makes (tests/py/test_trust_signing.py)
  const text = (s) => new TextEncoder().encode(s);
  assert.deepEqual(base, Uint8Array.from([...text('30:elastic-lite entry signature 1,1:n,1:'), 1, ...text(','),
    ...text(`67:${'a'.repeat(64)} 5\n,1:`), 2, ...text(',29:{"a":[2,{"c":4,"d":3}],"b":1},')]));
  assert.deepEqual(signedBytes('n', e, { a: [2, { c: 4, d: 3 }], b: 1 }), base); // key order does not matter
  for (const changed of [
    signedBytes('m', e, { b: 1, a: [2, { d: 3, c: 4 }] }),
    signedBytes('n', { ...e, head: new Uint8Array([9]) }, { b: 1, a: [2, { d: 3, c: 4 }] }),
    signedBytes('n', { ...e, records: [{ key: 'b'.repeat(64), length: 5 }] }, { b: 1, a: [2, { d: 3, c: 4 }] }),
    signedBytes('n', { ...e, records: [{ key: 'a'.repeat(64), length: 6 }] }, { b: 1, a: [2, { d: 3, c: 4 }] }),
    signedBytes('n', { ...e, tail: new Uint8Array([8]) }, { b: 1, a: [2, { d: 3, c: 4 }] }),
    signedBytes('n', e, { b: 1, a: [2, { d: 3, c: 5 }] }),
  ]) assert.notDeepEqual(changed, base);
  assert.equal(canonicalJson({ z: [1, { y: null, x: 'é' }], a: true }), '{"a":true,"z":[1,{"x":"é","y":null}]}');
});

test('directory: an entry file changed after signing is invalid; one copied from another store is other-key', async () => {
  const { store, dir } = await kinds.directory();
  await commitOwn(store, 'own');
  const file = path.join(dir, 'entries', 'own.json');
  const doc = JSON.parse(await fs.readFile(file, 'utf8'));
  await fs.writeFile(file, JSON.stringify({ ...doc, meta: { ...doc.meta, notebook: 'other.ipynb' } }));
  assert.equal((await new DirectoryStore(dir).get('own')).signature.state, 'invalid');
  await fs.writeFile(file, JSON.stringify({ ...doc, records: [{ ...doc.records[0] }], head: Buffer.from([7, 2]).toString('base64') }));
  assert.equal((await new DirectoryStore(dir).getEntry('own')).signature.state, 'invalid');

  const { store: other, dir: otherDir } = await kinds.directory();
  await commitOwn(other, 'mine');
  await fs.copyFile(path.join(dir, 'records', doc.records[0].key), path.join(otherDir, 'records', doc.records[0].key)).catch(() => {});
  await fs.writeFile(path.join(otherDir, 'entries', 'own.json'), JSON.stringify(doc));
  assert.equal((await new DirectoryStore(otherDir).get('own')).signature.state, 'other-key');
  // its signature removed: unsigned
  const { sig, ...bare } = doc;
  assert.ok(sig);
  await fs.writeFile(path.join(otherDir, 'entries', 'own.json'), JSON.stringify(bare));
  assert.equal((await new DirectoryStore(otherDir).get('own')).signature.state, 'unsigned');
});

test('directory: the key file is private, a readable one is refused, and two processes making it share one', async () => {
  const { store, dir } = await kinds.directory();
  await commitOwn(store, 'own');
  const keyFile = path.join(dir, 'signing-key');
  assert.equal((await fs.stat(keyFile)).mode & 0o777, 0o600);
  await fs.chmod(keyFile, 0o644);
  await assert.rejects(new DirectoryStore(dir).get('own'), /can be read by other users .*chmod 600/);
  await fs.chmod(keyFile, 0o600);
  await fs.writeFile(keyFile, 'not a key', { mode: 0o600 });
  await assert.rejects(new DirectoryStore(dir).get('own'), /is not a valid key file/);

  // many store objects signing at once in a fresh directory: one key for all of them
  const fresh = await tempDir('el-store-trust-race-');
  const stores = Array.from({ length: 6 }, () => new DirectoryStore(fresh));
  await Promise.all(stores.map((s, i) => commitOwn(s, `c${i}`)));
  const ids = await Promise.all(stores.map(async (s, i) => (await new DirectoryStore(fresh).get(`c${i}`)).signature));
  assert.ok(ids.every((sig) => sig.state === 'valid' && sig.keyId === ids[0].keyId), JSON.stringify(ids));
  // keyFile (or $ELASTIC_LITE_KEY_FILE) puts the key elsewhere: a copy of the store carries none
  const elsewhere = path.join(await tempDir('el-key-'), 'key');
  const s = new DirectoryStore(await tempDir('el-store-trust-'), { keyFile: elsewhere });
  await commitOwn(s, 'x');
  assert.equal((await fs.stat(elsewhere)).mode & 0o777, 0o600);
  assert.equal((await s.get('x')).signature.state, 'valid');
});

test('indexeddb: the key is a non-extractable CryptoKey kept in the database; stores racing to make it share one', async () => {
  const idb = new IDBFactory();
  const stores = Array.from({ length: 5 }, () => new IndexedDBStore({ indexedDB: idb }));
  await Promise.all(stores.map((s, i) => commitOwn(s, `c${i}`)));
  const sigs = await Promise.all(stores.map((s, i) => s.get(`c${i}`).then((r) => r.signature)));
  assert.ok(sigs.every((x) => x.state === 'valid' && x.keyId === sigs[0].keyId), JSON.stringify(sigs));
  const key = await stores[0]._signingKey(false);
  assert.equal(key.key.extractable, false);
  assert.deepEqual([...key.key.usages].sort(), ['sign', 'verify']);
  await assert.rejects(globalThis.crypto.subtle.exportKey('raw', key.key), /not extractable/);
  // another database has a key of its own: its entry carried over here, rows as they are, is other-key
  const other = new IndexedDBStore({ indexedDB: idb, dbName: 'another' });
  await commitOwn(other, 'theirs');
  const rows = await rawRows(idb, 'another', 'theirs');
  assert.ok(rows.checkpoints.sig);
  await putRaw(idb, 'elastic-lite', rows);
  assert.equal((await stores[0].get('theirs')).signature.state, 'other-key');
  // and one whose metadata was changed in the database after signing is invalid
  rows.checkpoints = { ...(await rawRows(idb, 'elastic-lite', 'c0')).checkpoints };
  rows.checkpoints.meta = { ...rows.checkpoints.meta, notebook: 'elsewhere.ipynb' };
  rows.bodies = (await rawRows(idb, 'elastic-lite', 'c0')).bodies;
  await putRaw(idb, 'elastic-lite', rows);
  assert.equal((await stores[0].get('c0')).signature.state, 'invalid');
});

function openRaw(idb, dbName) {
  return new Promise((resolve, reject) => {
    const r = idb.open(dbName);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function rawRows(idb, dbName, name) {
  const db = await openRaw(idb, dbName);
  const tx = db.transaction(['checkpoints', 'bodies']);
  const get = (s) => new Promise((resolve) => { const r = tx.objectStore(s).get(name); r.onsuccess = () => resolve(r.result); });
  const out = { checkpoints: await get('checkpoints'), bodies: await get('bodies') };
  db.close();
  return out;
}

async function putRaw(idb, dbName, rows) {
  const db = await openRaw(idb, dbName);
  const tx = db.transaction(['checkpoints', 'bodies'], 'readwrite');
  tx.objectStore('checkpoints').put(rows.checkpoints);
  tx.objectStore('bodies').put(rows.bodies);
  await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); });
  db.close();
}
