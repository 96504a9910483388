#!/usr/bin/env node
// The grouping walk against pickle.dumps, shape by shape, natively and inside Pyodide under
// Node, side by side (benchmarks/serializer_walk.py does the measuring in both).
//   node benchmarks/serializer_walk.mjs          EL_BENCH_RUNS=N for more/fewer runs (5)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createPyodide } from '../js/pyodide-glue.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');

const native = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(HERE, 'serializer_walk.py')],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (native.status !== 0) throw new Error(`serializer_walk.py failed (${native.status})`);
console.log(native.stdout);

const pyodide = await createPyodide({ stdout: () => {}, stderr: () => {} });
for (const f of ['serializer_walk.py', 'serializer_shapes.py', 'serializer_cases.py']) {
  pyodide.FS.writeFile(`/home/pyodide/${f}`, readFileSync(path.join(HERE, f)));
}
const out = await pyodide.runPythonAsync(`
import os, sys
os.environ["EL_BENCH_RUNS"] = ${JSON.stringify(process.env.EL_BENCH_RUNS ?? '5')}
sys.path.insert(0, "/home/pyodide")
import serializer_walk
serializer_walk.table(serializer_walk.main(["--json"]), "Pyodide " + sys.version.split()[0])
`);
console.log(out);
