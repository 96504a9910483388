// The sidebar panel: the current notebook's checkpoints — its history: one after each cell
// when auto-checkpoint is on, each showing the cell it followed — (time, cell, size,
// variables) with restore, inspect, export and delete, plus checkpoint and import. Plain DOM: the list
// is short and re-rendered whole when anything changes.
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import {
  DANGER_MARKS,
  fmtBytes,
  foreignLine,
  problemLine,
  problemsOf,
  recordLabel,
  shownText
} from '../../shared/report.mjs';
import { ElasticLiteController, IListed, IListing, IReport } from './controller';
import { pageStore } from './folder';
import { folderSection } from './folder-ui';
import { formatTime } from './format';
import { lostSection, markLost, storageSection } from './storage-status';

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string; title?: string } = {},
  children: (Node | string)[] = []
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className) {
    node.className = props.className;
  }
  if (props.text !== undefined) {
    node.textContent = props.text;
  }
  if (props.title) {
    node.title = props.title;
  }
  for (const c of children) {
    node.append(c);
  }
  return node;
}

function button(label: string, onClick: () => void, title = ''): HTMLButtonElement {
  const b = el('button', { className: 'jp-ElasticLite-button jp-mod-styled', text: label, title });
  b.addEventListener('click', onClick);
  return b;
}

export class CheckpointSidebar extends Widget {
  constructor(
    private readonly controller: ElasticLiteController,
    private readonly tracker: INotebookTracker
  ) {
    super();
    this.id = 'elastic-lite-sidebar';
    this.addClass('jp-ElasticLite-sidebar');
    this.title.caption = 'Elastic Lite checkpoints';
    this._fileInput = el('input');
    this._fileInput.type = 'file';
    this._fileInput.accept = '.elc,application/octet-stream';
    this._fileInput.className = 'jp-ElasticLite-fileInput';
    this._fileInput.addEventListener('change', () => void this._import());
    this.node.append(this._fileInput);
    this._body = el('div', { className: 'jp-ElasticLite-body' });
    this.node.append(this._body);
    tracker.currentChanged.connect(() => void this.refresh());
    // a cell may have run %checkpoint or elastic_lite.checkpoint(): list what it saved
    NotebookActions.executed.connect((_, { notebook }) => {
      if (this.isVisible && notebook === this._panel?.content) {
        void this.refresh();
      }
    });
    controller.changed.connect(() => void this.refresh());
    void this.refresh();
  }

  private get _panel(): NotebookPanel | null {
    return this.tracker.currentWidget;
  }

  async refresh(): Promise<void> {
    const token = ++this._renderToken;
    const panel = this._panel;
    let listing: IListing = { entries: [], unattached: [], choice: null, by: 'page' };
    let shared: string | null = null;
    let error = '';
    if (panel) {
      try {
        // from the page's store (Pyodide) or through a desktop kernel (controller.listing)
        listing = await this.controller.listing(panel);
        shared = await this.controller.sharedWith(panel);
      } catch (e) {
        error = (e as Error).message;
      }
    }
    if (token !== this._renderToken) {
      return; // a newer refresh is under way
    }
    this._render(panel, listing, error, shared);
  }

  private _render(
    panel: NotebookPanel | null,
    { entries, unattached: others, choice, by, store }: IListing,
    error: string,
    shared: string | null = null
  ): void {
    const body = this._body;
    body.replaceChildren();
    body.append(el('h2', { className: 'jp-ElasticLite-title', text: 'Elastic Lite' }));
    if (!panel) {
      body.append(el('p', { text: 'Open a notebook to see its checkpoints.' }));
      return;
    }
    const notebook = panel.context.path;
    body.append(el('div', { className: 'jp-ElasticLite-notebook', text: shownText(notebook) }));
    if (store) {
      // a desktop kernel's store: a folder on the server's machine, listed through the kernel
      body.append(el('div', { className: 'jp-ElasticLite-where', text: `Kept by the kernel in ${shownText(store)}` }));
    }
    body.append(
      el('div', { className: 'jp-ElasticLite-toolbar' }, [
        button('Checkpoint', () => void this._run(() => this.controller.checkpoint(panel)), 'Checkpoint the kernel now'),
        button('Import…', () => this._fileInput.click(), 'Import a checkpoint file (.elc) for this notebook'),
        // another tab or a kernel cell may have changed the store: IndexedDB has no change events
        button('Refresh', () => void this.refresh(), 'List the checkpoints again')
      ])
    );
    body.append(el('div', { className: 'jp-ElasticLite-status', text: this.controller.status }));
    if (this.controller.historyStatus) {
      body.append(el('div', { className: 'jp-ElasticLite-historyStatus', text: this.controller.historyStatus }));
    }
    if (by === 'page') {
      // (not for a desktop kernel: its store is its own folder, not this browser's)
      // persistent or not, used and left; lost checkpoints (storage-status.ts)
      body.append(storageSection(entries, () => void this.refresh(), () => pageStore(this.controller.key(panel))));
      // where this notebook's checkpoints go: the browser or a folder on disk (folder-ui.ts)
      body.append(folderSection(panel, this.controller, () => void this.refresh()));
    } else {
      // a desktop kernel's folder: record files deleted by hand or by a sync tool; the kernel
      // lists those checkpoints as lost and deletes them
      body.append(lostSection(entries, async names => {
        for (const name of names) {
          await this.controller.delete(panel, name);
        }
      }, () => void this.refresh()));
    }
    if (error) {
      body.append(el('p', { className: 'jp-ElasticLite-error', text: error }));
    }
    if (shared) {
      // a copy (or the original of one): the same id in both files, so one history
      body.append(
        el('div', { className: 'jp-ElasticLite-shared' }, [
          el('p', {
            text:
              `These checkpoints are also those of ${shownText(shared)}: both notebooks carry the same ` +
              'Elastic Lite id (one is a copy of the other), so they share one history.'
          }),
          button('Start its own history', () => void this._run(() => this.controller.startOwnHistory(panel)),
            'Give this notebook a new id: its checkpoints from now on are its own')
        ])
      );
    }
    if (!entries.length) {
      body.append(el('p', { className: 'jp-ElasticLite-empty', text: 'No checkpoint of this notebook yet.' }));
    } else {
      const list = el('ul', { className: 'jp-ElasticLite-list' });
      // what the toolbar's Restore brings back: not a point of this kernel itself
      for (const entry of entries) {
        list.append(this._item(panel, entry, entry.name === choice));
      }
      body.append(list);
    }
    if (others.length) {
      // checkpoints with no notebook (a kernel that was never told its notebook): apart
      body.append(el('h3', { className: 'jp-ElasticLite-subtitle', text: 'Not tied to a notebook' }));
      const list = el('ul', { className: 'jp-ElasticLite-list jp-ElasticLite-unattached' });
      for (const entry of others) {
        list.append(this._item(panel, entry));
      }
      body.append(list);
    }
  }

  private _item(panel: NotebookPanel, entry: IListed, isChoice = false): HTMLElement {
    const meta = entry.meta || {};
    // names and the cell's first line come from the kernel or from an imported file: shown
    // with their control characters escaped, as text
    const names = (Array.isArray(meta.names) ? meta.names : []).map(shownText);
    const vars = meta.variables ?? names.length;
    const point = entry.label;
    const li = el('li', {
      className: 'jp-ElasticLite-item' + (meta.auto ? ' jp-ElasticLite-auto' : ''),
      title: shownText(entry.name)
    });
    li.dataset.name = entry.name;
    markLost(li, entry);
    li.append(el('div', { className: 'jp-ElasticLite-itemTime', text: formatTime(meta.createdMs) }));
    if (isChoice) {
      li.classList.add('jp-ElasticLite-restoreChoice');
      li.append(
        el('div', {
          className: 'jp-ElasticLite-itemChoice',
          text: 'what Restore brings back',
          title: "The toolbar's Restore (and the restore offer) bring back this one: the last state you saved or lost, never a point this kernel took itself"
        })
      );
    }
    if (point) {
      // the history: the cell this state is the result of
      li.append(el('div', { className: 'jp-ElasticLite-itemCell', text: `after ${shownText(point)}` }));
    }
    li.append(
      el('div', {
        className: 'jp-ElasticLite-itemMeta',
        text: `${fmtBytes(meta.size)} · ${vars} variables${names.length ? ': ' + names.join(', ') : ''}`
      })
    );
    if (typeof meta.restoreWarning === 'string') {
      // the kernel kept the heap warning it gave when this was saved: say it where it is chosen
      li.append(el('div', { className: 'jp-ElasticLite-itemWarning', text: `Warning: ${shownText(meta.restoreWarning)}` }));
    }
    const details = el('div', { className: 'jp-ElasticLite-inspect' });
    li.append(
      el('div', { className: 'jp-ElasticLite-itemActions' }, [
        button('Restore', () => void this._run(() => this.controller.restore(panel, entry.name))),
        button('Inspect', () => void this._inspect(panel, entry.name, details)),
        button('Export', () => void this._run(() => this.controller.export(panel, entry.name))),
        button('Delete', () => void this._run(() => this.controller.delete(panel, entry.name)))
      ])
    );
    li.append(details);
    return li;
  }

  private async _inspect(panel: NotebookPanel, name: string, target: HTMLElement): Promise<void> {
    if (target.childElementCount) {
      target.replaceChildren(); // a second click hides the report
      return;
    }
    try {
      renderReport(await this.controller.inspect(panel, name), name, target);
    } catch (e) {
      target.replaceChildren(el('p', { className: 'jp-ElasticLite-error', text: (e as Error).message }));
    }
  }

  private async _import(): Promise<void> {
    const panel = this._panel;
    const file = this._fileInput.files?.[0];
    this._fileInput.value = '';
    if (!panel || !file) {
      return;
    }
    await this._run(async () => this.controller.importBytes(panel, file.name, new Uint8Array(await file.arrayBuffer())));
  }

  // Errors are already in the status line (the controller sets it); keep them out of the console.
  private async _run(action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
    } catch (e) {
      console.warn('Elastic Lite:', (e as Error).message);
    }
    await this.refresh();
  }

  private _body: HTMLDivElement;
  private _fileInput: HTMLInputElement;
  private _renderToken = 0;
}

/**
 * host.inspect's report as a table: one row per record, with what it would import (each
 * import as it really is, marked when it runs code, is unknown or rebuilds notebook code),
 * then the problems in the host's words (damaged records, records restore would refuse) and,
 * for a foreign checkpoint, that restoring it needs a confirmation.
 */
export function renderReport(report: IReport, name: string, target: HTMLElement): void {
  const refused = new Map(problemsOf(report, 'refused').map(p => [p.record, p.calls]));
  const rows = (report.records || []).map((r: any) => {
    // what unpickling this record would import, once each, one per line
    const imports = [...new Set(((r.imports || []) as any[]).map(i => `${DANGER_MARKS[i.danger] ? `${DANGER_MARKS[i.danger]}: ` : ''}${shownText(i.target)}`))];
    const calls = refused.get(r.index);
    return el('tr', { className: r.ok && !calls ? '' : 'jp-ElasticLite-bad' }, [
      el('td', {
        text: r.manifest ? '(manifest)' : shownText(recordLabel(r.names)),
        title: r.manifest ? 'modules to re-import, skipped variables, types' : ''
      }),
      el('td', { text: shownText(r.serializer ?? '') }),
      el('td', { text: fmtBytes(r.length) }),
      el('td', { text: !r.ok ? 'damaged' : imports.join('\n') || '—' })
    ]);
  });
  const head = el('tr', {}, ['variables', 'serializer', 'size', 'would import'].map(t => el('th', { text: t })));
  const h = report.header || {};
  const summary = report.whole
    ? shownText(`${h.producer ?? ''} · Python ${h.python ?? '?'} · ${report.records.length} records, all valid`)
    : 'damaged';
  const foreign = foreignLine(report.trust);
  target.replaceChildren(
    el('div', { className: 'jp-ElasticLite-reportSummary', text: summary }),
    el('table', { className: 'jp-ElasticLite-report' }, [head, ...rows]),
    ...(report.problems || []).map(p => el('p', { className: 'jp-ElasticLite-problem', text: problemLine(name, p) })),
    ...(foreign ? [el('p', { className: 'jp-ElasticLite-problem', text: foreign })] : [])
  );
}
