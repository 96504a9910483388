// Python's large pieces go to a JS store as live views of Pyodide's memory (JsStore, stores
// whose `livePieces` is true): no JS copy of a whole record. Pyodide's heap may grow while the
// store awaits (its ArrayBuffer is then replaced), and other Python code may run meanwhile;
// here both happen for real, inside the store's putRecords.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../js/store/memory.mjs';
import { loadCore } from '../../js/core.mjs';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const STATE = String.raw`
import elastic_lite as el, random, zlib
blob = random.Random(1).randbytes(3 << 20)         # bytes: immutable, handed over live
arr = bytearray(random.Random(2).randbytes(2 << 20))  # writable: live, checked after the put
small = {"k": list(range(100))}                       # small pieces are copied
WANT = [zlib.crc32(blob), zlib.crc32(arr), repr(small)]
async def back(name):
    ns = {}
    rep = await el.restore(name, namespace=ns)
    return [rep.ok, [zlib.crc32(ns["blob"]), zlib.crc32(ns["arr"]), repr(ns["small"])] == WANT]
`;

const isLive = (p) => !ArrayBuffer.isView(p) && typeof p.view === 'function';

test('JsStore hands large pieces to a JS store as live views', async (t) => {
  const store = new MemoryStore();
  const putRecords = store.putRecords.bind(store);
  let hook = null; // runs inside putRecords, before the store reads anything
  const seen = [];
  store.putRecords = async (records) => {
    seen.push(...records.flat());
    if (hook) await hook(records.flat().filter(isLive));
    return putRecords(records);
  };
  const pyodide = await freshPyodide({ store });
  await py(pyodide, STATE);

  await t.test('large pieces arrive live, small ones as copies; the checkpoint restores', async () => {
    await py(pyodide, 'await el.checkpoint("plain", names=["blob", "arr", "small"])');
    const live = seen.filter(isLive);
    assert.deepEqual(live.map((p) => p.byteLength).sort(), [2 << 20, 3 << 20]);
    assert.ok(seen.filter((p) => !isLive(p)).every((p) => p.byteLength <= 4 << 20 && p.buffer.byteLength === p.byteLength));
    assert.deepEqual(await pyJson(pyodide, 'await back("plain")'), [true, true]);
    assert.equal((await loadCore()).read((await store.get('plain')).bytes).ok, true);
  });

  await t.test('the heap grows while the store awaits: the record is read from where it is now', async () => {
    let grew = false;
    // the heap size, read through a buffer view of a Python object
    const heap = () => {
      const x = pyodide.runPython('b"x"');
      const b = x.getBuffer('u8');
      try { return b.data.buffer.byteLength; } finally { b.release(); x.destroy(); }
    };
    hook = async (live) => {
      if (!live.length) return;
      const before = live[0].view().buffer;
      pyodide.runPython(`_grow = bytearray(${heap()})`);
      grew = before.byteLength === 0;
    };
    await py(pyodide, 'blob = blob[:-1] + b"!"; WANT[0] = zlib.crc32(blob)');
    await py(pyodide, 'await el.checkpoint("grown", names=["blob", "arr", "small"])');
    hook = null;
    await py(pyodide, 'del _grow');
    assert.equal(grew, true, 'the heap did not grow inside putRecords: the test proves nothing');
    assert.deepEqual(await pyJson(pyodide, 'await back("grown")'), [true, true]);
    assert.equal((await loadCore()).read((await store.get('grown')).bytes).ok, true);
  });

  await t.test('a buffer written to while the store awaits: the checkpoint fails plainly, nothing kept', async () => {
    const before = await store.stats();
    hook = async () => { pyodide.runPython('arr[0] ^= 0xFF'); };
    await py(pyodide, `
rep = await el.checkpoint("torn", names=["blob", "arr", "small"], incremental=False)
out = "saved" if rep.ok else [rep.problems[0]["code"], rep.problems[0]["message"]]`);
    const out = await pyJson(pyodide, 'out');
    hook = null;
    assert.equal(out[0], 'changed', JSON.stringify(out));
    assert.match(out[1], /changed while the checkpoint was being saved.*take it again/);
    assert.equal(await store.get('torn'), null);
    assert.deepEqual(await store.stats(), before, 'the records written for it were given back');
  });
});
