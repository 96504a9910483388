#!/usr/bin/env node
// Runs one of the Python benchmark bodies natively and inside Pyodide under Node, and prints
// both tables (each body measures its alternatives side by side in one process):
//   node benchmarks/serializer_both.mjs walk        grouping walk vs pickle.dumps
//   node benchmarks/serializer_both.mjs threshold   out-of-band buffers vs in-band, by size
//   node benchmarks/serializer_both.mjs state       snapshot/load vs pickle, and peak memory
// Further arguments name rows (state: issue9 standin dicts instances bytes50 bytes20x10
// mixed199 compute); EL_BENCH_RUNS=N sets the runs per measurement, EL_BENCH_PYODIDE_ONLY=1
// skips the native half.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createPyodide } from '../js/pyodide-glue.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');
const BODIES = { walk: 'serializer_walk', threshold: 'serializer_threshold', state: 'serializer_state' };
const body = BODIES[process.argv[2]];
if (!body) {
  console.error(`usage: node benchmarks/serializer_both.mjs ${Object.keys(BODIES).join('|')}`);
  process.exit(2);
}

const rows = process.argv.slice(3);
if (!process.env.EL_BENCH_PYODIDE_ONLY) {
  const native = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(HERE, `${body}.py`), ...rows],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (native.status !== 0) throw new Error(`${body}.py failed (${native.status})`);
  console.log(native.stdout);
}

const pyodide = await createPyodide({ stdout: () => {}, stderr: () => {} });
for (const f of [`${body}.py`, 'serializer_shapes.py', 'serializer_cases.py']) {
  pyodide.FS.writeFile(`/home/pyodide/${f}`, readFileSync(path.join(HERE, f)));
}
console.log(await pyodide.runPythonAsync(`
import os, sys
if ${JSON.stringify(process.env.EL_BENCH_RUNS ?? '')}:
    os.environ["EL_BENCH_RUNS"] = ${JSON.stringify(process.env.EL_BENCH_RUNS ?? '')}
sys.path.insert(0, "/home/pyodide")
import ${body} as body
rows = ${JSON.stringify(rows)}
body.table(body.main(*([rows] if rows else [])), "Pyodide " + sys.version.split()[0] + " under Node")
`));
