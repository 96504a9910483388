// `npm run bench` must keep running as the code under it changes: a QUICK run of every part
// (one run of each figure, a small "large" state, a 5-cell history session) into a temporary
// folder; all parts but "published", whose steps tests/browser/jupyterlite-published.test.mjs
// runs. Nothing here judges a timing (the machine may be loaded); it checks that every row of
// the table was measured (the rows are the report's own list, benchmarks/bench-report.mjs), every
// step succeeded and the plot was written.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROWS } from '../../benchmarks/bench-report.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUT = mkdtempSync(path.join(os.tmpdir(), 'elastic-lite-bench-'));
after(() => rmSync(OUT, { recursive: true, force: true }));

const positive = (v) => typeof v === 'number' && Number.isFinite(v) && v > 0;

test('npm run bench runs every part (EL_BENCH_QUICK=1) and writes its JSON and its plot', { timeout: 900_000 }, () => {
  const run = spawnSync(process.execPath, [path.join(ROOT, 'benchmarks/bench.mjs')], {
    cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24,
    env: { ...process.env, EL_BENCH_QUICK: '1', EL_BENCH_OUT: OUT, EL_BENCH_ONLY: 'node,native,points,chromium,large,compute,history' },
  });
  assert.equal(run.status, 0, `bench.mjs failed:\n${run.stderr.slice(-4000)}`);
  assert.match(run.stdout, /\| state \| checkpoint MiB \| snapshot \/ pickle\.dumps/);

  const result = JSON.parse(readFileSync(path.join(OUT, 'bench.json'), 'utf8'));
  assert.equal(result.quick, true);
  // every row of the table in Pyodide under Node; in Chromium all but the compute-heavy
  // notebook's state (its own part, "compute")
  assert.deepEqual(result.node.map((r) => r.row), Object.keys(ROWS));
  for (const r of result.node) {
    for (const k of ['dumps_ms', 'snapshot_ms', 'loads_ms', 'load_ms', 'checkpoint_bytes']) {
      assert.ok(positive(r[k]), `node ${r.row}: ${k} = ${r[k]}`);
    }
    assert.equal(r.dill_groups, 0, `node ${r.row}: a group went to dill`);
  }
  assert.deepEqual(result.chromium.rows.map((r) => r.row), Object.keys(ROWS).filter((row) => row !== 'compute'));
  for (const r of result.chromium.rows) {
    for (const k of ['dumps_ms', 'raw_put_ms', 'checkpoint_ms', 'raw_get_loads_ms', 'restore_ms']) {
      assert.ok(positive(r[k]), `chromium ${r.row}: ${k} = ${r[k]}`);
    }
    assert.ok(positive(r.memory.rss_peak), `chromium ${r.row}: no memory figure`);
  }
  // the automatic point after a small change, in Pyodide under Node
  assert.ok(positive(result.points.node.point_ms) && positive(result.points.node.snapshot_ratio), JSON.stringify(result.points.node));
  // one large state or several (bench.json has had both), each checkpointed and restored
  const large = [result.large].flat();
  assert.ok(large.length > 0);
  for (const l of large) {
    assert.equal(l.error, undefined, `large state ${l.row}: ${l.error}`);
    assert.equal(l.restore_error, undefined, `large state ${l.row} restore: ${l.restore_error}`);
    assert.ok(positive(l.checkpoint_ms) && positive(l.restore_ms), l.row);
    assert.equal(l.streamed, true, 'the large state was not restored through the stream');
  }
  assert.ok(positive(result.compute.rerun_ms) && positive(result.compute.restore_ms));
  assert.equal(result.history.error, undefined, `history: ${result.history.error}`);
  assert.ok(positive(result.history.stored_bytes) && result.history.checkpoint_all_ms.length === result.history.cells);

  const png = readFileSync(path.join(OUT, 'bench.png'));
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'bench.png is not a PNG');
  assert.ok(png.length > 10_000, 'bench.png is nearly empty');
});
