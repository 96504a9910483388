#!/usr/bin/env node
// Measures what one JupyterLite page and its Pyodide kernel cost: opens the example notebook of
// a built site (build/lite, or ELASTIC_LITE_SITE) in the tests' Chromium, runs `1+1` in a new
// cell, waits for `2`, and prints
//   - the CPU seconds of every Chromium process (by type), and of the renderer's threads (by name),
//   - the kernel worker's phases: the site is served through an overlay whose pyodideUrl is a
//     small module that times loadPyodide (and the .wasm compile), each loadPackage and each
//     runPythonAsync the kernel makes (worker clock), then hands over the real Pyodide.
//
//     (the kernel's piplite installs and its `import pyodide_kernel` are run and timed apart)
//
//   node scripts/measure-kernel-start.mjs [--runs N] [--reload] [--json] [--args 'CHROMIUM ARGS']
//       [--code CODE --expect REGEXP] [--replace REL=FILE ...]
//
// --reload: the page is loaded a second time in the same browser (what a test's reload costs:
// the HTTP cache and V8's code caches are warm), measured separately. --code: the cell to run
// instead (e.g. one that calls run_sync). --replace: serve FILE as the site's REL (a variant,
// e.g. other wheels or another pyodide-lock.json, without building a site);
// EL_MEASURE_PACKAGES='["name", ...]' puts names in front of the kernel's loadPyodide packages.
// A developer's tool, not a test: figures move with the machine's load; compare variants side
// by side (alternate them, several runs each).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { launchChromium } from '../tests/browser/helpers/chromium.mjs';
import { startTestServer } from '../tests/browser/helpers/server.mjs';
import { SITE, appendCell, openNotebook, runCell } from '../tests/browser/jupyterlite-page.mjs';

const args = process.argv.slice(2);
const runs = Number(args.includes('--runs') ? args[args.indexOf('--runs') + 1] : 1);
const reload = args.includes('--reload');
const asJson = args.includes('--json');
// --code CODE --expect REGEXP: the cell run (default 1+1, expecting 2)
const code = args.includes('--code') ? args[args.indexOf('--code') + 1] : '1+1';
const expect = new RegExp(args.includes('--expect') ? args[args.indexOf('--expect') + 1] : '^2$', 'm');
// --args '--js-flags=...': more Chromium arguments (a variant to compare)
// --replace REL=FILE (repeatable): serve FILE as the site's REL
const replace = {};
args.forEach((a, i) => { if (a === '--replace') { const [rel, file] = args[i + 1].split('='); replace[rel] = file; } });
const extraArgs = args.includes('--args') ? args[args.indexOf('--args') + 1].split(' ').filter(Boolean) : [];
const HZ = 100; // CLK_TCK on Linux

// The timing module: served as static/pyodide/el-timing.mjs of the overlay.
const TIMING_MODULE = `
const t0 = performance.now();
const log = (what, ms) => console.log('[el-timing] ' + (performance.now() - t0).toFixed(0).padStart(6) + ' ms: ' + what + ' took ' + ms.toFixed(0));
for (const name of ['instantiateStreaming', 'instantiate', 'compileStreaming', 'compile']) {
  const real = WebAssembly[name];
  WebAssembly[name] = async function (...a) {
    const s = performance.now();
    try { return await real.apply(this, a); } finally { log('wasm.' + name, performance.now() - s); }
  };
}
export async function loadPyodide(options) {
  const { loadPyodide: real } = await import('./__REAL__');
  const s = performance.now();
  const messageCallback = (m) => { log('message: ' + m, 0); (options.messageCallback || console.log)(m); };
  const py = await real({ ...options, messageCallback });
  // time spent compiling Python sources to bytecode at import (none when a .pyc is used)
  py.runPython(\`
import importlib._bootstrap_external as _be, time as _t
_el_compile = [0.0, 0, 0]
_orig_s2c = _be.SourceLoader.source_to_code
def _s2c(self, data, path, *a, **k):
    s = _t.perf_counter()
    try: return _orig_s2c(self, data, path, *a, **k)
    finally: _el_compile[0] += _t.perf_counter() - s; _el_compile[1] += 1; _el_compile[2] += len(data)
_be.SourceLoader.source_to_code = _s2c
\`);
  log('loadPyodide (with its packages)', performance.now() - s);
  for (const name of ['loadPackage', 'runPythonAsync']) {
    const orig = py[name].bind(py);
    py[name] = async (what, ...rest) => {
      // the kernel's installs and its import, timed apart
      const cut = typeof what === 'string' && name === 'runPythonAsync' && what.includes('piplite.install') ? what.indexOf('import pyodide_kernel') : -1;
      if (cut > 0) {
        await py[name](what.slice(0, cut), ...rest);
        return py[name](what.slice(cut), ...rest);
      }
      const s2 = performance.now();
      try { return await orig(what, ...rest); } finally {
        const label = typeof what === 'string' ? what.trim().split('\\n').map((l) => l.trim()).join('; ').slice(0, 90) : JSON.stringify(what);
        log(name + ' ' + label, performance.now() - s2);
        const c = py.runPython('_el_compile').toJs();
        log(\`  sources compiled so far: \${c[1]} (\${(c[2] / 1e6).toFixed(1)} MB) in\`, c[0] * 1000);
      }
    };
  }
  log('worker start to Pyodide ready', performance.now() - t0);
  return py;
}
`;

// A folder that serves `site` (symlinks) with the timing module added and the files of
// `replace` ({ relative path: file }) swapped in: a variant measured without building a site.
function overlay(site, replace = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'el-kernel-start-'));
  const link = (from, to) => fs.symlinkSync(from, to);
  for (const e of fs.readdirSync(site)) link(path.join(site, e), path.join(dir, e));
  // turns the symlinked folder `rel` (and its parents) into a real folder of symlinks
  const open = (rel) => {
    const parts = rel.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const at = path.join(dir, ...parts.slice(0, i));
      if (!fs.lstatSync(at).isSymbolicLink()) continue;
      const target = fs.readlinkSync(at);
      fs.unlinkSync(at);
      fs.mkdirSync(at);
      for (const e of fs.readdirSync(target)) link(path.join(target, e), path.join(at, e));
    }
  };
  const put = (rel, write) => {
    open(path.dirname(rel));
    fs.rmSync(path.join(dir, rel), { force: true });
    write(path.join(dir, rel));
  };
  for (const [rel, file] of Object.entries(replace)) put(rel, (to) => link(path.resolve(file), to));
  const config = JSON.parse(fs.readFileSync(path.join(site, 'jupyter-lite.json'), 'utf8'));
  const kernel = config['jupyter-config-data'].litePluginSettings['@jupyterlite/pyodide-kernel-extension:kernel'];
  // (the module the site's kernels load: pyodide.mjs, or the site's own wrapper of it)
  put('static/pyodide/el-timing.mjs', (to) => fs.writeFileSync(to, TIMING_MODULE.replace('__REAL__', kernel.pyodideUrl.split('/').pop())));
  kernel.pyodideUrl = kernel.pyodideUrl.replace(/[^/]+$/, 'el-timing.mjs');
  if (process.env.EL_MEASURE_PACKAGES) kernel.loadPyodideOptions.packages = [...JSON.parse(process.env.EL_MEASURE_PACKAGES), ...kernel.loadPyodideOptions.packages];
  put('jupyter-lite.json', (to) => fs.writeFileSync(to, JSON.stringify(config, null, 2)));
  return dir;
}

// Every process below this one: pid -> { ppid, type, cpu (s, own + reaped children) }
function tree() {
  const procs = new Map();
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      const type = (cmd.join(' ').split(' ').find((a) => a.startsWith('--type=')) || '--type=browser').slice(7);
      procs.set(Number(p), { ppid: Number(f[1]), type, cpu: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / HZ });
    } catch { /* gone */ }
  }
  const mine = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of procs) if (!mine.has(pid) && mine.has(p.ppid)) { mine.add(pid); grew = true; }
  }
  mine.delete(process.pid);
  return [...mine].map((pid) => ({ pid, ...procs.get(pid) }));
}

function threadsOf(pid) {
  const out = {};
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, '');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[name] = (out[name] || 0) + (Number(f[11]) + Number(f[12])) / HZ;
    } catch { /* gone */ }
  }
  return out;
}

function snapshot() {
  const procs = tree();
  const byType = {};
  const threads = {};
  for (const p of procs) {
    byType[p.type] = (byType[p.type] || 0) + p.cpu;
    if (p.type === 'renderer') {
      for (const [n, s] of Object.entries(threadsOf(p.pid))) threads[n] = (threads[n] || 0) + s;
    }
  }
  return { byType, threads, total: procs.reduce((a, p) => a + p.cpu, 0) };
}

const diff = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, +(b[k] - (a[k] || 0)).toFixed(2)]).filter(([, v]) => v >= 0.05));

async function loadOnce(page, url, lines) {
  const from = lines.length;
  const before = snapshot();
  const t = Date.now();
  await openNotebook(page, url);
  const n = await appendCell(page, code);
  await runCell(page, n, expect, 120_000);
  const wall = (Date.now() - t) / 1000;
  const after = snapshot();
  const phases = [...new Set(lines.slice(from).filter((l) => l.includes('[el-timing]')).map((l) => l.replace(/^.*\[el-timing\] /, '')))];
  return { wall, cpu: +(after.total - before.total).toFixed(2), byType: diff(before.byType, after.byType), rendererThreads: diff(before.threads, after.threads), phases };
}

const results = [];
for (let r = 0; r < runs; r++) {
  const dir = overlay(SITE, replace);
  const server = await startTestServer({ root: dir });
  const browser = await launchChromium({ extraArgs });
  const page = await browser.newPage();
  page.on('dialog', (d) => d.accept().catch(() => {}));
  page.__consoleLines = browser.consoleLines;
  const site = { browser, page };
  const url = `${server.url}lab/index.html?path=elastic-lite-demo.ipynb`;
  try {
    const first = await loadOnce(site.page, url, site.browser.consoleLines);
    const run = { first };
    if (reload) run.reload = await loadOnce(site.page, url, site.browser.consoleLines);
    run.browserTotal = +snapshot().total.toFixed(2);
    results.push(run);
    if (!asJson) console.log(JSON.stringify(run, null, 1));
  } finally {
    await site.browser.close();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
if (asJson) console.log(JSON.stringify(results));
