// benchmarks/history-jupyterlite.mjs (auto-checkpoint on vs off in the real JupyterLite site)
// must keep running as the extension and the site change: its smoke run (EL_HISTORY_QUICK=1:
// 4 cells, one think time, Run All off and on) into a temporary folder. No timing is judged
// (the machine may be loaded); what is checked is what the settings do: with auto-checkpoint
// on a point after each cell (its kernel time read from the sidebar), none while off, and one
// after a Run All.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { tempDirSync } from '../helpers/tempdir.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('the JupyterLite history benchmark runs (EL_HISTORY_QUICK=1) and the settings do what they say', { timeout: 600_000 }, () => {
  const out = tempDirSync('elastic-lite-history-bench-');
  const run = spawnSync(process.execPath, [path.join(ROOT, 'benchmarks/history-jupyterlite.mjs')], {
    cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24,
    env: { ...process.env, EL_HISTORY_QUICK: '1', EL_BENCH_OUT: out },
  });
  assert.equal(run.status, 0, `history-jupyterlite.mjs failed:\n${run.stderr.slice(-4000)}`);
  assert.match(run.stdout, /\| think time \| cells off \/ on \|/);
  const result = JSON.parse(readFileSync(path.join(out, 'history-jupyterlite.json'), 'utf8'));
  assert.equal(result.quick, true);
  const [row] = result.runs;
  assert.equal(row.think, 550);
  assert.deepEqual(row.cells, { off: 2, on: 2 });
  assert.equal(row.points, row.cells.on, 'a point after each cell run with auto-checkpoint on');
  assert.ok(row.pointMs.seen >= 1 && row.pointMs.median > 0, `the sidebar reported no point's time: ${JSON.stringify(row.pointMs)}`);
  assert.deepEqual(result.runAll.off.map((x) => x.points), [0], 'Run All with auto-checkpoint off took points');
  assert.deepEqual(result.runAll.on.map((x) => x.points), [1], 'Run All with auto-checkpoint on: one point after the last cell');
});
