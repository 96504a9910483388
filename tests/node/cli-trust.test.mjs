// Hostile checkpoint files and the real CLI: a record that would call os.system / builtins.eval
// when unpickled is marked by inspect ("⚠ runs code"), imported with a warning on stderr, and
// refused by restore (in a fresh Pyodide) unless --trust; the other records restore. Every
// judgement is elastic_lite.host's (the deny-list lives in Python only).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadCore } from '../../js/core.mjs';
import { runCli, tempWorkdir } from './cli-helpers.mjs';

const enc = (s) => new TextEncoder().encode(s);
const str = (s) => [0x58, s.length, 0, 0, 0, ...enc(s)]; // BINUNICODE (short strings only)
// GLOBAL module name, ARG, TUPLE1, REDUCE, TUPLE1 (a record holds a tuple of its values), STOP
const call = (module, name, arg) => Uint8Array.from([0x80, 2, ...enc(`c${module}\n${name}\n`), ...str(arg), 0x85, 0x52, 0x85, 0x2e]);

let hostile; // record 0 = kept (1,), record 1 = evil: builtins.eval("6*7"), record 2 = sh: os.system("true")
let clean;
before(async () => {
  const core = await loadCore();
  const w = core.newWriter({ producer: 'elastic-lite test', python: '3.14.0', createdMs: Date.UTC(2026, 11, 1) });
  w.beginRecord(['kept']);
  w.append(Uint8Array.from([0x80, 2, 0x4b, 1, 0x85, 0x2e])); // (1,)
  w.endRecord('pickle');
  w.beginRecord(['evil']);
  w.append(call('builtins', 'eval', '6*7'));
  w.endRecord('pickle');
  w.beginRecord(['sh']);
  w.append(call('os', 'system', 'true'));
  w.endRecord('pickle');
  hostile = w.finish();
  w.free();
  const c = core.newWriter({ producer: 'elastic-lite test', python: '3.14.0', createdMs: Date.UTC(2026, 11, 1) });
  c.beginRecord(['n']);
  c.append(call('builtins', 'len', 'abc')); // an ordinary global: (3,)
  c.endRecord('pickle');
  clean = c.finish();
  c.free();
});

async function workdir() {
  const cwd = await tempWorkdir('el-trust-');
  await fs.writeFile(path.join(cwd, 'hostile.elc'), hostile);
  await fs.writeFile(path.join(cwd, 'clean.elc'), clean);
  return cwd;
}

test('inspect marks deny-listed globals and says restore refuses them', async () => {
  const cwd = await workdir();
  const r = await runCli(['inspect', 'hostile.elc'], { cwd });
  assert.equal(r.code, 0, r.stderr); // the file is whole; being hostile is not damage
  assert.match(r.stdout, /1 \(evil\): builtins\.eval\n\s+⚠ runs code: builtins\.eval\n/);
  assert.match(r.stdout, /2 \(sh\): os\.system\n\s+⚠ runs code: os\.system\n/);
  assert.match(r.stdout, /2 records would call code-running globals when restored:\n/);
  assert.match(r.stdout, /hostile\.elc: sh: would call os\.system when loaded \(runs commands.*\); refused\. Restore with trust=True \(CLI: restore --trust\)/);
  const j = await runCli(['inspect', 'hostile.elc', '--json'], { cwd });
  const doc = JSON.parse(j.stdout);
  assert.deepEqual(doc.report.problems.map((p) => [p.kind, p.record, p.names, p.calls]),
    [['refused', 1, ['evil'], ['builtins.eval']], ['refused', 2, ['sh'], ['os.system']]]);

  const ok = await runCli(['inspect', 'clean.elc'], { cwd });
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /0 \(n\): builtins\.len/);
  assert.doesNotMatch(ok.stdout, /⚠|refuses/);
});

test('import stores a hostile file but warns on stderr; a clean file imports silently', async () => {
  const cwd = await workdir();
  const r = await runCli(['import', 'hostile.elc'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Imported hostile\.elc as checkpoint "hostile"/);
  assert.match(r.stderr, /warning: hostile\.elc: evil: would call builtins\.eval when loaded .*refused\. Restore with trust=True \(CLI: restore --trust\)/);
  assert.match(r.stderr, /warning: hostile\.elc: sh: would call os\.system when loaded/);
  const ls = await runCli(['ls'], { cwd });
  assert.match(ls.stdout, /hostile/);

  const c = await runCli(['import', 'clean.elc'], { cwd });
  assert.equal(c.code, 0, c.stderr);
  assert.doesNotMatch(c.stderr, /warning/);
});

test('restore refuses the hostile records in a fresh Pyodide, restores the rest; --trust loads them', async () => {
  const cwd = await workdir();
  const r = await runCli(['restore', 'hostile.elc', '-c', 'print(kept, "evil" in globals(), "sh" in globals())'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '1 False False\n');
  assert.match(r.stderr, /^evil\s+refused\s+would call builtins\.eval when loaded .*refused/m);
  assert.match(r.stderr, /^sh\s+refused\s+would call os\.system when loaded .*refused/m);

  // builtins.eval("6*7") is harmless and leaves a trace: trusted, it runs.
  const t = await runCli(['restore', 'hostile.elc', '--trust', '-c', 'print(kept, evil)'], { cwd });
  assert.equal(t.code, 0, t.stderr);
  assert.equal(t.stdout, '1 42\n');
  assert.doesNotMatch(t.stderr, /refused/);
});
