// In the page (see store-idb.mjs): times raw IndexedDB against IndexedDBStore on the same
// bytes, interleaved, in one page. Every variant gets a database of its own, deleted after.
import { IndexedDBStore, splitContainer, recordKey } from '../js/store/indexeddb.mjs';

const CHUNK = 4 * 1024 * 1024;
const now = () => performance.now();

/** Incompressible bytes (IndexedDB compresses values) laid out as a format-2 file. */
export function checkpointFile(size, seed) {
  const parts = [0.6, 0.3, 0.09, 0.01].map((f) => Math.floor((size * f) / 64) * 64);
  const bodies = parts.map((n) => {
    const b = new Uint8Array(n);
    for (let at = 0; at < n; at += 65536) crypto.getRandomValues(b.subarray(at, Math.min(n, at + 65536)));
    return b;
  });
  bodies[3][0] = seed; // the small record differs between "versions"
  let at = 64;
  const starts = bodies.map((b) => { const s = at; at += b.byteLength; return s; });
  const total = at + 8 + 16 * bodies.length + 4 + 32;
  const out = new Uint8Array(total);
  out.set([0x89, 0x45, 0x4c, 0x43, 0x4b, 0x50, 0x54, 0x0a, 2, 0]);
  out[40] = seed;
  bodies.forEach((b, i) => out.set(b, starts[i]));
  const dv = new DataView(out.buffer);
  out.set([0x45, 0x4c, 0x49, 0x58], at);
  dv.setUint32(at + 4, bodies.length, true);
  bodies.forEach((b, i) => { dv.setBigUint64(at + 8 + 16 * i, BigInt(starts[i]), true); dv.setBigUint64(at + 16 + 16 * i, BigInt(b.byteLength), true); });
  const f = total - 32;
  out.set([0x45, 0x4c, 0x46, 0x54], f);
  dv.setUint32(f + 4, bodies.length, true);
  dv.setBigUint64(f + 8, BigInt(at), true);
  dv.setBigUint64(f + 16, BigInt(total), true);
  dv.setUint16(f + 24, 2, true);
  return out;
}

function open(name) {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => r.result.createObjectStore('chunks');
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
  });
}

function drop(name) {
  return new Promise((resolve) => { const r = indexedDB.deleteDatabase(name); r.onsuccess = resolve; r.onerror = resolve; r.onblocked = resolve; });
}

function done(tx) {
  return new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onabort = () => reject(tx.error); });
}

// The floor of a write: the bytes in 4 MiB values (slices: what any chunked writer copies),
// one transaction, strict durability like the store's.
async function rawPut(db, bytes) {
  const tx = db.transaction('chunks', 'readwrite', { durability: 'strict' });
  const store = tx.objectStore('chunks');
  for (let at = 0, seq = 0; at < bytes.byteLength; at += CHUNK, seq += 1) store.put(bytes.slice(at, at + CHUNK), seq);
  await done(tx);
}

async function rawGet(db, size) {
  const tx = db.transaction('chunks');
  const store = tx.objectStore('chunks');
  const out = new Uint8Array(size);
  const n = Math.ceil(size / CHUNK);
  await Promise.all(Array.from({ length: n }, (_, seq) => new Promise((resolve) => {
    const r = store.get(seq);
    r.onsuccess = () => { out.set(r.result, seq * CHUNK); resolve(); };
  })));
  await done(tx);
  return out;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** {size, rows: [{what, ms}]} medians of `repeats` interleaved rounds. */
export async function measure(sizeMiB, repeats) {
  const size = sizeMiB * 1024 * 1024;
  const v1 = checkpointFile(size, 1);
  const v2 = checkpointFile(size, 2); // a different file: nothing shared with v1
  const times = {};
  const add = (what, ms) => { (times[what] ??= []).push(ms); };
  for (let round = 0; round < repeats; round += 1) {
    const raw = `bench-raw-${round}`; const st = `bench-store-${round}`;
    await drop(raw); await drop(st);
    const db = await open(raw);
    let t = now(); await rawPut(db, v1); add('raw put (4 MiB values)', now() - t);
    t = now(); await rawGet(db, v1.byteLength); add('raw get', now() - t);
    db.close();
    const store = new IndexedDBStore({ dbName: st });
    await store.list(); // open (and create) outside the timings
    t = now(); await store.put('a', v1, { notebook: 'n' }); add('store.put', now() - t);
    t = now(); await store.get('a'); add('store.get', now() - t);
    // The streamed path: records as the core hands them out, then one commit.
    const parts = splitContainer(v2);
    t = now();
    const lock = await store.lock('b');
    const keys = await store.putRecords(parts.records);
    await store.commit('b', { head: parts.head, tail: parts.tail, meta: { notebook: 'n' },
      records: keys.map((key, i) => ({ key, length: parts.records[i].byteLength })) });
    lock.release();
    add('store.putRecords + commit', now() - t);
    t = now(); await store.put('c', v1, { notebook: 'n' }); add('store.put, every record already stored', now() - t);
    t = now(); await Promise.all(parts.records.map((r) => recordKey(r))); add('record keys alone (SHA-256)', now() - t);
    await store.close();
    await drop(raw); await drop(st);
  }
  return { sizeMiB, bytes: v1.byteLength, repeats, rows: Object.entries(times).map(([what, ms]) => ({ what, ms: median(ms), all: ms })) };
}
