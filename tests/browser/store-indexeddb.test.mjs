// IndexedDBStore in real Chromium: the browser's own IndexedDB, Web Locks, quota and crashes.
// Pages of one origin (the test server) share one database, as tabs do.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let srv;
let browser;

const MOUNTS = {
  '/js/': path.join(ROOT, 'js'),
  '/page/': path.join(ROOT, 'tests/browser/store-page'),
  '/v1/': path.join(ROOT, 'tests/node/store-fixtures/v1'),
  '/v2/': path.join(ROOT, 'tests/node/store-fixtures/v2'),
};

before(async () => {
  srv = await startTestServer({ mounts: MOUNTS });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await srv?.close();
});

/** CPU ticks used so far by each renderer process of OUR Chromium (its --user-data-dir). */
function rendererTicks() {
  const out = new Map();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      // Zygote-forked processes rewrite their command line into one space-separated string.
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/);
      if (!args.includes('--type=renderer') || !args.includes(`--user-data-dir=${browser.userDataDir}`)) continue;
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(pid), Number(fields[11]) + Number(fields[12])); // utime + stime
    } catch { /* gone meanwhile */ }
  }
  return out;
}

/** Kills (SIGKILL) the one renderer of our Chromium that is spinning: a tab made to hang. */
async function killSpinningRenderer() {
  // Half-second windows until one renderer clearly spins (on a loaded machine a spinning tab
  // may get little CPU in one window); up to a minute, then the last window is the evidence.
  let spent = [];
  for (let window = 0; window < 120; window++) {
    const before = rendererTicks();
    await new Promise((r) => { setTimeout(r, 500); });
    spent = [...rendererTicks()].map(([pid, t]) => [pid, t - (before.get(pid) ?? t)]).sort((x, y) => y[1] - x[1]);
    if (spent.length && spent[0][1] >= 20 && (spent.length === 1 || spent[1][1] < spent[0][1] / 4)) {
      process.kill(spent[0][0], 'SIGKILL');
      return;
    }
  }
  assert.fail(`one renderer must be spinning: ${JSON.stringify(spent)}`);
}

async function openPage() {
  const page = await browser.context.newPage();
  await page.goto(new URL('/page/index.html', srv.url).href);
  return page;
}

test('records shared between checkpoints, deletes and retention in real IndexedDB', async () => {
  const page = await openPage();
  const out = await page.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const store = new IndexedDBStore({ dbName: 'basics', chunkSize: 1 << 16, keepLast: 2 });
    const shared = h.payload(300_000, 1);
    const files = [1, 2, 3].map((i) => h.formatTwo([shared, h.payload(1000, i + 1)], i));
    for (const [i, f] of files.entries()) await store.put(`cp${i}`, f, { notebook: 'n', createdMs: i });
    const listed = (await store.list()).map((e) => e.name);
    const back = await store.get('cp2');
    const stats = await store.stats();
    const issues = await h.problems(store, { cp1: [files[1]], cp2: [files[2]] });
    // One bit of the shared record flips inside IndexedDB: found, then repaired by a write.
    const key = (await store.getEntry('cp1')).records[0].key;
    const db = await store._open();
    await new Promise((resolve) => {
      const tx = db.transaction('recordChunks', 'readwrite');
      const g = tx.objectStore('recordChunks').get([key, 2]);
      g.onsuccess = () => { g.result.data[7] ^= 1; tx.objectStore('recordChunks').put(g.result); };
      tx.oncomplete = resolve;
    });
    const found = await store.verifyRecords([key]);
    await store.put('cp1', files[1], { notebook: 'n', createdMs: 1 });
    const repaired = h.sameBytes((await store.get('cp2')).bytes, files[2]);
    // Another writer (its own store object, as in another tab) finds cp2's records: pinned,
    // they survive the deletes until it commits; after its commit a delete frees them at once.
    const writer = new IndexedDBStore({ dbName: 'basics', chunkSize: 1 << 16 });
    const entry2 = await store.getEntry('cp2');
    const has = await writer.hasRecords(entry2.records.map((r) => r.key));
    await store.delete('cp1'); await store.delete('cp2');
    const pinned = (await store.stats()).records;
    await writer.commit('cp3', { ...entry2, meta: {} });
    const kept = h.sameBytes((await store.get('cp3')).bytes, files[2]);
    await writer.delete('cp3'); await writer.close();
    const empty = await store.stats();
    await store.close();
    return { listed, same: h.sameBytes(back.bytes, files[2]), stats, issues, empty, found: found.damaged.length, repaired, has, pinned, kept };
  });
  assert.deepEqual(out.listed, ['cp2', 'cp1'], 'keepLast 2 expired cp0');
  assert.equal(out.same, true);
  assert.deepEqual(out.stats, { checkpoints: 2, records: 3, recordBytes: 300_032 + 2 * 1024 }, 'the shared record once');
  assert.deepEqual(out.issues, []);
  assert.equal(out.found, 1, 'verifyRecords finds the flipped bit');
  assert.equal(out.repaired, true, 'a write of the true bytes repairs the other checkpoint too');
  assert.deepEqual(out.has, [true, true]);
  assert.equal(out.pinned, 2, 'records found by a writer survive the deletes');
  assert.equal(out.kept, true, 'its commit of them stands');
  assert.deepEqual(out.empty, { checkpoints: 0, records: 0, recordBytes: 0 }, 'committed, then deleted: freed at once');
  await page.close();
});

test('a record swapped behind the store\'s back (same length) is damage on read: none of its bytes come out', async () => {
  const page = await openPage();
  const out = await page.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const store = new IndexedDBStore({ dbName: 'swapped', chunkSize: 1 << 16 });
    const file = h.formatTwo([h.payload(200_000, 1), h.payload(1000, 2)], 1);
    await store.put('own', file, {}, { sign: true });
    const entry = await store.getEntry('own');
    const key = entry.records[0].key;
    // another record of the same length, written where the store keeps this one
    const hostile = new TextEncoder().encode('HOSTILE-RECORD '.repeat(4));
    const db = await store._open();
    await new Promise((resolve, reject) => {
      const tx = db.transaction('recordChunks', 'readwrite');
      const g = tx.objectStore('recordChunks').get([key, 1]);
      g.onsuccess = () => { g.result.data.set(hostile, 100); tx.objectStore('recordChunks').put(g.result); };
      tx.oncomplete = resolve; tx.onerror = () => reject(tx.error);
    });
    const got = await store.get('own');
    const text = new TextDecoder('latin1').decode(got.bytes);
    const [read] = await store.readRecords([key]);
    const has = await store.hasRecords([key]);
    await store.put('again', file, {}, { sign: true }); // the true bytes again: repaired
    const repaired = h.sameBytes((await store.get('own')).bytes, file);
    await store.close();
    return { state: entry.signature.state, damaged: got.damaged, key, leaked: text.includes('HOSTILE-RECORD'),
      readLeaked: new TextDecoder('latin1').decode(read).includes('HOSTILE-RECORD'), has, repaired };
  });
  assert.equal(out.state, 'valid');
  assert.deepEqual(out.damaged, [{ key: out.key, record: 0 }]);
  assert.equal(out.leaked, false, 'get() hands out no byte of the swapped record');
  assert.equal(out.readLeaked, false, 'nor does readRecords()');
  assert.deepEqual(out.has, [false], 'marked: no writer reuses it');
  assert.equal(out.repaired, true);
  await page.close();
});

test('upgrade: checkpoints saved by the schema-v1 store (0.1) survive, byte for byte', async () => {
  const page = await openPage();
  const out = await page.evaluate(async () => {
    const h = await import('/page/checks.mjs');
    const v1 = new (await import('/v1/indexeddb.mjs')).IndexedDBStore({ dbName: 'upgrade', chunkSize: 1 << 16 });
    const saved = { big: h.payload(500_000, 1), small: h.payload(100, 2), twin: h.payload(100, 2) };
    for (const [name, bytes] of Object.entries(saved)) await v1.put(name, bytes, { notebook: 'a.ipynb', createdMs: bytes.byteLength, names: [name] });
    const before = await v1.list();
    await v1.close();
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const store = new IndexedDBStore({ dbName: 'upgrade' });
    const after = await store.list();
    const same = [];
    for (const [name, bytes] of Object.entries(saved)) same.push(h.sameBytes((await store.get(name)).bytes, bytes));
    const raw = await h.rawDump('upgrade');
    const issues = await h.problems(store, Object.fromEntries(Object.entries(saved).map(([k, v]) => [k, [v]])));
    await store.close();
    return { before, after, same, v1Chunks: raw.chunks.length, records: raw.records.length, issues };
  });
  assert.deepEqual(out.after, out.before, 'the same list and metadata');
  assert.deepEqual(out.same, [true, true, true]);
  assert.equal(out.v1Chunks, 0);
  assert.equal(out.records, 2, '"small" and "twin" share their record');
  assert.deepEqual(out.issues, []);
  await page.close();
});

test('upgrade: checkpoints saved by the schema-v2 store survive as v3, byte for byte, signatures valid', async () => {
  const page = await openPage();
  const out = await page.evaluate(async () => {
    const h = await import('/page/checks.mjs');
    const v2 = new (await import('/v2/indexeddb.mjs')).IndexedDBStore({ dbName: 'upgrade-v2', chunkSize: 1 << 16 });
    const shared = h.payload(150_000, 1);
    const saved = { a: h.formatTwo([shared, h.payload(700, 2)], 1), b: h.formatTwo([shared, h.payload(900, 3)], 2) };
    await v2.put('a', saved.a, { notebook: 'a.ipynb', createdMs: 1 }, { sign: true });
    await v2.put('b', saved.b, { createdMs: 2 }, { sign: true });
    const before = await v2.list();
    await v2.close();
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const store = new IndexedDBStore({ dbName: 'upgrade-v2' });
    const after = await store.list();
    const same = []; const states = [];
    for (const [name, bytes] of Object.entries(saved)) {
      same.push(h.sameBytes((await store.get(name)).bytes, bytes));
      states.push((await store.getEntry(name)).signature.state);
    }
    const issues = await h.problems(store, Object.fromEntries(Object.entries(saved).map(([k, v]) => [k, [v]])));
    await store.delete('b');
    const aStill = h.sameBytes((await store.get('a')).bytes, saved.a);
    await store.close();
    return { before, after, same, states, issues, aStill };
  });
  assert.deepEqual(out.after, out.before, 'the same list and metadata');
  assert.deepEqual(out.same, [true, true]);
  assert.deepEqual(out.states, ['valid', 'valid']);
  assert.deepEqual(out.issues, []);
  assert.equal(out.aStill, true, 'deleting "b" keeps the record "a" shares with it');
  await page.close();
});

test('the transaction aborted at each write: every listed checkpoint stays whole, the counts exact', async () => {
  const page = await openPage();
  const out = await page.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const shared = h.payload(150_000, 1);
    const v = { old: h.formatTwo([shared, h.payload(70_000, 2)], 1), neu: h.formatTwo([shared, h.payload(90_000, 3)], 2),
      other: h.formatTwo([shared, h.payload(500, 4)], 3) };
    const versions = { nb: [v.old, v.neu], other: [v.other] };
    const put = IDBObjectStore.prototype.put;
    const report = [];
    for (let failAt = 1; failAt < 200; failAt += 1) {
      const dbName = `abort-${failAt}`;
      const store = new IndexedDBStore({ dbName, chunkSize: 1 << 15, orphanGraceMs: 0 });
      await store.put('nb', v.old, { createdMs: 1 });
      await store.put('other', v.other, { createdMs: 2 });
      let writes = 0;
      IDBObjectStore.prototype.put = function aborting(...args) {
        writes += 1;
        if (writes === failAt) this.transaction.abort();
        return put.apply(this, args);
      };
      let failed = null;
      try {
        await store.put('nb', v.neu, { createdMs: 3 });         // overwrite: frees the old record
        await store.delete('other');
      } catch (err) { failed = err.message; } finally { IDBObjectStore.prototype.put = put; }
      await store.close();
      const again = new IndexedDBStore({ dbName, orphanGraceMs: 0 });
      const issues = await h.problems(again, versions);
      await again.sweep();
      const unused = h.unusedRows(await h.rawDump(dbName)).length;
      const names = (await again.list()).map((e) => e.name);
      await again.close();
      await new Promise((r) => { const d = indexedDB.deleteDatabase(dbName); d.onsuccess = r; d.onerror = r; });
      report.push({ failAt, failed, issues, unused, names });
      if (!failed) break;
    }
    return report;
  });
  const last = out.at(-1);
  assert.equal(last.failed, null, 'the run without a failure ends the loop');
  assert.deepEqual(last.names, ['nb']);
  assert.ok(out.length > 10, `${out.length - 1} writes, each aborted once`);
  for (const r of out) {
    assert.deepEqual(r.issues, [], `abort at write ${r.failAt}`);
    assert.equal(r.unused, 0, `abort at write ${r.failAt}: nothing unused after the sweep`);
    if (r.failed) assert.match(r.failed, /failed \(.*\); (the previous checkpoint of that name, if any, is unchanged|it is still stored, unchanged)\./);
  }
  await page.close();
});

test('large records in OPFS files (a worker): written, read in the worker and the page, damage, loss, removal', async () => {
  const page = await openPage();
  const started = page.waitForEvent('worker');
  await page.evaluate(() => { window.filesWorker = new Worker('/page/worker.mjs', { type: 'module' }); });
  const worker = await started;
  await worker.evaluate(() => new Promise((resolve) => { (function wait() { if (self.ready) resolve(); else setTimeout(wait, 10); }()); }));
  const inWorker = (fn, arg) => worker.evaluate(fn, arg);
  // the files of the database, as the OPFS holds them: {name: size}
  const files = () => inWorker(async () => {
    const out = {};
    try {
      const root = await navigator.storage.getDirectory();
      const dir = await (await root.getDirectoryHandle('elastic-lite-records')).getDirectoryHandle('db-files');
      for await (const [name, h] of dir.entries()) out[name] = (await h.getFile()).size;
    } catch { /* none yet */ }
    return out;
  });
  const written = await inWorker(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const store = new IndexedDBStore({ dbName: 'files' });
    self.store = store; self.h = h;
    self.big = h.payload((3 << 20) + 5, 7);
    self.file = h.formatTwo([self.big, h.payload(1000, 8)]);
    await store.put('cp', self.file, { createdMs: 1 });
    const entry = await store.getEntry('cp');
    self.keys = entry.records.map((r) => r.key);
    const rows = (await h.rawDump('files')).records.map((r) => ({ file: typeof r.file, chunkCount: r.chunkCount, length: r.length }));
    const back = h.sameBytes((await store.get('cp')).bytes, self.file);
    const [chunks] = await store.readRecordChunks([self.keys[0]]);
    // straight into given memory (a live view, as Python's), in two ranges, checked
    const into = new Uint8Array(entry.records[0].length);
    const half = into.length >> 1;
    const intoOk = await store.readRecordInto(self.keys[0], [{ at: 0, view: into.subarray(0, half) },
      { at: half, view: { byteLength: into.length - half, view: () => into.subarray(half) } }]);
    return { into: intoOk && h.sameBytes(into, self.file.subarray(64, 64 + into.length)), uses: store.files, size: self.file.byteLength, rows, back, chunks: chunks.length, chunkSame: h.sameBytes(chunks[0], self.file.subarray(64, 64 + entry.records[0].length)), issues: await h.problems(store, { cp: [self.file] }) };
  });
  assert.equal(written.uses, true, 'a worker writes record files');
  assert.deepEqual(written.rows.map((r) => r.file).sort(), ['string', 'undefined'], 'the 3 MiB record in a file, the small one in chunks');
  assert.equal(written.rows.find((r) => r.file === 'string').chunkCount, 0);
  assert.equal(written.back, true, 'get() in the worker gives the file back byte for byte');
  assert.deepEqual([written.chunks, written.chunkSame], [1, true], 'readRecordChunks gives the record whole');
  assert.equal(written.into, true, 'readRecordInto reads the file into given memory');
  assert.deepEqual(written.issues, []);
  const first = await files();
  assert.deepEqual(Object.values(first), [(3 << 20) + 64], 'one file, the record (with its padding)');

  // The page (no access handles: it reads files through getFile()) reads the same checkpoint.
  const inPage = await page.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const store = new IndexedDBStore({ dbName: 'files' });
    const got = await store.get('cp');
    await store.close();
    return { uses: store.files, size: got.bytes.byteLength, damaged: got.damaged.length };
  });
  assert.deepEqual(inPage, { uses: false, size: written.size, damaged: 0 });

  // One byte of the file changes behind the store's back: damage, neutralized, then repaired
  // by a write of the true bytes (a new file; the damaged one is removed).
  const damaged = await inWorker(async (name) => {
    const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('elastic-lite-records')).getDirectoryHandle('db-files');
    const hd = await (await dir.getFileHandle(name)).createSyncAccessHandle();
    const one = new Uint8Array(1); hd.read(one, { at: 100 }); one[0] ^= 1; hd.write(one, { at: 100 }); hd.flush(); hd.close();
    const into = await self.store.readRecordInto(self.keys[0], [{ at: 0, view: new Uint8Array(self.big.byteLength + 59) }]);
    const read = await self.store.readRecords([self.keys[0]]);
    const has = await self.store.hasRecords(self.keys);
    await self.store.put('cp', self.file, { createdMs: 2 });
    return { into, damaged: read.damaged, has, back: self.h.sameBytes((await self.store.get('cp')).bytes, self.file) };
  }, Object.keys(first)[0]);
  assert.deepEqual(damaged.damaged, [await inWorker(() => self.keys[0])]);
  assert.deepEqual(damaged.has, [false, true], 'a damaged record is not stored: written again');
  assert.equal(damaged.into, false, 'readRecordInto: the bytes read do not match the key');
  assert.equal(damaged.back, true, 'repaired');
  let now = await files();
  for (let i = 0; i < 100 && Object.keys(now).length !== 1; i += 1) now = await files(); // removal follows the commit
  assert.equal(Object.keys(now).length, 1, 'the damaged file was removed once its replacement was committed');
  assert.notEqual(Object.keys(now)[0], Object.keys(first)[0]);

  // The file removed behind the store's back (as when part of a site's data is cleared): lost.
  const lost = await inWorker(async (name) => {
    const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('elastic-lite-records')).getDirectoryHandle('db-files');
    await dir.removeEntry(name);
    const err = (p) => p.then(() => null, (e) => ({ code: e.code, message: e.message }));
    return {
      list: await self.store.list(),
      get: await err(self.store.get('cp')),
      chunks: await err(self.store.readRecordChunks([self.keys[0]])),
      into: await err(self.store.readRecordInto(self.keys[0], [{ at: 0, view: new Uint8Array(10) }], { check: false })),
      has: await self.store.hasRecords(self.keys),
      // a writer that names the records without asking hasRecords (a point): refused at commit
      commit: await err(self.store.getEntry('cp').then((e) => self.store.commit('cp2', { head: e.head, tail: e.tail, records: e.records, meta: {} }))),
    };
  }, Object.keys(now)[0]);
  assert.deepEqual(lost.list.map((e) => [e.name, e.lost]), [['cp', { missing: 1, records: 2 }]]);
  assert.equal(lost.get.code, 'lost');
  assert.match(lost.get.message, /Checkpoint "cp" is lost: 1 of its 2 records are no longer in this browser's storage/);
  assert.equal(lost.chunks.code, 'missing-record');
  assert.equal(lost.into.code, 'missing-record');
  assert.match(lost.chunks.message, /removed by the browser or cleared/);
  assert.deepEqual(lost.has, [false, true]);
  assert.equal(lost.commit?.code, 'missing-record');
  assert.match(lost.commit.message, /1 of them found damaged or partly removed/);

  // A file of the wrong size is damage (not a crash); delete removes the files; sweep removes a
  // file no row names.
  const rest = await inWorker(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    await self.store.put('cp', self.file, { createdMs: 3 });
    const healed = (await self.store.list())[0].lost ?? null;
    const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('elastic-lite-records')).getDirectoryHandle('db-files');
    const [name] = (await Array.fromAsync(dir.keys()));
    const hd = await (await dir.getFileHandle(name)).createSyncAccessHandle();
    hd.truncate(1000); hd.close();
    const short = await self.store.get('cp').then(() => null, (e) => ({ code: e.code, message: e.message }));
    await self.store.delete('cp');
    const orphan = await (await dir.getFileHandle('rorphan', { create: true })).createSyncAccessHandle();
    orphan.write(new Uint8Array(10)); orphan.close();
    const young = await self.store.sweep().then(() => Array.fromAsync(dir.keys()));
    // a store opening sweeps old orphans by itself (a write that died half-way)
    const opener = new IndexedDBStore({ dbName: 'files', orphanGraceMs: 0 });
    await opener.stats();
    let atOpen = await Array.fromAsync(dir.keys());
    for (let i = 0; i < 2000 && atOpen.length; i += 1) atOpen = await Array.fromAsync(dir.keys());
    const second = await (await dir.getFileHandle('rorphan2', { create: true })).createSyncAccessHandle();
    second.close();
    const sweeper = new IndexedDBStore({ dbName: 'files', orphanGraceMs: 0 });
    await sweeper.stats();
    await sweeper.sweep();
    const old = await Array.fromAsync(dir.keys());
    await opener.close();
    const stats = await self.store.stats();
    await sweeper.close(); await self.store.close();
    return { healed, short, young, atOpen, old, stats };
  });
  assert.equal(rest.healed, null, 'a write of the true bytes makes it whole again');
  assert.equal(rest.short.code, 'corrupted');
  assert.match(rest.short.message, /its file holds 1000 bytes instead of 3145792/);
  assert.ok(rest.young.includes('rorphan'), 'a young file no row names may be a writer\'s: kept');
  assert.deepEqual(rest.atOpen, [], 'an old orphan is swept when a store opens');
  assert.deepEqual(rest.old, [], 'deleted: its file removed; the orphan swept');
  assert.deepEqual(rest.stats, { checkpoints: 0, records: 0, recordBytes: 0 });
  await page.close();
});

test('quota: the browser refuses a write, the message says so, the earlier checkpoint is whole', async () => {
  // Chromium applies a quota override only to an origin whose storage is not open yet: this
  // test gets an origin of its own (another port).
  const own = await startTestServer({ mounts: MOUNTS });
  try {
    const page = await browser.context.newPage();
    const origin = new URL(own.url).origin;
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 6 * 1024 * 1024 });
    await page.goto(`${origin}/page/index.html`);
    const out = await page.evaluate(async () => {
      const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
      const h = await import('/page/checks.mjs');
      const store = new IndexedDBStore({ dbName: 'quota' });
      const first = h.formatTwo([h.noise(1 << 20)]);
      await store.put('q', first, { createdMs: 1 });
      const err = await store.put('q', h.formatTwo([h.noise(16 << 20)]), { createdMs: 2 }).then(() => null, (e) => e);
      const issues = await h.problems(store, { q: [first] });
      const stats = await store.stats();
      await store.close();
      return { name: err?.name, code: err?.code, message: err?.message, needed: err?.needed, issues, stats };
    });
    assert.equal(out.name, 'QuotaExceededError', out.message);
    assert.equal(out.code, 'quota');
    assert.match(out.message, /Not enough browser storage to save checkpoint "q": it needs 16777340 bytes .* Delete old checkpoints/);
    assert.match(out.message, /The previous checkpoint "q", if any, is unchanged/);
    assert.deepEqual(out.issues, []);
    assert.equal(out.stats.records, 1, 'nothing of the refused write is left');
    await page.close();
  } finally {
    await own.close();
  }
});

test('two pages of one origin save one name: both succeed, one after the other; a third is told plainly', async () => {
  const [a, b] = [await openPage(), await openPage()];
  const lockName = 'elastic-lite:two-tabs:nb';
  // Page A saves 24 MiB; page B starts saving the same name while A holds the lock.
  const first = a.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const store = new IndexedDBStore({ dbName: 'two-tabs' });
    await store.put('nb', h.formatTwo([h.payload(24 << 20, 1)]), { by: 'A' });
    return performance.timeOrigin + performance.now();
  });
  const second = b.evaluate(async (lockName) => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    while (!(await navigator.locks.query()).held.some((l) => l.name === lockName)) await new Promise((r) => setTimeout(r, 2));
    const startedWhileHeld = performance.timeOrigin + performance.now();
    const store = new IndexedDBStore({ dbName: 'two-tabs' });
    await store.put('nb', h.formatTwo([h.payload(1000, 2)]), { by: 'B' });
    return { startedWhileHeld, done: performance.timeOrigin + performance.now() };
  }, lockName);
  const [aDone, bTimes] = await Promise.all([first, second]);
  assert.ok(bTimes.startedWhileHeld < aDone, 'B started while A was saving');
  assert.ok(bTimes.done > aDone, 'B finished after A');
  const stored = await b.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const store = new IndexedDBStore({ dbName: 'two-tabs' });
    const got = await store.get('nb');
    const r = { by: got.meta.by, same: h.sameBytes(got.bytes, h.formatTwo([h.payload(1000, 2)])), stats: await store.stats() };
    await store.close();
    return r;
  });
  assert.deepEqual(stored, { by: 'B', same: true, stats: { checkpoints: 1, records: 1, recordBytes: 1024 } });

  // A holds the name (a long checkpoint); C, with a short timeout, gets a plain "busy" error.
  await a.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    window.held = await new IndexedDBStore({ dbName: 'two-tabs' }).lock('nb');
  });
  const c = await openPage();
  const refused = await c.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const store = new IndexedDBStore({ dbName: 'two-tabs', lockTimeoutMs: 300 });
    return store.put('nb', new Uint8Array(10), {}).then(() => null, (e) => ({ code: e.code, message: e.message }));
  });
  assert.equal(refused.code, 'busy');
  assert.match(refused.message, /Checkpoint "nb" is being saved by another tab, window or process right now; waited 0\.30 s/);
  // A tab that dies gives its lock back: C can save once A is gone.
  await a.close();
  const saved = await c.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const store = new IndexedDBStore({ dbName: 'two-tabs', lockTimeoutMs: 5000 });
    await store.put('nb', new Uint8Array(10), { by: 'C' });
    return (await store.get('nb')).meta.by;
  });
  assert.equal(saved, 'C');
  await b.close(); await c.close();
});

test('a tab that crashes in the middle of a save leaves every checkpoint whole', async () => {
  const a = await openPage();
  await a.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    await new IndexedDBStore({ dbName: 'crash' }).put('nb', h.formatTwo([h.payload(1000, 1)]), { createdMs: 1 });
  });
  // Start a 64 MiB save; at its 8th chunk the page spins (inside the transaction, requests
  // pending) and says so; then its renderer process is killed: the transaction never commits.
  const stuck = new Promise((resolve) => {
    a.on('console', (msg) => { if (msg.text() === 'stuck inside the transaction') resolve(); });
  });
  await a.evaluate(() => {
    window.saving = (async () => {
      const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
      const h = await import('/page/checks.mjs');
      const store = new IndexedDBStore({ dbName: 'crash' });
      const orig = IDBObjectStore.prototype.put;
      let chunks = 0;
      IDBObjectStore.prototype.put = function stopping(...args) {
        if (this.name === 'recordChunks' && ++chunks === 8) {
          console.log('stuck inside the transaction');
          for (;;) { /* until the crash */ }
        }
        return orig.apply(this, args);
      };
      await store.put('nb', h.formatTwo([h.payload(64 << 20, 2)]), { createdMs: 2 });
    })();
  });
  await stuck;
  const crashed = new Promise((resolve) => { a.once('crash', resolve); });
  await killSpinningRenderer();
  await crashed;
  const b = await openPage();
  const out = await b.evaluate(async () => {
    const { IndexedDBStore } = await import('/js/store/indexeddb.mjs');
    const h = await import('/page/checks.mjs');
    const store = new IndexedDBStore({ dbName: 'crash', orphanGraceMs: 0, lockTimeoutMs: 5000 });
    const before = h.formatTwo([h.payload(1000, 1)]);
    const saving = h.formatTwo([h.payload(64 << 20, 2)]);
    // Whole as it was, or whole as it was being saved (if the crash came after the commit).
    const issues = await h.problems(store, { nb: [before, saving] });
    const which = h.sameBytes((await store.get('nb')).bytes, before) ? 'before' : 'saving';
    await store.sweep();
    const stats = await store.stats();
    await store.put('nb', h.formatTwo([h.payload(10, 3)]), { createdMs: 3 }); // its lock was given back
    return { issues, which, stats, after: (await store.list()).map((e) => e.meta.createdMs) };
  });
  assert.deepEqual(out.issues, []);
  assert.equal(out.which, 'before', 'the crash came inside the transaction');
  assert.deepEqual(out.stats, { checkpoints: 1, records: 1, recordBytes: 1024 }, 'nothing of the crashed save is left');
  assert.deepEqual(out.after, [3]);
  await b.close();
});
