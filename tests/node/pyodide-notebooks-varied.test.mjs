// The varied notebooks (tests/notebooks/varied/, see tests/py/test_notebooks_varied.py)
// in real Pyodide: each run in a kernel-like __main__ of one fresh interpreter and
// checkpointed there, then restored (trusted: the person's own files) into ANOTHER fresh
// interpreter, where its "checks" cell must pass. Skipped and failed variables must be
// exactly those the notebook lists ("skipped_pyodide" where Pyodide's Python 3.14 differs:
// it pickles no itertools objects). Notebooks needing numpy or pandas are left out (no
// Pyodide wheels here). Two interpreters in all.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'notebooks', 'varied');
const notebooks = [];
let saver;
let restorer;

before(async () => {
  for (const file of (await readdir(DIR)).filter((f) => f.endsWith('.ipynb')).sort()) {
    const nb = JSON.parse(await readFile(path.join(DIR, file), 'utf8'));
    const expect = nb.metadata.elastic_lite_test;
    if (expect.needs?.length) continue;
    const text = (c) => (Array.isArray(c.source) ? c.source.join('') : c.source);
    const isChecks = (c) => (c.metadata?.tags ?? []).includes('checks');
    notebooks.push({
      file, expect,
      cells: nb.cells.filter((c) => c.cell_type === 'code' && !isChecks(c)).map(text),
      checks: text(nb.cells.find(isChecks)),
    });
  }
  [saver, restorer] = await Promise.all([freshPyodide(), freshPyodide()]);
  for (const p of [saver, restorer]) {
    await py(p, `
import sys, types
def _fresh_main():
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    return main.__dict__
`);
  }
});

test('every notebook checkpoints in one Pyodide and restores in another', async () => {
  assert.ok(notebooks.length >= 4, `found ${notebooks.length} notebooks`);
  for (const nb of notebooks) {
    saver.globals.set('_cells', nb.cells);
    const skipped = await pyJson(saver, `(lambda ns: (
      [exec(compile(c, f"<cell {i}>", "exec"), ns) for i, c in enumerate(_cells.to_py(), 1)],
      __import__("builtins").__dict__.__setitem__("_snap", __import__("elastic_lite").snapshot(ns)),
      sorted(s["name"] for s in _snap.skipped))[2])(_fresh_main())`);
    assert.deepEqual(skipped, [...(nb.expect.skipped_pyodide ?? nb.expect.skipped)].sort(), nb.file);
    const data = saver.runPython('_snap.data').toJs();
    restorer.globals.set('_data', data);
    restorer.globals.set('_checks', nb.checks);
    const failed = await pyJson(restorer, `(lambda ns: (
      __import__("builtins").__dict__.__setitem__("_rep", __import__("elastic_lite").load_snapshot(
        _data.to_py(), ns, trust=True)),
      exec(compile(_checks, "<checks>", "exec"), ns),
      sorted(n for f in _rep.failed for n in f["names"]))[2])(_fresh_main())`)
      .catch((err) => assert.fail(`${nb.file}: ${err.message}`));
    assert.deepEqual(failed, [...nb.expect.failed].sort(), nb.file);
  }
});
