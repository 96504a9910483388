// js/core.mjs in real Chromium: the same module and .wasm in a page and in a module web
// worker (fetch + WebAssembly.instantiate), served by a throwaway static server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TYPES = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

// The script both the page and the worker run: write a checkpoint, inspect it, validate a
// hostile stream, and report what came out.
const PROBE = `
import { loadCore, CoreError } from '/js/core.mjs';
export async function probe(where) {
  const core = await loadCore();
  const w = core.newWriter({ producer: 'browser', python: '3.14', createdMs: 1 });
  w.beginRecord(['x']);
  w.append(new Uint8Array([0x80, 0x04, 0x8c, 0x01, 0x61, 0x94, 0x2e])); // 'a'
  w.endRecord('cloudpickle');
  const bytes = w.finish();
  w.free();
  const report = core.inspect(bytes);
  const bad = core.validatePickle(new Uint8Array([0x80, 0x04, 0x8e, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x2e]));
  let coreError = null;
  try { core.verify(bytes.subarray(0, bytes.length - 3)); } catch (e) { coreError = { isCoreError: e instanceof CoreError, message: e.message }; }
  return { where, version: core.version, ok: report.ok, names: report.records.map((r) => r.names), bad: bad.error, coreError };
}
`;
const WORKER = `import { probe } from '/probe.mjs'; probe('worker').then((r) => postMessage(r), (e) => postMessage({ error: String(e) }));`;
const PAGE = `<!doctype html><script type="module">
import { probe } from '/probe.mjs';
window.results = Promise.all([
  probe('page'),
  new Promise((resolve) => { const w = new Worker('/worker.mjs', { type: 'module' }); w.onmessage = (e) => resolve(e.data); w.onerror = (e) => resolve({ error: e.message }); }),
]);
</script>`;

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  const inline = { '/': [PAGE, '.html'], '/probe.mjs': [PROBE, '.mjs'], '/worker.mjs': [WORKER, '.mjs'] }[url.pathname];
  try {
    const [body, ext] = inline ?? [await readFile(path.join(ROOT, path.normalize(url.pathname).replace(/^(\.\.[/\\])+/, ''))), path.extname(url.pathname)];
    res.writeHead(200, { 'content-type': TYPES[ext] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const profile = await mkdtemp(path.join(os.tmpdir(), 'el-core-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run'],
});
after(async () => {
  await browser.close();
  server.close();
  await rm(profile, { recursive: true, force: true });
});

test('the core loads and works in a Chromium page and in a module web worker', async () => {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const results = await page.evaluate(() => window.results);
  assert.equal(results.length, 2);
  for (const r of results) {
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.equal(r.version, '0.1.0');
    assert.equal(r.ok, true);
    assert.deepEqual(r.names, [['x']]);
    assert.equal(r.bad.opcode, 'BINBYTES8');
    assert.equal(r.bad.offset, 2);
    assert.equal(r.coreError.isCoreError, true);
    assert.match(r.coreError.message, /truncated/);
  }
  assert.deepEqual(results.map((r) => r.where), ['page', 'worker']);
});
