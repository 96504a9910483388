// The "last operation" view: after a checkpoint or a restore, one row per variable (name, type,
// serializer, size, time) — a variable recomputed by replaying recorded cells has "replay" for
// serializer —, a bar chart of where the time went, the skipped variables with the reason, and
// what replay will do or did (which cells, their side effects and output). It renders
// elastic_lite.host's checkpoint and restore reports as they are (docs/INTERFACES.md, "Report
// schema").
import { h, formatBytes, formatMs } from './format.mjs';
import { recordLabel, replayNotes, replayOutputs, shownText } from '../js/shared/report.mjs';

// Names, types, modules and reasons come from Python or a file: shown as text with their
// control characters escaped (shownText), never interpreted.
const t = shownText;

// Where the time went, per operation: [label, timings key].
const PHASES = {
  checkpoint: [['serialize', 'serialize_ms'], ['store', 'store_ms']],
  restore: [['read', 'read_ms'], ['validate + unpickle', 'load_ms'], ['replay', 'replay_ms']],
};

export function renderReport(root, report) {
  root.hidden = false;
  const $ = (sel) => root.querySelector(sel);
  const checkpoint = report.op === 'checkpoint';
  const rows = checkpoint ? report.variables : report.restored;
  const n = rows.length;
  // Recomputed by replay (planned at a checkpoint, done at a restore): rows of their own.
  const replayed = checkpoint ? (report.replay?.recompute ?? []) : (report.recomputed ?? []);
  const total = report.timings.total_ms;
  $('#report-title').textContent = `${checkpoint ? 'Checkpoint' : 'Restore'} “${t(report.name)}”`;
  $('#report-summary').textContent = checkpoint
    ? `Saved ${n} variable${n === 1 ? '' : 's'} (${formatBytes(report.size)}) in ${formatMs(total)}` +
      (replayed.length ? `; ${replayed.length} recomputed on restore` : '') +
      (report.skipped.length ? `; ${report.skipped.length} skipped.` : '.')
    : `Restored ${n} variable${n === 1 ? '' : 's'} from ${formatBytes(report.size)} in ${formatMs(total)}` +
      (replayed.length ? `; ${replayed.length} recomputed by replay` : '') +
      (report.problems.length ? `; ${report.problems.reduce((a, p) => a + p.names.length, 0)} could not be restored.` : '.');

  renderChart($('#report-chart'), PHASES[report.op].map(([label, key]) => ({ label, ms: report.timings[key] ?? 0 })));

  $('#report-vars tbody').replaceChildren(...rows.map((v) => h('tr', {},
    h('td', {}, t(v.name)),
    h('td', {}, t(v.type ?? '')),
    h('td', { class: `serializer-${v.serializer}` }, t(v.serializer ?? '')),
    // Variables that share objects are written as one record: its size is on the first row.
    h('td', { class: 'num' }, Number.isFinite(v.bytes) ? formatBytes(v.bytes)
      : h('span', { class: 'same', title: 'Saved in the same record as the variable above' }, '↑ same')),
    h('td', { class: 'num' }, Number.isFinite(v.ms) ? formatMs(v.ms) : '—'))),
  ...replayed.map((r) => h('tr', {},
    h('td', {}, t(r.name)),
    h('td', {}, t(r.type ?? '')),
    h('td', { class: 'serializer-replay', title: t(r.message) }, 'replay'),
    h('td', { class: 'num' }, r.cells.map((c) => `[${c}]`).join(' ')),
    h('td', { class: 'num' }, '—'))));

  const skipped = $('#report-skipped');
  skipped.replaceChildren();
  if (report.skipped.length) {
    skipped.append(
      h('h4', {}, checkpoint ? 'Skipped (not saved)' : 'Not in this checkpoint (skipped when it was taken)'),
      h('ul', {}, report.skipped.map((s) => h('li', {},
        h('code', {}, t(s.name)), s.type ? ` (${t(s.type)})` : '', ': ', t(s.reason)))));
  }
  // Imports are not pickled: the checkpoint remembers `import math` / `from x import y` and
  // runs them again on restore.
  if (report.modules?.length) {
    const text = (m) => t(`${m.name} = ${m.module}${m.attr ? `.${m.attr}` : ''}`);
    skipped.append(
      h('h4', {}, checkpoint ? 'Imports (re-imported on restore, not pickled)' : 'Re-imported'),
      h('p', { class: 'modules' }, report.modules.flatMap((m, i) => [i ? ', ' : '',
        h('code', {}, text(m)), m.ok === false ? ` (failed: ${t(m.error)})` : ''])));
  }
  renderReplay(skipped, report, checkpoint, replayed);
  if (report.warnings?.length) {
    skipped.append(h('h4', {}, 'Warnings'), h('ul', {}, report.warnings.map((w) => h('li', {}, t(w)))));
  }
  if (report.problems?.length) {
    skipped.append(
      h('h4', {}, 'Could not be restored'),
      h('ul', {}, report.problems.map((p) => h('li', {}, h('code', {}, t(recordLabel(p.names)) || '—'), ': ', t(p.message)))));
  }
}

// What replay will do (a checkpoint's plan) or did (a restore): recomputed variables and the
// cells, what stays skipped and why, the cells with side effects and what they printed.
function renderReplay(el, report, checkpoint, replayed) {
  if (replayed.length) {
    el.append(
      h('h4', {}, checkpoint ? 'Recomputed on restore (not saved)' : 'Recomputed by re-running recorded cells'),
      h('ul', {}, replayed.map((r) => h('li', {}, h('code', {}, t(r.name)), r.type ? ` (${t(r.type)})` : '', ': ', t(r.message)))));
  }
  const notes = checkpoint ? replayNotes(report.replay) : [];
  if (notes.length) {
    el.append(h('h4', {}, 'Replay notes'),
      h('ul', {}, notes.map(({ name, text }) => h('li', {}, ...(name ? [h('code', {}, t(name)), ': '] : []), t(text)))));
  }
  const outputs = checkpoint ? [] : replayOutputs(report);
  if (outputs.length) {
    el.append(h('h4', {}, 'Output of the re-run cells'),
      ...outputs.map(({ count, output }) => h('pre', { class: 'replay-output', 'aria-label': `Output of cell [${count}], re-run` },
        `[${count}] ${output}`)));
  }
}

// Horizontal bars scaled to the slowest phase; each row also states the number, and the
// container's accessible label lists them all, so the chart is not colour-only information.
function renderChart(el, phases) {
  const max = Math.max(1, ...phases.map((p) => p.ms));
  el.setAttribute('aria-label', 'Where the time went: ' +
    phases.map((p) => `${p.label} ${formatMs(p.ms)}`).join(', '));
  el.replaceChildren(...phases.map((p) => h('div', { class: 'bar-row', 'aria-hidden': 'true' },
    h('span', {}, p.label),
    h('span', { class: 'bar-track' }, h('span', {
      class: 'bar', style: `display:block;width:${Math.max(0.5, (100 * p.ms) / max).toFixed(1)}%`,
    })),
    h('span', { class: 'ms' }, formatMs(p.ms)))));
}
