#!/usr/bin/env node
// Issue 14's session in the real JupyterLite site (build/lite) with the Elastic Lite extension,
// in Chromium with IndexedDB: does the automatic checkpoint after each cell slow the session?
//
//   node benchmarks/history-jupyterlite.mjs            # ~13 min on a loaded 2-core machine
//   EL_HISTORY_QUICK=1 node benchmarks/history-jupyterlite.mjs   # a smoke run (~1 min):
//       4 cells over 8 MiB, one think time (0.55 s), Run All off and on once
//   EL_HISTORY_CELLS=N EL_HISTORY_MIB=M   # other sizes
//
// The notebook: one cell makes a 100 MiB bytearray that never changes and a function; then N
// cells `step(i)` each computing ~0.15 s and changing small variables (each prints how long
// it computed). They are run in the notebook UI (Shift+Enter), one after another as a person
// runs them, for several "think times" between a cell's output and the next Shift+Enter:
//   0 s      stepping through at once: each next cell is scheduled before the extension's
//            delay (500 ms) has passed, so it takes the point's place;
//   0.55 s   just past the delay: the next cell can arrive while the automatic checkpoint
//            runs, and waits for it (the kernel handles one request at a time);
//   2 s      reading the output: the checkpoint runs in the pause.
// In one kernel per think time, auto-checkpoint is turned off and on (the extension's
// command) for alternate blocks of cells, so the machine's load drifts alike for both. Run All
// (the cells queued at once: one point after the last) is timed off, on, off, on.
// Figures: per cell, the wait (time from Shift+Enter to its output minus what its code
// computed: messages, rendering, and any checkpoint the kernel was busy with), on vs off;
// the session time with and without; how many points (automatic checkpoints) were taken.
// Written to build/bench/history-jupyterlite.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  cell, labUrl, openNotebook, openSite, restartKernelFromMenu,
} from '../tests/browser/jupyterlite-page.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const QUICK = !!process.env.EL_HISTORY_QUICK;
const CELLS = Number(process.env.EL_HISTORY_CELLS || (QUICK ? 4 : 100));
const BLOCK = Math.max(1, Math.min(10, CELLS >> 2)); // cells per block of one setting
const MIB = Number(process.env.EL_HISTORY_MIB || (QUICK ? 8 : 100));
const THINK_MS = QUICK ? [550] : [0, 550, 2000];
const RUN_ALL = QUICK ? [false, true] : [false, true, false, true]; // auto-checkpoint off / on
const NOTEBOOK = 'history-bench.ipynb';
const OUT = path.join(process.env.EL_BENCH_OUT || path.join(ROOT, 'build', 'bench'), 'history-jupyterlite.json');

const SETUP = [
  'import random, time',
  `big = bytearray(random.Random(14).randbytes(${MIB} << 20))`,
  'log = []',
  'def step(i):',
  '    global acc',
  '    t0 = time.perf_counter()',
  '    acc = sum(j * j for j in range(1_000_000 + i))',
  '    log.append((i, acc % 1000))',
  '    print("step", i, "ran", round((time.perf_counter() - t0) * 1000))',
  'print("ready")',
].join('\n');

function notebookJson() {
  const code = (source) => ({ cell_type: 'code', source, metadata: {}, outputs: [], execution_count: null });
  return {
    cells: [code(SETUP), ...Array.from({ length: CELLS }, (_, i) => code(`step(${i + 1})`))],
    metadata: { kernelspec: { name: 'python', display_name: 'Python (Pyodide)', language: 'python' } },
    nbformat: 4, nbformat_minor: 5,
  };
}

const log = (...a) => console.error('[history-jupyterlite]', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Uploads the benchmark notebook into the site's contents through JupyterLab's file browser
 * (the Pyodide kernel cannot write them here: Playwright blocks the service worker its drive
 * needs). */
async function createNotebook(page, site, dir) {
  // from the launcher: no other notebook opened (each would start a kernel of its own)
  await page.goto(labUrl(site));
  await page.locator('.jp-LauncherCard').first().waitFor({ timeout: 180_000 });
  const file = path.join(dir, NOTEBOOK);
  fs.writeFileSync(file, JSON.stringify(notebookJson()));
  const upload = page.locator('.jp-FileBrowser .jp-ToolbarButtonComponent[title="Upload Files"]').first();
  if (!(await upload.isVisible())) await page.locator('.jp-SideBar [data-id="filebrowser"]').first().click();
  const [chooser] = await Promise.all([page.waitForEvent('filechooser', { timeout: 30_000 }), upload.click()]);
  await chooser.setFiles(file);
  await page.locator('.jp-DirListing-item', { hasText: NOTEBOOK }).first().waitFor({ timeout: 60_000 });
}

/** Cell n run by Shift+Enter: {ms: time to its output `expect`, ran: the ms its code says
 * it computed (the rest is waiting: messages, and a checkpoint the kernel was busy with)}.
 * The run counts from the key press JupyterLab accepted (the prompt left its old text, e.g.
 * for [*]); a press that landed before the notebook had focus is pressed again. */
async function timedRun(page, n, expect) {
  const c = cell(page, n);
  const prompt = c.locator('.jp-InputPrompt');
  let t0 = 0;
  for (let attempt = 1; ; attempt += 1) {
    await prompt.click();
    await page.keyboard.press('Escape');
    // every change of the prompt's text from now on (a quick cell's [*] may last one frame)
    await prompt.evaluate((el) => {
      el.__elChanged = false;
      el.__elObserver?.disconnect();
      el.__elObserver = new MutationObserver(() => { el.__elChanged = true; });
      el.__elObserver.observe(el, { childList: true, characterData: true, subtree: true });
    });
    t0 = Date.now();
    await page.keyboard.press('Shift+Enter');
    const accepted = await page.waitForFunction((el) => el.__elChanged, await prompt.elementHandle(), { timeout: 15_000 })
      .then(() => true, () => false);
    if (accepted) break;
    if (attempt >= 3) throw new Error(`cell ${n}: Shift+Enter did not run it (three presses); ${await pageState(page, n)}`);
    log(`cell ${n}: Shift+Enter did not run it; again`);
  }
  const out = c.locator('.jp-OutputArea-output', { hasText: expect }).first();
  try {
    await out.waitFor({ timeout: 300_000 });
  } catch (e) {
    throw new Error(`cell ${n} never printed ${JSON.stringify(expect)} (${e.message.split('\n')[0]}); ${await pageState(page, n)}`);
  }
  const ms = Date.now() - t0;
  const ran = Number((/ran (\d+)/.exec(await out.innerText()) || [0, 0])[1]);
  return { ms, ran };
}

/** What the page shows around cell n, for a failure message: its prompt and output, the
 * kernel's status, dialogs and notifications, the sidebar's status, the console's last lines. */
async function pageState(page, n) {
  const seen = await page.evaluate((k) => {
    const cells = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
    const c = cells[k];
    const text = (sel, root = document) => [...root.querySelectorAll(sel)].map((e) => e.innerText.trim()).filter(Boolean);
    return {
      prompt: c?.querySelector('.jp-InputPrompt')?.innerText.trim(),
      output: c ? text('.jp-OutputArea-output', c).join(' | ') : '(no such cell)',
      kernel: text('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar-kernelStatus, .jp-NotebookPanel:not(.lm-mod-hidden) [data-jp-item-name="kernelStatus"]').join(' ') ||
        [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar-kernelStatus, .jp-NotebookPanel:not(.lm-mod-hidden) .jp-KernelStatus')].map((e) => e.getAttribute('title') || e.className).join(' '),
      statusBar: text('.jp-StatusBar-Widget').join(' | '),
      dialogs: text('.jp-Dialog'),
      toasts: text('.Toastify__toast'),
      sidebar: text('#elastic-lite-sidebar .jp-ElasticLite-status, #elastic-lite-sidebar .jp-ElasticLite-historyStatus'),
      active: document.activeElement?.className,
    };
  }, n).catch((e) => ({ error: e.message }));
  return `the page shows ${JSON.stringify(seen)}\nlast browser console lines:\n  ${(page.__consoleLines || []).slice(-25).join('\n  ')}`;
}

/** The kernel's time of the automatic checkpoints the sidebar's history line has reported
 * so far, by the cell they followed (`step(k)` -> ms of host.checkpoint in the kernel): the
 * time the kernel was busy with a point, what a cell sent meanwhile waits for. */
async function readPointTimes(page, into) {
  const text = await page.locator('#elastic-lite-sidebar .jp-ElasticLite-historyStatus')
    .textContent({ timeout: 1000 }).catch(() => '');
  const m = /^After \[\d+\] step\((\d+)\): saved .*?, (\d+) ms/.exec(text ?? '');
  if (m) into.set(Number(m[1]), Number(m[2]));
}

/** Waits until the sidebar's history line says the point after `step(k)` was saved (the point
 * after the last cell of a block with auto-checkpoint on: no next cell takes its place). */
async function pointAfter(page, k) {
  const line = page.locator('#elastic-lite-sidebar .jp-ElasticLite-historyStatus');
  try {
    await line.filter({ hasText: new RegExp(`^After \\[\\d+\\] step\\(${k}\\): saved`) }).waitFor({ state: 'attached', timeout: 120_000 });
  } catch (e) {
    throw new Error(`the sidebar never said the point after step(${k}) was saved; its line: ${await line.textContent().catch(() => '(none)')}`);
  }
}

async function points(page) {
  return page.evaluate(async (nb) => {
    const { IndexedDBStore } = await import(`${location.origin}/extensions/elastic-lite-jupyterlite/static/elastic-lite/js/store/indexeddb.mjs`);
    const store = new IndexedDBStore();
    try {
      // the notebook's points are kept under its id (metadata.elastic_lite.id) and named after its path
      return (await store.list()).filter((e) => e.name.startsWith(`${nb} `) && e.meta?.auto).length;
    } finally {
      await store.close();
    }
  }, NOTEBOOK);
}

/** Deletes the notebook's checkpoints. */
async function clearPoints(page) {
  await page.evaluate(async (nb) => {
    const { IndexedDBStore } = await import(`${location.origin}/extensions/elastic-lite-jupyterlite/static/elastic-lite/js/store/indexeddb.mjs`);
    const store = new IndexedDBStore();
    try {
      for (const e of await store.list()) if (e.name.startsWith(`${nb} `)) await store.delete(e.name);
    } finally {
      await store.close();
    }
  }, NOTEBOOK);
  await keepEverything(page);
}

/** Turns retention off (the extension sets it from its settings whenever they change), so
 * every point taken is still there to be counted. */
async function keepEverything(page) {
  await page.evaluate(async () => {
    const { IndexedDBStore } = await import(`${location.origin}/extensions/elastic-lite-jupyterlite/static/elastic-lite/js/store/indexeddb.mjs`);
    const store = new IndexedDBStore();
    try {
      await store.setRetention(null, null);
    } finally {
      await store.close();
    }
  });
}

const KERNEL_INDICATOR = '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator';

/** A new kernel with no checkpoint of the notebook (so no restore offer either; the kernel the
 * notebook opened with the first time, a restarted one after), started: as
 * a person does, the next cell runs once the toolbar's kernel indicator says idle again (a
 * cell run while the restarted kernel was still starting once never printed, on a loaded
 * machine: the run timed out waiting for "ready"). */
let kernelRan = false; // the notebook's kernel ran a cell: the next fresh one is a restart

async function freshKernel(page, restart = true) {
  await clearPoints(page);
  if (kernelRan && restart) {
    await restartKernelFromMenu(page);
    // the restart shows (the indicator leaves "idle"; it may have already), then the new kernel
    await page.locator(`${KERNEL_INDICATOR}:not([data-status="idle"])`).waitFor({ state: 'attached', timeout: 10_000 }).catch(() => {});
  }
  kernelRan = true;
  try {
    await page.locator(`${KERNEL_INDICATOR}[data-status="idle"]`).waitFor({ state: 'attached', timeout: 180_000 });
  } catch (e) {
    throw new Error(`the restarted kernel never became idle (${e.message.split('\n')[0]}); ${await pageState(page, 0)}`);
  }
}

/** A fresh kernel (`restart` false: the kernel as it is, its points deleted) with the setup
 * run and, with auto-checkpoint on, its automatic checkpoint (the whole buffer) done. Returns
 * how long that first point took to appear (ms). */
async function setUp(page, auto, restart = true) {
  await freshKernel(page, restart);
  await timedRun(page, 0, 'ready');
  const t0 = Date.now();
  for (let i = 0; auto && i < 240 && (await points(page)) < 1; i += 1) await sleep(250);
  const firstPointMs = auto ? Date.now() - t0 : null;
  await sleep(1000);
  return firstPointMs;
}

/** The cells one after another with `thinkMs` between them, the setting alternating every
 * BLOCK cells (starting off). Returns {off: [...], on: [...]} of {ms, ran} and the points. */
async function interleaved(page, thinkMs, setAuto) {
  // the kernel's first point is whole (the 100 MiB buffer written once): taken at setup,
  // apart from the cells measured (its time is in `firstPointMs` of the result)
  await setAuto(true);
  await setUp(page, true);
  const runs = { off: [], on: [] };
  const pointMs = new Map();
  let points0 = await points(page);
  let pointsOn = 0;
  for (let i = 1; i <= CELLS; i += 1) {
    const on = Math.floor((i - 1) / BLOCK) % 2 === 1;
    if ((i - 1) % BLOCK === 0) {
      if (!on && i > 1) await pointAfter(page, i - 1); // the last (on) block's last point is done
      const now = await points(page);
      pointsOn += now - points0;
      await setAuto(on);
      points0 = await points(page);
    }
    runs[on ? 'on' : 'off'].push(await timedRun(page, i, `step ${i} `));
    await readPointTimes(page, pointMs); // (the point after the cell before, by now)
    await sleep(thinkMs);
  }
  if (Math.floor((CELLS - 1) / BLOCK) % 2 === 1) await pointAfter(page, CELLS);
  else await sleep(3000); // (an off block last: no point to wait for)
  await readPointTimes(page, pointMs);
  pointsOn += (await points(page)) - points0;
  return { ...runs, points: pointsOn, pointMs: [...pointMs.values()] };
}

/** Run All, timed from the command to the last cell's output. */
async function runAll(page, on, setAuto) {
  await setAuto(on);
  // QUICK: with auto-checkpoint off, in the kernel the cells before ran in (its points
  // deleted: none can come); with it on, in a restarted kernel, as always: one start fewer
  await setUp(page, on, !(QUICK && !on));
  const before = await points(page);
  const t0 = Date.now();
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click();
  await cell(page, CELLS).locator('.jp-OutputArea-output', { hasText: `step ${CELLS} ` }).first().waitFor({ timeout: 600_000 });
  const ms = Date.now() - t0;
  await sleep(3000);
  return { ms, points: (await points(page)) - before };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** The palette command that turns auto-checkpoint on or off (retried: on a loaded machine
 * the palette's shortcut can land while focus is elsewhere). */
async function toggleAuto(page) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await page.keyboard.press('Escape');
      await cell(page, 0).locator('.jp-InputPrompt').click();
      await page.keyboard.press('Escape');
      await page.keyboard.press('Control+Shift+C');
      const input = page.locator('.lm-CommandPalette-input');
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill('Auto-checkpoint after each successful cell');
      await page.locator('.lm-CommandPalette-item', { hasText: 'Auto-checkpoint after each successful cell' }).first().click();
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      log(`the command palette did not open (${err.message.split('\n')[0]}); again`);
    }
  }
}

async function main() {
  const site = await openSite();
  const { page, server } = site;
  const result = { when: new Date().toISOString(), quick: QUICK, cells: CELLS, mib: MIB, runs: [] };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'el-history-bench-'));
  try {
    await createNotebook(page, site, dir);
    await openNotebook(page, `${server.url}lab/index.html?path=${NOTEBOOK}`);
    let auto = true; // the extension's default
    const setAuto = async (on) => {
      if (auto !== on) {
        await toggleAuto(page);
        auto = on;
        await sleep(500);
        await keepEverything(page); // the extension set its retention again: every point counts
      }
    };
    for (const think of THINK_MS) {
      log(`think ${think} ms: ${CELLS} cells, auto-checkpoint off and on by blocks of ${BLOCK}`);
      const r = await interleaved(page, think, setAuto);
      const wait = (x) => x.ms - x.ran;
      const row = {
        think, cells: { off: r.off.length, on: r.on.length }, points: r.points,
        sessionMs: { off: sum(r.off.map((x) => x.ms)), on: sum(r.on.map((x) => x.ms)) },
        computedMs: { off: sum(r.off.map((x) => x.ran)), on: sum(r.on.map((x) => x.ran)) },
        waitMs: { off: sum(r.off.map(wait)), on: sum(r.on.map(wait)) },
        medianWaitMs: { off: median(r.off.map(wait)), on: median(r.on.map(wait)) },
        maxWaitMs: { off: Math.max(...r.off.map(wait)), on: Math.max(...r.on.map(wait)) },
        // the kernel's time per point (host.checkpoint), as the sidebar reported it
        pointMs: { median: r.pointMs.length ? median(r.pointMs) : null, max: r.pointMs.length ? Math.max(...r.pointMs) : null, seen: r.pointMs.length },
        runs: r,
      };
      // what the checkpoints added: the cells' waiting with them on minus without, against
      // the session without (think time excluded)
      row.overhead = (row.waitMs.on - row.waitMs.off) / row.sessionMs.off;
      log(`  ${row.points} points; waiting ${row.waitMs.off} ms off, ${row.waitMs.on} ms on`);
      result.runs.push(row);
    }
    const all = { think: 'all', off: [], on: [] };
    for (const on of RUN_ALL) {
      const x = await runAll(page, on, setAuto);
      all[on ? 'on' : 'off'].push(x);
      log(`Run All, auto-checkpoint ${on ? 'on' : 'off'}: ${x.ms} ms, ${x.points} points`);
    }
    result.runAll = all;
    site.browser.assertOffline();
  } finally {
    await site.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, JSON.stringify(result, null, 2));
  console.log(`Auto-checkpoint in JupyterLite (Chromium, IndexedDB): cells of ~0.15 s over a ${MIB} MiB buffer, ` +
    `run in the notebook UI one after another, auto-checkpoint off and on in alternate blocks of ${BLOCK} cells`);
  console.log('| think time | cells off / on | session off / on (s, per cell) | median wait off / on | longest wait off / on | waiting added | points taken (on) | kernel time per point, median / max | that / session per cell |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of result.runs) {
    const per = (k) => (r.sessionMs[k] / r.cells[k] / 1000).toFixed(3);
    const busy = r.pointMs.median == null ? '—'
      : `${(100 * r.pointMs.median / (r.sessionMs.off / r.cells.off)).toFixed(1)}%`;
    console.log(`| ${r.think} ms | ${r.cells.off} / ${r.cells.on} | ${per('off')} / ${per('on')} | ` +
      `${r.medianWaitMs.off} / ${r.medianWaitMs.on} ms | ${r.maxWaitMs.off} / ${r.maxWaitMs.on} ms | ${(100 * r.overhead).toFixed(1)}% | ` +
      `${r.points} of ${r.cells.on} | ${r.pointMs.median ?? '—'} / ${r.pointMs.max ?? '—'} ms (${r.pointMs.seen} seen) | ${busy} |`);
  }
  const a = result.runAll;
  console.log(`Run All of ${CELLS} cells: off ${a.off.map((x) => (x.ms / 1000).toFixed(2)).join(', ')} s; ` +
    `on ${a.on.map((x) => (x.ms / 1000).toFixed(2)).join(', ')} s (${a.on.map((x) => x.points).join(', ')} points)`);
  log(`wrote ${OUT}`);
}

await main();
