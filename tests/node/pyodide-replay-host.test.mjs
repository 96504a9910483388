// Replay through elastic_lite.host in real Pyodide: interpreter A runs notebook cells with
// host.run_cell (which records them), host.checkpoint stores them in a JS store shared with a
// FRESH interpreter B, and host.restore in B re-runs the planned cells: an open file read by
// earlier cells (B has the same file, as a drive would keep it), a generator advanced by later
// cells and an sqlite3 in-memory database all continue where they were; a cell that wrote a
// file is reported, not re-run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../js/store/memory.mjs';
import { callHost } from '../../js/shared/host.mjs';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const DATA = '/home/pyodide/data.csv';
const CELLS = [
  'import sqlite3',
  'gen = (n * 10 for n in range(100))\nfirst = next(gen)',
  `f = open(${JSON.stringify(DATA)})\nheader = f.readline()`,
  'con = sqlite3.connect(":memory:")\ncon.execute("create table t (x)")',
  'con.executemany("insert into t values (?)", [(1,), (2,)])\nsecond = next(gen)\nrow = f.readline()',
  'with open("/home/pyodide/log.txt", "w") as fh:\n    fh.write("once")\nticks = (t for t in range(3))',
  'print("shown once")\nshown = iter("xyz")\nnext(shown)',
];

/** host.<op>(**kwargs) in `pyodide`, the way the CLI and the demo call it; its report. */
function host(pyodide, op, kwargs) {
  return callHost(pyodide, op, kwargs);
}

test('host.run_cell records, host.checkpoint plans, host.restore replays in a fresh interpreter', async () => {
  const store = new MemoryStore();
  const A = await freshPyodide({ store });
  A.FS.writeFile(DATA, 'h\n1\n2\n3\n');
  for (const [i, code] of CELLS.entries()) {
    const r = await host(A, 'run_cell', { code, label: `cell ${i + 1}`, count: i + 1 });
    assert.ok(r.ok, r.traceback);
  }
  const saved = await host(A, 'checkpoint', { name: 'nb' });
  assert.ok(saved.ok, JSON.stringify(saved.problems));
  // Cell 5 advanced all three (a generator, a file, a database): re-running it needs the
  // three as they were before it, so each one's plan holds the cells that made the others.
  assert.deepEqual(Object.fromEntries(saved.replay.recompute.map((r) => [r.name, r.cells])),
    { gen: [2, 3, 4, 5], f: [2, 3, 4, 5], con: [2, 3, 4, 5], shown: [7] });
  assert.deepEqual(saved.replay.left_out, ['con', 'f', 'fh', 'gen', 'shown']);
  assert.match(saved.replay.skipped.find((s) => s.name === 'ticks').message,
    /^stays skipped: recreating it needs cell \[6\] .*writes files/);
  const expected = await pyJson(A, '[next(gen), f.readline(), next(shown)]');

  const B = await freshPyodide({ store });
  B.FS.writeFile(DATA, 'h\n1\n2\n3\n');
  const back = await host(B, 'restore', { name: 'nb' });
  assert.ok(back.ok, JSON.stringify(back.problems));
  assert.deepEqual(back.recomputed.map((r) => r.name).sort(), ['con', 'f', 'gen', 'shown']);
  assert.deepEqual(await pyJson(B, '[next(gen), f.readline(), next(shown)]'), expected);
  assert.deepEqual(await pyJson(B, 'con.execute("select x from t").fetchall()'), [[1], [2]]);
  assert.deepEqual(await pyJson(B, '[first, second, header, row]'), [0, 10, 'h\n', '1\n']);
  // The file-writing cell did not run again; the printing one did, its output reported only.
  assert.equal(await pyJson(B, '__import__("os").path.exists("/home/pyodide/log.txt")'), false);
  assert.match(back.skipped.find((s) => s.name === 'ticks').reason, /not recomputed: .*writes files/);
  assert.equal(back.replay.cells.find((c) => c.count === 7).output, 'shown once\n');
  assert.ok(!B.out.some((line) => line.includes('shown once')));
  assert.ok(back.warnings.includes('cell [7] was re-run to recompute variables; it has side effects (prints)'));
});
