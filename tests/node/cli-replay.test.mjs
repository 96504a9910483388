// `run` records the cells of the notebook it runs; `restore` (a new process, a fresh Pyodide)
// recomputes what the checkpoint could not save by re-running them: a generator advanced by
// later cells continues from the same item, an in-memory sqlite3 database filled by earlier
// cells is back, a cell that wrote a file is reported, not re-run. A checkpoint FILE replays
// only with --trust; --no-replay turns it off for a checkpoint and for a restore.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { runCli, tempWorkdir, NOTEBOOKS } from './cli-helpers.mjs';

const NEXT = 'print(next(squares), con.execute("select count(*) from t").fetchone()[0], first, second)';

let cwd;
let run;
before(async () => {
  cwd = await tempWorkdir();
  run = await runCli(['run', path.join(NOTEBOOKS, 'replay.ipynb'), '--name', 'nb'], { cwd });
});

test('run: the checkpoint plans the replay and says which cells, and what stays skipped', () => {
  assert.equal(run.code, 0, run.stderr);
  const out = run.stdout;
  assert.match(out, /^took 0 1$/m);
  assert.match(out, /Checkpoint "nb" saved to .* \(.*, 2 variables, 2 skipped, 2 recomputed on restore\)/);
  assert.match(out, /^squares\s+generator\s+\[2\] \[3\] \[4\]$/m);
  // cell [3] also advanced the generator, so recreating con re-runs [2] first
  assert.match(out, /^con\s+sqlite3\.Connection\s+\[2\] \[3\] \[4\]$/m);
  assert.match(out, /^fh\s+_io\.TextIOWrapper\s+a closed file: nothing to save$/m);
  assert.match(out, /^ticks\s+generator\s+TypeError: cannot pickle 'generator' object$/m);
  assert.match(out, /^ {2}ticks: stays skipped: recreating it needs cell \[5\] \(`with open\("log.txt", "w"\) as fh:`\), which writes files/m);
  assert.match(out, /^ {2}cell \[4\] has side effects \(prints\): it will be re-run on restore and reported$/m);
});

test('restore -c: the generator continues from the same item, the database is filled', async () => {
  const r = await runCli(['restore', 'nb', '-c', NEXT], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '4 3 0 1\n', 'next(squares) is the third square: cells [3] and [4] advanced it');
  assert.match(r.stderr, /^Recomputed by replay:\n {2}squares: recomputed by re-running cells \[2\], \[3\], \[4\]\n {2}con: recomputed by re-running cells \[2\], \[3\], \[4\]$/m);
  assert.match(r.stderr, /^Output of cell \[4\] \(re-run\):\n {2}took 0 1$/m, 'the re-run cell\'s output is reported, not printed as CODE\'s');
  assert.match(r.stderr, /warning: cell \[4\] was re-run to recompute variables; it has side effects \(prints\)/);
  // The file-writing cell did not run again: ticks stays missing, with both reasons.
  assert.match(r.stderr, /^ticks\s+generator\s+TypeError: cannot pickle 'generator' object; not recomputed: recreating it needs cell \[5\]/m);
  const json = JSON.parse((await runCli(['restore', 'nb', '--json', '-c', 'import os; os.path.exists("log.txt")'], { cwd })).stdout);
  assert.equal(json.code.value, 'False', 'log.txt was not written again');
  assert.deepEqual(json.recomputed.map((r) => [r.name, r.cells]), [['squares', [2, 3, 4]], ['con', [2, 3, 4]]]);
  assert.ok(json.ok);
});

test('a checkpoint file replays only with --trust; --no-replay turns replay off', async () => {
  assert.equal((await runCli(['export', 'nb', 'nb.elc'], { cwd })).code, 0);
  // a file is foreign: without --trust nothing of it is unpickled, and no cell replayed
  const file = await runCli(['restore', './nb.elc', '-c', 'print("squares" in globals())'], { cwd });
  assert.equal(file.code, 1, file.stderr);
  assert.equal(file.stdout, '');
  assert.match(file.stderr, /nothing could be restored: .*this checkpoint is foreign/);
  const trusted = await runCli(['restore', './nb.elc', '--trust', '-c', NEXT], { cwd });
  assert.equal(trusted.stdout, '4 3 0 1\n', trusted.stderr);

  const off = await runCli(['restore', 'nb', '--no-replay', '-c', 'print("squares" in globals(), "con" in globals())'], { cwd });
  assert.equal(off.stdout, 'False False\n', off.stderr);
  assert.match(off.stderr, /^squares\s+generator\s+.*not recomputed: replay is turned off for this restore/m);

  const planned = await runCli(['run', path.join(NOTEBOOKS, 'replay.ipynb'), '--name', 'flat', '--no-replay'], { cwd });
  assert.equal(planned.code, 0, planned.stderr);
  assert.doesNotMatch(planned.stdout, /Recomputed on restore/);
  assert.match(planned.stdout, /^ {2}squares: stays skipped: replay is turned off for this checkpoint/m);
});

test('run --recompute-large: a large variable cheap to recompute is not stored, restore recomputes it', async () => {
  const dir = await tempWorkdir();
  const code = (source) => ({ cell_type: 'code', metadata: {}, source, outputs: [], execution_count: null });
  await fs.writeFile(path.join(dir, 'big.ipynb'), JSON.stringify({
    nbformat: 4, metadata: {}, cells: [code('table = bytes(134217728)  # 128 MiB of zeros, made in tens of ms: storing it is costed at 1.3 s')],
  }));
  // (V8's optimizing tier on: the choice compares the cell's own time with the cost of storing)
  const r = await runCli(['run', 'big.ipynb', '--recompute-large', '--json'], { cwd: dir, tierUp: true });
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.ok, true);
  const [choice, ...more] = report.replay.choices;
  assert.deepEqual([choice.names, choice.bytes, choice.cells, more], [['table'], 134217728, [1], []]);
  // The decision compares the cell's run time as recorded on this machine (tens of ms when it is
  // quiet) with the cost of storing: twice the one at most the other (the rule itself, with
  // fixed times: tests/py/test_replay_plan.py). A machine loaded enough to make the cell slower
  // than that stores the table instead; either way the report says which, and the restore
  // brings the table back. No timing decides whether this test passes.
  assert.equal(choice.chosen, 2 * choice.replay_ms <= choice.store_ms, JSON.stringify(choice));
  const stored = report.variables.some((v) => v.name === 'table');
  if (choice.chosen) {
    assert.match(choice.reason, /^not stored: recomputed by re-running cell \[1\] \(\d+ ms recorded\) instead of storing 134217728 bytes/);
    assert.equal(stored, false);
    assert.ok(report.size < 1 << 20, `${report.size} bytes: the table was written`);
    assert.deepEqual(report.replay.recompute.map((x) => [x.name, x.why]), [['table', 'cost']]);
  } else {
    assert.match(choice.reason, /^stored/);
    assert.equal(stored, true);
  }
  const back = await runCli(['restore', 'big', '-c', 'print(len(table), table[:3])'], { cwd: dir, tierUp: true });
  assert.equal(back.code, 0, back.stderr);
  assert.equal(back.stdout, "134217728 b'\\x00\\x00\\x00'\n", back.stderr);
  if (choice.chosen) assert.match(back.stderr, /^ {2}table: recomputed by re-running cell \[1\]/m);
});
