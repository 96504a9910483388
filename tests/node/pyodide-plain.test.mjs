// The plain pickler and the pool of small plain data in Pyodide, in a kernel-like namespace
// (a stand-in `__main__` module, as JupyterLite's IPython has: there pickle COULD save the
// notebook's classes by reference), checkpointed into a JS store and restored in ANOTHER
// interpreter that never ran the notebook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../js/store/memory.mjs';
import { freshPyodide, py, pyJson, STAND_IN_MAIN } from './helpers/pyodide.mjs';


const CELLS = String.raw`
import collections, datetime, decimal
when = [datetime.date(2024, 1, d) for d in range(1, 29)]
money = {'a': decimal.Decimal('1.10')}
counts = collections.Counter('mississippi')
shared = [1, 2]
holder = {'s': shared}
for _i in range(20):
    globals()[f'v{_i}'] = {'i': _i, 'l': list(range(_i))}
class P:
    def __init__(self, v): self.v = v
mixed = [datetime.date(2024, 1, 1), P(9)]
`;

test('plain pickler and pools in Pyodide, restored in another interpreter', async (t) => {
  const store = new MemoryStore();
  const A = await freshPyodide({ store });
  await py(A, STAND_IN_MAIN);
  await py(A, `cell(${JSON.stringify(CELLS)})`);
  await py(A, 'import elastic_lite as el\nsnap = await el.checkpoint("plain", namespace=_main.__dict__)');
  const groups = await pyJson(A, '[(g.names, g.serializer, g.fallback) for g in snap.groups]');
  const of = (name) => groups.find(([names]) => names.includes(name));

  await t.test('library objects: the plain pickler; small plain data: one record; the notebook\'s class: cloudpickle, its instances: the plain pickler, the class by name', () => {
    for (const name of ['when', 'money', 'counts']) assert.equal(of(name)[1], 'pickle', name);
    const pool = of('v7');
    assert.equal(pool[1], 'pickle');
    assert.ok(['holder', 'shared', 'v0', 'v19'].every((n) => pool[0].includes(n)), pool[0].join());
    assert.deepEqual([of('mixed')[1], of('mixed')[2]], ['pickle', null]);
    assert.equal(of('P')[1], 'cloudpickle');
  });

  await t.test('restored in a fresh interpreter with its own __main__', async () => {
    const B = await freshPyodide({ store });
    await py(B, STAND_IN_MAIN);
    await py(B, 'import elastic_lite as el\nrep = await el.restore("plain", namespace=_main.__dict__)');
    const out = await pyJson(B, `[rep.ok, (lambda m: [
      m.when[3].isoformat(), str(m.money['a']), m.counts['s'], m.holder['s'] is m.shared,
      m.v19['l'][-1], type(m.mixed[1]) is m.P, m.mixed[1].v, m.mixed[0].isoformat()])(_main)]`);
    assert.deepEqual(out, [true, ['2024-01-04', '1.10', 4, true, 18, true, 9, '2024-01-01']]);
  });
});
