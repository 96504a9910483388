// Inspection of whole checkpoints: el_inspect on the container copied into the core at once,
// against the pull reader (_core.read: the core asks for ranges, Python feeds them, content
// CRCs by zlib.crc32, out-of-band buffers never enter the core), in Pyodide under Node and in
// host CPython (native core), side by side on the same snapshot() files.
// Usage: npm run build && node benchmarks/validate_pull.mjs [--runs N]
// Shapes: "many" 300 variables of small dicts (300 records), "arrays" 4 bytearrays of 16 MiB
// (out-of-band buffers) and a dict; best of N runs (default 5), wall time.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { createPyodide } from '../js/pyodide-glue.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;

const PY = `
import json, time
import elastic_lite
from elastic_lite import _core

def shapes():
    many = {"__name__": "__main__"}
    for i in range(300):
        many[f"v{i}"] = {"i": i, "s": str(i) * 20, "l": list(range(50))}
    arrays = {"__name__": "__main__", "d": {"k": list(range(1000))}}
    for i in range(4):
        arrays[f"a{i}"] = bytearray(b"%d" % i) * (16 << 20)
    return {"many": many, "arrays": arrays}

def best(fn, runs):
    t = []
    for _ in range(runs):
        t0 = time.perf_counter(); r = fn(); t.append(time.perf_counter() - t0)
        assert r["ok"], r["error"]
    return min(t) * 1000

out = {}
for name, ns in shapes().items():
    data = bytes(elastic_lite.snapshot(ns).data)
    flags = 1
    b = _core.backend()
    def inspect_whole():
        return json.loads(b.inspect_json(data, flags))
    def pulled():
        return _core.read(data)
    assert inspect_whole() == pulled()
    out[name] = {"mb": len(data) / 1e6, "records": len(pulled()["records"]),
                 "whole_ms": best(inspect_whole, RUNS), "pull_ms": best(pulled, RUNS)}
result = json.dumps(out)
if __name__ == "__main__":
    print(result)
`.replace(/RUNS/g, String(RUNS));

const pyodide = await createPyodide();
pyodide.runPython(PY, { globals: pyodide.toPy({ __name__: 'bench' }) });
const wasm = JSON.parse(pyodide.runPython(PY + '\nresult'));
const native = JSON.parse(execFileSync(path.join(ROOT, '.venv/bin/python'), ['-c', PY],
  { encoding: 'utf8', env: { ...process.env, PYTHONPATH: path.join(ROOT, 'py') }, maxBuffer: 1 << 26 }));
console.log(`\nInspecting a whole checkpoint: copied into the core at once vs pulled range by range (best of ${RUNS}, ms)\n`);
console.log('| shape | size | records | Pyodide whole | Pyodide pull | pull / whole | native whole | native pull | pull / whole |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const k of Object.keys(wasm)) {
  const w = wasm[k], n = native[k];
  console.log(`| ${k} | ${w.mb.toFixed(1)} MB | ${w.records} | ${w.whole_ms.toFixed(1)} | ${w.pull_ms.toFixed(1)} | ` +
    `${(w.pull_ms / w.whole_ms).toFixed(2)}× | ${n.whole_ms.toFixed(1)} | ${n.pull_ms.toFixed(1)} | ${(n.pull_ms / n.whole_ms).toFixed(2)}× |`);
}
console.log(`\nhost: Node ${process.versions.node}, ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)}`);
