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
import { runCli, tempWorkdir } from './cli-helpers.mjs';
import { buildHostileFiles, SENTINEL_CHECK as CHECK, checkOf, sentinelOf } from '../helpers/hostile.mjs';

let hostile; // bytes of the file holding every trick
let clean; // a plain checkpoint file: x = [1, 2, 3] and a function
let live; // ids of the payloads that run in Pyodide when trusted
before(async () => {
  ({ hostile, clean, live } = await buildHostileFiles());
});

async function workdir() {
  const cwd = await tempWorkdir('el-trust-');
  await fs.writeFile(path.join(cwd, 'hostile.elc'), hostile);
  await fs.writeFile(path.join(cwd, 'clean.elc'), clean);
  return cwd;
}

async function hostSentinels(cwd) {
  return (await fs.readdir(cwd)).filter((f) => f.startsWith('el-pwned-')).sort();
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
  assert.equal(j.trust.provenance, 'foreign');
  const dangerous = j.trust.imports.filter((i) => i.danger === 'runs-code' || i.danger === 'unknown');
  assert.ok(dangerous.length >= 12, JSON.stringify(dangerous.map((i) => i.target)));
});

test('trusted, every payload runs: the sentinels below can appear', async () => {
  const cwd = await workdir();
  const r = await runCli(['restore', 'hostile.elc', '--trust', '-c', CHECK], { cwd });
  assert.equal(r.code, 0, r.stderr);
  const check = checkOf(r.stdout);
  assert.deepEqual(check.found, live.map(sentinelOf).sort());
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
  assert.deepEqual(doc.restored, []);
  assert.deepEqual(doc.problems.map((p) => [p.kind, p.code]), [['refused', 'foreign']]);
  assert.deepEqual(doc.modules.map((m) => [m.name, m.ok]), [['print', false]]);
  assert.deepEqual(await hostSentinels(cwd), []);
});

test('restore FILE --data-only: only the plain data, nothing runs', async () => {
  const cwd = await workdir();
  const r = await runCli(['restore', 'hostile.elc', '--data-only', '-c', CHECK], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(checkOf(r.stdout), { kept: { a: [1, 2] }, found: [] });
  assert.match(r.stdout, /^open\('el-pwned-manifest-print', 'w'\)\.close\(\)$/m); // print printed: not rebound
  assert.match(r.stderr, /^cloudpickle_exec\s+refused\s+not plain data: it would import cloudpickle\.builtins\.exec \(is builtins\.exec\)/m);
  assert.deepEqual(await hostSentinels(cwd), []);
  const both = await runCli(['restore', 'hostile.elc', '--data-only', '--trust'], { cwd });
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--trust or --data-only, not both/);
});

test('imported into the store it stays foreign: restore NAME loads nothing until --trust; import --trust signs', async () => {
  const cwd = await workdir();
  const imp = await runCli(['import', 'hostile.elc'], { cwd });
  assert.equal(imp.code, 0, imp.stderr);
  assert.match(imp.stdout, /it stays foreign: restore loads it only with --trust \(see inspect "hostile"\)/);
  const r = await runCli(['restore', 'hostile', '-c', CHECK], { cwd });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /This checkpoint is foreign \(it was imported from .*hostile\.elc and nobody has confirmed it since\)/);
  assert.deepEqual(await hostSentinels(cwd), []);
  const d = await runCli(['restore', 'hostile', '--data-only', '-c', CHECK], { cwd });
  assert.deepEqual(checkOf(d.stdout), { kept: { a: [1, 2] }, found: [] });
  assert.deepEqual(await hostSentinels(cwd), []);
  const i = await runCli(['inspect', 'hostile'], { cwd });
  assert.match(i.stdout, /This checkpoint is foreign \(it was imported from/);

  // a file the person vouches for: imported signed, restored like their own checkpoints
  const vouched = await runCli(['import', 'clean.elc', '--trust'], { cwd });
  assert.equal(vouched.code, 0, vouched.stderr);
  assert.match(vouched.stdout, /signed as this store's own\./);
  const back = await runCli(['restore', 'clean', '-c', 'print(f(x[-1]))'], { cwd });
  assert.equal(back.code, 0, back.stderr);
  assert.equal(back.stdout, '4\n');
  // the key the store signs with lives beside it, private
  const st = await fs.stat(path.join(cwd, '.elastic-lite', 'signing-key'));
  assert.equal(st.mode & 0o777, 0o600);
});
