// Replay in real Pyodide: interpreter A runs a notebook with the session recorder (the way a
// host without IPython drives it: before(code) / run / after(ok)), takes a checkpoint and a
// replay plan; FRESH interpreters restore the bytes and replay the plan. A generator advanced
// by later cells, an open file (read mode) and an sqlite3 in-memory database filled by earlier
// cells, and an itertools iterator (not picklable in Python 3.14) come back by replay; a cell
// with a side effect is reported, not silently re-run; a file that is gone is a clear failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPyodide, py, pyBytes, pyJson } from './helpers/pyodide.mjs';

const DATA = '/home/pyodide/data.csv';
const CELLS = [
  'import sqlite3, itertools',
  `with open(${JSON.stringify(DATA)}, "w") as fh:\n    fh.write("h\\n1\\n2\\n3\\n")`,
  'k = 3\ngen = (i * k for i in range(100))',
  'first = next(gen)',
  `f = open(${JSON.stringify(DATA)})\nheader = f.readline()`,
  'con = sqlite3.connect(":memory:")\ncon.execute("create table t (x)")',
  'con.executemany("insert into t values (?)", [(1,), (2,)])\nsecond = next(gen)',
  'row = f.readline()',
  'pairs = itertools.permutations("abc", 2)\nnext(pairs)',
  'import os\nfd = os.open("/home/pyodide/log.txt", os.O_WRONLY | os.O_CREAT)\n' +
    'os.write(fd, b"ran")\nos.close(fd)\nticker = (n for n in range(5))',
  'print("hello from cell 11")\nshown = (c for c in "xyz")',
  'k = 1000',
  'bad = 1 / 0',
];

/** Runs the cells in `pyodide` as a host would, with the recorder around each. */
async function runNotebook(pyodide) {
  await py(pyodide, 'from elastic_lite.replay.recorder import Recorder as _R\n_rec = _R(audit=True)');
  const rec = pyodide.globals.get('_rec');
  try {
    for (const code of CELLS) {
      rec.before(code);
      let error = null;
      try {
        await pyodide.runPythonAsync(code);
      } catch (err) {
        error = String(err.message).trim().split('\n').pop();
      }
      rec.after(error === null, error);
    }
  } finally {
    rec.destroy();
  }
}

test('replay in fresh Pyodide interpreters', async (t) => {
  // The fresh interpreters load the bytes as a store entry this store signed (foreign=False:
  // the lists apply), not trusted: trusted, the closed handle `fh` of cell 2 (mode "w") is
  // re-opened by dill while loading, which empties data.csv before the replay reads it.
  const A = await freshPyodide();
  await runNotebook(A);
  const data = await pyBytes(A, String.raw`
import json as _json, elastic_lite as _el
from elastic_lite.replay.engine import plan_replay as _plan_replay
# The open file is recomputed by replay too, so the checkpoint leaves it out (cloudpickle
# would store a StringIO copy of its contents instead of a file).
_all = _el.snapshot()
_snap = _el.snapshot(names=[n for n in _all.names + [m["name"] for m in _all.modules]
                            if n != "f"])
_targets = [s["name"] for s in _all.skipped] + ["f"]
_saved = set(_snap.names) | {m["name"] for m in _snap.modules}
_history = _json.dumps(_rec.to_json())
_plan = _json.dumps(_plan_replay(_json.loads(_history), _saved, _targets).to_json())
_snap.data
`);
  const history = await py(A, '_history');
  const plan = JSON.parse(await py(A, '_plan'));
  const skippedA = await pyJson(A, '[s["name"] for s in _all.skipped]');
  // What the original session gives next, to compare with the restored ones.
  const expected = await pyJson(A, '[next(gen), f.readline(), next(pairs), next(shown)]');
  const cellsA = await pyJson(A, '_rec.to_json()["cells"]');
  A.out.length = 0;

  await t.test('recorder: versions, effects and failures as the cells ran', () => {
    const byCount = Object.fromEntries(cellsA.map((c) => [c.count, c]));
    assert.deepEqual(Object.keys(byCount[7].reads).sort(), ['con', 'gen']);
    assert.ok(byCount[7].writes.includes('gen') && byCount[7].writes.includes('con'));
    assert.deepEqual(byCount[8].writes, ['row', 'f']);  // readline moved the file
    const kinds = (c) => c.effects.map((e) => e[0]);
    assert.deepEqual(byCount[10].effects.map((e) => [e[0], e[2]]),
      [['writes-files', 'code'], ['writes-files', 'run']]);  // the audit hook saw the open
    assert.match(byCount[10].effects[1][1], /^open\('\/home\/pyodide\/log.txt'\)$/);
    assert.deepEqual(kinds(byCount[11]), ['prints']);
    assert.equal(byCount[13], undefined, 'a failed cell that wrote nothing is not needed');
  });

  await t.test('analyzer: Python 3.12+ syntax (`type` statement) in Pyodide 3.14', async () => {
    const got = await pyJson(A, '[list(a.reads), list(a.writes)] if (a := __import__(' +
      '"elastic_lite.replay.cell_ast", fromlist=["analyze"]).analyze("type Vec = list[Num]")) else 0');
    assert.deepEqual(got, [['list', 'Num'], ['Vec']]);  // builtins are filtered by the recorder
  });

  await t.test('plan: minimal cells per variable, side effects reported', () => {
    assert.deepEqual(skippedA.sort(), ['con', 'gen', 'pairs', 'shown', 'ticker']);
    assert.deepEqual(plan.targets.gen.counts, [3, 4, 6, 7]);
    assert.deepEqual(plan.targets.f.counts, [5, 8]);
    assert.deepEqual(plan.targets.pairs.counts, [9]);
    assert.deepEqual(plan.targets.shown.counts, [11]);
    assert.match(plan.skipped.ticker, /cell \[10\].*writes files/);
    assert.ok(!plan.steps.some((s) => s.count === 2), 'the cell writing data.csv is not replayed');
    // Flagged, and replayed: cell 5 reads a file, cell 11 prints.
    assert.deepEqual(plan.steps.filter((s) => s.effects.length).map((s) => s.count), [5, 11]);
  });

  await t.test('a fresh interpreter: the file is gone, only f fails and says why', async () => {
    const C = await freshPyodide();
    C.globals.set('_data', data);
    await py(C, String.raw`
import json, elastic_lite as el
from elastic_lite.replay.engine import replay
el.load_snapshot(_data, foreign=False)  # as this store's own entry (see above)
_report = (await replay(json.loads(${JSON.stringify(JSON.stringify(plan))}),
                        json.loads(${JSON.stringify(history)}), globals())).to_dict()
`);
    const r = await pyJson(C, '_report');
    assert.deepEqual(r.failed.map((x) => x.name), ['f']);
    assert.match(r.failed[0].reason, /cell \[5\] raised FileNotFoundError/);
    assert.deepEqual(r.recomputed.map((x) => x.name).sort(), ['con', 'gen', 'pairs', 'shown']);
    assert.ok(await pyJson(C, '"f" not in globals() and header == "h\\n"'));
  });

  await t.test('a fresh interpreter with the file: everything comes back positioned', async () => {
    const B = await freshPyodide();
    B.FS.writeFile(DATA, 'h\n1\n2\n3\n');  // the notebook's file, as the drive keeps it
    B.globals.set('_data', data);
    await py(B, String.raw`
import json, os, elastic_lite as el
from elastic_lite.replay.engine import replay
_restore = el.load_snapshot(_data, foreign=False)
_report = await replay(json.loads(${JSON.stringify(JSON.stringify(plan))}),
                       json.loads(${JSON.stringify(history)}), globals())
`);
    const r = await pyJson(B, '_report.to_dict()');
    assert.ok(r.ok, JSON.stringify(r.failed));
    assert.deepEqual(r.recomputed.map((x) => x.name).sort(), ['con', 'f', 'gen', 'pairs', 'shown']);
    assert.equal(r.recomputed.find((x) => x.name === 'gen').message,
      'recomputed by re-running cells [3], [4], [6], [7]');
    const got = await pyJson(B, '[next(gen), f.readline(), next(pairs), next(shown)]');
    assert.deepEqual(got, expected);  // each continues from the same item as the original
    assert.deepEqual(await pyJson(B, 'con.execute("select x from t").fetchall()'), [[1], [2]]);
    assert.deepEqual(await pyJson(B, '[first, second, header, row, k]'), [0, 3, 'h\n', '1\n', 1000]);
    // The side-effect cell was not re-run: no log file, and ticker is reported with the reason.
    assert.equal(await pyJson(B, 'os.path.exists("/home/pyodide/log.txt")'), false);
    assert.match(r.skipped.find((x) => x.name === 'ticker').reason, /writes files/);
    // The printing cell was re-run: its output is in the report, not on the console.
    const c11 = r.cells.find((c) => c.count === 11);
    assert.equal(c11.output, 'hello from cell 11\n');
    assert.ok(!B.out.some((line) => line.includes('hello from cell 11')));
    assert.match(await py(B, '_report.table()'), /cell \[11\] was re-run and prints/);
  });
});
