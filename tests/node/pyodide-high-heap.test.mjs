// Checkpoints of values that lie above 2 GiB of the Pyodide heap. Pyodide's own byte copies
// between Python and JS (Uint8Array.assign, to_js, JsProxy.to_bytes / assign_to) pass that
// address as a signed 32-bit number: above 2 GiB they raise, or copy other bytes without a
// word, so a checkpoint stored wrong bytes and a 1 GiB container read back as damaged.
// Here filler bytearrays push the heap past 2 GiB first (the test checks they did), then:
// checkpoint into a JS store, the stored file read by the JS core (every CRC), restore in the
// same high interpreter (the container copied into high memory, read by the core from there),
// and in a fresh interpreter. Heavy: one interpreter holds about 2.3 GiB while it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../js/store/memory.mjs';
import { loadCore } from '../../js/core.mjs';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

// The values: a 64 MiB bytes (out of band, handed to JS as a view of Python memory), a
// bytearray (out of band, restored writable), small values (the pickle stream, copied through
// the core) and a notebook function (cloudpickle by value).
const STATE = String.raw`
import random, zlib
from pyodide.code import run_js
address = run_js("(o) => { const b = o.getBuffer('u8'); try { return b.data.byteOffset; } finally { b.release(); } }")
_f1 = bytearray(1100 << 20); _f2 = bytearray(1000 << 20)   # push the heap past 2 GiB
blob = random.Random(1).randbytes(64 << 20)
arr = bytearray(random.Random(2).randbytes(3 << 20))
small = {"k": list(range(1000)), "s": "é" * 5000, "t": (1.5, None, b"x" * 100)}
def twice(x):
    return 2 * x
NAMES = ["blob", "arr", "small", "twice"]
WANT = {"blob": zlib.crc32(blob), "arr": zlib.crc32(arr)}

def check(ns):
    return [zlib.crc32(ns["blob"]) == WANT["blob"], zlib.crc32(ns["arr"]) == WANT["arr"],
            ns["small"] == small, ns["twice"](21) == 42, type(ns["arr"]).__name__]
`;

const WHOLE = [true, true, true, true, 'bytearray'];

test('values above 2 GiB of the Pyodide heap checkpoint and restore whole', async (t) => {
  const store = new MemoryStore();
  const fresh = await freshPyodide({ store }); // made first, while memory is plentiful
  const high = await freshPyodide({ store });
  await py(high, STATE);
  // The test means something only if the values really lie above 2 GiB.
  assert.deepEqual(await pyJson(high, '[address(blob) >= 1 << 31, address(arr) >= 1 << 31]'), [true, true],
    'the filler did not push the values above 2 GiB');

  await t.test('checkpoint into a JS store: the stored file is whole for the JS core', async () => {
    await py(high, `
import elastic_lite as el
snap = await el.checkpoint("high", names=NAMES)`);
    const { bytes } = await store.get('high');
    const report = (await loadCore()).read(bytes);
    assert.equal(report.error ?? null, null, JSON.stringify(report.error));
    assert.equal(report.ok, true);
  });

  await t.test('restore in the same interpreter: the container is copied into high memory', async () => {
    const out = await pyJson(high, `[(await el.restore("high", namespace=(back := {}))).ok, check(back)]`);
    assert.deepEqual(out, [true, WHOLE]);
  });

  await t.test('snapshot / load_snapshot / inspect in high memory (bytes through the core)', async () => {
    const out = await pyJson(high, `[el.load_snapshot(el.snapshot(names=NAMES).data, namespace=(b2 := {})).ok,
  check(b2), el.load.loader.inspect(el.snapshot(names=["small"]).data)["ok"]]`);
    assert.deepEqual(out, [true, WHOLE, true]);
  });

  await t.test('bytes handed over from JS (a Uint8Array) are copied into high memory whole', async () => {
    high.globals.set('from_js', (await store.get('high')).bytes);
    const out = await pyJson(high, `[el.load.loader.inspect(from_js)["ok"], el.load_snapshot(from_js, namespace=(b4 := {}), foreign=False).ok, check(b4)]`);
    assert.deepEqual(out, [true, true, WHOLE]);
  });

  // Once the heap is past 2 GiB any new str can land above it, and Pyodide hands an ASCII str
  // of 64 characters or more lying there to JS as NULs: a record key of this second checkpoint
  // did (with the Pyodide memory snapshot npm test uses), and the store's commit refused it.
  // Every str the store gets now crosses as UTF-8 bytes (_jsbytes.call; pyodide-str-crossing
  // shows each crossing in isolation), and pyJson reads answers as bytes.
  await t.test('a second checkpoint reuses the unchanged records, and restores', async () => {
    const second = await pyJson(high, `[(snap2 := await el.checkpoint("high2", names=NAMES)).ok, snap2.problems,
  (snap2.reuse or {}).get("reused", 0) >= 2]`);
    assert.deepEqual(second, [true, [], true]);
    const out = await pyJson(high, `[small["k"].append(-1) or (await el.checkpoint("high3", names=NAMES)).reuse["written"] >= 1,
  (await el.restore("high3", namespace=(b3 := {}))).ok, check(b3)]`);
    assert.deepEqual(out, [true, true, WHOLE]);
  });

  await t.test('restore in a fresh interpreter', async () => {
    const want = await pyJson(high, 'WANT');
    await py(fresh, `
import elastic_lite as el, zlib
rep = await el.restore("high", namespace=(ns := {}))`);
    const out = await pyJson(fresh, '[rep.ok, zlib.crc32(ns["blob"]), zlib.crc32(ns["arr"]), ns["twice"](4)]');
    assert.deepEqual(out, [true, want.blob, want.arr, 8]);
  });
});
