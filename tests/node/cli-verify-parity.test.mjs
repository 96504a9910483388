// `verify` checks a checkpoint through the C core alone (no Python); `inspect` through
// elastic_lite.host in a fresh Pyodide. For the same bytes they must reach the same outcome and
// say the same thing about the damage: run both (the real CLI) on real containers damaged in
// every region (a record's stream, a record header, an out-of-band buffer, the manifest, the
// index, the footer), cut, empty, not a checkpoint, of a newer format, the format 1.0 fixtures
// whole and flipped, and on store entries (a record changed in the store; a record file the
// store cannot give back), and compare exit status, every damage problem of the report (kind,
// code, message, names, record, offset) and the line printed. Then: verify, ls, export and rm
// really start no Python (they run with Pyodide made unloadable).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadCore } from '../../js/core.mjs';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { runCli, tempWorkdir, messageLines } from './cli-helpers.mjs';
import { damagedFiles, flipped, sources } from './cli-verify-damage.mjs';

let core;
let src;
let cwd;
before(async () => {
  core = await loadCore();
  src = await sources();
  cwd = await tempWorkdir();
});

/** The problem lines of a failed run's stderr (progress and warning lines left out). */
const errorLines = (stderr) => messageLines(stderr).filter((l) => l.startsWith('elastic-lite: '));
const damage = (report) => (report.problems ?? []).filter((p) => p.kind === 'damaged');
const RECORD_FIELDS = ['index', 'kind', 'names', 'serializer', 'offset', 'length', 'ok', 'error', 'globals', 'crc', 'buffers'];
const recordView = (r) => Object.fromEntries(RECORD_FIELDS.map((k) => [k, r[k]]));

/**
 * verify (with --json and without) and inspect --json (it starts Pyodide: once per file) of
 * ARG; asserts they agree; returns verify's JSON document.
 */
async function bothAgree(arg) {
  const vj = await runCli(['verify', arg, '--json'], { cwd });
  const ij = await runCli(['inspect', arg, '--json'], { cwd });
  const v = await runCli(['verify', arg], { cwd });
  assert.equal(vj.code, ij.code, `${arg}: verify exits ${vj.code}, inspect ${ij.code}\n${vj.stderr}\n${ij.stderr}`);
  assert.equal(v.code, vj.code);
  // --json: the report itself (the one schema), `file` added for a FILE
  const vd = JSON.parse(vj.stdout);
  const id = JSON.parse(ij.stdout);
  assert.deepEqual(damage(vd), damage(id), `${arg}: the same damage, in the same words`);
  assert.deepEqual(first(vd), first(id), `${arg}: the same first problem`);
  // the same report fields, less the trust judgement (Python's)
  assert.deepEqual(Object.keys(vd).sort(), Object.keys(id).filter((k) => k !== 'trust').sort());
  assert.equal(vd.op, 'verify');
  assert.equal(id.op, 'inspect');
  for (const k of ['ok', 'whole', 'size', 'meta', 'header', 'name', 'file']) assert.deepEqual(vd[k], id[k], `${arg}: ${k}`);
  assert.deepEqual(vd.records.map(recordView), id.records.map(recordView));
  // the line a person reads: verify's one line is the one inspect prints last
  if (v.code !== 0) {
    const [line] = errorLines(v.stderr);
    assert.deepEqual(errorLines(v.stderr), [line], v.stderr);
    assert.deepEqual(errorLines(vj.stderr), [line]);
    assert.equal(errorLines(ij.stderr).at(-1), line, ij.stderr);
    vd.line = line.replace(/^elastic-lite: /, '');
  } else {
    assert.match(v.stdout, /: OK, whole: \d+ records? \(.*\), /);
  }
  vd.problem = first(vd);
  return vd;
}

/** The problem a failed verify or inspect names: the first damage, else the first problem. */
const first = (report) => report.problems.find((p) => p.kind === 'damaged') ?? (report.ok ? null : report.problems[0] ?? null);

test('files damaged in every region, cut, empty, not a checkpoint, newer, format 1.0: verify and inspect agree', async () => {
  const files = damagedFiles(core, src);
  for (const [name, { bytes }] of Object.entries(files)) await fs.writeFile(path.join(cwd, name), bytes);
  for (const [name, { expect }] of Object.entries(files)) {
    const doc = await bothAgree(name);
    if (expect === null) {
      assert.equal(doc.ok, true, `${name} is whole`);
      assert.equal(doc.problem, null);
      continue;
    }
    assert.equal(doc.ok, false, `${name} is damaged`);
    assert.equal(doc.problem.kind, 'damaged');
    if ('code' in expect) assert.equal(doc.problem.code, expect.code, name);
    if ('record' in expect) assert.equal(doc.problem.record, expect.record, name);
    assert.ok(doc.line.startsWith(`${name}: `), doc.line);
  }
});

test('store entries: a record changed in the store, a record file the store cannot give back', async () => {
  const store = new DirectoryStore(path.join(cwd, '.elastic-lite'));
  await store.put('whole', src.buffers, { notebook: 'n.ipynb' });
  await store.put("Bob's changed", src.snapshot, { notebook: 'n.ipynb' });
  await store.put('cut short', src.buffers, { notebook: 'n.ipynb' });
  const recordFile = async (name, i) => path.join(store.dir, 'records', (await store.getEntry(name)).records[i].key);

  assert.equal((await bothAgree('whole')).ok, true);

  // a record's bytes changed where the store keeps them: the core finds the record
  const changed = await recordFile("Bob's changed", 1);
  await fs.writeFile(changed, flipped(new Uint8Array(await fs.readFile(changed)), 60));
  const doc = await bothAgree("Bob's changed");
  assert.equal(doc.problem.kind, 'damaged');
  assert.equal(doc.problem.record, 1);
  assert.match(doc.line, /^checkpoint "Bob's changed": f: record 1 at offset \d+: payload checksum mismatch/);
  // export refuses it in the same words (it wrote the store's zeroed copy before) and writes nothing
  const exp = await runCli(['export', "Bob's changed", 'out.elc', '--json'], { cwd });
  const refused = JSON.parse(exp.stdout);
  assert.equal(exp.code, 1, exp.stderr);
  assert.deepEqual([refused.op, refused.ok, refused.problems[0]], ['export', false, doc.problem]);
  assert.deepEqual(errorLines(exp.stderr), [`elastic-lite: ${doc.line}; nothing was exported.`]);
  assert.equal(await fs.stat(path.join(cwd, 'out.elc')).catch(() => null), null);

  // a record file shorter than the entry says: the store itself refuses to give it back
  await fs.truncate(await recordFile('cut short', 0), 10);
  const cut = await bothAgree('cut short');
  assert.equal(cut.problem.kind, 'failed');
  assert.equal(cut.problem.code, 'store');
  assert.match(cut.line, /^checkpoint "cut short": the checkpoint store failed to read "cut short": .* is corrupted: /);
});

test('verify, ls, export and rm start no Python: they run with Pyodide made unloadable, inspect then cannot', async () => {
  // a module hook that refuses to load Pyodide (the npm package) or the glue that starts it
  const hooks = path.join(cwd, 'no-pyodide-hooks.mjs');
  await fs.writeFile(hooks, 'export async function resolve(specifier, context, next) {\n' +
    '  if (/^pyodide(\\/|$)|pyodide-glue\\.mjs$/.test(specifier)) throw new Error(`Pyodide is blocked in this test: ${specifier}`);\n' +
    '  return next(specifier, context);\n}\n');
  const preload = path.join(cwd, 'no-pyodide.mjs');
  await fs.writeFile(preload, `import { register } from 'node:module';\nregister(${JSON.stringify(new URL(`file://${hooks}`).href)});\n`);
  const env = { NODE_OPTIONS: `--import=${new URL(`file://${preload}`).href}` };
  await fs.writeFile(path.join(cwd, 'plain.elc'), src.buffers);
  await fs.writeFile(path.join(cwd, 'bad.elc'), flipped(src.buffers, 400));
  const ok = await runCli(['verify', 'plain.elc'], { cwd, env });
  assert.equal(ok.code, 0, ok.stderr);
  const bad = await runCli(['verify', 'bad.elc'], { cwd, env });
  assert.equal(bad.code, 1, bad.stderr);
  assert.match(bad.stderr, /bad\.elc: arrays, view: record 0 at offset \d+: /);
  // the plain store reads
  const store = path.join(cwd, 'no-python-store');
  await new DirectoryStore(store).put('kept', src.buffers, { notebook: 'n.ipynb' });
  const ls = await runCli(['ls', '--json', '--store', store], { cwd, env });
  assert.equal(ls.code, 0, ls.stderr);
  assert.deepEqual(JSON.parse(ls.stdout).checkpoints.map((e) => e.name), ['kept']);
  const exp = await runCli(['export', 'kept', 'kept.elc', '--store', store], { cwd, env });
  assert.equal(exp.code, 0, exp.stderr);
  assert.deepEqual(new Uint8Array(await fs.readFile(path.join(cwd, 'kept.elc'))), src.buffers);
  const rm = await runCli(['rm', 'kept', '--store', store], { cwd, env });
  assert.equal(rm.code, 0, rm.stderr);
  assert.match(rm.stdout, /^Deleted checkpoint "kept"\.$/m);

  const inspect = await runCli(['inspect', 'plain.elc'], { cwd, env });
  assert.equal(inspect.code, 4, 'the hook really keeps Pyodide out');
  assert.match(inspect.stderr, /Pyodide is blocked in this test/);
});
