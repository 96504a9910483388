// `run` and `restore` end to end: every command is a new process with a fresh Pyodide, so a
// restore really happens in a new interpreter. Needs `npm run build` (wasm core + wheels).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadCore } from '../../js/core.mjs';
import { runCli, tempWorkdir, oneLineError, NOTEBOOKS } from './cli-helpers.mjs';

let cwd;
let run; // the result of `run basic.ipynb --name demo`
before(async () => {
  cwd = await tempWorkdir();
  run = await runCli(['run', path.join(NOTEBOOKS, 'basic.ipynb'), '--name', 'demo'], { cwd });
});

test('run executes the code cells in order and checkpoints: table, replay plan, timings', () => {
  assert.equal(run.code, 0, run.stderr);
  const out = run.stdout;
  assert.match(out, /^cell 3 ran$/m, 'cell output is printed');
  assert.match(out, /^Out\[5\]: 6$/m, 'a final expression is shown like a notebook');
  assert.match(out, /Checkpoint "demo" saved to .*\.elastic-lite \(.* 9 variables, 0 skipped, 1 recomputed on restore\)/);
  assert.match(out, /^VARIABLE\s+TYPE\s+SERIALIZER\s+SIZE\s+TIME\s+NOTE$/m);
  assert.match(out, /^f\s+function\s+cloudpickle\s+\d+ B\s+[\d.]+ m?s/m);
  assert.match(out, /^Point\s+type\s+cloudpickle/m);
  assert.match(out, /^alias\s+dict\s+cloudpickle\s+same record as data$/m, 'aliased variables share a record');
  assert.match(out, /^lock\s+_thread\.lock\s+dill\s+.*fell back to dill: cloudpickle: TypeError/m);
  // The cells were recorded as they ran: the generator nothing can pickle is recomputed on
  // restore by re-running cell 4 (whose %matplotlib line ran as `pass`).
  assert.match(out, /^Recomputed on restore \(not stored\), by re-running the cells that made them:$/m);
  assert.match(out, /^gen\s+generator\s+\[4\]$/m);
  assert.match(out, /^Timings: interpreter start [\d.]+ m?s, execute [\d.]+ m?s, serialize [\d.]+ m?s, store write [\d.]+ m?s$/m);
  assert.match(run.stderr, /cell 4, line 1: skipped IPython line "%matplotlib inline"/);
  assert.match(run.stderr, /^elastic-lite: starting Python \(Pyodide\)\.\.\.$/m, 'a progress line for the slow start');
});

test('verify and inspect name every record: the variables\' and the internal ones (manifest, recorded cells)', async () => {
  const v = await runCli(['verify', 'demo'], { cwd });
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /^checkpoint "demo": OK, whole: 10 records \(9 variables in 8 records, the manifest, the recorded cells\), /);
  const i = await runCli(['inspect', 'demo'], { cwd });
  assert.equal(i.code, 0, i.stderr);
  assert.match(i.stdout, /^status\s+whole: 10 records \(9 variables in 8 records, the manifest, the recorded cells\);/m);
  assert.match(i.stdout, /^8\s+\(the manifest\)\s+JSON\s+\d+/m);
  assert.match(i.stdout, /^9\s+\(the recorded cells\)\s+JSON\s+\d+/m);
  assert.doesNotMatch(i.stdout, /__elastic_lite_|\s\?\s/, 'no internal name and no "?" serializer');
});

test('restore -c in a new process: CODE runs as the next cell, stdout is only its output', async () => {
  const code = [
    'print(f(2), p.norm(), isinstance(p, Point), alias["inner"] is data, counts["l"], total)',
    'scale = 100  # restored functions see the live namespace',
    'f(2)',
  ].join('\n');
  const r = await runCli(['restore', 'demo', '-c', code], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '20 5.0 True True 2 6\n200\n');
  assert.match(r.stderr, /Restored 9 variables from checkpoint "demo"/);
  assert.match(r.stderr, /^Re-imported: math, Counter, threading$/m, 'module bindings come back, and only the notebook\'s');
  assert.match(r.stderr, /^Recomputed by replay:\n {2}gen: recomputed by re-running cell \[4\]$/m);
  assert.match(r.stderr, /Timings: interpreter start [\d.]+ m?s, store read [\d.]+ m?s, validate and unpickle [\d.]+ m?s, replay [\d.]+ m?s/);
  const lock = await runCli(['restore', 'demo', '--json', '-c', 'with lock:\n    print("locked")\nlock.locked()'], { cwd });
  assert.equal(lock.code, 0, lock.stderr);
  const doc = JSON.parse(lock.stdout);
  assert.equal(doc.code.output, 'locked\n');
  assert.equal(doc.code.value, 'False');
  assert.ok(doc.restored.some((r) => r.name === 'lock' && r.serializer === 'dill'));
  assert.equal(doc.op, 'restore', 'the host API\'s report, -c\'s cell as its `code`');
  assert.deepEqual(Object.keys(doc.timings).sort(),
    ['code_ms', 'file_read_ms', 'interpreter_start_ms', 'load_ms', 'read_ms', 'replay_ms', 'restore_ms', 'total_ms']);
});

test('restore -c: CODE that raises exits 1 with its traceback', async () => {
  const r = await runCli(['restore', 'demo', '-c', 'print("before")\nundefined_name + 1'], { cwd });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, 'before\n');
  assert.match(r.stderr, /elastic-lite: CODE raised an exception in the restored session\./);
  assert.match(r.stderr, /File "<restore -c>", line 2, in <module>/);
  assert.match(r.stderr, /NameError: name 'undefined_name' is not defined/);
});

test('a damaged record is reported by name while the others restore', async () => {
  assert.equal((await runCli(['export', 'demo', 'demo.elc'], { cwd })).code, 0);
  const bytes = new Uint8Array(await fs.readFile(path.join(cwd, 'demo.elc')));
  const core = await loadCore();
  const rec = core.inspect(bytes).records.find((r) => r.names.includes('p'));
  bytes[rec.payload_offset + Math.floor(rec.length / 2)] ^= 0x20;
  await fs.writeFile(path.join(cwd, 'damaged.elc'), bytes);

  const v = await runCli(['verify', 'damaged.elc'], { cwd });
  assert.equal(v.code, 1);
  assert.match(oneLineError(v.stderr), new RegExp(`damaged\\.elc: p: record ${rec.index} at offset ${rec.offset}: .*checksum mismatch`));

  // a file is foreign: restored only when trusted (it is this test's own export)
  const r = await runCli(['restore', 'damaged.elc', '--trust', '-c', 'print(total, f(3))\nprint("p" in globals())'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '6 30\nFalse\n');
  assert.match(r.stderr, /NOT restored:\n.*\n.*\n^p\s+damaged\s+record \d+ at offset \d+: /m);
});

test('run stops at the first failing cell with its number and traceback; nothing is saved', async () => {
  const dir = await tempWorkdir();
  const r = await runCli(['run', path.join(NOTEBOOKS, 'failing.ipynb')], { cwd: dir });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, 'first cell ran\n');
  assert.match(r.stderr, /elastic-lite: failing\.ipynb: cell 2 raised an exception; stopped there, nothing was saved\./);
  assert.match(r.stderr, /File "<cell 2>", line 4, in <module>\n\s+ratio = divide\(x, 0\)/);
  assert.match(r.stderr, /ZeroDivisionError: division by zero/);
  const ls = JSON.parse((await runCli(['ls', '--json'], { cwd: dir })).stdout);
  assert.deepEqual(ls.checkpoints, []);
  // --json: the failure in the one report schema (the checkpoint's, not taken), cells and all
  const j = await runCli(['run', path.join(NOTEBOOKS, 'failing.ipynb'), '--json'], { cwd: dir });
  const doc = JSON.parse(j.stdout);
  assert.equal(j.code, 1);
  assert.deepEqual([doc.op, doc.ok, doc.name, doc.failedCell, doc.warnings], ['checkpoint', false, 'failing', 2, []]);
  assert.deepEqual(doc.problems.map((p) => [p.kind, p.code, p.message]),
    [['failed', 'exception', 'failing.ipynb: cell 2 raised an exception; stopped there, nothing was saved.']]);
  assert.deepEqual(doc.cells.map((c) => [c.number, c.ok, c.output]), [[1, true, 'first cell ran\n'], [2, false, '']]);
});

test('restore: a missing name exits 3 before starting Python; an unusable file exits 1 in one line', async () => {
  const missing = await runCli(['restore', 'nope'], { cwd });
  assert.equal(missing.code, 3);
  assert.ok(oneLineError(missing.stderr), missing.stderr);
  assert.doesNotMatch(missing.stderr, /Pyodide/);
  await fs.writeFile(path.join(cwd, 'junk.elc'), 'not a checkpoint');
  const junk = await runCli(['restore', 'junk.elc'], { cwd });
  assert.equal(junk.code, 1);
  assert.match(oneLineError(junk.stderr), /^elastic-lite: junk\.elc: nothing could be restored: this is not a readable Elastic Lite checkpoint: not an Elastic Lite checkpoint/);
});

test('run: %time / %timeit / %%time run their statement (and say so), other magics are skipped', async () => {
  const dir = await tempWorkdir();
  const code = (source) => ({ cell_type: 'code', metadata: {}, source, outputs: [], execution_count: null });
  await fs.writeFile(path.join(dir, 'timed.ipynb'), JSON.stringify({
    nbformat: 4, metadata: {},
    cells: [code('def f():\n    return 5'), code('%time x = f()\n%timeit -n 3 f()'), code('%%time\ny = x + 1'),
      code('!pip install nothing\n%load_ext autoreload\nprint(x, y)')],
  }));
  const r = await runCli(['run', 'timed.ipynb'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^5 6$/m);
  assert.match(r.stderr, /warning: cell 2, line 1: ran the statement of "%time x = f\(\)" once, without timing it/);
  assert.match(r.stderr, /warning: cell 3, line 1: ran the cell of "%%time" once, without timing it/);
  assert.match(r.stderr, /warning: cell 4, line 1: skipped IPython line "!pip install nothing"/);
  assert.match(r.stderr, /warning: cell 4, line 2: skipped IPython line "%load_ext autoreload"/);
  const back = await runCli(['restore', 'timed', '-c', 'print(x, y, f())'], { cwd: dir });
  assert.equal(back.stdout, '5 6 5\n', back.stderr);
});

test('run: bad inputs are one-line errors', async () => {
  const dir = await tempWorkdir();
  await fs.writeFile(path.join(dir, 'broken.ipynb'), '{ not json');
  const cases = [
    [['run', 'absent.ipynb'], 3, /absent\.ipynb: no such notebook file/],
    [['run', 'broken.ipynb'], 1, /broken\.ipynb: not a Jupyter notebook \(the file is not valid JSON/],
    [['run', path.join(NOTEBOOKS, 'basic.ipynb'), '--name', 'bad\nname'], 2, /Invalid checkpoint name/],
  ];
  for (const [args, code, pattern] of cases) {
    const r = await runCli(args, { cwd: dir });
    assert.equal(r.code, code, r.stderr);
    assert.match(oneLineError(r.stderr), pattern);
  }
});
