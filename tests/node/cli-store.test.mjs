// The CLI's store commands (ls, rm, export), help and command-line errors: the real CLI in a
// child process, a real directory store. No Python and no C core needed here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { runCli, tempWorkdir, oneLineError } from './cli-helpers.mjs';
import { notFound } from '../../js/shared/report.mjs';

const COMMANDS = ['run', 'restore', 'ls', 'inspect', 'verify', 'export', 'import', 'rm', 'retention'];

test('--help lists every command and the exit codes; each command has --help', async () => {
  const cwd = await tempWorkdir();
  const main = await runCli(['--help'], { cwd });
  assert.equal(main.code, 0);
  for (const c of COMMANDS) assert.match(main.stdout, new RegExp(`^  ${c} `, 'm'));
  assert.match(main.stdout, /Exit codes:/);
  // what a person who installed the package does (not a checkout's npm run build alone)
  assert.match(main.stdout, /reinstall the\s+elastic-lite package; in a source checkout, run npm run build/);
  const helps = await Promise.all(COMMANDS.map((c) => runCli([c, '--help'], { cwd })));
  helps.forEach((r, i) => {
    assert.equal(r.code, 0, COMMANDS[i]);
    assert.match(r.stdout, new RegExp(`^Usage: elastic-lite ${COMMANDS[i]}`), COMMANDS[i]);
    assert.match(r.stdout, /--store DIR/);
    assert.match(r.stdout, /--json/);
  });
  assert.deepEqual(await fs.readdir(cwd), [], 'help creates nothing');
});

test('command-line mistakes exit 2 with one line', async () => {
  const cwd = await tempWorkdir();
  for (const args of [['frobnicate'], ['ls', '--bogus'], ['rm'], ['export', 'only-name'], ['verify'], ['rm', '']]) {
    const r = await runCli(args, { cwd });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.ok(oneLineError(r.stderr), r.stderr);
  }
  const none = await runCli([], { cwd });
  assert.equal(none.code, 2);
  assert.match(none.stdout, /Usage: elastic-lite COMMAND/);
});

async function storeWith(entries) {
  const cwd = await tempWorkdir();
  const store = new DirectoryStore(path.join(cwd, '.elastic-lite'));
  for (const [name, bytes, meta] of entries) await store.put(name, bytes, meta);
  return { cwd, store };
}

test('ls: empty store, then entries newest first, --json, --notebook and --store', async () => {
  const empty = await runCli(['ls'], { cwd: await tempWorkdir() });
  assert.equal(empty.code, 0);
  assert.match(empty.stdout, /No checkpoints in .*\.elastic-lite/);

  const { cwd } = await storeWith([
    ['older', new Uint8Array(10), { notebook: 'a.ipynb', createdMs: Date.UTC(2026, 0, 1), variables: 3, skipped: [] }],
    ['newer', new Uint8Array(2048), { notebook: 'b.ipynb', createdMs: Date.UTC(2026, 5, 1), variables: 1, skipped: [{ name: 'g' }] }],
  ]);
  const r = await runCli(['ls'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[0], /^NAME\s+NOTEBOOK\s+CREATED\s+SIZE\s+VARIABLES\s+SKIPPED$/);
  assert.match(lines[2], /^newer\s+b\.ipynb\s+2026-06-01 00:00:00 UTC\s+2\.0 KiB\s+1\s+1$/);
  assert.match(lines[3], /^older\s+a\.ipynb\s+2026-01-01 00:00:00 UTC\s+10 B\s+3\s+0$/);

  const j = await runCli(['ls', '--json', '--notebook', 'a.ipynb'], { cwd });
  assert.equal(j.code, 0);
  const doc = JSON.parse(j.stdout);
  assert.deepEqual(doc.checkpoints.map((e) => e.name), ['older']);
  assert.equal(doc.checkpoints[0].meta.size, 10);

  const other = await tempWorkdir();
  const viaStore = await runCli(['ls', '--store', path.join(cwd, '.elastic-lite'), '--json'], { cwd: other });
  assert.equal(JSON.parse(viaStore.stdout).checkpoints.length, 2);
});

test('rm deletes, and a missing name exits 3', async () => {
  const { cwd, store } = await storeWith([['a', new Uint8Array(5), {}], ['b', new Uint8Array(5), {}]]);
  const r = await runCli(['rm', 'a'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Deleted checkpoint "a"/);
  assert.equal(await store.get('a'), null);
  const again = await runCli(['rm', 'a'], { cwd });
  assert.equal(again.code, 3);
  assert.match(oneLineError(again.stderr), /no checkpoint named "a" in .*\.elastic-lite \(see: elastic-lite ls\)/);
  assert.ok(await store.get('b'));
});

test('export writes the exact bytes; refuses to overwrite without --force; missing name exits 3', async () => {
  const bytes = new Uint8Array(3000).map((_, i) => i % 251);
  const { cwd } = await storeWith([['run1', bytes, {}]]);
  const r = await runCli(['export', 'run1', 'out.elc'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(new Uint8Array(await fs.readFile(path.join(cwd, 'out.elc'))), bytes);

  const clash = await runCli(['export', 'run1', 'out.elc'], { cwd });
  assert.equal(clash.code, 1);
  assert.match(oneLineError(clash.stderr), /out\.elc already exists; pass --force/);
  assert.equal((await runCli(['export', 'run1', 'out.elc', '--force'], { cwd })).code, 0);

  const missing = await runCli(['export', 'nope', 'x.elc'], { cwd });
  assert.equal(missing.code, 3);
  assert.ok(oneLineError(missing.stderr));
  await assert.rejects(fs.stat(path.join(cwd, 'x.elc')));
});

test('--json gives the host report schema on ls, rm, export and retention (no Python: the shared JS rules)', async () => {
  const cell = (n, line, ms) => ({ notebook: 'nb.ipynb', createdMs: ms, auto: true, variables: 1, names: ['x'], cell: { executionCount: n, firstLine: line } });
  const { cwd } = await storeWith([
    ['kept', new Uint8Array(8), { notebook: 'nb.ipynb', createdMs: Date.UTC(2026, 0, 1), variables: 1, names: ['x'], keep: true }],
    ['nb [3]', new Uint8Array(8), cell(3, 'x = f(2)', Date.UTC(2026, 0, 2))],
    ['nb [4]', new Uint8Array(8), { ...cell(4, '1 + 1', Date.UTC(2026, 0, 3)), variables: 0, names: [] }],
  ]);
  const json = async (...args) => {
    const r = await runCli([...args, '--json'], { cwd });
    const doc = JSON.parse(r.stdout);
    for (const k of ['op', 'ok', 'problems', 'warnings', 'timings']) assert.ok(k in doc, `${args[0]}: ${k}`);
    return [r.code, doc];
  };
  const [, ls] = await json('ls');
  assert.equal(ls.op, 'list');
  // host.list's fields: the point label, what a restore without a name brings back, the default name
  assert.deepEqual(ls.checkpoints.map((e) => [e.name, e.label]), [['nb [4]', '[4] 1 + 1'], ['nb [3]', '[3] x = f(2)'], ['kept', '']]);
  assert.equal(ls.restore_choice, 'nb [3]', 'the newest that holds something');
  assert.equal(ls.default_name, 'checkpoint');
  const human = await runCli(['ls'], { cwd }); // the table renders the same fields
  assert.match(human.stdout, /^nb \[3\]\s+nb\.ipynb\s+.*\[3\] x = f\(2\)/m);
  assert.match(human.stdout, /^restore without a NAME brings back "nb \[3\]"\.$/m);
  const [, exp] = await json('export', 'kept', 'kept.elc');
  assert.deepEqual([exp.op, exp.ok, exp.name, exp.size, exp.meta.keep], ['export', true, 'kept', 8, true]);
  const [missing, none] = await json('export', 'nope', 'nope.elc');
  assert.deepEqual([missing, none.op, none.ok, none.problems], [3, 'export', false, [notFound('nope')]]);
  const [, ret] = await json('retention', '--keep-last', '5');
  assert.deepEqual([ret.op, ret.ok, ret.notebook, ret.retention], ['retention', true, null, { keepLast: 5 }]);
  const [, rm] = await json('rm', 'kept', 'nb [4]');
  assert.deepEqual([rm.op, rm.ok, rm.deleted, rm.names, rm.problems], ['delete', true, true, ['kept', 'nb [4]'], []]);
  const [, key] = await json('keygen', 'pub.key');
  assert.deepEqual([key.op, key.ok, key.publicKey.keyId], ['keygen', true, key.keyId]);
});

test('--json failures still print one JSON document on stdout', async () => {
  const r = await runCli(['rm', 'ghost', '--json'], { cwd: await tempWorkdir() });
  assert.equal(r.code, 3);
  // host.delete's report: the kernel's words for a name the store does not hold
  const gone = JSON.parse(r.stdout);
  assert.deepEqual([gone.op, gone.ok, gone.deleted, gone.names], ['delete', false, false, ['ghost']]);
  assert.deepEqual(gone.problems, [notFound('ghost')]);
  assert.equal(notFound('ghost').message, 'no checkpoint named "ghost"');
  const u = await runCli(['ls', '--bogus', '--json'], { cwd: await tempWorkdir() });
  assert.equal(u.code, 2);
  const usage = JSON.parse(u.stdout);
  assert.deepEqual([usage.op, usage.ok, usage.error.exitCode, usage.problems.map((p) => [p.kind, p.code])],
    ['list', false, 2, [['failed', 'usage']]]);
});

test('a bad --store is one sentence and exit 2, before anything else: a file, or under one', async () => {
  const cwd = await tempWorkdir();
  await fs.writeFile(path.join(cwd, 'file'), 'x');
  for (const [args, pattern] of [
    [['ls', '--store', 'file'], /^elastic-lite: --store file is a file, not a directory; pass --store DIR with a directory\.$/],
    [['rm', 'x', '--store', 'file/sub'], /^elastic-lite: --store file\/sub cannot be created: .*file is a file, not a directory\.$/],
    [['run', 'nb.ipynb', '--store', 'file'], /is a file, not a directory/],
    [['export', 'x', 'out.elc', '--store', 'file'], /is a file, not a directory/],
  ]) {
    const r = await runCli(args, { cwd });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(oneLineError(r.stderr), pattern);
  }
});

test('export into a directory writes DIR/NAME.elc; bad targets are one sentence, exit 2 or 3', async () => {
  const bytes = new Uint8Array(100).map((_, i) => i);
  const { cwd } = await storeWith([['nb.ipynb 2026', bytes, {}]]);
  await fs.mkdir(path.join(cwd, 'out'));
  const r = await runCli(['export', 'nb.ipynb 2026', 'out'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Exported checkpoint "nb\.ipynb 2026" to out\/nb\.ipynb_2026\.elc \(100 B\)\./);
  assert.deepEqual(new Uint8Array(await fs.readFile(path.join(cwd, 'out', 'nb.ipynb_2026.elc'))), bytes);
  const forced = await runCli(['export', 'nb.ipynb 2026', 'out', '--force'], { cwd });
  assert.equal(forced.code, 0, forced.stderr);
  const clash = await runCli(['export', 'nb.ipynb 2026', 'out'], { cwd });
  assert.equal(clash.code, 1);
  assert.match(oneLineError(clash.stderr), /out\/nb\.ipynb_2026\.elc already exists; pass --force/);
  await fs.writeFile(path.join(cwd, 'plain'), 'x');
  for (const [target, code, pattern] of [
    ['missing/dir/x.elc', 3, /cannot write missing\/dir\/x\.elc: the folder missing\/dir does not exist\./],
    ['plain/x.elc', 2, /cannot write plain\/x\.elc: plain is a file, not a folder\./],
  ]) {
    const bad = await runCli(['export', 'nb.ipynb 2026', target, '--force'], { cwd });
    assert.equal(bad.code, code, bad.stderr);
    assert.match(oneLineError(bad.stderr), pattern);
  }
});
