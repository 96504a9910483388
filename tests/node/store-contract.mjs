// The behaviour every store must share (docs/INTERFACES.md, "Stores"). Each store's test file
// calls storeContract() with a factory that makes a fresh, empty store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { loadCore } from '../../js/core.mjs';

const core = await loadCore();

/** Deterministic bytes of a given size, different per seed. */
export function payload(size, seed = 1) {
  const out = new Uint8Array(size);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < size; i += 1) { x = (x * 1103515245 + 12345) >>> 0; out[i] = x >>> 24; }
  return out;
}

/**
 * A file with the layout of checkpoint format 2 (wasm/FORMAT.md) around `records`: a header
 * padded to 64 bytes, each record padded to a multiple of 64, the index (offset, length per
 * record) and the footer. Only the structure the stores cut by is real (no CRCs): the stores
 * never validate, and this keeps their tests independent of the core.
 */
export function formatTwo(records, { seed = 0 } = {}) {
  const pad = (n) => Math.ceil(n / 64) * 64;
  const head = new Uint8Array(64);
  head.set([0x89, 0x45, 0x4c, 0x43, 0x4b, 0x50, 0x54, 0x0a, 2, 0, 0, 0]);
  head[40] = seed; // two files of different "times" differ only in their head
  const bodies = records.map((r) => { const b = new Uint8Array(pad(r.byteLength)); b.set(r); return b; });
  const starts = [];
  let at = head.byteLength;
  for (const b of bodies) { starts.push(at); at += b.byteLength; }
  const index = new Uint8Array(8 + 16 * records.length + 4);
  const iv = new DataView(index.buffer);
  index.set([0x45, 0x4c, 0x49, 0x58]);
  iv.setUint32(4, records.length, true);
  bodies.forEach((b, i) => {
    iv.setBigUint64(8 + 16 * i, BigInt(starts[i]), true);
    iv.setBigUint64(16 + 16 * i, BigInt(b.byteLength), true);
  });
  const footer = new Uint8Array(32);
  const fv = new DataView(footer.buffer);
  footer.set([0x45, 0x4c, 0x46, 0x54]);
  fv.setUint32(4, records.length, true);
  fv.setBigUint64(8, BigInt(at), true);
  fv.setBigUint64(16, BigInt(at + index.byteLength + 32), true);
  fv.setUint16(24, 2, true);
  const out = new Uint8Array(at + index.byteLength + 32);
  out.set(head, 0);
  bodies.forEach((b, i) => out.set(b, starts[i]));
  out.set(index, at);
  out.set(footer, at + index.byteLength);
  return { bytes: out, records: bodies };
}

/** The record key as INTERFACES.md defines it, computed independently with node:crypto. */
export function expectedKey(bytes) {
  const top = createHash('sha256');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(bytes.byteLength));
  top.update(len);
  for (let at = 0; at < bytes.byteLength; at += 4 * 1024 * 1024) {
    top.update(createHash('sha256').update(bytes.subarray(at, at + 4 * 1024 * 1024)).digest());
  }
  return top.digest('hex');
}

/** The keys of the records of a whole file, cut as INTERFACES.md says (index offsets). */
function splitKeys(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f = bytes.byteLength - 32;
  const count = dv.getUint32(f + 4, true);
  const x = Number(dv.getBigUint64(f + 8, true));
  const starts = Array.from({ length: count }, (_, i) => Number(dv.getBigUint64(x + 8 + 16 * i, true)));
  return starts.map((s, i) => expectedKey(bytes.subarray(s, i + 1 < count ? starts[i + 1] : x)));
}

/**
 * What must hold after any failure: every listed checkpoint reads back whole (one of the
 * `versions` its name may hold, byte for byte), and every record its entry names is stored.
 */
export async function assertWhole(store, versions) {
  const listed = await store.list();
  for (const { name } of listed) {
    const got = await store.get(name);
    assert.ok(got, `listed "${name}" must be readable`);
    const allowed = versions[name] ?? [];
    assert.ok(allowed.some((v) => Buffer.compare(Buffer.from(v), Buffer.from(got.bytes)) === 0),
      `"${name}" holds ${got.bytes.byteLength} bytes that are none of its versions`);
    const entry = await store.getEntry(name);
    assert.ok((await store.hasRecords(entry.records.map((r) => r.key))).every(Boolean), `"${name}" names a missing record`);
  }
  return listed.map((e) => e.name).sort();
}

/**
 * Changes one byte of a stored record behind the store's back, as disk or browser damage
 * would: where each kind of store keeps it.
 */
async function damageRecord(store, key) {
  if (store._records instanceof Map) { store._records.get(key).bytes[100] ^= 1; return; } // MemoryStore
  if (store.handle) { // FolderStore: through its directory handle (File System Access)
    const file = await (await store.handle.getDirectoryHandle('records')).getFileHandle(key);
    const bytes = new Uint8Array(await (await file.getFile()).arrayBuffer());
    bytes[100] ^= 1;
    const out = await file.createWritable();
    await out.write(bytes);
    await out.close();
    return;
  }
  if (store.dir) { // DirectoryStore
    const fs = await import('node:fs/promises');
    const file = `${store.dir}/records/${key}`;
    const bytes = await fs.readFile(file);
    bytes[100] ^= 1;
    await fs.writeFile(file, bytes);
    return;
  }
  const db = await store._open(); // IndexedDBStore
  await new Promise((resolve, reject) => {
    const tx = db.transaction('recordChunks', 'readwrite');
    const chunks = tx.objectStore('recordChunks');
    const get = chunks.get([key, 0]);
    get.onsuccess = () => { const c = get.result; c.data[100] ^= 1; chunks.put(c); };
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
  });
}

export function storeContract(label, makeStore) {
  test(`${label}: round trip keeps bytes and metadata`, async () => {
    const store = await makeStore();
    const bytes = payload(10_000, 7);
    await store.put('first', bytes, { notebook: 'a.ipynb', createdMs: 1000, variables: 2, names: ['x', 'y'], skipped: [] });
    const got = await store.get('first');
    assert.deepEqual(got.bytes, bytes);
    assert.equal(got.meta.notebook, 'a.ipynb');
    assert.equal(got.meta.createdMs, 1000);
    assert.equal(got.meta.size, 10_000);
    assert.deepEqual(got.meta.names, ['x', 'y']);
    assert.equal(await store.get('missing'), null);
    assert.equal(await store.getEntry('missing'), null);
    await store.close();
  });

  test(`${label}: empty payload and odd names round trip`, async () => {
    const store = await makeStore();
    await store.put('empty', new Uint8Array(0), {});
    assert.equal((await store.get('empty')).bytes.byteLength, 0);
    const odd = '../ëtc/passwd %2F .hidden';
    await store.put(odd, payload(5, 3), {});
    assert.deepEqual((await store.get(odd)).bytes, payload(5, 3));
    assert.ok((await store.list()).some((e) => e.name === odd));
    await store.close();
  });

  test(`${label}: put copies the caller's bytes`, async () => {
    const store = await makeStore();
    const bytes = payload(100, 1);
    await store.put('c', bytes, {});
    bytes[0] ^= 0xff;
    assert.deepEqual((await store.get('c')).bytes, payload(100, 1));
    await store.close();
  });

  test(`${label}: overwrite replaces bytes and metadata`, async () => {
    const store = await makeStore();
    await store.put('n', payload(9000, 1), { notebook: 'a', createdMs: 1 });
    await store.put('n', payload(300, 2), { notebook: 'b', createdMs: 2 });
    const got = await store.get('n');
    assert.deepEqual(got.bytes, payload(300, 2));
    assert.equal(got.meta.notebook, 'b');
    assert.equal((await store.list()).length, 1);
    assert.deepEqual(await store.stats(), { checkpoints: 1, records: 1, recordBytes: 300 }, 'the old bytes are freed');
    await store.close();
  });

  test(`${label}: list is newest first, filters by notebook, carries the cell that led to it`, async () => {
    const store = await makeStore();
    const cell = { executionCount: 7, firstLine: 'df = load()', timeMs: 1234 };
    await store.put('old', payload(10, 1), { notebook: 'a', createdMs: 100 });
    await store.put('new', payload(10, 2), { notebook: 'a', createdMs: 300, cell });
    await store.put('mid', payload(10, 3), { notebook: 'b', createdMs: 200 });
    await store.put('none', payload(10, 4), { createdMs: 50 });
    assert.deepEqual((await store.list()).map((e) => e.name), ['new', 'mid', 'old', 'none']);
    assert.deepEqual((await store.list({ notebook: 'a' })).map((e) => e.name), ['new', 'old']);
    assert.deepEqual((await store.list({ notebook: 'zzz' })), []);
    const [first] = await store.list();
    assert.equal(first.meta.size, 10);
    assert.equal(first.meta.createdMs, 300);
    assert.deepEqual(first.meta.cell, cell);
    await store.close();
  });

  test(`${label}: delete says whether the checkpoint existed`, async () => {
    const store = await makeStore();
    await store.put('d', payload(50, 1), {});
    assert.equal(await store.delete('d'), true);
    assert.equal(await store.get('d'), null);
    assert.equal(await store.delete('d'), false);
    assert.deepEqual(await store.list(), []);
    assert.deepEqual(await store.stats(), { checkpoints: 0, records: 0, recordBytes: 0 });
    await store.close();
  });

  test(`${label}: invalid names get a clear error`, async () => {
    const store = await makeStore();
    for (const bad of ['', 'a\u0000b', 'line\nbreak', 'x'.repeat(201), 42, null]) {
      await assert.rejects(store.put(bad, payload(1), {}), /Invalid checkpoint name/);
      await assert.rejects(store.get(bad), /Invalid checkpoint name/);
    }
    await store.close();
  });

  // ---- content-addressed records ------------------------------------------------------------

  test(`${label}: a format-2 file is cut into head, records and tail; shared records are stored once`, async () => {
    const store = await makeStore();
    const big = payload(70_000, 1); const small = payload(500, 2); const changed = payload(800, 3);
    const a = formatTwo([big, small], { seed: 1 });
    const b = formatTwo([big, changed], { seed: 2 });
    await store.put('a', a.bytes, { notebook: 'n', createdMs: 1 });
    await store.put('b', b.bytes, { notebook: 'n', createdMs: 2 });
    assert.deepEqual((await store.get('a')).bytes, a.bytes);
    assert.deepEqual((await store.get('b')).bytes, b.bytes);
    const entry = await store.getEntry('b');
    assert.deepEqual(entry.records, b.records.map((r) => ({ key: expectedKey(r), length: r.byteLength })));
    assert.deepEqual(entry.head, b.bytes.subarray(0, 64));
    assert.deepEqual(entry.tail, b.bytes.subarray(64 + b.records[0].byteLength + b.records[1].byteLength));
    assert.equal(entry.meta.size, b.bytes.byteLength);
    assert.equal((await store.getEntry('a')).records[0].key, entry.records[0].key, 'the unchanged record has one key');
    const stats = await store.stats();
    assert.equal(stats.records, 3, 'big once, small, changed');
    assert.equal(stats.recordBytes, a.records[0].byteLength + a.records[1].byteLength + b.records[1].byteLength);
    const [r0] = await store.readRecords([entry.records[0].key]);
    assert.deepEqual(r0, b.records[0]);
    await store.close();
  });

  test(`${label}: the core's parts go to the store as they are written; an unchanged record is reused by key`, async () => {
    const store = await makeStore();
    const blob = payload(200_000, 3);
    // Writes a checkpoint of two records (the first with an out-of-band buffer) and hands its
    // parts to the store: each record's pieces (core bytes, the caller's buffer, padding) as
    // one record, or, for a record already stored, only its key and length.
    const write = async (name, createdMs, changed, reuse) => {
      const w = core.newWriter({ producer: 'store test', python: '3', createdMs });
      const parts = [];
      if (reuse) w.addStoredRecord(reuse.length);
      else { w.beginRecord(['big']); w.append(payload(100, 1)); w.addBuffer(blob); w.endRecord('pickle'); }
      parts.push(...w.take());
      w.beginRecord(['small']); w.append(payload(50, changed)); w.endRecord('pickle');
      parts.push(...w.finish({ join: false }));
      const lengths = [w.recordLength(0), w.recordLength(1)];
      w.free();
      const pieces = [[], []];
      for (const p of parts) if (typeof p.record === 'number' && p.kind !== 'stored') pieces[p.record].push(p.bytes);
      const records = [];
      for (const i of [0, 1]) {
        records.push(i === 0 && reuse ? reuse : { key: (await store.putRecords([pieces[i]]))[0], length: lengths[i] });
      }
      await store.commit(name, { head: parts.find((p) => p.record === 'head').bytes, records,
        tail: parts.find((p) => p.record === 'tail').bytes, meta: { notebook: 'nb', createdMs } });
      return records;
    };
    const r1 = await write('one', 1, 7, null);
    const r2 = await write('two', 2, 8, r1[0]); // the big record unchanged: not sent again
    assert.equal(r2[0].key, r1[0].key);
    assert.notEqual(r2[1].key, r1[1].key);
    for (const name of ['one', 'two']) {
      const { bytes } = await store.get(name);
      const report = core.inspect(bytes, { validate: false }); // every CRC; the streams are not pickles
      assert.equal(report.ok, true, JSON.stringify(report.error ?? report.records.find((r) => !r.ok)));
      assert.deepEqual(report.records.map((r) => r.names), [['big'], ['small']]);
      assert.deepEqual(report.records[0].buffers.map((b) => b.length), [blob.byteLength]);
      const entry = await store.getEntry(name);
      assert.deepEqual(entry.records.map((r) => r.length), report.records.map((r) => r.record_length));
      assert.deepEqual(splitKeys(bytes), await Promise.all(entry.records.map((r) => r.key)));
    }
    assert.equal((await store.stats()).records, 3);
    await store.close();
  });

  test(`${label}: delete frees only what no other checkpoint uses`, async () => {
    const store = await makeStore();
    const shared = payload(3000, 1);
    const a = formatTwo([shared, payload(100, 2)], { seed: 1 });
    const b = formatTwo([shared, payload(200, 3)], { seed: 2 });
    await store.put('a', a.bytes, {});
    await store.put('b', b.bytes, {});
    assert.equal((await store.stats()).records, 3);
    await store.delete('a');
    assert.equal((await store.stats()).records, 2, 'a\'s own record is freed, the shared one stays');
    assert.deepEqual((await store.get('b')).bytes, b.bytes);
    await store.delete('b');
    assert.deepEqual(await store.stats(), { checkpoints: 0, records: 0, recordBytes: 0 });
    await store.close();
  });

  test(`${label}: a format-1 file or any other bytes are kept as one record`, async () => {
    const store = await makeStore();
    const v1ish = payload(5000, 4);
    v1ish.set([0x89, 0x45, 0x4c, 0x43, 0x4b, 0x50, 0x54, 0x0a, 1, 0]);
    await store.put('one', v1ish, {});
    const entry = await store.getEntry('one');
    assert.equal(entry.head.byteLength, 0);
    assert.equal(entry.tail.byteLength, 0);
    assert.deepEqual(entry.records, [{ key: expectedKey(v1ish), length: 5000 }]);
    // A format-2 footer whose index points outside the file is not cut either.
    const bad = formatTwo([payload(100, 1)]).bytes;
    new DataView(bad.buffer).setBigUint64(bad.byteLength - 24, 10n ** 12n, true);
    await store.put('bad', bad, {});
    assert.equal((await store.getEntry('bad')).records.length, 1);
    assert.deepEqual((await store.get('bad')).bytes, bad);
    await store.close();
  });

  test(`${label}: putRecords takes records in pieces (views, not copies) and is idempotent`, async () => {
    const store = await makeStore();
    const big = payload(9 * 1024 * 1024 + 17, 5); // three 4 MiB key leaves, the middle one split
    const pieces = [big.subarray(0, 100), big.subarray(100, 5 * 1024 * 1024), big.subarray(5 * 1024 * 1024)];
    const [k1, k2] = await store.putRecords([pieces, big]);
    assert.equal(k1, expectedKey(big));
    assert.equal(k2, k1);
    assert.deepEqual(await store.putRecords([big]), [k1]);
    assert.deepEqual(await store.hasRecords([k1, 'f'.repeat(64)]), [true, false]);
    const head = payload(64, 9); const tail = payload(40, 8);
    await store.commit('streamed', { head, records: [{ key: k1, length: big.byteLength }], tail, meta: { notebook: 'nb' } });
    const got = await store.get('streamed');
    assert.equal(got.bytes.byteLength, 64 + big.byteLength + 40);
    assert.deepEqual(got.bytes.subarray(0, 64), head);
    assert.ok(Buffer.from(got.bytes.subarray(64, 64 + big.byteLength)).equals(Buffer.from(big)));
    assert.deepEqual(got.bytes.subarray(64 + big.byteLength), tail);
    assert.equal(got.meta.size, got.bytes.byteLength);
    assert.equal(got.meta.notebook, 'nb');
    const [back] = await store.readRecords([k1]);
    assert.ok(Buffer.from(back).equals(Buffer.from(big)));
    await store.close();
  });

  test(`${label}: putRecords takes live views, whose memory may move between two uses`, async () => {
    const store = await makeStore();
    assert.equal(store.livePieces, true);
    const big = payload(9 * 1024 * 1024 + 17, 6);
    // Like Pyodide's heap growing: every view() gives the bytes in a NEW buffer and detaches
    // the one it gave before, so a store that kept a view across an await would read nothing.
    const moving = (bytes) => {
      let last = null;
      return {
        byteLength: bytes.byteLength,
        calls: 0,
        view() {
          this.calls += 1;
          if (last) structuredClone(last.buffer, { transfer: [last.buffer] });
          last = bytes.slice();
          return last;
        },
      };
    };
    const live = [moving(big.subarray(0, 5 * 1024 * 1024)), moving(big.subarray(5 * 1024 * 1024))];
    const plain = payload(1000, 7);
    const [k1, k2] = await store.putRecords([[live[0], plain.subarray(0, 10), live[1]], moving(plain)]);
    const whole = new Uint8Array(big.byteLength + 10);
    whole.set(big.subarray(0, 5 * 1024 * 1024)); whole.set(plain.subarray(0, 10), 5 * 1024 * 1024);
    whole.set(big.subarray(5 * 1024 * 1024), 5 * 1024 * 1024 + 10);
    assert.equal(k1, expectedKey(whole));
    assert.equal(k2, expectedKey(plain));
    assert.ok(live.every((p) => p.calls >= 2), 'each live view was asked again for each use');
    const [back, back2] = await store.readRecords([k1, k2]);
    assert.ok(Buffer.from(back).equals(Buffer.from(whole)));
    assert.ok(Buffer.from(back2).equals(Buffer.from(plain)));
    // A live view whose memory went away (it gives fewer bytes than it said) is refused plainly.
    const gone = { byteLength: 100, view: () => new Uint8Array(0) };
    await assert.rejects(store.putRecords([gone]), /live view of a record gave 0 bytes instead of 100.*Save again/);
    await store.close();
  });

  test(`${label}: commit refuses an entry naming a record that is not stored, and changes nothing`, async () => {
    const store = await makeStore();
    await store.put('keep', payload(10, 1), {});
    const [key] = await store.putRecords([payload(64, 2)]);
    const err = await store.commit('keep', { records: [{ key, length: 64 }, { key: 'a'.repeat(64), length: 64 }], meta: {} })
      .then(() => null, (e) => e);
    assert.ok(err, 'commit must fail');
    assert.equal(err.code, 'missing-record');
    assert.match(err.message, /Cannot save checkpoint "keep": 1 of its records .* are not in the store/);
    assert.deepEqual((await store.get('keep')).bytes, payload(10, 1));
    await assert.rejects(store.commit('x', { records: [{ key: 'nothex', length: 1 }] }), /record 0 must be \{key: 64 lowercase hex/);
    await assert.rejects(store.readRecords(['b'.repeat(64)]), (e) => e.code === 'missing-record');
    await store.close();
  });

  test(`${label}: a record pinned by a writer survives a delete until the writer commits`, async () => {
    const store = await makeStore();
    const shared = payload(1000, 1);
    await store.put('old', formatTwo([shared]).bytes, {});
    // A second writer finds the record already stored (putRecords does not write it again) ...
    const [key] = await store.putRecords([formatTwo([shared]).records[0]]);
    // ... and before it commits, the only checkpoint counting that record is deleted.
    await store.delete('old');
    assert.deepEqual(await store.hasRecords([key]), [true], 'pinned: not freed by the delete');
    await store.commit('new', { records: [{ key, length: 1024 }], meta: {} });
    await store.delete('new');
    assert.equal((await store.stats()).records, 0, 'once committed and deleted, it is freed at once');
    await store.close();
  });

  test(`${label}: sweep frees records of abandoned writes, never used ones; discardRecords gives them back`, async () => {
    const store = await makeStore({ orphanGraceMs: 0 });
    await store.put('kept', formatTwo([payload(100, 1)]).bytes, {});
    const keys = await store.putRecords([payload(200, 2), payload(300, 3)]);
    assert.equal((await store.stats()).records, 3);
    assert.equal(await store.discardRecords([keys[0], (await store.getEntry('kept')).records[0].key]), 1, 'only the unused one');
    await new Promise((r) => { setTimeout(r, 5); });
    assert.equal(await store.sweep(), 1);
    assert.deepEqual(await store.stats(), { checkpoints: 1, records: 1, recordBytes: 128 });
    assert.deepEqual((await store.get('kept')).bytes, formatTwo([payload(100, 1)]).bytes);
    await store.close();
  });

  test(`${label}: a record damaged in storage is found by verifyRecords and repaired by the next write of its bytes`, async () => {
    const store = await makeStore();
    const shared = payload(5000, 1);
    const a = formatTwo([shared, payload(10, 2)], { seed: 1 });
    const b = formatTwo([shared, payload(20, 3)], { seed: 2 });
    await store.put('a', a.bytes, {});
    await store.put('b', b.bytes, {});
    const key = (await store.getEntry('a')).records[0].key;
    assert.deepEqual(await store.verifyRecords([key]), { checked: 1, damaged: [] });
    await damageRecord(store, key); // one byte of the shared record changes where it is stored
    assert.notDeepEqual((await store.get('b')).bytes, b.bytes, 'both checkpoints share the damage');
    assert.deepEqual(await store.verifyRecords([key, 'c'.repeat(64)]), { checked: 2, damaged: [key] });
    assert.deepEqual(await store.hasRecords([key]), [false], 'a writer must send it again');
    await store.put('a', a.bytes, {}); // the true bytes again (what the next checkpoint does)
    assert.deepEqual((await store.get('a')).bytes, a.bytes);
    assert.deepEqual((await store.get('b')).bytes, b.bytes, 'repaired for every checkpoint using it');
    assert.deepEqual(await store.verifyRecords([key]), { checked: 1, damaged: [] });
    assert.deepEqual(await store.hasRecords([key]), [true]);
    await store.close();
  });

  // ---- retention -----------------------------------------------------------------------------

  test(`${label}: retention keeps the last N per notebook`, async () => {
    const store = await makeStore({ keepLast: 2 });
    for (let i = 1; i <= 4; i += 1) await store.put(`a${i}`, payload(10, i), { notebook: 'a', createdMs: i });
    await store.put('b1', payload(10, 9), { notebook: 'b', createdMs: 0 });
    await store.put('manual', payload(10, 9), { createdMs: -1 }); // no notebook: never expired
    await store.put('manual2', payload(10, 9), { createdMs: -2 });
    await store.put('manual3', payload(10, 9), { createdMs: -3 });
    assert.deepEqual((await store.list()).map((e) => e.name), ['a4', 'a3', 'b1', 'manual', 'manual2', 'manual3']);
    assert.equal(await store.get('a1'), null);
    // Overwriting an existing name counts once, not twice.
    await store.put('a3', payload(10, 5), { notebook: 'a', createdMs: 10 });
    assert.deepEqual((await store.list({ notebook: 'a' })).map((e) => e.name), ['a3', 'a4']);
    await store.close();
  });

  test(`${label}: retention keeps one per hour and stays within a byte budget`, async () => {
    const H = 3600 * 1000;
    const store = await makeStore();
    await store.setRetention('h', { keepLast: 1, keepHourly: 2 });
    const times = { h1a: 10 * H + 1, h1b: 10 * H + 2, h2a: 11 * H + 1, h2b: 11 * H + 5, h3a: 12 * H + 1 };
    for (const [name, t] of Object.entries(times)) await store.put(name, payload(10, t % 97), { notebook: 'h', createdMs: t });
    // newest (h3a, also the newest of hour 12), and the newest of hour 11 (h2b)
    assert.deepEqual((await store.list({ notebook: 'h' })).map((e) => e.name), ['h3a', 'h2b']);
    assert.deepEqual(await store.getRetention('h'), { keepLast: 1, keepHourly: 2 });

    // A budget counts records once: three checkpoints sharing a 4096-byte record, each with
    // its own 128 bytes, need 4096 + 3 * (128 + 64 + 76) bytes.
    const shared = payload(4096, 1);
    const file = (i) => formatTwo([shared, payload(100, i)], { seed: i }).bytes;
    await store.setRetention(null, { maxBytes: 4096 + 2 * (128 + 64 + 76) });
    for (let i = 1; i <= 3; i += 1) await store.put(`m${i}`, file(i), { notebook: 'budget', createdMs: i });
    assert.deepEqual((await store.list({ notebook: 'budget' })).map((e) => e.name), ['m3', 'm2']);
    // The checkpoint just committed is kept even when it alone exceeds the budget.
    await store.commit('huge', { records: [{ key: (await store.putRecords([payload(9000, 7)]))[0], length: 9000 }],
      meta: { notebook: 'budget', createdMs: 9 } });
    assert.deepEqual((await store.list({ notebook: 'budget' })).map((e) => e.name), ['huge']);
    assert.equal((await store.stats()).records, 3, 'the expired checkpoints\' records are freed');
    // Per notebook: 'h' keeps its own setting, the default applies elsewhere.
    assert.deepEqual(await store.getRetention('other'), { maxBytes: 4096 + 2 * (128 + 64 + 76) });
    await store.setRetention(null, null);
    // commit() can also be given the policy for this one write.
    for (let i = 1; i <= 3; i += 1) await store.put(`o${i}`, payload(10, i), { notebook: 'o', createdMs: i });
    await store.commit('o4', { records: [], meta: { notebook: 'o', createdMs: 4 } }, { retention: { keepLast: 2 } });
    assert.deepEqual((await store.list({ notebook: 'o' })).map((e) => e.name), ['o4', 'o3']);
    await assert.rejects(store.setRetention('h', { keepLast: 0 }), /keepLast must be a whole number >= 1/);
    await assert.rejects(store.setRetention('h', { keepDaily: 3 }), /Unknown retention setting keepDaily/);
    await store.close();
  });

  test(`${label}: retention never removes a checkpoint whose meta.keep is true (one a person asked for)`, async () => {
    const store = await makeStore({ keepLast: 2 });
    await store.put('by hand', payload(10, 1), { notebook: 'k', createdMs: 1, keep: true });
    for (let i = 2; i <= 5; i += 1) await store.put(`auto${i}`, payload(10, i), { notebook: 'k', createdMs: i, auto: true });
    assert.deepEqual((await store.list({ notebook: 'k' })).map((e) => e.name), ['auto5', 'auto4', 'by hand']);
    // it still counts against a byte budget: the automatic ones older than the budget go
    await store.setRetention('k', { maxBytes: 2 * 10 + 1 });
    await store.put('auto6', payload(10, 6), { notebook: 'k', createdMs: 6, auto: true });
    const left = (await store.list({ notebook: 'k' })).map((e) => e.name);
    assert.ok(left.includes('by hand') && left.includes('auto6') && !left.includes('auto4'), left.join(', '));
    await store.close();
  });

  // ---- writers never collide -------------------------------------------------------------------

  test(`${label}: two writers of one name both succeed; what is stored is the write that finished last`, async () => {
    const store = await makeStore();
    const first = payload(6 * 1024 * 1024, 1);
    const second = payload(100, 2);
    const order = [];
    await Promise.all([
      store.put('same', first, { createdMs: 1 }).then(() => order.push(first)),
      store.put('same', second, { createdMs: 2 }).then(() => order.push(second)),
    ]);
    assert.equal(order.length, 2);
    const got = await store.get('same');
    assert.ok(Buffer.from(got.bytes).equals(Buffer.from(order[1])));
    assert.equal(got.meta.createdMs, order[1] === first ? 1 : 2, 'bytes and metadata of the same write');
    assert.equal((await store.stats()).records, 1, 'the other write\'s record is freed');
    await store.close();
  });

  test(`${label}: lock(name) keeps streamed writes of one name from interleaving`, async () => {
    const store = await makeStore();
    const events = [];
    const writer = async (who, seed) => {
      const lock = await store.lock('streamed');
      try {
        events.push(`${who} locked`);
        const [key] = await store.putRecords([payload(4096, seed)]);
        await new Promise((r) => { setTimeout(r, 20); });
        await store.commit('streamed', { records: [{ key, length: 4096 }], meta: { by: who } });
        events.push(`${who} committed`);
      } finally {
        await lock.release();
      }
    };
    await Promise.all([writer('A', 1), writer('B', 2)]);
    const firstWho = events[0][0];
    const secondWho = firstWho === 'A' ? 'B' : 'A';
    assert.deepEqual(events, [`${firstWho} locked`, `${firstWho} committed`, `${secondWho} locked`, `${secondWho} committed`]);
    assert.equal((await store.get('streamed')).meta.by, secondWho);
    await store.close();
  });

  test(`${label}: a writer that cannot get the lock in time is told plainly`, async () => {
    const store = await makeStore({ lockTimeoutMs: 30 });
    const held = await store.lock('busy one');
    const err = await store.put('busy one', payload(10), {}).then(() => null, (e) => e);
    assert.ok(err, 'put must fail while another writer holds the name');
    assert.equal(err.code, 'busy');
    assert.match(err.message, /Checkpoint "busy one" is being saved by .*; waited 0\.03 s for it to finish\. Try again/);
    assert.equal(await store.get('busy one'), null);
    await held.release();
    await store.put('busy one', payload(10), {});
    assert.deepEqual((await store.get('busy one')).bytes, payload(10));
    await store.close();
  });
}
