// `npm test` starts the Node tests' interpreters (and the CLI's) from a memory snapshot of a
// fresh Pyodide (scripts/test.sh sets ELASTIC_LITE_PYODIDE_SNAPSHOT; js/pyodide-glue.mjs
// createPyodide loads it). Checked here: createPyodide really starts from the file it names, the
// interpreter it gives is fresh with elastic_lite installed (its modules read from the bytecode
// made beside the snapshot), and a checkpoint taken in one started from a snapshot restores in
// one started the plain way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDirSync } from '../helpers/tempdir.mjs';
import { freshPyodide, py, pyBytes, pyJson } from './helpers/pyodide.mjs';

const HELPER = fileURLToPath(new URL('./helpers/pyodide-snapshot.mjs', import.meta.url));
const VAR = 'ELASTIC_LITE_PYODIDE_SNAPSHOT';

test('an interpreter started from ELASTIC_LITE_PYODIDE_SNAPSHOT is that snapshot, fresh, and its checkpoints restore in a plain one', async () => {
  const dir = tempDirSync('el-pyodide-snapshot-');
  const saved = process.env[VAR];
  try {
    // a snapshot carrying a mark, to see which file an interpreter came from
    const marked = path.join(dir, 'marked.snap');
    const { loadPyodide } = await import('pyodide');
    const maker = await loadPyodide({ _makeSnapshot: true });
    maker.runPython('import sys; sys.el_snapshot_mark = "marked"');
    writeFileSync(marked, maker.makeMemorySnapshot());
    process.env[VAR] = marked;
    const M = await freshPyodide();
    assert.equal(await py(M, 'import sys; sys.el_snapshot_mark'), 'marked', 'createPyodide started from the snapshot named');

    // the snapshot scripts/test.sh makes (that one, when this runs under it): a fresh
    // interpreter, elastic_lite installed
    let plainSnap = saved;
    if (!plainSnap) {
      plainSnap = path.join(dir, 'fresh.snap');
      const made = spawnSync(process.execPath, [HELPER, plainSnap], { encoding: 'utf8' });
      assert.equal(made.status, 0, made.stderr);
    }
    process.env[VAR] = plainSnap;
    const A = await freshPyodide();
    assert.equal(await py(A, '__import__("sys").__dict__.get("el_snapshot_mark")'), undefined);
    delete process.env[VAR];
    const B = await freshPyodide();
    // as fresh as an interpreter started the plain way: the same names in __main__, the same
    // modules imported
    const fresh = (P) => py(P, '__import__("json").dumps([sorted(globals()), sorted(__import__("sys").modules)])');
    assert.deepEqual(JSON.parse(await fresh(A)), JSON.parse(await fresh(B)));
    // the wheels' bytecode made beside the snapshot is what elastic_lite was imported from:
    // hash-checked .pyc files (flags 3), through sys.pycache_prefix
    const cached = (P) => pyJson(P, `[__import__("sys").pycache_prefix, *(lambda p: [p, __import__("os").path.exists(p)
      and int.from_bytes(open(p, "rb").read()[4:8], "little")])(__import__("importlib.util").util.cache_from_source(__import__("elastic_lite").__file__))]`);
    const [prefix, pyc, flags] = await cached(A);
    assert.equal(prefix, '/el-pycache');
    assert.match(pyc, /^\/el-pycache\/.*\/elastic_lite\/__init__\.cpython-\d+\.pyc$/);
    assert.equal(flags, 3, `${pyc}: not a hash-checked .pyc`);
    assert.equal((await cached(B))[0], null, 'a plain start has no bytecode folder');

    await py(A, 'primes = [2, 3, 5, 7]\nclass Box:\n    def __init__(self, v): self.v = v\nbox = Box(primes)');
    const data = await pyBytes(A, 'import elastic_lite as _el\n_snap = _el.snapshot()\n_snap.data');
    // the instance and its list by the plain C pickler, its class by name (PlainPickler's seeds)
    assert.deepEqual(await pyJson(A, 'sorted([sorted(g.names), g.serializer] for g in _snap.groups)'),
      [[['Box'], 'cloudpickle'], [['box', 'primes'], 'pickle']]);
    B.globals.set('_data', data);
    const rep = await pyJson(B, '__import__("elastic_lite").load_snapshot(_data.to_py(), trust=True).to_dict()');
    assert.deepEqual(rep.failed, []);
    assert.deepEqual(await pyJson(B, '[primes, box.v is primes, type(box).__name__]'), [[2, 3, 5, 7], true, 'Box']);

    // Pickling recurses natively once per nested object, and in Pyodide a few thousand are a
    // fatal error of the kernel (no RecursionError). Two shapes the walk's levels did not
    // tell: nodes linked to each other and held in a flat list (two levels to the walk), and a
    // chain inside the largest variable (which was left unwalked). Both are skipped, the
    // interpreter lives on.
    await py(A, `class Node:
    def __init__(self, nxt=None): self.nxt = nxt
nodes = [Node() for _ in range(4000)]
for _a, _b in zip(nodes, nodes[1:]): _a.nxt = _b
_c = None
for _ in range(3000): _c = Node(_c)
big = [float(_i) for _i in range(20000)] + [_c]
del _a, _b, _c`);
    const deep = await pyJson(A, '(lambda s: sorted(k["name"] for k in s.skipped if "levels deep" in k["reason"]))(_el.snapshot(names=["Node", "nodes", "big", "primes"]))');
    assert.deepEqual(deep, ['big', 'nodes']);
    assert.equal(await py(A, '1 + 1'), 2);
  } finally {
    if (saved === undefined) delete process.env[VAR];
    else process.env[VAR] = saved;
  }
});
