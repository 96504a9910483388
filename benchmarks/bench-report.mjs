// The report of `npm run bench` (benchmarks/bench.mjs): the ratios against their floors and
// the table, from the result object bench.mjs also writes as bench.json. Run on its own, it
// prints the table of a saved result again:
//
//   node benchmarks/bench-report.mjs [build/bench/bench.json] [--plot FILE.png]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TARGETS, loadTarget } from './bench-plot.mjs';
import { publishedText } from './published.mjs';

const MiB = 1 << 20;

// Issue 10's rows, then issue 9's stand-in (numpy's protocol-5 path in pure Python) and the
// compute-heavy notebook's state (benchmarks/serializer_shapes.py, serializer_state.py).
export const ROWS = {
  dicts: '100k small dicts',
  instances: '20k notebook-class instances',
  bytes50: '50 MiB of bytes',
  bytes20x10: '200 MiB of bytes in 20 variables',
  mixed199: '199 mixed variables',
  vars200: '200 variables (~6 MB)',
  standin: 'issue 9 stand-in (76 MB PickleBuffers)',
  compute: 'compute-heavy notebook state',
};

/** Row labels: ROWS and the native-only row of issue 9. */
export const LABELS = { ...ROWS, issue9: 'issue 9 numpy + pandas, 77 MB' };
export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

const f1 = (v) => (v == null ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
const x2 = (v) => (v == null || !Number.isFinite(v) ? '—' : `${v.toFixed(2)}×`);
const mib = (n) => (n == null ? '—' : `${(n / MiB).toFixed(n < 10 * MiB ? 1 : 0)}`);
const mark = (ratio, target) => (ratio == null ? '' : ratio <= target ? ' ✓' : ' ✗');

// Each ratio is the median over rounds of that round's ratio: a round measures a figure and
// its floor within seconds of each other, so load that drifts between rounds cancels out.
const perRound = (xs, floors) => median(xs.map((x, i) => x / floors[i]));
const sum = (...lists) => lists[0].map((_, i) => lists.reduce((n, l) => n + l[i], 0));
const msOf = (runs) => runs.map((x) => x.ms);

export function ratios(result) {
  const byRow = {};
  for (const [env, native] of [[result.node, false], [result.native, true]]) {
    for (const r of env ?? []) {
      byRow[r.row] = { ...byRow[r.row], native,
        snapshot: perRound(r.snapshot_all_ms, r.dumps_all_ms), load: perRound(r.load_all_ms, r.loads_all_ms) };
    }
  }
  for (const r of result.chromium?.rows ?? []) {
    const { runs } = r;
    byRow[r.row] = { ...byRow[r.row],
      checkpoint: perRound(msOf(runs.checkpoint), sum(msOf(runs.dumps), msOf(runs.rawPut))),
      restore: perRound(msOf(runs.restore), msOf(runs.rawGetLoads)),
      memory: r.memory.peak_extra / (r.largest_group + 64 * MiB) };
  }
  return byRow;
}

export function table(result) {
  const R = ratios(result);
  const node = Object.fromEntries((result.node ?? []).concat(result.native ?? []).map((r) => [r.row, r]));
  const chrome = Object.fromEntries((result.chromium?.rows ?? []).map((r) => [r.row, r]));
  const rows = [...new Set([...Object.keys(node), ...Object.keys(chrome)])];
  const lines = [
    `Elastic Lite benchmark — ${result.when}, ${result.machine}; median of ${result.runs}${result.quick ? ' (QUICK: a smoke run, not figures)' : ''}`,
    '',
    '| state | checkpoint MiB | snapshot / pickle.dumps | load_snapshot / pickle.loads | checkpoint → IndexedDB / (dumps + raw put) | restore / (raw get + loads) | peak extra memory / (largest group + 64 MiB) | core memory after (MiB) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    const r = R[row] ?? {};
    const n = node[row]; const c = chrome[row];
    const label = `${LABELS[row] ?? row}${r.native ? ' (native CPython)' : ''}`;
    lines.push(`| ${label} | ${mib(n?.checkpoint_bytes ?? c?.checkpoint_bytes)} | `
      + `${n ? `${x2(r.snapshot)}${mark(r.snapshot, TARGETS.snapshot)} (${f1(n.snapshot_ms)} / ${f1(n.dumps_ms)} ms)` : '—'} | `
      + `${n ? `${x2(r.load)}${mark(r.load, loadTarget(row))} (${f1(n.load_ms)} / ${f1(n.loads_ms)} ms)` : '—'} | `
      + `${c ? `${x2(r.checkpoint)}${mark(r.checkpoint, TARGETS.checkpoint)} (${f1(c.checkpoint_ms)} / ${f1(c.dumps_ms)} + ${f1(c.raw_put_ms)} ms)` : '—'} | `
      + `${c ? `${x2(r.restore)}${mark(r.restore, TARGETS.restore)} (${f1(c.restore_ms)} / ${f1(c.raw_get_ms)} + ${f1(c.loads_ms)} ms)` : '—'} | `
      + `${c ? `${x2(r.memory)}${mark(r.memory, 1)} (+${mib(c.memory.peak_extra)} / ${mib(c.largest_group)} + 64)` : '—'} | `
      + `${c ? mib(c.memory.core_after) : '—'} |`);
  }
  lines.push('', 'Ratios: the median over rounds of each round\'s ratio (milliseconds: medians). '
    + 'Node columns: Pyodide under Node (native CPython where marked), process CPU time. Chromium columns: wall time in a '
    + 'module worker, IndexedDB on disk (durability "strict" for both the store and the raw put). Memory: resident memory of all the '
    + "browser's processes during one checkpoint, above what they held before it (the state itself is already resident).");
  for (const l of [result.large ?? []].flat()) lines.push('', largeText(l));
  if (result.compute) {
    const c = result.compute;
    lines.push('', `Compute-heavy notebook (benchmarks/notebooks/compute-heavy.ipynb) in Chromium: re-run ${(c.rerun_ms / 1000).toFixed(1)} s, `
      + `restore into a fresh kernel ${(c.restore_ms / 1000).toFixed(2)} s (read ${f1(c.read_ms)} ms, load ${f1(c.load_ms)} ms): `
      + `${c.speedup.toFixed(1)}× faster${mark(1 / c.speedup, 1 / TARGETS.computeSpeedup)} (target ≥ ${TARGETS.computeSpeedup}×); `
      + `its floor, raw get + pickle.loads of the same state in a fresh kernel too, takes ${(c.floor_ms / 1000).toFixed(2)} s `
      + `(pickle.loads ${(c.floor_loads_ms / 1000).toFixed(2)} s): no pickle-based restore can beat ${c.best_speedup.toFixed(1)}× here; `
      + `checkpoint ${mib(c.checkpoint_bytes)} MiB in ${(c.checkpoint_ms / 1000).toFixed(2)} s`);
  }
  if (result.points) lines.push('', pointsText(result.points));
  if (result.history) lines.push('', historyText(result.history));
  if (result.published) lines.push('', publishedText(result.published));
  return lines.join('\n');
}

export function pointsText(p) {
  const one = (r) => (r.error ? `Chromium: FAILED — ${r.error}`
    : `${r.env}: ${f1(r.point_ms)} ms median${mark(r.point_ms / 20, 1)}`
    + (r.point_cpu_ms !== undefined ? ` (process CPU ${f1(r.point_cpu_ms)} ms)` : '')
    + ` (${r.point_reuse?.reused ?? 0} records reused, ${r.point_reuse?.written ?? 0} written`
    + (r.snapshot_ratio !== undefined ? `; snapshot / pickle.dumps ${x2(r.snapshot_ratio)} in the same process)` : ')')
    + (r.strict_put_ms !== undefined ? ` — one strict IndexedDB transaction of 64 bytes alone: ${f1(r.strict_put_ms)} ms median` : ''));
  return `Automatic point after a cell that changed one small variable of the 200-variable namespace (target ≤ 20 ms): `
    + [p.node, p.native, p.chromium].filter(Boolean).map(one).join('; ');
}

export function historyText(h) {
  if (h.error) return `History (issue 14): FAILED — ${h.error}`;
  return `History (issue 14) in Chromium: ${h.cells} cells over a ${mib(h.big_bytes)} MiB buffer, a checkpoint after each: `
    + `stored ${mib(h.stored_bytes)} MiB for ${mib(h.big_bytes + h.changed_bytes)} MiB of distinct state `
    + `(${x2(h.stored_bytes / (h.big_bytes + h.changed_bytes))}${mark(h.stored_bytes / (h.big_bytes + h.changed_bytes), 1.1)}, target ≤ 1.1×); `
    + `checkpoint after a small change ${f1(h.checkpoint_ms)} ms median${mark(h.checkpoint_ms / 50, 1)} (target ≤ 50 ms); `
    + `checkout of an earlier point ${f1(h.checkout_ms)} ms vs full restore ${f1(h.restore_ms)} ms; `
    + `session ${(h.session_on_ms / 1000).toFixed(1)} s with a checkpoint after each cell vs ${(h.session_off_ms / 1000).toFixed(1)} s without `
    + `(${x2(h.session_on_ms / h.session_off_ms)}${mark(h.session_on_ms / h.session_off_ms, 1.05)}, target ≤ 1.05×)`;
}

// Re-print the table of a saved result, and with --plot FILE draw its plot again.
async function main(argv) {
  const plotAt = argv.indexOf('--plot');
  const plotFile = plotAt >= 0 ? argv[plotAt + 1] : null;
  const rest = argv.filter((_, i) => plotAt < 0 || (i !== plotAt && i !== plotAt + 1));
  const file = rest[0] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../build/bench/bench.json');
  const result = JSON.parse(readFileSync(file, 'utf8'));
  console.log(table(result));
  if (plotFile) {
    const { launchChromium } = await import('../tests/browser/helpers/chromium.mjs');
    const { renderPlot } = await import('./bench-plot.mjs');
    const browser = await launchChromium();
    try { await renderPlot(browser, result, ratios(result), LABELS, plotFile); } finally { await browser.close(); }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err) => { console.error(err); process.exit(1); });
}

/** One line per large state: checkpoint, then restore into a fresh kernel against its bound. */
export function largeText(l) {
  const state = `${mib(l.state_bytes)} MiB state`;
  if (l.error) return `${state}: FAILED — ${l.error}`;
  const ck = `${state} in Chromium (${l.row}): checkpoint ${(l.checkpoint_ms / 1000).toFixed(1)} s `
    + `(serialize ${(l.timings.serialize_ms / 1000).toFixed(1)} s, store ${(l.timings.store_ms / 1000).toFixed(1)} s), `
    + `peak extra memory +${mib(l.memory.peak_extra)} MiB (largest group ${mib(l.largest_group)} MiB), core memory after ${mib(l.memory.core_after)} MiB`
    + (l.checkpoint_warnings?.length ? ` (warning: ${l.checkpoint_warnings.join('; ')})` : '');
  if (l.restore_error) return `${ck}; restore FAILED: ${l.restore_error}`;
  const ratio = l.restore_extra_above_state / l.restore_bound;
  return `${ck}; restore into a fresh kernel ${(l.restore_ms / 1000).toFixed(1)} s${l.streamed ? ' (streamed)' : ''}, `
    + `peak +${mib(l.restore_peak_extra)} MiB: ${mib(l.restore_extra_above_state)} MiB above the restored state, `
    + `${ratio.toFixed(2)}× (largest record + 64 MiB = ${mib(l.restore_bound)} MiB)${mark(ratio, 1)}`;
}
