// The plot of `npm run bench` (docs/bench.png): each ratio against its floor, one panel per
// figure, one bar per state, the target as a dashed line. Drawn as SVG here and rasterized
// by the benchmark's own Chromium (a screenshot of the SVG), so no plotting package is needed.

/** Issue 10's targets (ratios to the floor; computeSpeedup: re-run time / restore time), and
 * issue 9's for its own state (numpy + pandas natively, its pure-Python stand-in in Pyodide). */
export const TARGETS = Object.freeze({
  snapshot: 1.25, load: 1.25, loadBytes: 2, loadIssue9: 1.5, checkpoint: 1.1, restore: 1.2, memory: 1,
  computeSpeedup: 10,
});

/** The load_snapshot / pickle.loads target of a row: 2x for bytes-heavy states (one integrity
 * pass), 1.5x for issue 9's state, else 1.25x. */
export function loadTarget(row) {
  if (row === 'issue9' || row === 'standin') return TARGETS.loadIssue9;
  return ['bytes50', 'bytes20x10'].includes(row) ? TARGETS.loadBytes : TARGETS.load;
}

const LABEL_W = 300;
const BAR_W = 560;
const VALUE_W = 90;
const ROW_H = 20;
const PANEL_PAD = 46;
const WIDTH = LABEL_W + BAR_W + VALUE_W + 20;

const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

// Log scale over [lo, hi] covering the values and the target, in powers of two.
function scale(values, target) {
  const all = [...values, target].filter((v) => v > 0 && Number.isFinite(v));
  const lo = 2 ** Math.floor(Math.log2(Math.min(...all, 0.5)));
  const hi = 2 ** Math.ceil(Math.log2(Math.max(...all, 2) * 1.05));
  const x = (v) => LABEL_W + (Math.log2(v / lo) / Math.log2(hi / lo)) * BAR_W;
  const ticks = [];
  for (let t = lo; t <= hi; t *= 2) ticks.push(t);
  return { x, ticks, lo };
}

function panel(y0, title, bars, target, targetLabel) {
  const { x, ticks, lo } = scale(bars.map((b) => b.value), target);
  const h = PANEL_PAD + bars.length * ROW_H + 8;
  const out = [`<text x="10" y="${y0 + 20}" class="title">${escape(title)}</text>`];
  for (const t of ticks) {
    out.push(`<line x1="${x(t)}" y1="${y0 + 30}" x2="${x(t)}" y2="${y0 + h - 6}" class="grid"/>`,
      `<text x="${x(t)}" y="${y0 + h + 6}" class="tick">${t >= 1 ? t : `1/${1 / t}`}×</text>`);
  }
  bars.forEach((b, i) => {
    const y = y0 + PANEL_PAD - 12 + i * ROW_H;
    const ok = b.value <= (b.target ?? target);
    out.push(`<text x="${LABEL_W - 8}" y="${y + 13}" class="label">${escape(b.label)}</text>`,
      `<rect x="${x(lo)}" y="${y + 2}" width="${Math.max(1, x(b.value) - x(lo))}" height="${ROW_H - 6}" class="${ok ? 'ok' : 'miss'}"/>`,
      `<text x="${LABEL_W + BAR_W + 8}" y="${y + 13}" class="value">${b.value.toFixed(2)}×</text>`);
    if (b.target != null && b.target !== target) {
      out.push(`<line x1="${x(b.target)}" y1="${y}" x2="${x(b.target)}" y2="${y + ROW_H}" class="target"/>`);
    }
  });
  out.push(`<line x1="${x(target)}" y1="${y0 + 28}" x2="${x(target)}" y2="${y0 + h - 6}" class="target"/>`,
    `<text x="${x(target) + 4}" y="${y0 + 36}" class="targetlabel">${escape(targetLabel)}</text>`);
  return { svg: out.join('\n'), height: h + 16 };
}

/** The SVG text of the plot for a bench result and its ratios (bench.mjs `ratios`). */
export function plotSvg(result, ratios, labels) {
  const rows = Object.keys(ratios);
  const label = (row) => `${labels[row] ?? row}${ratios[row].native ? ' (native)' : ''}`;
  const bars = (key, target = () => null) => rows.filter((r) => ratios[r][key] != null)
    .map((r) => ({ label: label(r), value: ratios[r][key], target: target(r) }));
  const ownLoadTarget = (r) => (loadTarget(r) !== TARGETS.load ? loadTarget(r) : null);
  const panels = [
    ['snapshot() / pickle.dumps — CPU, Pyodide under Node', bars('snapshot'), TARGETS.snapshot, `target ${TARGETS.snapshot}×`],
    ['load_snapshot() / pickle.loads — CPU (short dashes: bytes-heavy 2×, issue 9 1.5×)', bars('load', ownLoadTarget), TARGETS.load, `target ${TARGETS.load}×`],
    ['checkpoint → IndexedDB / (pickle.dumps + raw put) — wall, Chromium', bars('checkpoint'), TARGETS.checkpoint, `target ${TARGETS.checkpoint}×`],
    ['restore / (raw get + pickle.loads) — wall, Chromium', bars('restore'), TARGETS.restore, `target ${TARGETS.restore}×`],
    ['peak extra memory during checkpoint / (largest group + 64 MiB)', bars('memory'), TARGETS.memory, 'target 1×'],
  ];
  if (result.compute) {
    panels.push(['compute-heavy notebook: restore time / re-run time (fresh kernel, Chromium)', [
      { label: 'restore', value: 1 / result.compute.speedup },
      { label: 'its floor: raw get + pickle.loads', value: 1 / result.compute.best_speedup }],
    1 / TARGETS.computeSpeedup, `target 1/${TARGETS.computeSpeedup}`]);
  }
  let y = 50;
  const body = [];
  for (const [title, b, target, tl] of panels) {
    if (!b.length) continue;
    const p = panel(y, title, b, target, tl);
    body.push(p.svg);
    y += p.height;
  }
  const head = `Elastic Lite against its floors (${result.when}; median of ${result.runs}${result.quick ? '; QUICK smoke run' : ''}) — green: target met, red: missed`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y + 10}" viewBox="0 0 ${WIDTH} ${y + 10}">
<style>
  text { font: 12px sans-serif; fill: #222; }
  .head { font-size: 14px; font-weight: bold; }
  .title { font-size: 13px; font-weight: bold; }
  .label { text-anchor: end; }
  .tick { text-anchor: middle; fill: #666; font-size: 10px; }
  .value { font-variant-numeric: tabular-nums; }
  .grid { stroke: #ddd; }
  .ok { fill: #3a9a5b; }
  .miss { fill: #d0533f; }
  .target { stroke: #222; stroke-dasharray: 4 3; stroke-width: 1.5; }
  .targetlabel { font-size: 10px; fill: #222; }
</style>
<rect width="100%" height="100%" fill="#fff"/>
<text x="10" y="24" class="head">${escape(head)}</text>
${body.join('\n')}
</svg>`;
}

/** Writes the plot as a PNG at `file`, rasterized by a page of `browser`. */
export async function renderPlot(browser, result, ratios, labels, file) {
  const svg = plotSvg(result, ratios, labels);
  const page = await browser.newPage();
  try {
    await page.setContent(`<!doctype html><html><body style="margin:0;background:#fff">${svg}</body></html>`);
    await page.locator('svg').screenshot({ path: file });
  } finally {
    await page.close();
  }
}
