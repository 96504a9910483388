#!/usr/bin/env node
// Runs one of the Python benchmark bodies natively and inside Pyodide under Node, and prints
// both tables (each body measures its alternatives side by side in one process):
//   node benchmarks/serializer_both.mjs walk        grouping walk vs pickle.dumps
//   node benchmarks/serializer_both.mjs threshold   out-of-band buffers vs in-band, by size
// EL_BENCH_RUNS=N sets the runs per measurement (default 5).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createPyodide } from '../js/pyodide-glue.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');
const BODIES = { walk: 'serializer_walk', threshold: 'serializer_threshold' };
const body = BODIES[process.argv[2]];
if (!body) {
  console.error(`usage: node benchmarks/serializer_both.mjs ${Object.keys(BODIES).join('|')}`);
  process.exit(2);
}

const native = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(HERE, `${body}.py`)],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (native.status !== 0) throw new Error(`${body}.py failed (${native.status})`);
console.log(native.stdout);

const pyodide = await createPyodide({ stdout: () => {}, stderr: () => {} });
for (const f of [`${body}.py`, 'serializer_shapes.py', 'serializer_cases.py']) {
  pyodide.FS.writeFile(`/home/pyodide/${f}`, readFileSync(path.join(HERE, f)));
}
console.log(await pyodide.runPythonAsync(`
import os, sys
os.environ["EL_BENCH_RUNS"] = ${JSON.stringify(process.env.EL_BENCH_RUNS ?? '5')}
sys.path.insert(0, "/home/pyodide")
import ${body} as body
body.table(body.main(), "Pyodide " + sys.version.split()[0] + " under Node")
`));
