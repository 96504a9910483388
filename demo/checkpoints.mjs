// The checkpoint panel: take a checkpoint, list what is stored (time, size, variable count),
// restore, delete, export to a file, import from a file. The work happens in the worker (one
// elastic_lite.host call each); this module shows progress and renders the reports.
import { h, formatBytes, formatTime } from './format.mjs';
import {
  showMessage, explainError, explainCheckpoint, explainRestore, explainImport, notStored,
} from './messages.mjs';
import { renderReport } from './report.mjs';
import { confirmForeign } from './trust-dialog.mjs';
import {
  askPersistence, canAskToKeep, declinedText, lostText, markSaved, storageLine, KEEP_LABEL, KEEP_TITLE,
} from '../js/shared/storage-status.mjs';
import { problemLine, shownText } from '../js/shared/report.mjs';

export class CheckpointPanel {
  constructor(root, kernel, { onBusy = () => {} } = {}) {
    this.root = root;
    this.kernel = kernel;
    this.onBusy = onBusy;
    this.items = [];
    this.folder = null; // the folder's name while checkpoints go there (folder.mjs), else null
    const $ = (sel) => root.querySelector(sel);
    this.nameInput = $('#checkpoint-name');
    this.tbody = $('#checkpoint-list tbody');
    this.table = $('#checkpoint-list');
    this.empty = $('#list-empty');
    this.progress = $('#progress');
    this.progressLabel = $('#progress-label');
    this.progressBar = $('#progress-bar');
    this.reportEl = $('#report');
    this.fileInput = $('#import-file');

    $('#checkpoint-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.checkpoint(this.nameInput.value.trim() || null); // no name: the kernel names it
    });
    $('#import-button').addEventListener('click', () => this.fileInput.click());
    $('#refresh-list').addEventListener('click', () => this.refresh());
    this.fileInput.addEventListener('change', () => {
      const file = this.fileInput.files?.[0];
      this.fileInput.value = ''; // choosing the same file again must fire `change` again
      if (file) this.importFile(file);
    });
  }

  async refresh() {
    let report;
    try {
      report = await this.kernel.call('list');
    } catch (err) {
      explainError(err, { action: 'listing checkpoints' });
      return this.items;
    }
    if (!report.ok) {
      showMessage({ level: 'error', key: 'list', title: 'Cannot list the checkpoints', lines: report.problems.map((p) => p.message) });
      return this.items;
    }
    this.items = report.checkpoints;
    this.nameInput.placeholder = report.default_name; // what the kernel calls a checkpoint without a name
    this.restoreChoice = report.restore_choice; // what a restore without a name brings back
    this.empty.textContent = this.folder ? `No checkpoints in the folder “${this.folder}” yet.` : 'No checkpoints stored in this browser yet.';
    this.empty.hidden = this.items.length > 0;
    this.table.hidden = this.items.length === 0;
    this.tbody.replaceChildren(...this.items.map((item) => this.#row(item)));
    this.#storage(report.storage);
    if (this.items.length && !this.folder) void markSaved(); // so a later page can tell if the browser removes them
    return this.items;
  }

  // The browser storage line under the list (persistent or not, used and left), from host.list,
  // and while it is not persistent the button that asks the browser to keep it (a click: some
  // browsers want a user gesture for navigator.storage.persist()).
  #storage(status) {
    let line = this.root.querySelector('#storage-line');
    if (!line) this.empty.after(line = h('p', { id: 'storage-line', class: 'storage-line' }));
    line.textContent = storageLine(status) +
      (this.declined && status?.persistent === false ? declinedText('with Export') : '');
    line.hidden = !line.textContent;
    let keep = this.root.querySelector('#keep-checkpoints');
    if (!keep) {
      line.after(keep = h('button', { type: 'button', id: 'keep-checkpoints', title: KEEP_TITLE, onclick: () => this.#keep() }, KEEP_LABEL));
    }
    keep.hidden = !canAskToKeep(status);
  }

  async #keep() {
    this.declined = (await askPersistence({ again: true })) === false; // kept across refreshes
    await this.refresh();
  }

  #row({ name, meta, lost }) {
    const button = (label, fn, extra = {}) =>
      h('button', { type: 'button', 'aria-label': `${label} checkpoint ${shownText(name)}`, onclick: fn, ...extra }, label);
    return h('tr', { dataset: { name } },
      h('td', {}, h('span', { class: 'name' }, shownText(name)),
        h('time', { class: 'when', datetime: new Date(meta.createdMs).toISOString() }, formatTime(meta.createdMs)),
        lost ? h('span', { class: 'lost' }, lostText(lost)) : null),
      h('td', { class: 'num size' }, formatBytes(meta.size)),
      h('td', { class: 'num vars' }, String(meta.variables ?? '?')),
      h('td', { class: 'actions' },
        button('Restore', () => this.restore(name)),
        button('Export', () => this.exportFile(name)),
        button('Delete', () => this.remove(name), { class: 'danger' })));
  }

  // Runs one worker call with the progress area shown; returns its value or undefined.
  async #withProgress(label, fn) {
    this.progress.hidden = false;
    this.progressLabel.textContent = label;
    this.progressBar.removeAttribute('value'); // indeterminate until the worker says more
    this.onBusy(+1);
    try {
      return await fn((p) => {
        if (p.message) this.progressLabel.textContent = p.message;
        if (Number.isFinite(p.total) && p.total > 0) {
          this.progressBar.max = p.total;
          this.progressBar.value = p.done ?? 0;
        } else {
          this.progressBar.removeAttribute('value');
        }
      });
    } finally {
      this.onBusy(-1);
      this.progress.hidden = true;
    }
  }

  async checkpoint(name) {
    let report = null;
    try {
      report = await this.#withProgress(name ? `Checkpointing “${name}”…` : 'Checkpointing…',
        (onProgress) => this.kernel.call('checkpoint', { name }, { onProgress }));
    } catch (err) {
      explainError(err, { action: 'checkpoint' });
    }
    await this.refresh(); // the list holds what the message names by the time it is said
    if (!report) return;
    if (!report.ok) {
      explainCheckpoint(report, report.name);
      return;
    }
    renderReport(this.reportEl, report);
    void askPersistence().then(() => this.refresh()); // best effort: ask the browser to keep them
    // e.g. a state too large to restore in this browser: told now, before it is relied on
    const warnings = (report.warnings ?? []).map((w) => `Warning: ${shownText(w)}`);
    showMessage({
      level: warnings.length ? 'warn' : 'ok', key: 'op',
      title: `Checkpoint “${report.name}” saved${warnings.length ? ', with a warning' : ''}`,
      lines: [`${report.variables.length} variables stored in ${this.folder ? `the folder “${this.folder}”` : 'this browser'}` +
        (report.replay?.recompute?.length ? `; ${report.replay.recompute.length} to be recomputed on restore by re-running recorded cells` : '') +
        (report.skipped.length ? `; ${report.skipped.length} skipped (see the report for why).` : '.'),
      ...warnings,
      ...(warnings.length ? [] : ['Reload the page, then restore it: the variables come back without re-running the cells.'])],
    });
  }

  // trust/adopt: the person confirmed a foreign checkpoint (and asked to sign it as theirs).
  async restore(name, { trust = false, adopt = false } = {}) {
    const listed = this.items.find((i) => i.name === name);
    try {
      const report = await this.#withProgress(`Restoring “${name}”…`,
        (onProgress) => this.kernel.call('restore', { name, trust, adopt }, { onProgress }));
      const foreign = !trust && report.problems.find((p) => p.code === 'foreign');
      if (foreign) {
        // Nothing of it was unpickled: ask, showing everything it would import.
        const answer = await confirmForeign(name, report);
        if (answer) return this.restore(name, { trust: true, adopt: answer.adopt });
        showMessage({
          level: 'warn', key: 'op', title: `Not restored: “${name}” comes from elsewhere`,
          lines: [foreign.message, 'Nothing of it was loaded into Python.'],
        });
        return report;
      }
      if (report.restored.length || report.ok) renderReport(this.reportEl, report);
      if (report.ok) {
        showMessage({
          level: 'ok', key: 'op',
          title: `Restored “${name}”`,
          lines: [`${report.restored.length} variables are back in Python` +
            (report.recomputed?.length ? `, and ${report.recomputed.length} recomputed by re-running recorded cells` : '') +
            '. Run a cell to use them.'],
        });
      } else {
        explainRestore(report, name, listed);
        if (report.problems.some((p) => p.code === 'not-found')) await this.refresh();
      }
      return report;
    } catch (err) {
      explainError(err, { action: 'restore' });
      return null;
    }
  }

  async remove(name) {
    if (!window.confirm(`Delete checkpoint “${name}”? This cannot be undone.`)) return;
    let report = null;
    try {
      report = await this.kernel.call('delete', { name });
    } catch (err) {
      explainError(err, { action: 'delete' });
    }
    await this.refresh(); // gone from the list by the time the message says so
    if (report?.ok) showMessage({ level: 'ok', key: 'op', title: `Deleted checkpoint “${name}”` });
    else if (report) notStored(`“${name}”`, report.problems);
  }

  async exportFile(name) {
    try {
      const result = await this.kernel.call('export', { name });
      if (!result.ok) {
        if (result.problems.some((p) => p.code === 'not-found')) notStored(`“${name}”`, result.problems);
        else showMessage({ level: 'error', key: 'op', title: `Not exported: “${name}”`, lines: result.problems.map((p) => problemLine('', p)) });
        await this.refresh();
        return;
      }
      const url = URL.createObjectURL(new Blob([result.data], { type: 'application/octet-stream' }));
      const a = h('a', { href: url, download: result.filename, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      // Revoke later: the download starts asynchronously from the object URL.
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      explainError(err, { action: 'export' });
    }
  }

  async importFile(file) {
    const name = file.name.replace(/\.elc$/i, '') || 'imported';
    let report = null;
    try {
      const bytes = new Uint8Array(await file.arrayBuffer());
      report = await this.#withProgress(`Checking “${file.name}”…`,
        () => this.kernel.call('import', { name, fileName: file.name, bytes }, { transfer: [bytes.buffer] }));
    } catch (err) {
      explainError(err, { action: 'import' });
    }
    await this.refresh(); // the list holds what the message names by the time it is said
    if (report) explainImport(report, file.name);
  }
}
