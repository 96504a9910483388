// The IndexedDB store against raw IndexedDB, in headless Chromium (real IndexedDB: Node with
// fake-indexeddb measures nothing of a browser). For each size, interleaved rounds in one page:
// a raw put of the bytes in 4 MiB values (one transaction, strict durability: the floor of a
// chunked write) and a raw get, against store.put / store.get of the same bytes laid out as a
// format-2 checkpoint (four records), the streamed path (putRecords + commit), a put whose
// records are all stored already, and the SHA-256 record keys alone. Medians and best rounds;
// ratios to raw.
// Usage: node benchmarks/store-idb.mjs [--mib 10,100] [--repeats 5]
// Writes build/bench/store-idb.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../tests/browser/helpers/chromium.mjs';
import { startServer } from '../demo/server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const SIZES = arg('--mib', '10,100').split(',').map(Number);
const REPEATS = Number(arg('--repeats', '5'));

const srv = await startServer({ port: 0, host: '127.0.0.1', mounts: {
  '/js/': path.join(ROOT, 'js'), '/benchmarks/': path.join(ROOT, 'benchmarks') } });
const browser = await launchChromium();
const results = [];
try {
  const page = await browser.newPage();
  await page.goto(new URL('/benchmarks/store-idb.html', srv.url).href);
  for (const mib of SIZES) {
    results.push(await page.evaluate(async ([m, r]) => (await import('/benchmarks/store-idb-page.mjs')).measure(m, r), [mib, REPEATS]));
  }
} finally {
  await browser.close();
  await srv.close();
}

const load = os.loadavg()[0].toFixed(1);
console.log(`IndexedDB store vs raw IndexedDB, headless Chromium, median of ${REPEATS} interleaved rounds ` +
  `(${os.cpus().length} cores, load average ${load})\n`);
// Medians, and the best round too: on a shared machine the best is the cost without the
// other processes' interference.
console.log('| size | operation | median ms | × raw | best ms | × raw (best) |');
console.log('| ---: | --- | ---: | ---: | ---: | ---: |');
for (const r of results) {
  const med = Object.fromEntries(r.rows.map((x) => [x.what, x.ms]));
  const best = Object.fromEntries(r.rows.map((x) => [x.what, Math.min(...x.all)]));
  for (const row of r.rows) {
    const raw = /get/.test(row.what) ? 'raw get' : 'raw put (4 MiB values)';
    console.log(`| ${r.sizeMiB} MiB | ${row.what} | ${row.ms.toFixed(1)} | ${(row.ms / med[raw]).toFixed(2)}× | ` +
      `${best[row.what].toFixed(1)} | ${(best[row.what] / best[raw]).toFixed(2)}× |`);
  }
}
fs.mkdirSync(path.join(ROOT, 'build', 'bench'), { recursive: true });
fs.writeFileSync(path.join(ROOT, 'build', 'bench', 'store-idb.json'),
  JSON.stringify({ cores: os.cpus().length, load: os.loadavg(), repeats: REPEATS, results }, null, 1));
console.log('\nraw rows: build/bench/store-idb.json');
