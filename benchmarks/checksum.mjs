// Content checksum throughput, side by side in one run (format 2.0 chose CRC-32/ISO-HDLC for
// content; this measures how fast the core computes it and against what):
//   C core natively (build/native/el_checksum_bench) and in WebAssembly under Node
//   (build/wasm/el_checksum_bench.wasm), CRC-32 bytewise, slicing-by-8/16 and braided, and the
//   CRC32C of format 1.0 at 8 (what 1.0 used) and 16; js/core.mjs crc32() (the production
//   wasm path, including the copy into wasm memory); Node's zlib.crc32 and host CPython's
//   zlib.crc32 (what Python uses to checksum content while it writes).
// Usage: npm run build && node benchmarks/checksum.mjs [--mib N] [--seconds S]
// Timing: best of repeated passes (at least S seconds per measurement, 3 passes minimum).
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { loadCore } from '../js/core.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const MIB = arg('--mib', 64);
const MIN_S = arg('--seconds', 1.0);
const N = MIB << 20;

function best(fn) { // best MB/s of repeated passes
  let bestS = Infinity, runs = 0, result;
  const start = performance.now();
  while (runs < 3 || performance.now() - start < MIN_S * 1000) {
    const t = performance.now();
    result = fn();
    bestS = Math.min(bestS, (performance.now() - t) / 1000);
    runs++;
  }
  return { mbps: N / bestS / 1e6, result: result >>> 0 };
}

// the same pseudo-random bytes as the native driver (xorshift32)
const data = new Uint8Array(N);
for (let i = 0, x = 2463534242; i < N; i++) {
  x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
  data[i] = x & 0xff;
}

const { instance } = await WebAssembly.instantiate(await readFile(path.join(ROOT, 'build/wasm/el_checksum_bench.wasm')), {});
const x = instance.exports;
x._initialize?.();
const ptr = x.el_malloc(N) >>> 0;
new Uint8Array(x.memory.buffer).set(data, ptr);
const wasm = {};
for (const w of [1, 8, 16, 5]) wasm[`crc32_w${w}`] = best(() => x.el_crc32_width(w, 0, ptr, N));
for (const w of [8, 16]) wasm[`crc32c_w${w}`] = best(() => x.el_crc32c_width(w, 0, ptr, N));
const core = await loadCore();
const corePath = best(() => core.crc32(data));
const nodeZlib = best(() => zlib.crc32(data));
const native = JSON.parse(execFileSync(path.join(ROOT, 'build/native/el_checksum_bench'), [String(MIB), String(MIN_S)], { encoding: 'utf8' }));
const pyZlib = JSON.parse(execFileSync(path.join(ROOT, '.venv/bin/python'), ['-c', `
import json, time, zlib
n = ${N}
b = bytearray(n); x = 2463534242
data = bytes((i * 2654435761 >> 24) & 255 for i in range(4096)) * (n // 4096)
best = 1e9; runs = 0; start = time.perf_counter()
while runs < 3 or time.perf_counter() - start < ${MIN_S}:
    t = time.perf_counter(); zlib.crc32(data); best = min(best, time.perf_counter() - t); runs += 1
print(json.dumps({"mbps": n / best / 1e6}))
`], { encoding: 'utf8' }));

const agree = new Set([wasm.crc32_w1.result, wasm.crc32_w8.result, wasm.crc32_w16.result, wasm.crc32_w5.result,
  corePath.result, nodeZlib.result, native.crc32]).size === 1;
if (!agree) throw new Error('the CRC-32 implementations disagree on the same bytes');
const f = (v) => v.toFixed(0);
const base = wasm.crc32c_w8.mbps; // format 1.0's content checksum in wasm
console.log(`\nContent checksum over ${MIB} MiB, best of repeated passes (MB/s = 10^6 bytes/s); ` +
  '"× 1.0" = against CRC32C slicing-by-8 in wasm, the content checksum of format 1.0\n');
console.log('| implementation | native MB/s | wasm (Node) MB/s | wasm / native | wasm × 1.0 |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const [name, key] of [['CRC-32 bytewise', 'crc32_w1'], ['CRC-32 slicing-by-8', 'crc32_w8'],
  ['CRC-32 slicing-by-16', 'crc32_w16'], ['CRC-32 5 braids of 8-byte words (el_crc32)', 'crc32_w5'],
  ['CRC32C slicing-by-8 (format 1.0)', 'crc32c_w8'],
  ['CRC32C slicing-by-16', 'crc32c_w16']]) {
  console.log(`| ${name} | ${f(native[key])} | ${f(wasm[key].mbps)} | ${(wasm[key].mbps / native[key]).toFixed(2)}× | ` +
    `${(wasm[key].mbps / base).toFixed(2)}× |`);
}
console.log(`| js/core.mjs crc32() (copy into wasm + el_crc32) | | ${f(corePath.mbps)} | | ${(corePath.mbps / base).toFixed(2)}× |`);
console.log(`| Node zlib.crc32 | | ${f(nodeZlib.mbps)} (JS API) | | ${(nodeZlib.mbps / base).toFixed(2)}× |`);
console.log(`| host CPython zlib.crc32 | ${f(pyZlib.mbps)} | | | |`);
console.log(`\nhost: Node ${process.versions.node}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ` +
  `load average ${os.loadavg()[0].toFixed(1)} (figures drop when other jobs share the cores)`);
