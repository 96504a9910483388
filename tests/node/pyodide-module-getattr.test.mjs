// Module attributes computed by a module's __getattr__, in real Pyodide (Python 3.14, where
// typing computes ContextManager, AsyncContextManager, Pattern and Match on first request):
// `from typing import *` and `from computed_attrs import ...` (tests/py/computed_attrs.py, a
// module of the project's tests doing the same) in a kernel-like __main__ of one fresh
// interpreter, checkpointed there, restored in ANOTHER fresh interpreter in the checked mode
// of the person's own checkpoint (foreign=False: what a store whose signature checked passes).
// Before the fix the restore refused ContextManager, AsyncContextManager and Pattern ("module
// typing computes 'ContextManager' with its __getattr__") while the checkpoint listed them as
// saved. Now every binding restores, or the checkpoint lists the variable as skipped. A second
// test uses the same two interpreters for the global random state (data-only restore).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyJson, STAND_IN_MAIN } from './helpers/pyodide.mjs';

const MODULE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'py', 'computed_attrs.py');
let saver;
let restorer;

before(async () => {
  const source = await readFile(MODULE, 'utf8');
  [saver, restorer] = await Promise.all([freshPyodide(), freshPyodide()]);
  for (const p of [saver, restorer]) {
    p.FS.mkdirTree('/tests_py');
    p.FS.writeFile('/tests_py/computed_attrs.py', source);
    await py(p, `import sys; sys.path.insert(0, "/tests_py")\n${STAND_IN_MAIN}`);
  }
});

after(() => {
  saver = restorer = null;
});

test('from typing import * and a module computing attributes restore in another Pyodide', async () => {
  const saved = await pyJson(saver, `(lambda: (
    cell("from typing import *\\nfrom computed_attrs import Kept, KeptClass, Table, TableClass\\n"
         "k = KeptClass()\\np = Pattern[str]\\n"),
    __import__("builtins").__dict__.__setitem__("_snap", __import__("elastic_lite").snapshot(_main.__dict__)),
    {"python": __import__("sys").version_info[:2],
     "computed": [n for n in ("ContextManager", "AsyncContextManager", "Pattern")
                  if n in _main.__dict__],
     "modules": {m["name"]: [m["module"], m["attr"]] for m in _snap.modules},
     "skipped": {s["name"]: s["reason"] for s in _snap.skipped},
     "saved": sorted(n for g in _snap.groups for n in g.names)})[2])()`);
  assert.deepEqual(saved.python, [3, 14]);
  assert.deepEqual(saved.computed, ['ContextManager', 'AsyncContextManager', 'Pattern']);
  for (const n of ['ContextManager', 'AsyncContextManager', 'Pattern', 'List', 'Kept', 'KeptClass']) {
    assert.ok(saved.modules[n], `${n} is bound by name: ${JSON.stringify(saved.modules)}`);
  }
  assert.deepEqual(Object.keys(saved.skipped), ['TableClass']);
  assert.match(saved.skipped.TableClass, /__getattr__/);
  for (const n of ['Table', 'k', 'p']) assert.ok(saved.saved.includes(n), `${n} saved: ${saved.saved}`);

  const data = saver.runPython('_snap.data').toJs();
  restorer.globals.set('_data', data);
  const got = await pyJson(restorer, `(lambda typing, ca: (
    ("ContextManager" not in vars(typing)) or (_ for _ in ()).throw(AssertionError("computed already")),
    __import__("builtins").__dict__.__setitem__("_rep", __import__("elastic_lite").load_snapshot(
      _data.to_py(), _main.__dict__, foreign=False)),
    {"failed": _rep.failed,
     "refused": [m for m in _rep.modules if not m["ok"]],
     "same": {n: _main.__dict__.get(n) is getattr(typing, n)
              for n in ("ContextManager", "AsyncContextManager", "Pattern", "List")},
     "kept": _main.__dict__.get("Kept") is ca.Kept and type(_main.__dict__["k"]) is ca.KeptClass,
     "table": _main.__dict__.get("Table") == ca.Table,
     "p": _main.__dict__.get("p") == typing.Pattern[str]})[2])(
    __import__("typing"), __import__("computed_attrs"))`);
  assert.deepEqual(got.failed, []);
  assert.deepEqual(got.refused, []);
  assert.deepEqual(got.same, { ContextManager: true, AsyncContextManager: true, Pattern: true, List: true });
  assert.ok(got.kept && got.table && got.p, JSON.stringify(got));
});

// The same two interpreters (a fresh Pyodide costs seconds): random's global generator state
// travels with the checkpoint, also through a data-only restore (plain data in the manifest).
test('random.seed(0): the next draws after a data-only restore in another Pyodide continue the sequence', async () => {
  const expected = await pyJson(saver, `(lambda: (
    cell("import random\\nrandom.seed(0)\\nfirst = random.random()\\ng = random.gauss(0, 1)\\n"),
    __import__("builtins").__dict__.__setitem__("_snap2", __import__("elastic_lite").snapshot(_main.__dict__)),
    [__import__("random").random() for _ in range(3)] + [__import__("random").gauss(0, 1)])[2])()`);
  restorer.globals.set('_data2', saver.runPython('_snap2.data').toJs());
  const got = await pyJson(restorer, `(lambda: (
    __import__("builtins").__dict__.__setitem__("_rep2", __import__("elastic_lite").load_snapshot(
      _data2.to_py(), {}, data_only=True)),
    {"draws": [__import__("random").random() for _ in range(3)] + [__import__("random").gauss(0, 1)],
     "put_back": _rep2.random_state, "warnings": _rep2.warnings})[1])()`);
  assert.deepEqual(got.warnings, []);
  assert.deepEqual(got.put_back, ['random']);
  assert.deepEqual(got.draws, expected);
});
