// The "last operation" view: after a checkpoint or a restore, one row per variable (name, type,
// serializer, size, time), a bar chart of where the time went, and the skipped variables with
// the reason. The report shape is made by demo/worker-checkpoints.mjs:
//   { op, name, size, totalMs, phases: [{label, ms}], variables: [{name, type, serializer,
//     size, ms}], skipped: [{name, type, reason}], failed: [{names, error}], modules: [{name,
//     module, attr, ok?, error?}], warnings?: [text] }
import { h, formatBytes, formatMs } from './format.mjs';

export function renderReport(root, report) {
  root.hidden = false;
  const $ = (sel) => root.querySelector(sel);
  const verb = report.op === 'checkpoint' ? 'Checkpoint' : 'Restore';
  const n = report.variables.length;
  $('#report-title').textContent = `${verb} “${report.name}”`;
  $('#report-summary').textContent = report.op === 'checkpoint'
    ? `Saved ${n} variable${n === 1 ? '' : 's'} (${formatBytes(report.size)}) in ${formatMs(report.totalMs)}` +
      (report.skipped.length ? `; ${report.skipped.length} skipped.` : '.')
    : `Restored ${n} variable${n === 1 ? '' : 's'} from ${formatBytes(report.size)} in ${formatMs(report.totalMs)}` +
      (report.failed.length ? `; ${report.failed.reduce((a, f) => a + f.names.length, 0)} could not be restored.` : '.');

  renderChart($('#report-chart'), report.phases);

  $('#report-vars tbody').replaceChildren(...report.variables.map((v) => h('tr', {},
    h('td', {}, v.name),
    h('td', {}, v.type ?? ''),
    h('td', { class: `serializer-${v.serializer}` }, v.serializer ?? ''),
    // Variables that share objects are written as one record: its size is on the first row.
    h('td', { class: 'num' }, Number.isFinite(v.size) ? formatBytes(v.size)
      : h('span', { class: 'same', title: 'Saved in the same record as the variable above' }, '↑ same')),
    h('td', { class: 'num' }, Number.isFinite(v.ms) ? formatMs(v.ms) : '—'))));

  const skipped = $('#report-skipped');
  skipped.replaceChildren();
  if (report.skipped.length) {
    skipped.append(
      h('h4', {}, report.op === 'checkpoint' ? 'Skipped (not saved)' : 'Not in this checkpoint (skipped when it was taken)'),
      h('ul', {}, report.skipped.map((s) => h('li', {},
        h('code', {}, s.name), s.type ? ` (${s.type})` : '', ': ', s.reason))));
  }
  // Imports are not pickled: the checkpoint remembers `import math` / `from x import y` and
  // runs them again on restore.
  if (report.modules?.length) {
    const text = (m) => `${m.name} = ${m.module}${m.attr ? `.${m.attr}` : ''}`;
    skipped.append(
      h('h4', {}, report.op === 'checkpoint' ? 'Imports (re-imported on restore, not pickled)' : 'Re-imported'),
      h('p', { class: 'modules' }, report.modules.flatMap((m, i) => [i ? ', ' : '',
        h('code', {}, text(m)), m.ok === false ? ` (failed: ${m.error})` : ''])));
  }
  if (report.warnings?.length) {
    skipped.append(h('h4', {}, 'Warnings'), h('ul', {}, report.warnings.map((w) => h('li', {}, w))));
  }
  if (report.failed?.length) {
    skipped.append(
      h('h4', {}, 'Could not be restored'),
      h('ul', {}, report.failed.map((f) => h('li', {}, h('code', {}, f.names.join(', ')), ': ', f.error))));
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
