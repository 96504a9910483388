// The confirmation a foreign checkpoint needs before anything of it is unpickled (an import, or
// a checkpoint another browser saved: restore refused it whole, and its report lists what it
// would import). A modal dialog shows that list — every global and module binding, marked
// when it runs code, is unknown or rebuilds notebook code — and asks. Focus starts on
// "Cancel", so Enter or a key meant for a cell never confirms; Escape cancels too.
import { h } from './format.mjs';
import { foreignLine, importRows, shownText, variableNames } from '../js/shared/report.mjs';

/**
 * Asks whether to restore foreign checkpoint `name`; `report` is the refused restore's report.
 * Resolves to null (cancelled) or { adopt } (restore it; adopt: sign it as this browser's own,
 * so it is not asked about again).
 */
export function confirmForeign(name, report) {
  const rows = importRows(report.trust);
  const marked = rows.filter((r) => r.mark);
  // names, modules and reasons come from the file: shown as text, control characters escaped
  const vars = variableNames(report.problems.find((p) => p.code === 'foreign')?.names).map(shownText);
  const dialog = h('dialog', { id: 'trust-dialog', class: 'trust-dialog', 'aria-labelledby': 'trust-title' });
  const adopt = h('input', { type: 'checkbox', id: 'trust-adopt' });
  const cancel = h('button', { type: 'button', class: 'primary', autofocus: true }, 'Cancel');
  const confirm = h('button', { type: 'button', class: 'danger' }, 'Restore anyway');
  dialog.append(
    h('h2', { id: 'trust-title' }, `Restore “${shownText(name)}”? It comes from elsewhere`),
    h('p', {}, foreignLine(report.trust)),
    h('p', {}, `Restoring it would bring back ${vars.length} variables (${vars.slice(0, 8).join(', ')}` +
      `${vars.length > 8 ? ', …' : ''}) and import ${rows.length} globals` +
      (marked.length ? `, ${marked.length} of them marked below.` : ', none of them marked.')),
    h('div', { class: 'table-scroll' }, h('table', { class: 'trust-imports' },
      h('caption', {}, 'What restoring it would import'),
      h('thead', {}, h('tr', {}, ...['Check', 'Import', 'Used by', 'Why'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...rows.map((r) => h('tr', { class: r.danger ? `danger-${r.danger}` : '' },
        h('td', {}, r.mark || 'plain'),
        h('td', {}, h('code', {}, shownText(r.target)),
          r.written.length ? h('div', { class: 'written' }, `written as ${shownText(r.written.join(', '))}`) : null),
        h('td', {}, shownText(r.usedBy)),
        h('td', {}, shownText(r.why))))))),
    h('p', { class: 'warning' }, 'A checkpoint is a pickle: loading it can run any code it holds, and functions it ' +
      'rebuilds run whatever code they contain. Restore it only if you trust where it comes from.'),
    h('p', {}, h('label', { for: 'trust-adopt' }, adopt, ' Trust it from now on (sign it as this browser’s own)')),
    h('div', { class: 'actions' }, cancel, confirm),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    const close = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    cancel.addEventListener('click', () => close(null));
    confirm.addEventListener('click', () => close({ adopt: adopt.checked }));
    dialog.addEventListener('cancel', (ev) => { ev.preventDefault(); close(null); });
    dialog.showModal();
    cancel.focus();
  });
}
