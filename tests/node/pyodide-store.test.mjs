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
import { MemoryStore } from '../../js/store/memory.mjs';
import { installElasticLite } from '../../js/pyodide-glue.mjs';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

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

const STAND_IN_MAIN = String.raw`
import sys, types
_main = types.ModuleType("__main__")
_main.__dict__["__builtins__"] = __builtins__
sys.modules["__main__"] = _main
def cell(src):
    exec(compile(src, "<cell>", "exec"), _main.__dict__)
`;

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
    const mixed = snap.groups.find((g) => g.names.includes('mixed'));
    assert.equal(mixed.serializer, 'dill');
    assert.deepEqual(mixed.names, ['mixed']);
    assert.ok(!snap.groups.some((g) => g.names.includes('In') || g.names.includes('Out')));
  });

  await t.test('the store holds it with its metadata', async () => {
    const list = await store.list();
    assert.deepEqual(list.map((e) => e.name), ['nb-1']);
    assert.equal(list[0].meta.notebook, 'demo.ipynb');
    assert.deepEqual([...list[0].meta.names].sort(), ['Point', 'f', 'mixed', 'pts', 'scale']);
    const fromPy = await pyJson(D, `await __import__("elastic_lite").list_checkpoints()`);
    assert.deepEqual(fromPy.map((e) => e.name), ['nb-1']);
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
    assert.deepEqual(rep.failed, []);
    await py(E, `cell(${JSON.stringify(String.raw`
assert f.__globals__ is globals()
assert all(isinstance(p, Point) for p in pts) and isinstance(mixed["p"], Point)
assert pts[1].scaled() == 20 and mixed["fn"](1) == 11
scale = 100
assert f(2) == 200 and pts[0].scaled() == 100 and mixed["fn"](1) == 101
assert mixed["lock"].acquire() and not mixed["lock"].acquire(blocking=False)
assert "In" not in globals()
`)})`);
    assert.equal(await py(E, `await __import__("elastic_lite").delete_checkpoint("nb-1")`), true);
    assert.equal(await py(E, `await __import__("elastic_lite").delete_checkpoint("nb-1")`), false);
    assert.deepEqual(await store.list(), []);
    const err = await py(E, String.raw`
try:
    await __import__("elastic_lite").restore("nb-1")
except Exception as e:
    msg = f"{type(e).__name__}: {e}"
msg`);
    assert.match(err, /StoreError: no checkpoint named 'nb-1'/);
  });
});
