// One on-disk layout for the Node CLI and a CPython kernel: a checkpoint store written by the
// Python DirectoryStore (py/elastic_lite/store/directory.py, host CPython with the native core)
// is listed, verified and restored by the real CLI (node js/cli/elastic-lite.mjs --store DIR),
// signed as the store's own; and a store the CLI wrote (run NOTEBOOK, Pyodide) is read, checked
// and restored by the Python store, signed as its own too. The code the CLI saved under
// Pyodide's Python restores in CPython only as data: each refused function is named with the
// reason. A record changed behind the store's back is damage on both sides, nothing of it loads.
// A writer lock held by either side stops the other.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';

import { ROOT, runCli, tempWorkdir } from './cli-helpers.mjs';
import { DirectoryStore } from '../../js/store/directory.mjs';

const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const NATIVE = path.join(ROOT, 'build', 'native', 'libelastic_lite.so');

// Runs `code` in host CPython with the package from py/ and the store at `dir` as `store`;
// the JSON the code prints last.
function python(dir, code) {
  const script = `
import asyncio, json, sys
import elastic_lite as el
from elastic_lite import host
from elastic_lite.store.directory import DirectoryStore
store = DirectoryStore(sys.argv[1])
el.set_store(store)
async def main():
${code.trim().split('\n').map((l) => `    ${l}`).join('\n')}
print(json.dumps(asyncio.run(main())))
`;
  const r = spawnSync(PYTHON, ['-c', script, dir], {
    encoding: 'utf8', cwd: path.dirname(dir), env: { ...process.env, PYTHONPATH: path.join(ROOT, 'py'), ELASTIC_LITE_NATIVE_LIB: NATIVE },
  });
  assert.equal(r.status, 0, `${r.error ?? ''} ${r.signal ?? ''} ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

test('the CLI lists, verifies and restores what a CPython kernel wrote; its signature is the store\'s own', { timeout: 120_000 }, async () => {
  const work = await tempWorkdir();
  const dir = path.join(work, 'store');
  const made = python(dir, `
ns = {"__name__": "__main__"}
exec("shared = [1, 2, 3]\\nd = {'k': shared, 'txt': 'é\\u2028'}\\nn = 2 ** 40\\ndef g(v):\\n    return v\\n", ns)
r = await host.checkpoint("from-cpython", namespace=ns, notebook="nb.ipynb")
return [r["ok"], (await store.get_entry("from-cpython"))["signature"]["state"]]
`);
  assert.deepEqual(made, [true, 'valid']);
  // the layout: folders 0700, files 0600
  for (const sub of ['', 'entries', 'records', 'locks']) assert.equal(fs.statSync(path.join(dir, sub)).mode & 0o777, 0o700, sub);
  for (const f of ['signing-key', 'counter.json', 'entries/from-cpython.json']) assert.equal(fs.statSync(path.join(dir, f)).mode & 0o777, 0o600, f);

  const node = new DirectoryStore(dir);
  const entry = await node.getEntry('from-cpython');
  assert.equal(entry.signature.state, 'valid', JSON.stringify(entry.signature));
  assert.equal(entry.meta.notebook, 'nb.ipynb');

  const ls = await runCli(['ls', '--store', dir, '--json'], { cwd: work });
  assert.equal(ls.code, 0, ls.stderr);
  assert.deepEqual(JSON.parse(ls.stdout).checkpoints.map((c) => c.name), ['from-cpython']);
  const verify = await runCli(['verify', 'from-cpython', '--store', dir], { cwd: work });
  assert.equal(verify.code, 0, verify.stderr);
  assert.match(verify.stdout, /OK, whole/);
  const restore = await runCli(['restore', 'from-cpython', '--store', dir, '-c', 'print(d["k"] is shared, d["txt"] == "é\\u2028", n)'], { cwd: work });
  assert.equal(restore.code, 0, restore.stderr);
  assert.match(restore.stdout, /True True 1099511627776/);
  assert.doesNotMatch(restore.stdout + restore.stderr, /foreign/i);
  // the function CPython 3.11 compiled is refused by name in Pyodide's 3.14, the data restored
  assert.match(restore.stdout + restore.stderr, /\bg\b[^\n]*compiled by Python 3\.11, and this is Python 3\.14/);

  // a record changed behind the store's back (same length): damage for the CLI, nothing loads
  const rec = entry.records[0].key;
  const file = path.join(dir, 'records', rec);
  const bytes = fs.readFileSync(file);
  bytes[bytes.length - 20] ^= 0xff;
  fs.writeFileSync(file, bytes);
  const damaged = await runCli(['verify', 'from-cpython', '--store', dir], { cwd: work });
  assert.equal(damaged.code, 1, damaged.stdout);
});

test('a CPython kernel reads, checks and restores what the CLI wrote; Pyodide\'s code is refused by name, its data restores', { timeout: 180_000 }, async () => {
  const work = await tempWorkdir();
  const dir = path.join(work, 'store');
  const nb = path.join(work, 'nb.ipynb');
  const cell = (src) => ({ cell_type: 'code', metadata: {}, execution_count: null, outputs: [], source: src });
  fs.writeFileSync(nb, JSON.stringify({
    nbformat: 4, nbformat_minor: 5, metadata: {},
    cells: [cell('rows = [{"a": i} for i in range(3)]\nboth = {"r": rows}\n'), cell('def double(v):\n    return 2 * v\n')],
  }));
  const run = await runCli(['run', nb, '--name', 'from-cli', '--store', dir], { cwd: work });
  assert.equal(run.code, 0, run.stderr);

  const got = python(dir, `
entry = await store.get_entry("from-cli")
ns = {"__name__": "__main__"}
r = await host.restore("from-cli", namespace=ns)
refused = [[n, p["message"]] for p in r["problems"] for n in (p.get("names") or [p.get("name")]) if n]
return {"state": entry["signature"]["state"], "rows": ns.get("rows"), "alias": ns["both"]["r"] is ns["rows"],
        "double": "double" in ns, "refused": refused, "python": entry["meta"].get("python")}
`);
  assert.equal(got.state, 'valid');
  assert.deepEqual(got.rows, [{ a: 0 }, { a: 1 }, { a: 2 }]);
  assert.equal(got.alias, true);
  assert.equal(got.double, false);
  const refused = got.refused.find(([n]) => n === 'double');
  assert.ok(refused, `double is named among the refused: ${JSON.stringify(got.refused)}`);
  assert.match(refused[1], /Python 3\.14.*3\.11|3\.11.*3\.14/);

  // a record the CLI wrote, changed behind the store's back: the Python read names it damaged
  const entry = await new DirectoryStore(dir).getEntry('from-cli');
  const file = path.join(dir, 'records', entry.records[0].key);
  const bytes = fs.readFileSync(file);
  bytes[bytes.length - 20] ^= 0xff;
  fs.writeFileSync(file, bytes);
  const after = python(dir, `
ns = {"__name__": "__main__"}
r = await host.restore("from-cli", namespace=ns)
return {"ok": r["ok"], "rows": "rows" in ns, "codes": sorted({p.get("code") or "" for p in r["problems"]}),
        "names": sorted(n for p in r["problems"] for n in (p.get("names") or [])),
        "marked": __import__("os").path.exists(store._record_file("${entry.records[0].key}") + ".damaged")}
`);
  assert.equal(after.ok, false);
  assert.equal(after.rows, false);
  assert.equal(after.marked, true);
  assert.ok(after.names.includes('rows') && after.names.includes('both'), JSON.stringify(after));
});

test('one writer per checkpoint name across both: a lock a CPython kernel holds stops the CLI, and the other way round', { timeout: 120_000 }, async () => {
  const work = await tempWorkdir();
  const dir = path.join(work, 'store');
  const nb = path.join(work, 'nb.ipynb');
  fs.writeFileSync(nb, JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [
    { cell_type: 'code', metadata: {}, execution_count: null, outputs: [], source: 'print("cell ran")\n' }] }));
  // a Python process holds the writer lock of "nb" until its stdin closes
  const holder = spawn(PYTHON, ['-c', `
import asyncio, sys
from elastic_lite.store.directory import DirectoryStore
held = asyncio.run(DirectoryStore(sys.argv[1]).lock("nb"))
print("held", flush=True)
sys.stdin.read()
held.release_now()
`, dir], { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'py') }, stdio: ['pipe', 'pipe', 'inherit'] });
  await once(holder.stdout, 'data');
  const r = await runCli(['run', nb, '--name', 'nb', '--store', dir], { cwd: work });
  holder.stdin.end();
  await once(holder, 'close');
  assert.equal(r.code, 1, r.stderr);
  assert.doesNotMatch(r.stdout, /cell ran/);
  assert.match(r.stderr, /checkpoint "nb" is being saved by another process/);

  const held = await new DirectoryStore(dir).lock('nb'); // now Node holds it
  try {
    const got = python(dir, `
s = DirectoryStore(store.dir, lock_timeout=0.3)
try:
    await s.lock("nb")
    return "taken"
except Exception as e:
    return [getattr(e, "code", None), str(e)]
`);
    assert.equal(got[0], 'busy');
    assert.match(got[1], new RegExp(`process ${process.pid}\\b`));
  } finally {
    await held.release();
  }
});
