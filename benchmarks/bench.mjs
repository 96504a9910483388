#!/usr/bin/env node
// `npm run bench`: every figure of issue 10 against its floor, measured in one run.
//
//   npm run bench                   # ~25 min on a quiet 2-core machine; prints one table
//   EL_BENCH_QUICK=1 npm run bench  # smoke run: 1 run each, every state at its smallest
//                                   # (bench_python.QUICK), small "large" state, 5 cells over 8 MiB,
//                                   # one Pyodide under Node and one Chromium kernel for every part
//   EL_BENCH_RUNS=N                 # rounds per figure (default 7; ratios: median of the rounds')
//   EL_BENCH_ONLY=node,native,points,chromium,large,compute,history,published   # parts to run (default all)
//   EL_BENCH_OUT=DIR                # where bench.json goes (default build/bench)
//   EL_BENCH_STREAM_FROM=N          # restores from N bytes streamed (default 64 MiB; A/B runs)
//   EL_BENCH_ROWS=bytes50,...       # only these Chromium rows (default all)
//   EL_BENCH_FILES=0                # the IndexedDB store without record files (OPFS; A/B runs)
//   EL_BENCH_AB_FILES=1             # Chromium rows also checkpoint and restore into a store without
//                                   # record files, in the same rounds: ab_files ratios (files / chunks)
//   EL_BENCH_INTO_FROM=N            # a streamed restore reads records from N bytes straight into
//                                   # Python's memory (default 1 MiB; A/B runs: a huge N turns it off)
//   EL_BENCH_POINTS_BASE=DIR        # Chromium points: DIR/indexeddb.mjs (another build of the store) as
//                                   # an A/B baseline, EL_BENCH_POINTS_ROUNDS=N alternating rounds of each
//   EL_BENCH_LARGE=blobs:16:64      # only these large states (default 1 GiB and 2 GiB)
//   EL_BENCH_BYTES_FROM=N           # a streamed restore reads read-only buffers from N bytes into the
//                                   # bytes objects they load as (2^40: never; A/B runs)
//   EL_BENCH_AB_STREAM=1            # Chromium rows also restore as before streaming for 16 MiB records,
//                                   # bytes pieces and one-read frames (STREAM_RECORD_FROM, BYTES_FROM,
//                                   # FRAME_READ switched back), same rounds
//   EL_BENCH_AB_STREAM_FROM=N       # Chromium rows also restore streamed from N bytes, same rounds
//   EL_BENCH_ONLY=phases            # where a bytes-heavy checkpoint's and restore's time goes, phase by phase
//
// Writes bench.json (every figure, every run) and docs/bench.png (the ratios against their
// floors, with the targets; a QUICK or partial run writes its plot next to bench.json), drawn
// as SVG and rasterized by the same Chromium.
//
// Parts (each measures a figure and its floor side by side, interleaved in rounds, median of N):
//   node      Pyodide under Node, process CPU time: snapshot() / pickle.dumps and
//             load_snapshot() / pickle.loads on issue 10's states (+ issue 9's pure-Python
//             stand-in, + the compute-heavy notebook's state)
//   native    the same in host CPython for issue 9's numpy + pandas state (no Pyodide wheel)
//   points    issue 21: the automatic point after a cell that changed one small variable of
//             the 200-variable namespace (benchmarks/small_change.py), Pyodide under Node and
//             host CPython (wall and process CPU time), and in Chromium into IndexedDB (wall)
//   chromium  Debian's Chromium (headless, a fresh profile, real IndexedDB on disk), a module
//             worker running Pyodide as the demo and JupyterLite do, wall time:
//             checkpoint / (pickle.dumps + raw put of those bytes), restore / (raw get +
//             pickle.loads), the browser's resident memory during a checkpoint, the core's
//             WebAssembly memory after it
//   large     1 GiB and 2 GiB states (16 and 32 variables of 64 MiB random bytes) checkpointed,
//             then restored into a fresh kernel: time, peak memory against largest record + 64 MiB
//   compute   benchmarks/notebooks/compute-heavy.ipynb: re-running it vs restoring its state
//             into a fresh kernel (a new page)
//   history   issue 14: a session of cells over a 100 MiB buffer, a checkpoint after each
//             cell: stored bytes, checkpoint time, checkout time
//   published a notebook published warm vs the same notebook cold in JupyterLite: time to its
//             first result for a new visitor (benchmarks/published.mjs)
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPyodide } from '../js/pyodide-glue.mjs';
import { startServer, DEMO_MOUNTS } from '../demo/server.mjs';
import { launchChromium } from '../tests/browser/helpers/chromium.mjs';
import { sampled, browserPids, residentBytes } from './bench-memory.mjs';
import { TARGETS, renderPlot } from './bench-plot.mjs';
import { ROWS, LABELS, median, ratios, table, historyText } from './bench-report.mjs';
import { publishedPart } from './published.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');
const QUICK = !!process.env.EL_BENCH_QUICK;
const RUNS = Number(process.env.EL_BENCH_RUNS) || (QUICK ? 1 : 7);
const ONLY = new Set((process.env.EL_BENCH_ONLY || 'node,native,points,chromium,large,compute,history,published').split(','));
const OUT_DIR = process.env.EL_BENCH_OUT || path.join(ROOT, 'build/bench');
// docs/bench.png only from a full run of every part; anything less plots next to bench.json
const PLOT = QUICK || process.env.EL_BENCH_ONLY ? path.join(OUT_DIR, 'bench.png') : path.join(ROOT, 'docs/bench.png');
const MiB = 1 << 20;
const AB_FILES = process.env.EL_BENCH_AB_FILES === '1';
const AB_STREAM = process.env.EL_BENCH_AB_STREAM === '1';
const AB_STREAM_FROM = Number(process.env.EL_BENCH_AB_STREAM_FROM) || null;

const NODE_ROWS = Object.keys(ROWS);
const CHROMIUM_ROWS = ['dicts', 'instances', 'bytes50', 'bytes20x10', 'mixed199', 'vars200', 'standin']
  .filter((r) => !process.env.EL_BENCH_ROWS || process.env.EL_BENCH_ROWS.split(',').includes(r));
// large: 1 GiB and 2 GiB in 64 MiB variables (QUICK: 80 MiB, still above the size from which a
// restore is streamed, load.streamed.STREAM_FROM = 64 MiB)
const LARGE = process.env.EL_BENCH_LARGE ? process.env.EL_BENCH_LARGE.split(',') : QUICK ? ['blobs:2:40'] : ['blobs:16:64', 'blobs:32:64'];

const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);
// The line of an error that says what happened: a Python traceback's last line, else the first.
const reason = (err) => {
  const lines = String(err?.message ?? err).split('\n').map((l) => l.trim()).filter(Boolean);
  const raised = lines.filter((l) => /^[A-Za-z_][\w.]*(Error|Exception)\b.*:/.test(l) && !l.startsWith('at '));
  return (lines.some((l) => l.includes('Traceback (most recent call last):')) && raised.length ? raised[raised.length - 1] : lines[0]) ?? 'unknown error';
};

// ---- Node: Pyodide under Node, CPU time ---------------------------------------------------------

async function loadBench(pyodide) {
  for (const f of ['bench_python.py', 'serializer_shapes.py', 'serializer_cases.py', 'serializer_state.py', 'small_change.py']) {
    pyodide.FS.writeFile(`/home/pyodide/${f}`, readFileSync(path.join(HERE, f)));
  }
  await pyodide.runPythonAsync('import sys; sys.path.insert(0, "/home/pyodide")');
  return pyodide.pyimport('bench_python');
}

// A Pyodide under Node with the benchmark's modules. QUICK: one, shared by the node and points
// parts (the smoke run proves they run, not their figures); else a fresh one per part.
let nodePyodide = null;
function benchPyodide() {
  const fresh = async () => {
    const py = await createPyodide({ stdout: () => {}, stderr: () => {} });
    await loadBench(py);
    return py;
  };
  if (!QUICK) return fresh();
  nodePyodide ??= fresh();
  return nodePyodide;
}

async function nodePart() {
  log(`Pyodide under Node: ${NODE_ROWS.join(', ')} (${RUNS} run(s) each)`);
  const py = await benchPyodide();
  const B = py.pyimport('bench_python');
  if (QUICK) B.quick();
  const rows = [];
  for (const row of NODE_ROWS) {
    const r = B.serializer(row, RUNS);
    const js = r.toJs({ dict_converter: Object.fromEntries });
    r.destroy();
    rows.push(js);
    log(`  ${row}: snapshot ${js.snapshot_ms.toFixed(1)} / dumps ${js.dumps_ms.toFixed(1)} ms, load ${js.load_ms.toFixed(1)} / loads ${js.loads_ms.toFixed(1)} ms`);
  }
  B.destroy();
  return rows;
}

// Issue 21's many variables: the automatic point after a cell that changed one small variable
// (benchmarks/small_change.py), in Pyodide under Node and in host CPython.
async function pointPart() {
  log('automatic point after a small change (200 variables): Pyodide under Node');
  const py = await benchPyodide();
  const S = py.pyimport('small_change');
  const r = await S.bench(RUNS);
  const out = { node: r.toJs({ dict_converter: Object.fromEntries }) };
  r.destroy(); S.destroy();
  log(`  point ${out.node.point_ms.toFixed(1)} ms (median), snapshot / dumps ${out.node.snapshot_ratio.toFixed(2)}×`);
  const python = path.join(ROOT, '.venv/bin/python');
  const res = spawnSync(python, [path.join(HERE, 'small_change.py')],
    { encoding: 'utf8', env: { ...process.env, EL_BENCH_RUNS: String(RUNS) }, maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'inherit'] });
  if (res.status === 0) out.native = JSON.parse(res.stdout);
  return out;
}

function nativePart() {
  const python = path.join(ROOT, '.venv/bin/python');
  const probe = spawnSync(python, ['-c', 'import numpy, pandas'], { stdio: 'ignore' });
  if (probe.status !== 0) {
    log('native: numpy/pandas not in .venv; the issue 9 row is skipped (run `npm run build`)');
    return [];
  }
  log('native CPython: issue9 (numpy + pandas)');
  const res = spawnSync(python, [path.join(HERE, 'bench_python.py'), 'issue9'],
    { encoding: 'utf8', env: { ...process.env, EL_BENCH_RUNS: String(RUNS) }, maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'inherit'] });
  if (res.status !== 0) throw new Error(`bench_python.py issue9 failed (exit ${res.status})`);
  return JSON.parse(res.stdout);
}

// ---- Chromium ----------------------------------------------------------------------------------

async function openWorker(browser, server) {
  const page = await browser.newPage();
  const started = page.waitForEvent('worker');
  await page.goto(new URL('benchmarks/bench.html', server.url).href);
  const worker = await started;
  for (let i = 0; !(await worker.evaluate(() => !!self.bench)); i += 1) {
    if (i > 600) throw new Error('the benchmark worker did not start (see the browser console)');
    await new Promise((r) => setTimeout(r, 100));
  }
  const op = (name, args = {}) => worker.evaluate(([n, a]) => self.bench[n](a), [name, args]);
  const info = await op('init', { files: process.env.EL_BENCH_FILES !== '0' });
  if (process.env.EL_BENCH_STREAM_FROM) await op('streamFrom', { bytes: Number(process.env.EL_BENCH_STREAM_FROM) });
  if (process.env.EL_BENCH_INTO_FROM) await op('intoFrom', { bytes: Number(process.env.EL_BENCH_INTO_FROM) });
  if (process.env.EL_BENCH_BYTES_FROM) await op('bytesFrom', { bytes: Number(process.env.EL_BENCH_BYTES_FROM) });
  if (QUICK) await worker.evaluate(() => { const B = self.benchPyodide.pyimport('bench_python'); B.quick(); B.destroy(); });
  return { page, op, info };
}

// A kernel for a part: { op, info, close }. The full run opens a fresh one (a new page: its own
// worker and Pyodide) wherever a part needs one, as measured. QUICK (the smoke run of
// tests/node/bench-smoke.test.mjs, which proves every part runs, not its figures) opens one
// worker and gives it to every part and to every "fresh kernel" in turn, the last part's
// variables removed first (bench_python.teardown; restores go into a fresh namespace anyway):
// one Pyodide start in Chromium instead of nine.
let sharedKernel = null;
async function kernel(browser, server) {
  if (!QUICK) {
    const w = await openWorker(browser, server);
    return { ...w, close: () => w.page.close() };
  }
  sharedKernel ??= openWorker(browser, server);
  const w = await sharedKernel;
  await w.op('teardown');
  return { ...w, close: async () => {} };
}

// One row: a warm-up round (untimed: it also makes what the floors read), then RUNS rounds of
// the five steps, the order rotated each round so no step always follows the same one.
async function chromiumRow(op, row, browser) {
  const names = await op('setup', { row });
  const name = `bench-${row}`;
  const steps = {
    dumps: () => op('dumps'),
    rawPut: () => op('rawPut'),
    checkpoint: () => op('checkpoint', { name }),
    rawGetLoads: () => op('rawGetLoads'),
    restore: () => op('restore', { name }),
  };
  // the same steps into the store without record files, interleaved in the same rounds
  const chunked = (step) => async () => {
    await op('useStore', { files: false });
    try { return await step(); } finally { await op('useStore', { files: true }); }
  };
  if (AB_FILES) Object.assign(steps, { checkpointChunks: chunked(steps.checkpoint), restoreChunks: chunked(steps.restore) });
  // restores streamed from another size (EL_BENCH_AB_STREAM_FROM), same rounds
  if (AB_STREAM_FROM) {
    steps.restoreStreamFrom = async () => {
      await op('streamFromSwap', { on: true, bytes: AB_STREAM_FROM });
      try { return await steps.restore(); } finally { await op('streamFromSwap', { on: false }); }
    };
  }
  // the restore as it was before streaming for 16 MiB records, bytes pieces and one-read frames, same rounds
  if (AB_STREAM) {
    steps.restoreBefore = async () => {
      await op('streamBefore', { on: true });
      try { return await steps.restore(); } finally { await op('streamBefore', { on: false }); }
    };
  }
  const order = Object.keys(steps);
  for (const s of order) await steps[s]();
  const runs = Object.fromEntries(order.map((s) => [s, []]));
  for (let r = 0; r < RUNS; r += 1) {
    for (let i = 0; i < order.length; i += 1) {
      const s = order[(i + r) % order.length];
      // rotation keeps each floor's input fresh: rawPut/rawGetLoads read what dumps/rawPut
      // left, which is the same bytes every round
      runs[s].push(await steps[s]());
    }
  }
  const mem0 = await op('memory');
  const mem = await sampled(browser.userDataDir, () => op('checkpoint', { name }), 10);
  const mem1 = await op('memory');
  await op('forget', { name });
  if (AB_FILES) await chunked(() => op('forget', { name }))();
  const ck = mem.value;
  const ms = (s) => median(runs[s].map((x) => x.ms));
  const out = {
    row, names: names.length, runs,
    pickle_bytes: runs.dumps[0].size, checkpoint_bytes: ck.size, groups: ck.groups,
    largest_group: ck.largest_group, dill_groups: ck.dill_groups,
    dumps_ms: ms('dumps'), raw_put_ms: ms('rawPut'), checkpoint_ms: ms('checkpoint'),
    raw_get_loads_ms: ms('rawGetLoads'), raw_get_ms: median(runs.rawGetLoads.map((x) => x.getMs)),
    loads_ms: median(runs.rawGetLoads.map((x) => x.loadsMs)), restore_ms: ms('restore'),
    serialize_ms: median(runs.checkpoint.map((x) => x.timings.serialize_ms)),
    store_ms: median(runs.checkpoint.map((x) => x.timings.store_ms)),
    read_ms: median(runs.restore.map((x) => x.timings.read_ms)),
    load_ms: median(runs.restore.map((x) => x.timings.load_ms)),
    memory: { rss_before: mem.before, rss_peak: mem.peak, rss_after: mem.after,
      peak_extra: mem.peak - mem.before, extra_by_process: mem.extraByType, wasm_heap_before: mem0.wasmHeap, wasm_heap_after: mem1.wasmHeap,
      core_after: mem1.core },
  };
  if (AB_STREAM_FROM) {
    out.ab_stream_from = { bytes: AB_STREAM_FROM, restore: median(runs.restore.map((x, i) => x.ms / runs.restoreStreamFrom[i].ms)),
      restore_stream_from_ms: ms('restoreStreamFrom'),
      ratio: median(runs.restoreStreamFrom.map((x, i) => x.ms / runs.rawGetLoads[i].ms)) };
  }
  if (AB_STREAM) {
    out.ab_stream = { restore: median(runs.restore.map((x, i) => x.ms / runs.restoreBefore[i].ms)),
      restore_before_ms: ms('restoreBefore'),
      restore_before_ratio: median(runs.restoreBefore.map((x, i) => x.ms / runs.rawGetLoads[i].ms)) };
  }
  if (AB_FILES) {
    out.ab_files = { checkpoint: median(runs.checkpoint.map((x, i) => x.ms / runs.checkpointChunks[i].ms)),
      restore: median(runs.restore.map((x, i) => x.ms / runs.restoreChunks[i].ms)),
      checkpoint_chunks_ms: ms('checkpointChunks'), restore_chunks_ms: ms('restoreChunks') };
  }
  await op('teardown');
  return out;
}

async function chromiumPart(browser, server) {
  const { op, info, close } = await kernel(browser, server);
  log(`Chromium (${info.userAgent.match(/Chrome\/[\d.]+/)?.[0]}), Pyodide ${info.pyodide}: ${CHROMIUM_ROWS.join(', ')}`);
  const rows = [];
  for (const row of CHROMIUM_ROWS) {
    const r = await chromiumRow(op, row, browser);
    rows.push(r);
    log(`  ${row}: checkpoint ${r.checkpoint_ms.toFixed(0)} / (dumps ${r.dumps_ms.toFixed(0)} + put ${r.raw_put_ms.toFixed(0)}) ms, `
      + `restore ${r.restore_ms.toFixed(0)} / (get ${r.raw_get_ms.toFixed(0)} + loads ${r.loads_ms.toFixed(0)}) ms, `
      + `peak +${(r.memory.peak_extra / MiB).toFixed(0)} MiB`
      + (r.ab_files ? `; with record files / without: checkpoint ${r.ab_files.checkpoint.toFixed(2)}×, restore ${r.ab_files.restore.toFixed(2)}×` : '')
      + (r.ab_stream_from ? `; restore / streamed from ${r.ab_stream_from.bytes}: ${r.ab_stream_from.restore.toFixed(2)}× (${r.restore_ms.toFixed(0)} / ${r.ab_stream_from.restore_stream_from_ms.toFixed(0)} ms; that / floor ${r.ab_stream_from.ratio.toFixed(2)}×)` : '')
      + (r.ab_stream ? `; restore now / before: ${r.ab_stream.restore.toFixed(2)}× (${r.restore_ms.toFixed(0)} / ${r.ab_stream.restore_before_ms.toFixed(0)} ms; before / floor ${r.ab_stream.restore_before_ratio.toFixed(2)}×)` : ''));
  }
  await close();
  return { info, rows };
}

// Issue 21's automatic point in the browser: the same cells as pointPart's, in a worker whose
// kernel checkpoints into the IndexedDB store (wall time).
async function chromiumPoints(browser, server) {
  const { op, close } = await kernel(browser, server);
  try {
    const base = process.env.EL_BENCH_POINTS_BASE ? '/bench-base/indexeddb.mjs' : null;
    const r = await op('points', { runs: RUNS, rounds: Number(process.env.EL_BENCH_POINTS_ROUNDS) || 1, base });
    log(`  Chromium point ${r.point_ms.toFixed(1)} ms (median), ${r.point_reuse.reused} records reused`);
    const phases = (v) => v.phase_ms.map((p) => Object.entries(p).map(([k, x]) => `${k} ${x == null ? '-' : x.toFixed(1)}`).join(', '));
    for (const [label, v] of [['base', r.base], ['now', r], ['base, notebook', r.base_notebook], ['now, notebook', r.notebook]]) {
      if (v) phases(v).forEach((t, i) => log(`    ${label} round ${i + 1}: ${t}`));
    }
    return r;
  } catch (err) {
    return { error: reason(err) };
  } finally {
    await close();
  }
}

// States far larger than the others: do they checkpoint and restore at all, how long, how much
// memory. Each is checkpointed in one kernel, which is then closed, and restored into a FRESH
// kernel (a new page, as after a reload): the state is never in one heap twice (2 GiB twice
// would not fit Pyodide's 4 GiB), and the restore's peak is what a person's restore costs.
async function largePart(browser, server) {
  const out = [];
  for (const row of LARGE) out.push(await largeState(browser, server, row));
  return out;
}

// Resident memory of the browser once it stopped falling (a closed page's memory is given
// back a moment after close() resolves): sampled every 250 ms until two samples are within
// 16 MiB, at most 40 samples.
async function settledMemory(userDataDir) {
  let last = residentBytes(browserPids(userDataDir));
  for (let i = 0; i < 40; i += 1) {
    await new Promise((r) => setTimeout(r, 250));
    const now = residentBytes(browserPids(userDataDir));
    if (Math.abs(now - last) < 16 * MiB) return now;
    last = now;
  }
  return last;
}

async function largeState(browser, server, row) {
  const [, count, mib] = row.split(':').map(Number);
  const name = `bench-large-${count}x${mib}`;
  const names = Array.from({ length: count }, (_, i) => `blob${i}`);
  const out = { row, state_bytes: count * mib * MiB, largest_record: mib * MiB };
  const label = `${(out.state_bytes / MiB).toFixed(0)} MiB state (${count} × ${mib} MiB)`;
  let w = await kernel(browser, server);
  try {
    log(`large ${label}: setup`);
    await w.op('setup', { row });
    const mem0 = await w.op('memory');
    const ck = await sampled(browser.userDataDir, () => w.op('checkpoint', { name }), 20);
    const mem1 = await w.op('memory');
    Object.assign(out, { checkpoint_ms: ck.value.ms, checkpoint_bytes: ck.value.size, largest_group: ck.value.largest_group,
      timings: ck.value.timings, checkpoint_warnings: ck.value.warnings,
      memory: { rss_before: ck.before, rss_peak: ck.peak, peak_extra: ck.peak - ck.before, extra_by_process: ck.extraByType,
        wasm_heap_before: mem0.wasmHeap, wasm_heap_after: mem1.wasmHeap, core_after: mem1.core } });
    log(`  checkpoint ${(ck.value.ms / 1000).toFixed(1)} s, peak +${(out.memory.peak_extra / MiB).toFixed(0)} MiB`);
  } catch (err) {
    out.error = reason(err);
    log(`  failed: ${out.error}`);
    return out;
  } finally {
    await w.close();
  }
  w = await kernel(browser, server);
  try {
    await w.op('bind', { names });
    const mem0 = await w.op('memory');
    await settledMemory(browser.userDataDir);
    const rs = await sampled(browser.userDataDir, () => w.op('restore', { name }), 20);
    const mem1 = await w.op('memory');
    // above the restored state, which stays resident: what the restore needed on top of it
    const extra = rs.peak - rs.before - out.state_bytes;
    Object.assign(out, { restore_ms: rs.value.ms, restore_timings: rs.value.timings, streamed: rs.value.streamed,
      restore_peak_extra: rs.peak - rs.before, restore_extra_by_process: rs.extraByType,
      restore_extra_above_state: extra, restore_bound: out.largest_record + 64 * MiB,
      restore_wasm_heap_before: mem0.wasmHeap, restore_wasm_heap_after: mem1.wasmHeap });
    log(`  restore (fresh kernel) ${(rs.value.ms / 1000).toFixed(1)} s, streamed ${rs.value.streamed}, peak +${((rs.peak - rs.before) / MiB).toFixed(0)} MiB `
      + `(${(extra / MiB).toFixed(0)} above the state; bound: largest record + 64 = ${(out.restore_bound / MiB).toFixed(0)} MiB)`);
  } catch (err) {
    out.restore_error = reason(err);
    log(`  restore failed: ${out.restore_error}`);
  } finally {
    await w.op('forget', { name }).catch(() => {});
    await w.close();
  }
  return out;
}

function notebookCells(file) {
  const nb = JSON.parse(readFileSync(file, 'utf8'));
  return nb.cells.filter((c) => c.cell_type === 'code')
    .map((c) => (Array.isArray(c.source) ? c.source.join('') : c.source));
}

// Where a bytes-heavy checkpoint's and restore's time goes (EL_BENCH_ONLY=phases; rows as
// EL_BENCH_ROWS, default the two bytes rows): each phase on its own over the row's large
// buffers, RUNS rounds, medians (ms).
async function phasesPart(browser, server) {
  const { page, op } = await openWorker(browser, server);
  const out = {};
  try {
    for (const row of CHROMIUM_ROWS.filter((r) => process.env.EL_BENCH_ROWS || r.startsWith('bytes'))) {
      await op('setup', { row });
      await op('phases', { name: `bench-phases-${row}` }); // warm-up
      const runs = [];
      for (let r = 0; r < RUNS; r += 1) runs.push(await op('phases', { name: `bench-phases-${row}` }));
      await op('teardown');
      const med = (f) => median(runs.map(f));
      const keys = Object.keys(runs[0]).filter((k) => typeof runs[0][k] === 'number');
      const sub = (k) => Object.fromEntries(Object.keys(runs[0][k]).filter((x) => typeof runs[0][k][x] === 'number').map((x) => [x, med((r) => r[k][x])]));
      out[row] = { ...Object.fromEntries(keys.map((k) => [k, med((r) => r[k])])), checkpoint: sub('checkpoint'), restore: sub('restore') };
      log(`  phases ${row}: ${JSON.stringify(out[row], (k, v) => (typeof v === 'number' ? Math.round(v * 10) / 10 : v))}`);
    }
  } finally {
    await page.close();
  }
  return out;
}

// Re-running the notebook in a fresh kernel against restoring its state into another one, and
// the floor of any pickle-based restore (raw get + pickle.loads) in a third fresh kernel: a
// fresh kernel's heap has to grow for the whole state, which costs restore and floor alike.
async function computePart(browser, server) {
  const cells = notebookCells(path.join(HERE, 'notebooks/compute-heavy.ipynb'));
  if (QUICK) cells[0] = cells[0].replace(/^N = 2_000_000$/m, 'N = 20_000'); // as bench_python.QUICK
  if (QUICK && !/^N = 20_000$/m.test(cells[0])) throw new Error('compute-heavy.ipynb: its first cell no longer sets N = 2_000_000');
  const names = ['N', 'sieve', 'primes', 'steps'];
  const reruns = []; const restores = []; const floors = [];
  const out = {};
  const runs = QUICK ? 1 : Math.min(RUNS, 3);
  const fresh = async (step) => {
    const w = await kernel(browser, server);
    try {
      await w.op('bind', { names });
      return await step(w.op);
    } finally {
      await w.close();
    }
  };
  for (let r = 0; r < runs; r += 1) {
    const run = await fresh(async (op) => {
      const ran = await op('runNotebook', { cells });
      const ck = await op('checkpoint', { name: 'bench-compute' });
      out.checkpoint_ms = ck.ms; out.checkpoint_bytes = ck.size;
      await op('dumps');
      await op('rawPut'); // what the floor's kernel reads back
      return ran;
    });
    reruns.push(run.ms);
    const restore = () => fresh((op) => op('restore', { name: 'bench-compute' }));
    const floor = () => fresh((op) => op('rawGetLoads'));
    if (r % 2) { floors.push(await floor()); restores.push(await restore()); } else { restores.push(await restore()); floors.push(await floor()); }
    await fresh((op) => op('forget', { name: 'bench-compute' }));
    log(`  compute-heavy notebook: re-run ${(run.ms / 1000).toFixed(1)} s, restore ${(restores[r].ms / 1000).toFixed(2)} s, `
      + `raw get + pickle.loads ${(floors[r].ms / 1000).toFixed(2)} s (fresh kernels)`);
  }
  const restoreMs = restores.map((x) => x.ms);
  return { ...out, rerun_ms: median(reruns), restore_ms: median(restoreMs),
    read_ms: median(restores.map((x) => x.timings.read_ms)), load_ms: median(restores.map((x) => x.timings.load_ms)),
    floor_ms: median(floors.map((x) => x.ms)), floor_loads_ms: median(floors.map((x) => x.loadsMs)),
    speedup: median(reruns.map((x, i) => x / restoreMs[i])), best_speedup: median(reruns.map((x, i) => x / floors[i].ms)),
    reruns, restores: restoreMs, floors: floors.map((x) => x.ms) };
}

// Issue 14's session: a 100 MiB buffer that never changes, small variables that do.
async function historyPart(browser, server) {
  const { op, close } = await kernel(browser, server);
  try {
    const cells = QUICK ? 5 : 50;
    const mib = QUICK ? 8 : 100;
    log(`history session: ${cells} cells over a ${mib} MiB buffer`);
    const h = await op('history', { cells, mib });
    log(`  ${historyText(h)}`);
    return h;
  } catch (err) {
    return { error: reason(err) };
  } finally {
    await close();
  }
}

// ---- main --------------------------------------------------------------------------------------

async function main() {
  if (!existsSync(path.join(ROOT, 'build/wheels/wheels.json'))) {
    throw new Error('build/wheels/wheels.json is missing: run `npm run build` first');
  }
  const started = Date.now();
  const result = {
    when: new Date().toISOString().slice(0, 16).replace('T', ' '),
    machine: `${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)} at start`,
    quick: QUICK, runs: RUNS, targets: TARGETS,
  };
  if (ONLY.has('node')) result.node = await nodePart();
  if (ONLY.has('native')) result.native = nativePart();
  if (ONLY.has('points')) result.points = await pointPart();
  // EL_BENCH_POINTS_BASE=DIR: DIR/indexeddb.mjs (another build of the store) is the A/B
  // baseline of the Chromium points, EL_BENCH_POINTS_ROUNDS rounds of each, alternating
  const base = process.env.EL_BENCH_POINTS_BASE ? { '/bench-base/': path.resolve(process.env.EL_BENCH_POINTS_BASE) } : {};
  const server = await startServer({ port: 0, mounts: { ...DEMO_MOUNTS, '/benchmarks/': HERE, ...base } });
  const browser = await launchChromium();
  try {
    if (ONLY.has('chromium')) result.chromium = await chromiumPart(browser, server);
    if (ONLY.has('large')) result.large = await largePart(browser, server);
    if (ONLY.has('phases')) result.phases = await phasesPart(browser, server);
    if (ONLY.has('compute')) result.compute = await computePart(browser, server);
    if (ONLY.has('history')) result.history = await historyPart(browser, server);
    // after the history session: in the QUICK run's one kernel, the points' change watch stays
    // switched on once their namespace is gone (sys.monitoring events on every resumption of
    // code outside a watched namespace), which made the history's cells run ~7x slower
    if (ONLY.has('points')) result.points.chromium = await chromiumPoints(browser, server);
    if (ONLY.has('published')) {
      result.published = await publishedPart(browser, { runs: QUICK ? 1 : Math.min(RUNS, 3), log })
        .catch((err) => ({ error: reason(err) }));
    }
    result.load_average_end = os.loadavg()[0];
    result.minutes = (Date.now() - started) / 60000;
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(path.join(OUT_DIR, 'bench.json'), JSON.stringify(result, null, 2));
    const text = table(result);
    console.log(text);
    await renderPlot(browser, result, ratios(result), LABELS, PLOT);
    log(`wrote ${path.join(OUT_DIR, 'bench.json')} and ${PLOT} (${result.minutes.toFixed(1)} min)`);
    browser.assertOffline();
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((err) => {
  console.error(`[bench] failed: ${err.stack ?? err}`);
  process.exit(1);
});
