// The JupyterLite kernel's namespace setup (IPython's stand-in `__main__`: a fresh ModuleType
// installed as sys.modules['__main__'], cells exec'd in its dict), checkpointed through the
// async API into a real JS store (js/store/memory.mjs, handed over by the glue) and restored
// in ANOTHER interpreter that shares only that store. Includes the dill path (a lock next to a
// notebook lambda and an instance of a notebook class) and the live-globals case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPyodide } from 'pyodide';
import { IDBFactory } from 'fake-indexeddb';
import { MemoryStore } from '../../js/store/memory.mjs';
import { IndexedDBStore, recordKey } from '../../js/store/indexeddb.mjs';
import { installElasticLite } from '../../js/pyodide-glue.mjs';
import { freshPyodide, py, pyJson, STAND_IN_MAIN } from './helpers/pyodide.mjs';
import { payload } from './store-contract.mjs';

const WHEELS = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../build/wheels');

// The browser path of the glue (`wheelsUrl`: wheels.json, then each wheel, over HTTP), served
// from build/wheels on a loopback port.
async function serveWheels() {
  const server = http.createServer(async (req, res) => {
    try {
      const name = path.basename(new URL(req.url, 'http://x').pathname);
      res.end(await readFile(path.join(WHEELS, name)));
    } catch {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}


const CELLS = String.raw`
import threading
scale = 10
def f(x):
    return x * scale
class Point:
    def __init__(self, x):
        self.x = x
    def scaled(self):
        return f(self.x)
pts = [Point(1), Point(2)]
mixed = {"p": Point(5), "fn": lambda q: f(q) + 1, "lock": threading.Lock()}
In = ["stand-in history"]; Out = {}
`;

test('stand-in __main__, async API, JS store shared by two interpreters (one installed over HTTP)', async (t) => {
  const store = new MemoryStore();
  const D = await freshPyodide({ store });
  await py(D, STAND_IN_MAIN);
  await py(D, `cell(${JSON.stringify(CELLS)})`);
  const snap = await pyJson(D, `(await __import__("elastic_lite").checkpoint("nb-1", notebook="demo.ipynb")).to_dict()`);

  await t.test('the dill group refers to the notebook class instead of copying it', () => {
    const record = snap.variables.find((v) => v.name === 'mixed').record;
    const mixed = snap.variables.filter((v) => v.record === record);
    assert.deepEqual(mixed.map((v) => [v.name, v.serializer]), [['mixed', 'dill']]);
    assert.ok(!snap.variables.some((v) => v.name === 'In' || v.name === 'Out'));
  });

  await t.test('the store holds it with its metadata', async () => {
    const list = await store.list();
    assert.deepEqual(list.map((e) => e.name), ['nb-1']);
    assert.equal(list[0].meta.notebook, 'demo.ipynb');
    assert.deepEqual([...list[0].meta.names].sort(), ['Point', 'f', 'mixed', 'pts', 'scale']);
    const fromPy = await pyJson(D, `await __import__("elastic_lite").list_checkpoints()`);
    assert.deepEqual(fromPy.checkpoints.map((e) => e.name), ['nb-1']);
    assert.equal(fromPy.restore_choice, 'nb-1');
    assert.equal(fromPy.default_name, 'checkpoint');
  });

  await t.test('a record changed in the JS store: restore names the variable and loads nothing of it', async () => {
    await py(D, `_t = {"__name__": "__main__", "victim": [1, 2, 3], "other": "kept"}
_r = await __import__("elastic_lite").checkpoint("tamper", namespace=_t)`);
    const text = (r) => new TextDecoder().decode(r.bytes.subarray(0, 200));
    const rec = (await store.getEntry('tamper')).records.map((r) => store._records.get(r.key))
      .find((r) => text(r).includes('victim'));
    rec.bytes[rec.bytes.length - 10] ^= 1; // in its pickle stream's padding: only the key tells
    await py(D, `_b = {"__name__": "__main__"}
_r = await __import__("elastic_lite").restore("tamper", namespace=_b)`);
    const [back, problems] = await pyJson(D, '[sorted(k for k in _b if not k.startswith("__")), _r.problems]');
    assert.deepEqual(back, ['other']);
    assert.ok(problems.some((p) => p.kind === 'damaged' && p.names.includes('victim')), JSON.stringify(problems));
    await store.delete('tamper');
  });

  await t.test('restore in another interpreter under its own stand-in __main__', async () => {
    const server = await serveWheels();
    const E = await loadPyodide({ stdout: () => {}, stderr: () => {} });
    E.out = [];
    try {
      await installElasticLite(E, { wheelsUrl: `http://127.0.0.1:${server.address().port}/wheels/`, store });
    } finally {
      server.close();
    }
    await py(E, STAND_IN_MAIN);
    const rep = await pyJson(E, `(await __import__("elastic_lite").restore()).to_dict()`);
    assert.deepEqual(rep.problems, []);
    await py(E, `cell(${JSON.stringify(String.raw`
assert f.__globals__ is globals()
assert all(isinstance(p, Point) for p in pts) and isinstance(mixed["p"], Point)
assert pts[1].scaled() == 20 and mixed["fn"](1) == 11
scale = 100
assert f(2) == 200 and pts[0].scaled() == 100 and mixed["fn"](1) == 101
assert mixed["lock"].acquire() and not mixed["lock"].acquire(blocking=False)
assert "In" not in globals()
`)})`);
    assert.equal(await py(E, `(await __import__("elastic_lite").delete_checkpoint("nb-1")).deleted`), true);
    assert.equal(await py(E, `(await __import__("elastic_lite").delete_checkpoint("nb-1")).deleted`), false);
    assert.deepEqual(await store.list(), []);
    const err = await pyJson(E, `(await __import__("elastic_lite").restore("nb-1")).problems`);
    assert.deepEqual(err.map((p) => [p.code, p.message]), [['not-found', 'no checkpoint named "nb-1"']]);
  });
});

test('Python through a JS IndexedDB store: same record keys, one copy per piece, cell metadata, one writer per name', async (t) => {
  const CHUNK = 64 * 1024;
  const store = new IndexedDBStore({ indexedDB: new IDBFactory(), chunkSize: CHUNK, lockTimeoutMs: 200 });
  // What the store receives from Python: every piece of every record.
  const received = [];
  const putRecords = store.putRecords.bind(store);
  store.putRecords = (records) => { received.push(...records.flat()); return putRecords(records); };
  const commit = store.commit.bind(store); // (a point's last records come with its commit)
  store.commit = (name, entry, opts = {}) => { received.push(...(opts.records ?? []).flat()); return commit(name, entry, opts); };
  const D = await freshPyodide({ store });

  await t.test('Python computes the same record key as JS', async () => {
    const key = await py(D, `
from elastic_lite.store.stores import record_key
record_key(bytes(range(256)) * 40000)`);
    const bytes = new Uint8Array(256 * 40000).map((_, i) => i % 256);
    assert.equal(key, await recordKey(bytes));
    assert.equal(await py(D, 'record_key(b"")'), await recordKey(new Uint8Array(0)));
  });

  await t.test('checkpoint sends records in pieces of the store\'s chunk size, each its own buffer', async () => {
    await py(D, `
import elastic_lite as el
ns = {"blob": bytes(300_000), "n": 42}
snap = await el.checkpoint("nb", namespace=ns, notebook="a.ipynb",
                           cell={"executionCount": 4, "firstLine": "blob = bytes(300_000)", "timeMs": 1700000000000})`);
    assert.ok(received.length >= 5, `${received.length} pieces`);
    for (const piece of received) {
      assert.ok(piece.byteLength <= CHUNK);
      assert.equal(piece.byteOffset, 0);
      assert.equal(piece.buffer.byteLength, piece.byteLength, 'a piece owns its buffer: the store keeps it without copying');
    }
    const [entry] = await store.list({ notebook: 'a.ipynb' });
    assert.deepEqual(entry.meta.cell, { executionCount: 4, firstLine: 'blob = bytes(300_000)', timeMs: 1700000000000 });
    const fromPy = await pyJson(D, `(await el.list_checkpoints("a.ipynb")).checkpoints[0]["meta"]["cell"]`);
    assert.deepEqual(fromPy, entry.meta.cell);
    assert.equal(await py(D, `
fresh = {}
(await el.restore("nb", namespace=fresh)).ok and fresh["blob"] == bytes(300_000) and fresh["n"] == 42`), true);
  });

  await t.test('a kernel saving a name another writer holds waits, then is told plainly', async () => {
    const held = await store.lock('nb');
    const msg = await py(D, `
rep = await el.checkpoint("nb", namespace=ns)
msg = "saved" if rep.ok else f"{rep.problems[0]['code']}: {rep.problems[0]['message']}"
msg`);
    held.release();
    assert.match(msg, /^busy: the checkpoint store failed to lock "nb": Checkpoint "nb" is being saved by another tab, window or process right now/);
    assert.equal(await py(D, `(await el.checkpoint("nb", namespace=ns)).ok`), true);
  });

  await t.test('a checkpoint after a small change is one commit (no hasRecords, its new record written by the commit); ' +
    'a remembered record gone meanwhile: the commit refuses, the kernel asks and makes it again', async () => {
    const calls = [];
    const saved = {};
    for (const m of ['hasRecords', 'putRecords', 'commit']) {
      saved[m] = store[m];
      store[m] = (...args) => { calls.push(m); return saved[m](...args); };
    }
    try {
      await py(D, `
ns2 = {"a": list(range(20000)), "b": "x" * 50000, "c": {"k": 1}}
r1 = await el.checkpoint("q1", namespace=ns2)
ns2["c"]["k"] = 2`);
      calls.length = 0;
      const reuse = await pyJson(D, `(await el.checkpoint("q2", namespace=ns2)).reuse`);
      assert.deepEqual(calls, ['commit']);
      assert.ok(reuse.reused >= 2 && reuse.written >= 1, JSON.stringify(reuse));
      // behind the kernel's back: every checkpoint naming them deleted, records freed, and
      // nobody told (a store learns of deletes, takeDeleted; eviction or a message not yet
      // arrived tells nothing): the commit is what finds the record gone
      await store.delete('q1'); await store.delete('q2');
      assert.equal(store.takeDeleted(), true);
      calls.length = 0;
      await py(D, `
ns2["c"]["k"] = 3
r3 = await el.checkpoint("q3", namespace=ns2)
fresh = {}
r = await el.restore("q3", namespace=fresh)`);
      const out = await pyJson(D, '[r3.ok, r3.reuse["reused"], r.ok, all(fresh[k] == v for k, v in ns2.items())]');
      assert.deepEqual(out, [true, 0, true, true]);
      assert.deepEqual(calls, ['commit', 'hasRecords', 'commit'], 'refused, asked, made again');
    } finally {
      for (const m of Object.keys(saved)) store[m] = saved[m];
    }
  });

  await t.test('record calls from Python: get_entry, read_records, put_records, has_records', async () => {
    await py(D, `
s = await el.get_store()
e = await s.get_entry("nb")
recs = await s.read_records([r["key"] for r in e["records"]])
whole = (await s.get("nb"))["bytes"]
found = await s.has_records([e["records"][0]["key"], "0" * 64])`);
    const out = await pyJson(D, '[len(e["records"]) == len(el.load.loader.inspect(whole)["records"]) > 1, e["size"] == len(whole), ' +
      'e["head"] + b"".join(recs) + e["tail"] == whole, found]');
    assert.deepEqual(out, [true, true, true, [true, false]]);
  });
});

test('metadata another program nested deep in the store: list and restore report a store problem saying so, the interpreter goes on', async () => {
  const store = new MemoryStore();
  const D = await freshPyodide({ store });
  await py(D, 'import elastic_lite as el\nx = 1\nawait el.checkpoint("a")');
  const nest = (n) => { let v = 0; for (let i = 0; i < n; i++) v = [v]; return v; };
  const outcome = async (code) => pyJson(D, `await _outcome(${code})`);
  await py(D, `
async def _outcome(awaitable):
    rep = await awaitable
    return "ok" if rep.ok else "; ".join(f"{p['code']}: {p['message']}" for p in rep.problems)`);
  // deeper than JS can stringify (its RangeError crossed into Python as a raw JsException)
  for (const e of store._entries.values()) e.meta.extra = nest(3000);
  const listed = await outcome('el.list_checkpoints()');
  assert.match(listed, /^store: the store gave back metadata that cannot be read .*changed by other code/, listed);
  // deeper than Elastic Lite writes, though JS still stringifies it
  for (const e of store._entries.values()) e.meta.extra = nest(500);
  assert.match(await outcome('el.list_checkpoints()'), /^store: the store gave back metadata nesting 50\d levels deep/);
  assert.match(await outcome('el.restore("a")'), /^store: .*nesting 50\d levels deep/);
  assert.equal(await py(D, '6 * 7'), 42);
  delete [...store._entries.values()][0].meta.extra;
  assert.equal(await outcome('el.restore("a")'), 'ok');
});
