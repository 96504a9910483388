// Hostile checkpoint files and the real CLI. One file holds every trick of the hostile corpus
// (tests/py/hostile_corpus.py, built here in a Pyodide like the CLI's): `inspect` lists what it
// would really import (the real target of dotted names, Python 2 names mapped, EXT codes
// unknown, the manifest's `print = builtins.exec`, notebook functions rebuilt), marked;
// `restore FILE` is foreign: nothing is unpickled and nothing runs unless --trust (then every
// payload does, which proves the checks below could fail) or --data-only (the plain data alone).
// Sentinels: files the payloads write through Node's fs into the CLI's working directory (what
// a hostile file would do to the host), and files / JS globals inside the CLI's Pyodide.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, tempWorkdir } from './cli-helpers.mjs';
import { freshPyodide, py, pyBytes, pyJson } from './helpers/pyodide.mjs';

const CORPUS = fileURLToPath(new URL('../py/hostile_corpus.py', import.meta.url));

// Python run as -c after a restore: the sentinels inside the CLI's Pyodide, `kept`, and a
// call of print (the manifest trick rebinds it to exec).
const CHECK = [
  'import builtins, os, js, json',
  `print(${JSON.stringify("open('el-pwned-manifest-print', 'w').close()")})`,
  'inside = sorted(f for f in os.listdir() if f.startswith("el-pwned-"))',
  'inside += [k for k in ("__el_pwned_pyodide_run_js", "__el_pwned_js_eval") if getattr(js, k, None) is not None]',
  'builtins.print("CHECK " + json.dumps({"kept": globals().get("kept"), "inside": inside}))',
].join('\n');

let hostile; // bytes of the combined corpus file
let live; // ids of the payloads that run in Pyodide when trusted
before(async () => {
  const pyodide = await freshPyodide();
  pyodide.FS.writeFile('/home/pyodide/hostile_corpus.py', await fs.readFile(CORPUS, 'utf8'));
  await py(pyodide, 'import hostile_corpus\n_items = hostile_corpus.build()');
  hostile = await pyBytes(pyodide, 'hostile_corpus.combined(_items)');
  live = await pyJson(pyodide, '[i["id"] for i in _items if i["live"]]');
});

async function workdir() {
  const cwd = await tempWorkdir('el-trust-');
  await fs.writeFile(path.join(cwd, 'hostile.elc'), hostile);
  return cwd;
}

async function hostSentinels(cwd) {
  return (await fs.readdir(cwd)).filter((f) => f.startsWith('el-pwned-')).sort();
}

function checkOf(stdout) {
  const line = stdout.split('\n').find((l) => l.startsWith('CHECK '));
  return line ? JSON.parse(line.slice(6)) : null;
}

test('inspect lists what the file would really import, marked, and says it is foreign', async () => {
  const cwd = await workdir();
  const r = await runCli(['inspect', 'hostile.elc'], { cwd });
  assert.equal(r.code, 0, r.stderr); // whole: being hostile is not damage
  const out = r.stdout;
  assert.match(out, /What restoring would import/);
  const row = (re) => assert.match(out, re, re.source);
  row(/⚠ runs code\s+builtins\.exec \(written .*cloudpickle builtins\.exec.*\)\s+.*cloudpickle_exec.*print =/);
  row(/⚠ runs code\s+posix\.mkdir \(written os path\.os\.mkdir\)/);
  row(/⚠ runs code\s+posix\.system \(written os path\.os\.system\)/);
  row(/⚠ runs code\s+_pickle\.loads \(written .*cPickle loads.*\)/);
  row(/⚠ runs code\s+subprocess\.getoutput \(written commands getoutput\)/);
  row(/⚠ runs code\s+builtins\.eval \(written __builtin__ eval\)/);
  row(/⚠ runs code\s+pyodide\.code\.run_js\s+pyodide_run_js/);
  row(/⚠ runs code\s+js\.eval\s/);
  row(/⚠ runs code\s+copyreg\.add_extension\s/);
  for (const code of [0xE1, 0xBEEF, 0x1234567]) row(new RegExp(`\\? unknown\\s+EXT code ${code}\\s+ext_ext\\d\\s+.*not registered`));
  row(/ƒ builds code\s+elastic_lite\._rebuild\.make_function\s+boom/);
  row(/This checkpoint is foreign \(it was read from a file, not from this store\)/);
  const j = JSON.parse((await runCli(['inspect', 'hostile.elc', '--json'], { cwd })).stdout);
  assert.equal(j.report.trust.provenance, 'foreign');
  const dangerous = j.report.trust.imports.filter((i) => i.danger === 'runs-code' || i.danger === 'unknown');
  assert.ok(dangerous.length >= 12, JSON.stringify(dangerous.map((i) => i.target)));
});

test('trusted, every payload runs: the sentinels below can appear', async () => {
  const cwd = await workdir();
  const r = await runCli(['restore', 'hostile.elc', '--trust', '-c', CHECK], { cwd });
  assert.equal(r.code, 0, r.stderr);
  const check = checkOf(r.stdout);
  const expected = live.map((id) => (id === 'pyodide-run-js' ? '__el_pwned_pyodide_run_js' : id === 'js-eval' ? '__el_pwned_js_eval' : `el-pwned-${id}`));
  assert.deepEqual(check.inside.sort(), expected.sort());
  // the Python payloads reached the host's disk from inside Pyodide
  assert.ok((await hostSentinels(cwd)).includes('el-pwned-cloudpickle-exec'), await hostSentinels(cwd));
});

test('restore FILE: foreign, nothing unpickled, nothing runs, and the person is told what it would import', async () => {
  const cwd = await workdir();
  const r = await runCli(['restore', 'hostile.elc', '-c', CHECK], { cwd });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, ''); // CODE never ran: nothing was restored
  assert.match(r.stderr, /This checkpoint is foreign \(it was read from a file, not from this store\)/);
  assert.match(r.stderr, /⚠ runs code\s+builtins\.exec/);
  assert.match(r.stderr, /see `elastic-lite inspect hostile\.elc`\. Then restore it with --trust only if you trust where it comes from/);
  assert.match(r.stderr, /nothing could be restored: .*this checkpoint is foreign/);
  assert.deepEqual(await hostSentinels(cwd), []);
  const j = await runCli(['restore', 'hostile.elc', '--json'], { cwd });
  const doc = JSON.parse(j.stdout);
  assert.deepEqual(doc.restore.restored, []);
  assert.deepEqual(doc.restore.problems.map((p) => [p.kind, p.code]), [['refused', 'foreign']]);
  assert.deepEqual(doc.restore.modules.map((m) => [m.name, m.ok]), [['print', false]]);
  assert.deepEqual(await hostSentinels(cwd), []);
});

test('restore FILE --data-only: only the plain data, nothing runs', async () => {
  const cwd = await workdir();
  const r = await runCli(['restore', 'hostile.elc', '--data-only', '-c', CHECK], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(checkOf(r.stdout), { kept: { a: [1, 2] }, inside: [] });
  assert.match(r.stdout, /^open\('el-pwned-manifest-print', 'w'\)\.close\(\)$/m); // print printed: not rebound
  assert.match(r.stderr, /^cloudpickle_exec\s+refused\s+not plain data: it would import cloudpickle\.builtins\.exec \(is builtins\.exec\)/m);
  assert.deepEqual(await hostSentinels(cwd), []);
  const both = await runCli(['restore', 'hostile.elc', '--data-only', '--trust'], { cwd });
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--trust or --data-only, not both/);
});
