// The notebook's history from the terminal: `run --history` checkpoints after each cell
// ("NAME [N]", only what changed written), `ls` shows the cell each point followed, `restore
// "NAME [N]"` brings back the state after cell N, and `retention` / `run --keep-last` bound it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { runCli, tempWorkdir, oneLineError } from './cli-helpers.mjs';

const NOTEBOOK = {
  cells: [
    { cell_type: 'markdown', source: ['# a notebook whose state changes cell by cell'], metadata: {} },
    { cell_type: 'code', source: ['big = bytes(range(256)) * 4096\n', 'log = []'], metadata: {}, outputs: [], execution_count: null },
    { cell_type: 'code', source: ['log.append("two")\n', 'step = 2'], metadata: {}, outputs: [], execution_count: null },
    { cell_type: 'code', source: ['log.append("three")\n', 'step = 3'], metadata: {}, outputs: [], execution_count: null },
  ],
  metadata: {}, nbformat: 4, nbformat_minor: 5,
};

async function workdirWithNotebook() {
  const cwd = await tempWorkdir('el-cli-points-');
  await fs.writeFile(path.join(cwd, 'steps.ipynb'), JSON.stringify(NOTEBOOK));
  return cwd;
}

test('run --history: a point after each cell, listed with its cell; each restores its own state', { timeout: 300_000 }, async () => {
  const cwd = await workdirWithNotebook();
  const run = await runCli(['run', 'steps.ipynb', '--name', 'steps', '--history', '--json'], { cwd });
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout);
  const points = report.cells.filter((c) => c.checkpoint).map((c) => c.checkpoint.name);
  assert.deepEqual(points, ['steps [2]', 'steps [3]', 'steps [4]']); // code cells only, numbered as shown

  const ls = await runCli(['ls'], { cwd });
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /AFTER CELL/);
  assert.match(ls.stdout, /^steps \[3\] .*\[3\] log\.append\("two"\)/m);
  assert.match(ls.stdout, /^steps \[2\] .*\[2\] big = bytes/m);
  const json = JSON.parse((await runCli(['ls', '--json'], { cwd })).stdout);
  const cellOf = Object.fromEntries(json.checkpoints.map((e) => [e.name, e.meta.cell]));
  assert.deepEqual([cellOf['steps [4]'].executionCount, cellOf['steps [4]'].firstLine], [4, 'log.append("three")']);
  assert.equal(cellOf.steps, undefined); // the final checkpoint is not a point after a cell

  const at3 = await runCli(['restore', 'steps [3]', '-c', 'print(step, log, len(big))'], { cwd });
  assert.equal(at3.code, 0, at3.stderr);
  assert.equal(at3.stdout.trim(), "2 ['two'] 1048576");
  const at2 = await runCli(['restore', 'steps [2]', '-c', 'print(log, "step" in dir())'], { cwd });
  assert.equal(at2.stdout.trim(), '[] False');
});

test('retention: run --keep-last bounds the history; the retention command sets and shows a policy', { timeout: 300_000 }, async () => {
  const cwd = await workdirWithNotebook();
  const run = await runCli(['run', 'steps.ipynb', '--name', 'steps', '--history', '--keep-last', '2'], { cwd });
  assert.equal(run.code, 0, run.stderr);
  const names = JSON.parse((await runCli(['ls', '--json'], { cwd })).stdout).checkpoints.map((e) => e.name);
  assert.deepEqual(names.sort(), ['steps', 'steps [4]']);

  const set = await runCli(['retention', '--notebook', 'steps.ipynb', '--keep-hourly', '3', '--max-bytes', '2M'], { cwd });
  assert.equal(set.code, 0, set.stderr);
  assert.match(set.stdout, /Checkpoints of steps\.ipynb .*: one per hour for 3 hours, at most 2\.0 MiB\./);
  const shown = JSON.parse((await runCli(['retention', '--notebook', 'steps.ipynb', '--json'], { cwd })).stdout);
  assert.deepEqual(shown.retention, { keepHourly: 3, maxBytes: 2 * 1024 * 1024 });
  const cleared = await runCli(['retention', '--notebook', 'steps.ipynb', '--clear'], { cwd });
  assert.match(cleared.stdout, /keep every checkpoint\./);
  for (const bad of [['retention', '--keep-last', '0'], ['retention', '--max-bytes', 'lots'],
    ['retention', '--clear', '--keep-last', '3'], ['run', 'steps.ipynb', '--keep-hourly', 'x']]) {
    const r = await runCli(bad, { cwd });
    assert.equal(r.code, 2, `${bad.join(' ')}: ${r.stderr}`);
    assert.ok(oneLineError(r.stderr), r.stderr);
  }
});
