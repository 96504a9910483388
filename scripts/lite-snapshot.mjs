#!/usr/bin/env node
// `node scripts/lite-snapshot.mjs PYODIDE_DIR`: lets a JupyterLite site's kernels start Python
// from a memory snapshot. PYODIDE_DIR is the Pyodide distribution the site will serve
// (lite/make_pyodide.py runs this on its folder before packing the archive). Makes
// PYODIDE_DIR/pyodide.snapshot, a freshly started interpreter, in a module web worker of the
// tests' Chromium (tests/browser/helpers/chromium.mjs), as the kernel runs, from these very
// files: a snapshot fits only the Pyodide build that made it, and only a runtime like the one
// that made it (one made in Node 20 restores in Chromium, but its stack switching, JSPI, which
// run_sync needs, then fails). Then Pyodide's own pyodide.mjs becomes pyodide-core.mjs and
// lite/pyodide-from-snapshot.mjs becomes pyodide.mjs: the module the kernel loads (the site's
// pyodideUrl, which `jupyter lite build --pyodide` sets to pyodide.mjs) starts from the snapshot.
// Pyodide's snapshot API is experimental (_makeSnapshot / makeMemorySnapshot / _loadSnapshot).
// Without Chromium, or on any failure, nothing is changed (exit status 1, with the reason) and
// the kernels start Pyodide the plain way.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node scripts/lite-snapshot.mjs PYODIDE_DIR');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const started = Date.now();
let server, browser;
try {
  if (!fs.existsSync(path.join(dir, 'pyodide.asm.wasm'))) throw new Error(`${dir} holds no Pyodide`);
  if (fs.existsSync(path.join(dir, 'pyodide-core.mjs'))) throw new Error(`${dir} has its snapshot already`);
  const { launchChromium } = await import('../tests/browser/helpers/chromium.mjs');
  const { startTestServer } = await import('../tests/browser/helpers/server.mjs');
  server = await startTestServer({ root: dir });
  browser = await launchChromium();
  const page = await browser.newPage();
  const base = server.url;
  let bytes = null;
  await page.route(`${server.url}__snapshot__`, async (route) => {
    bytes = route.request().postDataBuffer();
    await route.fulfill({ status: 200, body: 'ok' });
  });
  await page.goto(`${base}package.json`); // any page of the site's origin
  // In a module worker, as the kernel runs: the snapshot comes back to the page, which posts it
  // to the route above.
  const size = await page.evaluate(async (base) => {
    const source = `import { loadPyodide } from '${base}pyodide.mjs';
const pyodide = await loadPyodide({ indexURL: '${base}', _makeSnapshot: true });
const bytes = pyodide.makeMemorySnapshot();
postMessage(bytes, [bytes.buffer]);`;
    const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })), { type: 'module' });
    const snapshot = await new Promise((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(new Error(`the worker failed: ${e.message}`));
    });
    worker.terminate();
    if (!('Suspending' in WebAssembly)) throw new Error('this Chromium has no JSPI (WebAssembly.Suspending)');
    await fetch('/__snapshot__', { method: 'POST', body: snapshot });
    return snapshot.length;
  }, base);
  if (!bytes || bytes.length !== size) throw new Error(`the snapshot did not arrive whole (${bytes?.length} of ${size} bytes)`);
  fs.writeFileSync(path.join(dir, 'pyodide.snapshot'), bytes);
  fs.renameSync(path.join(dir, 'pyodide.mjs'), path.join(dir, 'pyodide-core.mjs'));
  fs.copyFileSync(path.join(here, '..', 'lite', 'pyodide-from-snapshot.mjs'), path.join(dir, 'pyodide.mjs'));
  console.error(`[lite-snapshot] pyodide.snapshot: ${(bytes.length / 2 ** 20).toFixed(0)} MiB, made in Chromium in ${Date.now() - started} ms`);
} catch (e) {
  console.error(`[lite-snapshot] no snapshot: the kernels will start Pyodide the plain way (${e.message.split('\n')[0]})`);
  process.exitCode = 1;
} finally {
  await browser?.close();
  await server?.close();
}
