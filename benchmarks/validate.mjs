// Pickle stream validator throughput on the same streams, in one run:
//   WebAssembly core in Node  vs  native core (build/native/el_validate_bench)
//   vs  pickletools.genops in host CPython (.venv/bin/python).
// Usage: npm run build && node benchmarks/validate.mjs [--quick | --seconds S]
// Streams (made once into build/bench/ by benchmarks/validate_streams.py, protocol 5):
//   dicts  pickle of [{"a": i, "b": str(i), "c": [i, 2*i]} for i in range(100000)]
//   bytes  ~100 MB: 25,000 records {"id", "name", "blob": 4,000 random bytes}
// Timing: best of repeated passes (at least ~1 s per measurement, 3 passes minimum); the
// wasm figure excludes the one copy of the stream into wasm memory, which is reported apart.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { loadCore } from '../js/core.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = path.join(ROOT, 'build/bench');
const PY = path.join(ROOT, '.venv/bin/python');
const NATIVE = path.join(ROOT, 'build/native/el_validate_bench');
const secArg = process.argv.indexOf('--seconds'); // time per measurement (best of its passes)
const MIN_S = secArg > 0 ? Number(process.argv[secArg + 1]) : process.argv.includes('--quick') ? 0.3 : 1.0;

execFileSync(PY, [path.join(ROOT, 'benchmarks/validate_streams.py'), OUT], { stdio: 'inherit' });
const core = await loadCore();
const x = core.exports;

function wasmBench(bytes) {
  const t0 = performance.now();
  const ptr = x.el_malloc(bytes.length) >>> 0;
  core.u8().set(bytes, ptr);
  const copyS = (performance.now() - t0) / 1000;
  let best = Infinity, runs = 0, ok = false;
  const start = performance.now();
  while (runs < 3 || performance.now() - start < MIN_S * 1000) {
    const t = performance.now();
    const r = x.el_validate_pickle(ptr, bytes.length);
    const dt = (performance.now() - t) / 1000;
    ok = x.el_result_ok(r) === 1;
    x.el_result_free(r);
    best = Math.min(best, dt);
    runs++;
  }
  x.el_free(ptr);
  return { best_s: best, mb_per_s: bytes.length / best / 1e6, runs, ok, copy_s: copyS };
}

const json = (cmd, args) => JSON.parse(execFileSync(cmd, args, { encoding: 'utf8' }).trim());
const rows = [];
for (const name of ['dicts', 'bytes']) {
  const file = path.join(OUT, `${name}.pkl`);
  const bytes = await readFile(file);
  const wasm = wasmBench(bytes);
  const native = json(NATIVE, [file, String(MIN_S)]);
  const genops = json(PY, [path.join(ROOT, 'benchmarks/validate_streams.py'), '--genops', file, String(MIN_S)]);
  if (!wasm.ok || !native.ok) throw new Error(`${name}: the validator rejected the benchmark stream`);
  rows.push({ name, mb: bytes.length / 1e6, ops: genops.ops, wasm, native, genops });
}

const f = (v, d = 1) => v.toFixed(d);
console.log('\nPickle stream validation, same stream, best of repeated passes (MB/s = 10^6 bytes/s)\n');
console.log('| stream | size | opcodes | wasm (Node) | native | genops (CPython) | wasm / genops | wasm / native |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.name} | ${f(r.mb)} MB | ${r.ops.toLocaleString('en-US')} | ${f(r.wasm.mb_per_s)} MB/s | ` +
    `${f(r.native.mb_per_s)} MB/s | ${f(r.genops.mb_per_s)} MB/s | ${f(r.wasm.mb_per_s / r.genops.mb_per_s)}× | ` +
    `${f(r.wasm.mb_per_s / r.native.mb_per_s, 2)}× |`);
}
console.log('\nwasm time excludes copying the stream into wasm memory once: ' +
  rows.map((r) => `${r.name} ${f(r.wasm.copy_s * 1000)} ms`).join(', '));
console.log(`host: Node ${process.versions.node}, ${execFileSync(PY, ['-c', 'import sys; print(sys.version.split()[0])'], { encoding: 'utf8' }).trim()} CPython, ` +
  `${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)} (figures drop when other jobs share the cores)`);
