// The confirmation a foreign checkpoint needs before anything of it is unpickled (an import,
// or a checkpoint another browser saved: the kernel's restore refused it whole and reported
// what it would import). JupyterLab's own dialog shows that list — every global and module
// binding, marked when it runs code, is unknown or rebuilds notebook code — with Cancel as the
// default button: Enter, or a key meant for a cell, never confirms.
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { foreignLine, importRows, ITrust, shownText, variableNames } from '../../shared/report.mjs';

/** null (cancelled) or { adopt } (restore it; adopt: sign it as this browser's own). */
export async function confirmForeign(name: string, trust: ITrust | null | undefined, names: string[]): Promise<{ adopt: boolean } | null> {
  const rows = importRows(trust);
  const marked = rows.filter(r => r.mark);
  // names, modules and reasons come from the file: shown, never interpreted (control
  // characters escaped; the DOM gets them as text)
  const vars = variableNames(names).map(shownText);
  const body = new Widget();
  body.addClass('jp-ElasticLite-trust');
  const p = (text: string, className = '') => Object.assign(document.createElement('p'), { textContent: text, className });
  const table = document.createElement('table');
  table.className = 'jp-ElasticLite-report jp-ElasticLite-trustImports';
  const head = table.insertRow();
  for (const t of ['check', 'import', 'used by', 'why']) head.append(Object.assign(document.createElement('th'), { textContent: t }));
  for (const r of rows) {
    const tr = table.insertRow();
    if (r.danger === 'runs-code' || r.danger === 'unknown') tr.className = 'jp-ElasticLite-bad';
    const target = r.written.length ? `${r.target} (written ${r.written.join(', ')})` : r.target;
    for (const text of [r.mark || 'plain', target, r.usedBy, r.why]) tr.insertCell().textContent = shownText(text);
  }
  body.node.append(
    p(foreignLine(trust)),
    p(`Restoring it would bring back ${vars.length} variables (${vars.slice(0, 8).join(', ')}${vars.length > 8 ? ', …' : ''}) ` +
      `and import ${rows.length} globals${marked.length ? `, ${marked.length} of them marked below` : ', none of them marked'}.`),
    table,
    p('A checkpoint is a pickle: loading it can run any code it holds, and functions it rebuilds run whatever code ' +
      'they contain. Restore it only if you trust where it comes from.', 'jp-ElasticLite-warning')
  );
  const result = await showDialog({
    title: `Restore “${shownText(name)}”? It comes from elsewhere`,
    body,
    buttons: [Dialog.cancelButton({ label: 'Cancel' }), Dialog.warnButton({ label: 'Restore anyway' })],
    defaultButton: 0,
    checkbox: { label: 'Trust it from now on (sign it as this browser’s own)', checked: false }
  });
  return result.button.accept ? { adopt: !!result.isChecked } : null;
}
