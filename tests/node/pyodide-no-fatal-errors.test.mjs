// Files that crashed a real Pyodide (a fatal error of the whole interpreter, not an error a
// host can report), found by trying the product on real notebooks and files:
// - a manifest or history record whose JSON nests 200,000 levels: Pyodide's JSON parser
//   recursed on the JS stack until "RangeError: Maximum call stack size exceeded" — through
//   inspect, import and even a data-only restore of a foreign file;
// - a checkpoint of host CPython 3.11 (the committed format-1.0 fixture) restored --trust:
//   its function rebuilt from 3.11 bytecode crashed Pyodide's 3.14 when called ("memory
//   access out of bounds");
// - a checkpoint of a notebook holding a 3,000-node linked list: the C pickler recursed once
//   per node until the JS stack overflowed (so did lists nested 10,000 deep), which with
//   automatic checkpoints ended the kernel after every cell.
// One interpreter for all cases; each must end in a report, and the interpreter must still run.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let pyodide;

before(async () => {
  pyodide = await freshPyodide();
  pyodide.FS.writeFile('/tmp/cpython-3.11.elc',
    await readFile(path.join(ROOT, 'wasm/tests/fixtures/format-1.0/cpython-3.11.elc')));
  await py(pyodide, `
import json, sys
from elastic_lite import _core, host
DEEP = b"[" * 200000 + b"]" * 200000
MANIFEST = json.dumps({"version": 2, "modules": [], "skipped": [], "types": {},
                       "groups": [{"names": ["kept"], "serializer": "pickle"}],
                       "writable_buffers": 0}).encode()

def container(manifest, history=None):
    w = _core.Writer(producer="deep-json test", python=sys.version.split()[0], created_ms=0)
    try:
        w.begin_record(["kept"])
        w.write(b"\\x80\\x04}\\x8c\\x01aK\\x01s\\x85.")   # ({"a": 1},)
        w.end_record("pickle")
        w.begin_record(["__elastic_lite_manifest__"], kind="manifest")
        w.write(manifest)
        w.end_record(None)
        if history is not None:
            w.begin_record(["__elastic_lite_history__"], kind="history")
            w.write(history)
            w.end_record(None)
        return w.finish()
    finally:
        w.free()
`);
});

async function alive() {
  assert.equal(await py(pyodide, '6 * 7'), 42);
}

test('a manifest nesting 200,000 levels: inspect, import check and data-only restore report it', async () => {
  await py(pyodide, '_deep = container(DEEP)');
  const inspected = await pyJson(pyodide, 'await host.inspect(data=_deep)');
  const restored = await pyJson(pyodide, 'await host.restore(data=_deep, namespace={}, data_only=True)');
  assert.equal(inspected.ok, true);
  assert.deepEqual(restored.restored.map((v) => v.name), ['kept']);
  assert.ok(restored.warnings.some((w) => /manifest record could not be read .*nests 200000 levels/.test(w)),
    restored.warnings.join('\n'));
  await alive();
});

test('a history nesting 200,000 levels: a trusted restore reports it', async () => {
  const r = await pyJson(pyodide,
    'await host.restore(data=container(MANIFEST, DEEP), namespace={}, trust=True)');
  assert.deepEqual(r.restored.map((v) => v.name), ['kept']);
  assert.ok(r.warnings.some((w) => /history record could not be read .*nests 200000 levels/.test(w)),
    r.warnings.join('\n'));
  await alive();
});

test('functions of host CPython 3.11 are not rebuilt in Pyodide: reported, the plain data restores', async () => {
  const rep = await pyJson(pyodide, `await host.restore(
    data=open("/tmp/cpython-3.11.elc", "rb").read(), namespace=(_ns := {}), trust=True)`);
  const codes = Object.fromEntries(rep.problems.flatMap((p) => p.names.map((n) => [n, p.code])));
  assert.equal(codes.triple, 'needs-python');
  assert.equal(codes.Point, 'needs-python');
  assert.ok(rep.problems.some((p) => p.code === 'needs-python' && /Python 3\.11.*Python 3\.14/.test(p.message)));
  assert.deepEqual(await pyJson(pyodide, '[_ns["shared"], _ns["alias"]["list"] is _ns["shared"], "triple" in _ns]'),
    [[1, 2, 3], true, false]);
  await alive();
});

test('a 3,000-node linked list and lists nested 10,000 deep are skipped with the reason, not a crash', async () => {
  const rep = await pyJson(pyodide, `(lambda ns: (exec('''
class Link:
    __slots__ = ("v", "next")
    def __init__(self, v, nxt):
        self.v, self.next = v, nxt
chain = None
for i in range(3000):
    chain = Link(i, chain)
nested = []
for i in range(10000):
    nested = [nested]
flat = [1, 2, 3]
''', ns), __import__("elastic_lite").snapshot(ns))[1])({"__name__": "__main__"})`
    .replace('snapshot(ns))[1])', 'snapshot(ns))[1].skipped)'));
  const reasons = Object.fromEntries(rep.map((s) => [s.name, s.reason]));
  assert.match(reasons.chain, /nested more than 600 levels deep/);
  assert.match(reasons.nested, /nested more than 600 levels deep/);
  assert.equal(reasons.flat, undefined);
  await alive();
});
