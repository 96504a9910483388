#!/usr/bin/env node
// benchmarks/made_here.py inside Pyodide under Node (see that file): what snapshot()'s
// remembering and load_snapshot()'s "made here?" check cost next to the whole calls.
//
//   node benchmarks/made_here.mjs           # prints a Markdown table
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createPyodide } from '../js/pyodide-glue.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const pyodide = await createPyodide({ stdout: () => {}, stderr: () => {} });
for (const f of ['made_here.py', 'serializer_cases.py', 'serializer_shapes.py']) {
  pyodide.FS.writeFile(`/home/pyodide/${f}`, readFileSync(path.join(HERE, f)));
}
const rounds = JSON.stringify(process.env.EL_BENCH_ROUNDS ?? '7');
console.log(await pyodide.runPythonAsync(`
import os, sys
os.environ["EL_BENCH_ROUNDS"] = ${rounds}
sys.path.insert(0, "/home/pyodide")
import made_here
made_here.main()`));
