// verify / inspect / import / export of the real CLI on real containers written by the C core
// (js/core.mjs), including damaged ones: a flipped byte, a truncated file, an empty file, a
// file that is not a checkpoint, a checkpoint of a newer format major version. The records
// hold small hand-made pickle streams; verify checks them with the C core alone, inspect and
// import through elastic_lite.host in a fresh Pyodide (nothing is unpickled). That the two
// say the same of the same damage: cli-verify-parity.test.mjs.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadCore } from '../../js/core.mjs';
import { runCli, tempWorkdir, oneLineError, messageLines } from './cli-helpers.mjs';
import { newerMajor } from './cli-verify-damage.mjs';
import { problemLine } from '../../js/shared/report.mjs';

let core;
let good; // container bytes: record 0 = x (pickle), record 1 = y, z (cloudpickle, imports builtins.len)
before(async () => {
  core = await loadCore();
  const w = core.newWriter({ producer: 'elastic-lite test', python: '3.14.0', createdMs: Date.UTC(2026, 11, 1) });
  w.beginRecord(['x']);
  w.append(Uint8Array.from([0x80, 2, 0x4b, 1, 0x2e])); // PROTO 2, BININT1 1, STOP
  w.endRecord('pickle');
  w.beginRecord(['y', 'z']);
  w.append(Uint8Array.from([0x80, 2, ...new TextEncoder().encode('cbuiltins\nlen\n'), 0x71, 0, 0x2e])); // GLOBAL, BINPUT, STOP
  w.endRecord('cloudpickle');
  good = w.finish();
  w.free();
});

async function workdirWith(files) {
  const cwd = await tempWorkdir();
  for (const [name, bytes] of Object.entries(files)) await fs.writeFile(path.join(cwd, name), bytes);
  return cwd;
}

test('a whole checkpoint: verify exits 0, inspect shows records, serializers and globals', async () => {
  const cwd = await workdirWith({ 'good.elc': good });
  const v = await runCli(['verify', 'good.elc'], { cwd });
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /good\.elc: OK, whole: 2 records/);

  const i = await runCli(['inspect', 'good.elc'], { cwd });
  assert.equal(i.code, 0, i.stderr);
  assert.match(i.stdout, /^format\s+2$/m);
  assert.match(i.stdout, /^producer\s+elastic-lite test$/m);
  assert.match(i.stdout, /^created\s+2026-12-01 00:00:00 UTC$/m);
  assert.match(i.stdout, /^0\s+x\s+pickle\s+\d+\s+5\s+[0-9a-f]{8}\s+ok$/m);
  assert.match(i.stdout, /^1\s+y, z\s+cloudpickle\s+\d+\s+19\s+[0-9a-f]{8}\s+ok$/m);
  assert.match(i.stdout, /^\s+builtins\.len\s+y, z$/m); // what restoring would import, and who uses it

  const j = JSON.parse((await runCli(['inspect', 'good.elc', '--json'], { cwd })).stdout);
  assert.equal(j.op, 'inspect');
  assert.equal(j.whole, true);
  assert.equal(path.basename(j.file), 'good.elc'); // a FILE: its path added to the report
  assert.deepEqual(j.records[1].globals, [['builtins', 'len']]);
});

test('import validates, stores, and export gives back the same bytes; verify and inspect by NAME', async () => {
  const cwd = await workdirWith({ 'good.elc': good });
  const imp = await runCli(['import', 'good.elc', '--name', 'mine'], { cwd });
  assert.equal(imp.code, 0, imp.stderr);
  assert.match(imp.stdout, /Imported good\.elc as checkpoint "mine"/);
  assert.equal((await runCli(['verify', 'mine'], { cwd })).code, 0);
  const ls = JSON.parse((await runCli(['ls', '--json'], { cwd })).stdout);
  assert.deepEqual(ls.checkpoints.map((e) => e.name), ['mine']);
  assert.deepEqual(ls.checkpoints[0].meta.names, ['x', 'y', 'z']);
  assert.equal(ls.checkpoints[0].meta.originalCreatedMs, Date.UTC(2026, 11, 1));
  assert.equal(ls.checkpoints[0].meta.imported, path.join(cwd, 'good.elc'));

  const again = await runCli(['import', 'good.elc', '--name', 'mine'], { cwd });
  assert.equal(again.code, 1);
  assert.match(messageLines(again.stderr)[0], /^elastic-lite: good\.elc: a checkpoint named "mine" already exists/);
  assert.match(again.stderr, /^Pass --name NEW or --force\.$/m);
  const byFileName = await runCli(['import', 'good.elc'], { cwd });
  assert.equal(byFileName.code, 0, byFileName.stderr);

  assert.equal((await runCli(['export', 'mine', 'copy.elc'], { cwd })).code, 0);
  assert.deepEqual(new Uint8Array(await fs.readFile(path.join(cwd, 'copy.elc'))), good);
  const insp = await runCli(['inspect', 'mine'], { cwd });
  assert.match(insp.stdout, /^checkpoint\s+mine\s+\(store /m);
});

test('export, flip one byte, verify exits 1 naming record and offset; import refuses with the same line', async () => {
  const cwd = await workdirWith({ 'good.elc': good });
  assert.equal((await runCli(['import', 'good.elc', '--name', 'orig'], { cwd })).code, 0);
  assert.equal((await runCli(['export', 'orig', 'flipped.elc'], { cwd })).code, 0);
  const bytes = new Uint8Array(await fs.readFile(path.join(cwd, 'flipped.elc')));
  const rec = core.inspect(bytes).records[1];
  bytes[rec.payload_offset + 3] ^= 0x01; // one bit of y/z's payload
  await fs.writeFile(path.join(cwd, 'flipped.elc'), bytes);

  const v = await runCli(['verify', 'flipped.elc'], { cwd });
  assert.equal(v.code, 1);
  const line = oneLineError(v.stderr);
  assert.ok(line, v.stderr);
  assert.match(line, /^elastic-lite: flipped\.elc: y, z: record 1 at offset \d+: /);
  assert.match(line, new RegExp(`offset ${rec.offset}\\b`));
  assert.match(line, /checksum mismatch/);

  const imp = await runCli(['import', 'flipped.elc', '--name', 'bad'], { cwd });
  assert.equal(imp.code, 1);
  assert.equal(messageLines(imp.stderr)[0], line, 'import prints the very line verify prints');
  assert.match(imp.stderr, /Nothing was imported/);
  const ls = JSON.parse((await runCli(['ls', '--json'], { cwd })).stdout);
  assert.deepEqual(ls.checkpoints.map((e) => e.name), ['orig']);

  const insp = await runCli(['inspect', 'flipped.elc'], { cwd });
  assert.equal(insp.code, 1);
  assert.match(insp.stdout, /^0\s+x\s+pickle.*ok$/m, 'the good record is still listed as good');
  assert.match(insp.stdout, /^1\s+y, z\s+cloudpickle.*BAD$/m);

  const vj = await runCli(['verify', 'flipped.elc', '--json'], { cwd });
  assert.equal(vj.code, 1);
  const doc = JSON.parse(vj.stdout);
  assert.equal(doc.ok, false);
  assert.equal(doc.op, 'verify');
  assert.equal(doc.problems[0].record, 1);
  assert.equal(problemLine('flipped.elc', doc.problems[0]), line.replace(/^elastic-lite: /, ''));
});

test('bad files: truncated, empty, not a checkpoint, newer format: one clear line each, exit 1, no stack', async () => {
  const cwd = await workdirWith({
    'truncated.elc': good.subarray(0, Math.floor(good.length / 2)),
    'empty.elc': new Uint8Array(0),
    'notes.txt': new TextEncoder().encode('This is a text file, not a checkpoint.\n'.repeat(4)),
    'newer.elc': newerMajor(core, good),
  });
  const expect = {
    'truncated.elc': /truncated/,
    'empty.elc': /empty \(0 bytes\): not an Elastic Lite checkpoint/,
    'notes.txt': /not an Elastic Lite checkpoint/,
    'newer.elc': /checkpoint format 3 is newer than this reader supports \(2\); upgrade elastic-lite/,
  };
  for (const [file, pattern] of Object.entries(expect)) {
    for (const cmd of ['verify', 'import', 'inspect']) {
      const r = await runCli([cmd, file], { cwd });
      assert.equal(r.code, 1, `${cmd} ${file}: ${r.stderr}`);
      const line = cmd === 'import' ? messageLines(r.stderr)[0] : oneLineError(r.stderr);
      assert.ok(line, `${cmd} ${file}: ${r.stderr}`);
      assert.ok(line.startsWith(`elastic-lite: ${file}: `), line);
      assert.match(line, pattern, `${cmd} ${file}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    }
  }
  // With --debug the reason is the same; nothing of it is an exception, so still no stack.
  const dbg = await runCli(['verify', 'empty.elc', '--debug'], { cwd });
  assert.equal(dbg.code, 1);
  const ls = JSON.parse((await runCli(['ls', '--json'], { cwd })).stdout);
  assert.deepEqual(ls.checkpoints, [], 'nothing was imported');
});

test('NAME|FILE: a missing name or file exits 3; a directory is not a checkpoint', async () => {
  const cwd = await tempWorkdir();
  await fs.mkdir(path.join(cwd, 'adir.elc'));
  const r = await runCli(['verify', 'nothing-here'], { cwd });
  assert.equal(r.code, 3);
  assert.match(oneLineError(r.stderr), /no checkpoint named "nothing-here" in .*, and no file nothing-here/);
  const f = await runCli(['verify', './missing.elc'], { cwd });
  assert.equal(f.code, 3);
  assert.match(oneLineError(f.stderr), /\.\/missing\.elc: no such file/);
  const d = await runCli(['inspect', 'adir.elc'], { cwd });
  assert.equal(d.code, 1);
  assert.match(oneLineError(d.stderr), /is a directory, not a checkpoint file/);
});

test('names and paths are never confused: "a/b" and "x.elc" are store names when stored, ./x.elc the file', async () => {
  const cwd = await workdirWith({ 'good.elc': good, 'x.elc': new TextEncoder().encode('not a checkpoint') });
  assert.equal((await runCli(['import', 'good.elc', '--name', 'a/b'], { cwd })).code, 0);
  assert.equal((await runCli(['import', 'good.elc', '--name', 'x.elc'], { cwd })).code, 0);
  const ab = await runCli(['verify', 'a/b'], { cwd });
  assert.equal(ab.code, 0, ab.stderr);
  assert.match(ab.stdout, /^checkpoint "a\/b": OK, whole/);
  const byName = await runCli(['verify', 'x.elc'], { cwd });
  assert.equal(byName.code, 0, byName.stderr);
  assert.match(byName.stdout, /^checkpoint "x\.elc": OK, whole/);
  assert.match(byName.stderr, /"x\.elc" is a checkpoint in .* and also a file here; using the checkpoint \(write \.\/x\.elc for the file\)/);
  const byPath = await runCli(['verify', './x.elc'], { cwd });
  assert.equal(byPath.code, 1);
  assert.match(oneLineError(byPath.stderr), /^elastic-lite: \.\/x\.elc: not an Elastic Lite checkpoint/);
});
