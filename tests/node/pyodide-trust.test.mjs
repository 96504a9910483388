// The hostile corpus (tests/py/hostile_corpus.py, every trick of issue 11 in a well-formed
// container) built and restored in a real Pyodide: as a foreign file (elastic_lite.host.restore
// with data) nothing is unpickled and no sentinel appears, data-only loads only the benign
// record, the caller's own bytes refuse every trick but the rebuilt function (which is why
// provenance is the boundary), and trusted every payload live in Pyodide leaves its sentinel
// (so "nothing ran" could have failed). Sentinels are files in Pyodide's memory file system,
// JS globals (pyodide.code.run_js, js.eval), and files written through Node's fs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';
import { tempDir } from '../helpers/tempdir.mjs';

const CORPUS = fileURLToPath(new URL('../py/hostile_corpus.py', import.meta.url));

let pyodide;
let items; // [{id, names, live, sentinel}]
let hostDir; // where payloads that reach Node's fs would write (the process's cwd)
const cwd = process.cwd();

before(async () => {
  hostDir = await tempDir('el-pyodide-trust-');
  process.chdir(hostDir);
  pyodide = await freshPyodide();
  pyodide.FS.writeFile('/home/pyodide/hostile_corpus.py', await fs.readFile(CORPUS, 'utf8'));
  items = await pyJson(pyodide, `(lambda: [
    {k: i[k] for k in ("id", "names", "live", "sentinel")}
    for i in __import__("builtins").__dict__.setdefault("_el_items", __import__("hostile_corpus").build())])()`);
});

after(() => { process.chdir(cwd); });

async function hostFiles() {
  return (await fs.readdir(hostDir)).filter((f) => f.startsWith('el-pwned-')).sort();
}

/** Restores item `id` in mode `mode` in a fresh namespace; returns {restored, codes,
 * sentinels (inside Pyodide), host (files Node's fs got)} and clears every sentinel. */
async function restore(id, mode) {
  const call = {
    foreign: 'await host.restore(data=item["data"], namespace=ns)',
    'data-only': 'await host.restore(data=item["data"], namespace=ns, data_only=True)',
    raw: 'el.load_snapshot(item["data"], ns).to_dict()',
    own: 'el.load_snapshot(item["data"], ns, foreign=False).to_dict()',
    trusted: 'await host.restore(data=item["data"], namespace=ns, trust=True)',
  }[mode];
  await py(pyodide, `
import builtins, json, hostile_corpus as corpus, elastic_lite as el
from elastic_lite import host
corpus.clear()
item = next(i for i in builtins._el_items if i["id"] == ${JSON.stringify(id)})
ns = {"__name__": "__main__"}
rep = ${call}
corpus.poke_print(ns)
restored = [r if isinstance(r, str) else r["name"] for r in rep["restored"]]
codes = sorted({p["code"] for p in rep.get("problems") or rep.get("failed") or []})
_el_out = json.dumps({"restored": sorted(restored), "codes": codes, "sentinels": corpus.sentinels()})
`);
  const out = JSON.parse(await py(pyodide, '_el_out'));
  out.host = await hostFiles();
  await py(pyodide, '__import__("hostile_corpus").clear()');
  for (const f of out.host) await fs.rm(path.join(hostDir, f), { recursive: true, force: true });
  return out;
}

test('trusted, each payload that can run in Pyodide leaves its sentinel', async () => {
  const live = items.filter((i) => i.live);
  assert.ok(live.some((i) => i.id === 'pyodide-run-js') && live.some((i) => i.id === 'js-eval'));
  assert.ok(!live.some((i) => i.id === 'os-path-system'), 'os.system does nothing in Pyodide: not counted as live');
  for (const item of live) {
    const r = await restore(item.id, 'trusted');
    assert.deepEqual(r.sentinels, [item.id.startsWith('pyodide') ? 'pyodide_run_js' : item.id === 'js-eval' ? 'js_eval' : item.id], item.id);
  }
  // the Python payloads also reached the host's disk through Node's fs (what a hostile file
  // restored by the CLI would do)
  const r = await restore('cloudpickle-exec', 'trusted');
  assert.deepEqual(r.host, ['el-pwned-cloudpickle-exec']);
});

test('as a foreign file, nothing is unpickled and nothing runs', async () => {
  for (const item of items) {
    const r = await restore(item.id, 'foreign');
    assert.deepEqual({ ...r, id: item.id }, { id: item.id, restored: [], codes: ['foreign'], sentinels: [], host: [] });
  }
});

test('data-only loads the benign record alone', async () => {
  for (const item of items) {
    const r = await restore(item.id, 'data-only');
    assert.deepEqual(r.sentinels, [], item.id);
    assert.deepEqual(r.host, [], item.id);
    assert.deepEqual(r.restored, item.id === 'function-body' ? [] : ['kept'], item.id);
  }
});

test('bytes snapshot() did not make, given to load_snapshot: nothing loads, nothing runs', async () => {
  // (the function body's bytes were made by snapshot() in this interpreter: they are its own)
  for (const item of items.filter((i) => i.id !== 'function-body')) {
    const r = await restore(item.id, 'raw');
    assert.deepEqual({ ...r, id: item.id }, { id: item.id, restored: [], codes: ['foreign'], sentinels: [], host: [] });
  }
});

test('vouched for as the person\'s own (a signed store entry): every trick refused but the function body, which runs', async () => {
  for (const item of items) {
    const r = await restore(item.id, 'own');
    if (item.id === 'function-body') {
      assert.deepEqual(r.sentinels, ['function-body']);
      continue;
    }
    assert.deepEqual(r.sentinels, [], item.id);
    assert.deepEqual(r.restored, ['kept'], item.id);
  }
});
