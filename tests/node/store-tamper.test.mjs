// Records changed behind a store's back (issue 19): every read re-hashes each record against
// its key before anything can unpickle or replay it. A same-length hostile record swapped
// into an own signed checkpoint, an edited history record, a file planted under a key before
// its owner wrote it: damage named by variable, never "ok", in every store (directory,
// memory, IndexedDB under fake-indexeddb; Chromium: tests/browser/store-indexeddb.test.mjs).
// End to end through the CLI on the directory store: verify reports it, restore runs nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import { loadCore } from '../../js/core.mjs';
import { DirectoryStore, nodeRecordKey } from '../../js/store/directory.mjs';
import { MemoryStore } from '../../js/store/memory.mjs';
import { IndexedDBStore } from '../../js/store/indexeddb.mjs';
import { recordKey, neutralizeRecord } from '../../js/store/common.mjs';
import { tempWorkdir, runCli } from './cli-helpers.mjs';

const core = await loadCore();
const enc = new TextEncoder();
const MARK = 'PWNED-H1';

/** A pickle (protocol 4) of the tuple (s,), s a str. */
function pickleStr(s) {
  const b = enc.encode(s);
  const out = new Uint8Array(2 + 1 + 4 + b.length + 2);
  out.set([0x80, 4, 0x58]);
  new DataView(out.buffer).setUint32(3, b.length, true);
  out.set(b, 7);
  out.set([0x85, 0x2e], 7 + b.length);
  return out;
}

/** A pickle of (print(MARK),): what would run if the record were unpickled. */
const HOSTILE = new Uint8Array([0x80, 4, ...enc.encode(`cbuiltins\nprint\n(V${MARK}\ntR`), 0x85, 0x2e]);

/**
 * A real checkpoint (the core's writer): x (a str whose record is as long as the hostile
 * one's), y, a manifest and a history record (kind 3). `hostile`: x's stream is HOSTILE and
 * the history's cell is edited (same lengths: for swapping records in).
 */
function checkpoint({ hostile = false } = {}) {
  const w = core.newWriter({ python: '3.14', createdMs: 1 });
  w.beginRecord(['x']);
  w.append(hostile ? HOSTILE : pickleStr('a'.repeat(HOSTILE.length - 9)));
  w.endRecord('pickle');
  w.beginRecord(['y']); w.append(pickleStr('why')); w.endRecord('pickle');
  w.beginRecord(['__elastic_lite_manifest__'], { kind: 'manifest' }); w.append(enc.encode('{}')); w.endRecord(null);
  w.beginRecord(['__elastic_lite_history__'], { kind: 'history' });
  w.append(enc.encode(JSON.stringify({ cells: [{ source: hostile ? 'import os; os.abort()' : 'x = "aaaaaaaaaaaaaaaaaaa"' }] })));
  w.endRecord(null);
  const bytes = w.finish();
  w.free?.();
  return bytes;
}

const good = checkpoint();
const bad = checkpoint({ hostile: true });
const recordsOf = (bytes) => core.inspect(bytes, { validate: false }).records;

/** The bytes of record i of a file, as stores cut it (index offsets; up to the next record). */
function recordBytes(bytes, i) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f = bytes.byteLength - 32;
  const count = dv.getUint32(f + 4, true);
  const x = Number(dv.getBigUint64(f + 8, true));
  const start = Number(dv.getBigUint64(x + 8 + 16 * i, true));
  const end = i + 1 < count ? Number(dv.getBigUint64(x + 8 + 16 * (i + 1), true)) : x;
  return bytes.subarray(start, end);
}

const X = 0; const HISTORY = 3;
assert.equal(recordBytes(good, X).byteLength, recordBytes(bad, X).byteLength, 'the hostile record has the same length');
assert.equal(recordBytes(good, HISTORY).byteLength, recordBytes(bad, HISTORY).byteLength, 'so has the edited history');

/** Replaces the stored bytes of record `key` behind the store's back, where each store keeps them. */
async function swapRecord(store, key, bytes) {
  if (store instanceof MemoryStore) { store._records.get(key).bytes = bytes.slice(); return; }
  if (store instanceof DirectoryStore) { await fs.writeFile(path.join(store.dir, 'records', key), bytes); return; }
  const db = await store._open();
  await new Promise((resolve, reject) => {
    const tx = db.transaction('recordChunks', 'readwrite');
    tx.objectStore('recordChunks').put({ key, seq: 0, data: bytes.slice() });
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
}

/** Puts a record under `key` that the store never wrote (a file planted before its owner saves it). */
async function plantRecord(store, key, bytes) {
  if (store instanceof MemoryStore) { store._records.set(key, { bytes: bytes.slice(), refs: 0, pinnedMs: 0 }); return; }
  if (store instanceof DirectoryStore) {
    await fs.mkdir(path.join(store.dir, 'records'), { recursive: true });
    await fs.writeFile(path.join(store.dir, 'records', key), bytes);
    return;
  }
  const db = await store._open();
  await new Promise((resolve, reject) => {
    const tx = db.transaction(['records', 'recordChunks'], 'readwrite');
    tx.objectStore('records').put({ key, length: bytes.byteLength, chunkSize: store.chunkSize, chunkCount: 1, refs: 0, pinnedMs: 0 });
    tx.objectStore('recordChunks').put({ key, seq: 0, data: bytes.slice() });
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
}

const contains = (hay, needle) => Buffer.from(hay).indexOf(Buffer.from(needle)) >= 0;

let dbCount = 0;
const stores = {
  directory: async () => new DirectoryStore(path.join(await tempWorkdir('el-tamper-'), 'store')),
  memory: async () => new MemoryStore(),
  indexeddb: async () => new IndexedDBStore({ indexedDB: new IDBFactory(), dbName: `tamper-${dbCount += 1}` }),
};

for (const [kind, make] of Object.entries(stores)) {
  test(`${kind}: a same-length hostile record swapped into an own signed checkpoint is damage, and none of its bytes come out`, async () => {
    const store = await make();
    await store.put('own', good, { notebook: 'n' }, { sign: true });
    const entry = await store.getEntry('own');
    assert.equal(entry.signature.state, 'valid');
    const key = entry.records[X].key;
    await swapRecord(store, key, recordBytes(bad, X));

    const got = await store.get('own');
    assert.equal(got.signature.state, 'valid', 'the entry itself is untouched: only the record changed');
    assert.deepEqual(got.damaged, [{ key, record: X }]);
    assert.ok(!contains(got.bytes, enc.encode(MARK)), 'no byte of the hostile stream is handed out');
    const recs = recordsOf(got.bytes);
    assert.equal(recs[X].ok, false);
    assert.deepEqual(recs[X].names, ['x'], 'the damage names the variable');
    assert.equal(recs[X].error.code, 'checksum');
    assert.ok(recs.slice(1).every((r) => r.ok), 'the other records still restore');
    const [read] = await store.readRecords([key]).then((out) => { assert.deepEqual(out.damaged, [key]); return out; });
    assert.ok(!contains(read, enc.encode(MARK)), 'readRecords hands out the record neutralized');
    assert.deepEqual(read, neutralizeRecord(recordBytes(bad, X).slice()));
    assert.deepEqual(await store.hasRecords([key]), [false], 'marked: no writer reuses it');
    // the next save of the true bytes repairs it
    await store.put('again', good, {}, { sign: true });
    assert.deepEqual((await store.get('own')).bytes, good);
    assert.deepEqual((await store.get('own')).damaged, []);
    await store.close();
  });

  test(`${kind}: an edited history record (kind 3) of the same length is damage: no cell of it comes out`, async () => {
    const store = await make();
    await store.put('own', good, {}, { sign: true });
    const key = (await store.getEntry('own')).records[HISTORY].key;
    await swapRecord(store, key, recordBytes(bad, HISTORY));
    const got = await store.get('own');
    assert.deepEqual(got.damaged, [{ key, record: HISTORY }]);
    assert.ok(!contains(got.bytes, enc.encode('os.abort')));
    const recs = recordsOf(got.bytes);
    assert.equal(recs[HISTORY].kind, 'history');
    assert.equal(recs[HISTORY].ok, false);
    await store.close();
  });

  test(`${kind}: a record planted under a key before its owner writes it is replaced, never reused`, async () => {
    const store = await make();
    const key = await recordKey(recordBytes(good, X)); // predictable from the values
    await plantRecord(store, key, recordBytes(bad, X));
    await store.put('victim', good, {}, { sign: true }); // put() takes the putRecords path
    const got = await store.get('victim');
    assert.deepEqual(got.damaged, []);
    assert.deepEqual(got.bytes, good);
    // putRecords alone (what a checkpoint streams) replaces it too
    await swapRecord(store, key, recordBytes(bad, X));
    assert.deepEqual(await store.putRecords([recordBytes(good, X)]), [key]);
    assert.deepEqual((await store.readRecords([key]))[0], recordBytes(good, X));
    await store.close();
  });
}

test('the directory store checks keys with node:crypto: the same key as recordKey (WebCrypto)', async () => {
  for (const n of [0, 1, 4 * 1024 * 1024, 4 * 1024 * 1024 + 1, 9 * 1024 * 1024]) {
    const bytes = new Uint8Array(n).map((_, i) => (i * 7) & 0xff);
    assert.equal(nodeRecordKey(bytes), await recordKey(bytes), `${n} bytes`);
  }
});

test('neutralizeRecord: header kept, the rest zero, the stream check certain to fail; anything else all zero', () => {
  const rec = recordBytes(bad, X).slice();
  const k = new DataView(rec.buffer).getUint32(4, true);
  const header = rec.slice(0, k);
  neutralizeRecord(rec);
  assert.deepEqual(rec.subarray(0, k), header);
  assert.ok(rec.subarray(k).every((b) => b === 0));
  const file = good.slice();
  const r = recordsOf(good)[X];
  file.set(rec, r.offset);
  assert.equal(recordsOf(file)[X].error.code, 'checksum');
  // a header whose stream CRC is that of zeros (made so on purpose) still fails
  const w = core.newWriter({ python: '3.14', createdMs: 1 });
  w.beginRecord(['z']); w.append(new Uint8Array(HOSTILE.length)); w.endRecord('pickle');
  const zeros = w.finish();
  const zrec = recordBytes(zeros, 0).slice();
  neutralizeRecord(zrec);
  const zfile = zeros.slice(); zfile.set(zrec, recordsOf(zeros)[0].offset);
  assert.equal(recordsOf(zfile)[0].ok, false);
  assert.deepEqual(recordsOf(zfile)[0].names, ['z']);
  const other = new Uint8Array(100).fill(7);
  assert.ok(neutralizeRecord(other).every((b) => b === 0));
});

test('CLI, directory store: verify reports the swapped record; restore names x damaged and runs nothing', async () => {
  const cwd = await tempWorkdir('el-tamper-cli-');
  const store = new DirectoryStore(path.join(cwd, '.elastic-lite'));
  await store.put('own', good, {}, { sign: true });
  const key = (await store.getEntry('own')).records[X].key;
  await swapRecord(store, key, recordBytes(bad, X));

  const v = await runCli(['verify', 'own', '--json'], { cwd });
  const report = JSON.parse(v.stdout);
  assert.equal(report.ok, false);
  assert.ok(report.problems.some((p) => p.kind === 'damaged' && p.names.includes('x')), v.stdout);

  const r = await runCli(['restore', 'own', '-c', 'print("y is", y); print("x" in globals())'], { cwd });
  assert.ok(!(r.stdout + r.stderr).includes(MARK), 'the hostile record never ran');
  assert.match(r.stdout, /y is why\nFalse/);
  assert.match(r.stderr, /\bx\b.*damaged|damaged.*\bx\b/);
});
