// `node tests/node/helpers/pyodide-snapshot.mjs FILE`: writes a memory snapshot of a Pyodide
// interpreter just started (no user code run, nothing installed) to FILE. scripts/test.sh makes
// one per run and points ELASTIC_LITE_PYODIDE_SNAPSHOT at it, so that every Pyodide the Node
// tests and the CLI they run start (js/pyodide-glue.mjs createPyodide) is restored from it
// instead of initialising Python again: the same fresh interpreter at about a tenth of the CPU.
// Pyodide's snapshot API is experimental (_makeSnapshot / makeMemorySnapshot / _loadSnapshot);
// when it fails, nothing is written and the tests start Pyodide the plain way.
import { writeFileSync, renameSync } from 'node:fs';

const out = process.argv[2];
if (!out) {
  console.error('usage: node tests/node/helpers/pyodide-snapshot.mjs FILE');
  process.exit(2);
}
const started = Date.now();
const { loadPyodide } = await import('pyodide');
const pyodide = await loadPyodide({ _makeSnapshot: true });
const bytes = pyodide.makeMemorySnapshot();
writeFileSync(`${out}.part`, bytes);
renameSync(`${out}.part`, out);
console.error(`[test] Pyodide memory snapshot: ${out} (${(bytes.length / 2 ** 20).toFixed(0)} MiB, ${Date.now() - started} ms)`);
