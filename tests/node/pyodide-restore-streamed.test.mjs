// Restore in bounded memory: a checkpoint of 64 MiB and more is read from its store record by
// record (load.streamed.Streamed), each out-of-band buffer read by the store straight into a
// bytearray of its own (readRecordInto), and never assembled into one container. Here a
// 72 MiB state is checkpointed into the IndexedDB store (fake-indexeddb) by one interpreter and
// restored by a FRESH one that shares only the store: the values come back equal, the report
// says the streamed path was taken; a record damaged behind the store's back makes the
// restore read the checkpoint whole instead, which names the damaged variable as always.
// (fake-indexeddb clones every chunk: about a minute on a loaded 2-core machine)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IDBFactory } from 'fake-indexeddb';
import { IndexedDBStore } from '../../js/store/indexeddb.mjs';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const STATE = String.raw`
import random, zlib
import elastic_lite as el
blob = random.Random(1).randbytes(64 << 20)          # a record larger than the others
arr = bytearray(random.Random(2).randbytes(8 << 20))  # restored writable, in its own memory
small = {"k": list(range(1000)), "s": "é" * 5000}
def twice(x):
    return 2 * x
NAMES = ["blob", "arr", "small", "twice"]
WANT = [zlib.crc32(blob), zlib.crc32(arr), small]
`;

const CHECK = String.raw`
import zlib
import elastic_lite as el
from elastic_lite.load import streamed as _streamed
HANDED = []  # the out-of-band buffers the streamed restore hands to pickle
_buffers = _streamed.Streamed.buffers
_streamed.Streamed.buffers = lambda self, rec: HANDED.extend(out := _buffers(self, rec)) or out
def check(ns):
    return [zlib.crc32(ns["blob"]), zlib.crc32(ns["arr"]), ns["small"], ns["twice"](21),
            type(ns["blob"]).__name__, type(ns["arr"]).__name__]
`;

test('a large checkpoint restores record by record in a fresh interpreter', async (t) => {
  const store = new IndexedDBStore({ indexedDB: new IDBFactory(), dbName: 'streamed' });
  const writer = await freshPyodide({ store });
  await py(writer, STATE);
  const made = await pyJson(writer, `[(r := await el.host.checkpoint("big", names=NAMES))["ok"], r["size"], WANT]`);
  assert.equal(made[0], true);
  assert.ok(made[1] >= 64 << 20, `the checkpoint is ${made[1]} bytes: below the streaming threshold`);
  const want = [...made[2], 42, 'bytes', 'bytearray'];
  const reader = await freshPyodide({ store });
  await py(reader, CHECK);

  await t.test('streamed: every value back, the bytearray writable, large records read straight into their pieces', async () => {
    // the store's reads, seen from outside: records of 1 MiB and more must come through
    // readRecordInto (into Python's memory), checked once each, never as JS arrays
    const into = []; const chunked = [];
    const { readRecordInto, readRecordChunks } = store;
    store.readRecordInto = function (key, targets, opts) {
      into.push([key, [...targets].length, opts?.check !== false]);
      return readRecordInto.call(this, key, targets, opts);
    };
    store.readRecordChunks = function (keys) { chunked.push(...keys); return readRecordChunks.call(this, keys); };
    try {
      const out = await pyJson(reader, `[(r := await el.host.restore("big", namespace=(ns := {})))["ok"],
  r["streamed"], r["problems"], check(ns), ns["arr"].__setitem__(0, 7) or ns["arr"][0],
  any(b is ns["blob"] for b in HANDED)]`);
      // the bytes value is the very object its buffer was read into (no copy as it loads)
      assert.deepEqual(out, [true, true, [], want, 7, true]);
    } finally {
      delete store.readRecordInto; delete store.readRecordChunks;
    }
    const entry = await store.getEntry('big');
    const large = entry.records.filter((r) => r.length >= 1 << 20).map((r) => r.key);
    assert.equal(large.length, 2, 'blob and arr are records of their own');
    const checked = into.filter(([, , check]) => check);
    assert.deepEqual(checked.map(([key]) => key).sort(), [...large].sort(), 'each large record read into its pieces once, checked');
    assert.ok(checked.every(([, pieces]) => pieces >= 2), 'cut: the frame and the buffer apart');
    // and before it, one read of its frame (header, stream, buffer table), not one per part
    assert.deepEqual(into.filter(([, , check]) => !check).map(([key]) => key).sort(), [...large].sort());
    assert.deepEqual(chunked.filter((k) => large.includes(k)), [], 'no large record read as JS arrays');
  });

  await t.test('a record changed behind the store: read whole, the damage named', async () => {
    const entry = await store.getEntry('big');
    const key = entry.records.reduce((a, b) => (b.length > a.length ? b : a)).key;
    const db = await store._open();
    await new Promise((resolve, reject) => {
      const tx = db.transaction(['recordChunks'], 'readwrite');
      const chunks = tx.objectStore('recordChunks');
      const get = chunks.get([key, 1]);
      get.onsuccess = () => {
        const row = get.result;
        const data = new Uint8Array(row.data);
        data[100] ^= 1;
        chunks.put({ ...row, data });
      };
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    const out = await pyJson(reader, `[(r := await el.host.restore("big", namespace=(ns2 := {})))["ok"],
  r["streamed"], [(p["code"], p["names"]) for p in r["problems"]], sorted(n for n in ns2 if n != "__builtins__")]`);
    // the flipped byte lies in blob's buffer: the core's CRC finds it ('checksum', its words)
    assert.deepEqual(out, [false, false, [['checksum', ['blob']]], ['arr', 'small', 'twice']]);
  });
});
