// What the commands, the toolbar buttons and the sidebar do. Everything that decides something
// — checkpoint, restore, import (validated before it is stored), inspect — is one call of
// elastic_lite.host in the notebook's kernel (python.ts); the extension shows its report, in
// the host's own words (js/shared/report.mjs problemLine: the words the CLI and the demo print).
// Listing, deleting and exporting: with a Pyodide kernel, plain reads and deletes of the store
// this origin shares with the kernel, done in the page so the sidebar works while the kernel
// is absent or runs a cell (JupyterLite's kernel handles one message at a time: host.list would
// wait for the cell); labels and the restore choice by the kernel's rules in js/shared/report.mjs
// (listReport, golden vectors), given the names of the points the kernel took for this page. With
// a desktop CPython kernel (ipykernel) the store is a folder on the server's machine: host.list /
// delete / export in the kernel, whose reports the sidebar shows as they come.
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { ISignal, Signal } from '@lumino/signaling';

import {
  exportFileName,
  fmtBytes,
  IProblem,
  ITrust,
  listReport,
  problemLine,
  problemsOf,
  restoredNothing,
  shownText
} from '../../shared/report.mjs';
import { formatTime } from './format';
import { NotebookIdentity } from './identity';
import { IKernelResult, runInKernel } from './kernel';
import { bindKernelStore, pageStore } from './folder';
import { getStore, IRetention, IStoreEntry } from './modules';
import { exportCode, hostCode, listCode, setNotebookCode } from './python';
import { confirmForeign } from './trust';

/** A report of elastic_lite.host, as the kernel printed it. */
export type IReport = IKernelResult & { problems?: IProblem[]; trust?: ITrust };

/** A checkpoint as the sidebar shows it: the store's entry and its point label ("[7] df = load()"). */
export interface IListed extends IStoreEntry {
  label: string;
}

/** A notebook's checkpoints (newest first), those tied to no notebook, and what a Restore
 * without a name brings back (its name, or null); `by`: who listed them; `store`: the folder a
 * desktop kernel keeps them in. */
export interface IListing {
  entries: IListed[];
  unattached: IListed[];
  choice: string | null;
  by: 'page' | 'kernel';
  store?: string | null;
}

export class ElasticLiteController {
  /** identity: which notebook a checkpoint belongs to (identity.ts). */
  constructor(readonly identity: NotebookIdentity) {}

  /** Emitted when the checkpoints of a notebook changed (payload: the notebook path). */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /** The last thing that happened, for the sidebar's status line. */
  get status(): string {
    return this._status;
  }

  // Every status names things from the kernel or a file (variables, checkpoint names, cells):
  // control characters are shown escaped (a status is one line).
  private _setStatus(text: string): void {
    this._status = shownText(text);
    this._changed.emit('');
  }

  /** The last automatic checkpoint (the history), apart from `status`: what a person asked
   * for is never overwritten by a checkpoint that happened on its own meanwhile. */
  get historyStatus(): string {
    return this._historyStatus;
  }

  private _setHistoryStatus(text: string): void {
    this._historyStatus = shownText(text);
    this._changed.emit('');
  }

  /** The notebook's key in the store and the kernel: its id (identity.ts). */
  key(panel: NotebookPanel): string {
    return this.identity.key(panel);
  }

  /**
   * The panel's notebook's checkpoints, newest first: those of its id, and those made before
   * notebooks had ids (`meta.notebook`: the path) at its path; the checkpoints tied to no
   * notebook; the restore choice. host.list's reports for the id, the path and every
   * checkpoint: through the kernel when it keeps its own store (desktop CPython), else made in
   * the page from this page's IndexedDB or folder (listReport).
   */
  async listing(panel: NotebookPanel): Promise<IListing> {
    await panel.context.ready; // the id is in the notebook's metadata: read it once loaded
    const key = this.key(panel);
    const keys = key === panel.context.path ? [key] : [key, panel.context.path];
    const byKernel = await this.kernelKeepsStore(panel);
    const result: IKernelResult = byKernel
      ? await runInKernel(await this._kernel(panel), listCode([...keys, null]))
      : { ok: true, lists: await this._pageLists(panel, [...keys, null]) };
    const lists = (result.lists ?? []) as IReport[];
    const failed = result.ok ? lists.find(r => !r.ok) : result;
    if (failed) {
      const why = (failed.problems ?? []).map((p: IProblem) => problemLine('', p)).join('; ') || failed.error || 'unknown error';
      throw new Error(`Cannot list the kernel's checkpoints: ${why}`);
    }
    const listed = (r: IReport) => (r.checkpoints ?? []) as IListed[];
    const entries = mergeNewestFirst(lists.slice(0, keys.length).map(listed));
    const unattached = listed(lists[keys.length]).filter(e => e.meta?.notebook === null || e.meta?.notebook === undefined);
    // the id's choice, unless only the path (checkpoints from before ids) has checkpoints
    const choice = lists.slice(0, keys.length).map(r => r.restore_choice as string | null).find(c => c) ?? null;
    return { entries, unattached, choice, by: byKernel ? 'kernel' : 'page', store: result.store ?? null };
  }

  /** host.list's reports made in the page (listReport), one per notebook key (null: all). */
  private async _pageLists(panel: NotebookPanel, keys: (string | null)[]): Promise<IReport[]> {
    const store = await pageStore(this.key(panel)); // the notebook's folder or IndexedDB
    const own = [...(this._ownPoints.get(panel) ?? [])];
    return Promise.all(keys.map(async notebook =>
      listReport(await store.list(notebook === null ? undefined : { notebook }), { notebook, own })));
  }

  /**
   * Whether the panel's kernel keeps its checkpoints in a store of its own (a desktop CPython
   * kernel: a folder on the server's machine), which the page cannot read: the kernel lists,
   * deletes and exports them, and takes its automatic points itself. False for a Pyodide
   * kernel (it shares this page's IndexedDB) and while the kernel has not said.
   */
  async kernelKeepsStore(panel: NotebookPanel): Promise<boolean> {
    await this._binding.get(panel);
    const kernel = panel.sessionContext.session?.kernel;
    return !!kernel && this._host.get(panel) === `${kernel.id} cpython`;
  }

  /** Another notebook file carrying the same id (a copy, or its original), or null. */
  async sharedWith(panel: NotebookPanel): Promise<string | null> {
    await panel.context.ready;
    return this.identity.sharedWith(panel);
  }

  /** A copy starts a history of its own (a new id), told to its kernel. */
  async startOwnHistory(panel: NotebookPanel): Promise<void> {
    this.identity.fork(panel);
    await this.bindNotebook(panel);
    this._setStatus(`${panel.context.path} has a history of its own from now on (save the notebook to keep it).`);
  }

  /**
   * What a restore without a name brings back into the panel's kernel (the offer shows it;
   * the toolbar's Restore lets the kernel pick by the same rule): never an automatic point of
   * the kernel itself — after a restart, the point its first cell left — nor an empty one;
   * the state that was lost. (Checkpoints tied to no notebook — %checkpoint in a kernel never
   * told its notebook — are in `listing(panel).unattached`.)
   */
  async toRestore(panel: NotebookPanel): Promise<IListed | null> {
    const { entries, choice } = await this.listing(panel);
    return entries.find(e => e.name === choice) ?? null;
  }

  /** The panel has a new kernel (a page load, a restart, a kernel change): its own
   * automatic points are those it takes from now on (by the names it gives them). */
  kernelStarted(panel: NotebookPanel): void {
    this._ownPoints.set(panel, new Set());
  }

  /** One host operation in the panel's kernel; its report. */
  private async _call(panel: NotebookPanel, op: string, kwargs: Record<string, unknown>, data?: Uint8Array): Promise<IReport> {
    return runInKernel(await this._kernel(panel), hostCode(op, kwargs, data));
  }

  /**
   * The panel's kernel, once it is there: an action pressed while the notebook's session or
   * kernel is still starting waits for it (and for the kernel to be told its notebook) instead
   * of failing; the kernel itself runs the request once it has started.
   */
  private async _kernel(panel: NotebookPanel) {
    const ctx = panel.sessionContext;
    if (!ctx.session?.kernel && !ctx.isDisposed) {
      await ctx.ready;
    }
    const kernel = ctx.session?.kernel;
    if (!kernel) {
      throw new Error('This notebook has no running kernel: start one, then try again.');
    }
    await this._binding.get(panel); // set_notebook first: the action is this notebook's
    return kernel;
  }

  /** Sets the status to "WHAT failed: ..." with the report's problems, and throws it. */
  private _fail(what: string, label: string, report: IReport): never {
    const why = report.problems?.length
      ? report.problems.map(p => problemLine(label, p)).join('; ')
      : report.error || 'unknown error';
    this._setStatus(`${what} failed: ${why}`);
    throw new Error(this._status);
  }

  /** Whether the panel's current kernel has been told the panel's current path. */
  isBound(panel: NotebookPanel): boolean {
    const kernel = panel.sessionContext.session?.kernel;
    return !!kernel && this._bound.get(panel) === `${kernel.id} ${this.key(panel)}`;
  }

  /**
   * Tell the notebook's (fresh) kernel which notebook it serves: `elastic_lite.set_notebook`,
   * silently, importing (or installing) elastic_lite first. Only for Python kernels; failures
   * are logged, not shown: the notebook works without it, `%checkpoint` is then unattached.
   */
  bindNotebook(panel: NotebookPanel): Promise<boolean> {
    const binding = this._bind(panel);
    this._binding.set(panel, binding);
    return binding;
  }

  private async _bind(panel: NotebookPanel): Promise<boolean> {
    await panel.context.ready; // the notebook's id is in its metadata: told once it is loaded
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || panel.isDisposed) {
      return false;
    }
    try {
      const info = await kernel.info;
      if (info.language_info?.name !== 'python') {
        return false;
      }
      const key = this.key(panel);
      const result = await runInKernel(kernel, setNotebookCode(key, panel.context.path)); // the magics show the path
      if (result.ok && result.host === 'pyodide') {
        await bindKernelStore(kernel, key); // the notebook's folder, when it is its store (folder.ts)
      }
      if (result.ok) {
        this._bound.set(panel, `${kernel.id} ${key}`);
        this._host.set(panel, `${kernel.id} ${result.host}`);
        this._changed.emit(panel.context.path); // the listing may now come from the kernel
      }
      if (!result.ok) {
        console.warn(`Elastic Lite: cannot tie the kernel to ${panel.context.path}:`, result.error);
      }
      return result.ok;
    } catch (e) {
      console.warn(`Elastic Lite: cannot tie the kernel to ${panel.context.path}:`, e);
      return false;
    }
  }

  /**
   * The automatic checkpoint after a cell (a point of the notebook's history): named by the
   * kernel after the cell; groups unchanged since the kernel's previous checkpoint are not
   * written again. Returns the report (`off`: the kernel has them turned off).
   */
  async autoCheckpoint(panel: NotebookPanel, cell: ICellPoint): Promise<IReport> {
    const notebook = panel.context.path;
    const key = this.identity.adopt(panel);
    if (await this.kernelKeepsStore(panel)) {
      // a desktop kernel took its point itself (elastic_lite's post_run_cell): not a second one
      return { ok: true, byKernel: true };
    }
    if (this._autoRunning.has(panel)) {
      this._autoAgain.set(panel, cell); // one at a time per notebook: the newest waits
      return { ok: true, queued: true };
    }
    this._autoRunning.add(panel);
    try {
      // the kernel names it after the notebook's path ("<path> [<count>] <time>"), under its id
      const report = await this._call(panel, 'checkpoint', { notebook: key, cell, auto: true, replay: this.options.replay !== false });
      const after = `After ${report.label || 'the cell'}`;
      if (report.off) {
        this._setHistoryStatus('Automatic checkpoints are off in this kernel (%autocheckpoint on).');
      } else if (!report.ok) {
        const why = (report.problems ?? []).map(p => problemLine('', p)).join('; ') || report.error || 'unknown error';
        this._setHistoryStatus(`${after}: not saved: ${why}`);
        throw new Error(`automatic checkpoint failed: ${why}`);
      } else {
        this._ownPoints.get(panel)?.add(report.name);
        this._setHistoryStatus(`${after}: saved ${describe(report)}${reuseNote(report)}`);
        this._changed.emit(notebook);
      }
      return report;
    } finally {
      this._autoRunning.delete(panel);
      const next = this._autoAgain.get(panel);
      if (next) {
        this._autoAgain.delete(panel);
        void this.autoCheckpoint(panel, next).catch(e =>
          console.warn('Elastic Lite auto-checkpoint:', (e as Error).message)
        );
      }
    }
  }

  /** The retention of every notebook's checkpoints in this origin's store (the settings). */
  async setRetention(policy: IRetention | null): Promise<void> {
    try {
      const store = await getStore();
      await store.setRetention(null, policy);
    } catch (e) {
      console.warn('Elastic Lite: cannot set the history retention:', e);
    }
  }

  /** Checkpoint the notebook's kernel. Returns the name the kernel gave it ("<path> <time>"). */
  async checkpoint(panel: NotebookPanel): Promise<string> {
    const notebook = panel.context.path;
    const key = this.identity.adopt(panel);
    this._setStatus(`Checkpointing ${notebook}…`);
    const report = await this._call(panel, 'checkpoint', { notebook: key, replay: this.options.replay !== false });
    if (!report.ok) {
      this._fail('Checkpoint', report.name ?? notebook, report);
    }
    this._setStatus(`Checkpoint saved: ${describe(report)}`);
    this._changed.emit(notebook);
    return report.name;
  }

  /**
   * Restore a checkpoint (default: what a restore without a name brings back) into the panel's
   * kernel. Damaged or refused records are listed in the status; only a restore that brought
   * nothing back fails. A foreign one (an import, another browser's) comes back refused whole,
   * with what it would import: the person is asked (trust.ts), and only a confirmation restores
   * it (`adopt`: signed as this browser's own from then on).
   */
  async restore(panel: NotebookPanel, name?: string, { trust = false, adopt = false } = {}): Promise<IReport> {
    const notebook = panel.context.path;
    this._setStatus(`Restoring ${name ?? `the last checkpoint of ${notebook}`}…`);
    const replay = this.options.replay !== false;
    if (!name) {
      // the kernel picks among the notebook's id; one made before ids (its path) by name
      const choice = await this.toRestore(panel);
      if (choice && choice.meta?.notebook !== this.key(panel)) {
        name = choice.name;
      }
    }
    const report = await this._call(panel, 'restore', { ...(name ? { name } : { notebook: this.key(panel) }), replay, trust, adopt });
    const label = report.name ?? name ?? notebook;
    const foreign = trust ? undefined : report.problems?.find(p => p.code === 'foreign');
    if (foreign) {
      const answer = await confirmForeign(label, report.trust, foreign.names);
      if (answer) {
        return this.restore(panel, label, { trust: true, adopt: answer.adopt });
      }
      const why = `Not restored: ${problemLine(label, foreign)}`;
      this._setStatus(why);
      throw new Error(why);
    }
    if (report.error || restoredNothing(report)) {
      this._fail('Restore', label, report);
    }
    this._setStatus(`Restored ${describe(report, label)}`);
    return report;
  }

  async delete(panel: NotebookPanel, name: string): Promise<void> {
    if (await this.kernelKeepsStore(panel)) {
      const report = await this._call(panel, 'delete', { name });
      if (!report.ok) {
        this._fail('Delete', name, report);
      }
    } else {
      const store = await pageStore(this.key(panel)); // the notebook's folder or IndexedDB
      await store.delete(name);
    }
    this._setStatus(`Deleted ${name}`);
    this._changed.emit(panel.context.path);
  }

  /** What a stored checkpoint holds, from the validator (nothing is unpickled): host.inspect. */
  async inspect(panel: NotebookPanel, name: string): Promise<IReport> {
    const report = await this._call(panel, 'inspect', { name });
    if (report.error) {
      throw new Error(`Inspect failed: ${report.error}`);
    }
    return report;
  }

  /** Download a checkpoint as a file (the store's bytes as they are; from a desktop kernel's
   * store: host.export, which refuses a checkpoint whose records do not match their keys). */
  async export(panel: NotebookPanel, name: string): Promise<void> {
    let bytes: Uint8Array;
    if (await this.kernelKeepsStore(panel)) {
      const report = await runInKernel(await this._kernel(panel), exportCode(name));
      if (!report.ok || typeof report.base64 !== 'string') {
        this._fail('Export', name, report);
      }
      bytes = Uint8Array.from(atob(report.base64), c => c.charCodeAt(0));
    } else {
      const store = await pageStore(this.key(panel)); // the notebook's folder or IndexedDB
      const entry = await store.get(name);
      if (!entry) {
        throw new Error(`Checkpoint ${name} no longer exists.`);
      }
      bytes = entry.bytes;
    }
    const blob = new Blob([bytes as BlobPart], { type: 'application/octet-stream' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = exportFileName(name);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    this._setStatus(`Exported ${name} (${fmtBytes(bytes.length)})`);
  }

  /**
   * Import a checkpoint file for a notebook: host.import_checkpoint in the kernel validates it
   * first (the one import policy): a file that is not whole is refused and nothing is stored;
   * a whole file is stored, and records restore would refuse (code-running) are listed.
   */
  async importBytes(panel: NotebookPanel, fileName: string, bytes: Uint8Array): Promise<string> {
    const notebook = panel.context.path;
    const key = this.identity.adopt(panel);
    this._setStatus(`Checking ${fileName}…`);
    // named by the kernel: "<path> imported <time>"
    const report = await this._call(panel, 'import', { notebook: key, unique: true, source: fileName }, bytes);
    if (!report.ok) {
      this._fail('Import', fileName, report);
    }
    const refused = problemsOf(report, 'refused').map(p => problemLine(fileName, p));
    this._setStatus(`Imported ${fileName} as ${report.name}` + (refused.length ? `; warning: ${refused.join('; ')}` : ''));
    this._changed.emit(notebook);
    return report.name as string;
  }

  /**
   * After a page reload or a kernel restart: if this notebook has a checkpoint, offer to
   * restore its latest one — in a notification, which takes no keyboard focus: keys the person
   * presses for a cell meanwhile (Enter, Shift+Enter) go to the cell, never to the offer.
   */
  async offerRestore(panel: NotebookPanel): Promise<boolean> {
    const notebook = panel.context.path;
    let latest: IListed | null;
    try {
      latest = await this.toRestore(panel);
    } catch (e) {
      console.warn('Elastic Lite: cannot read the checkpoint store:', e);
      return false;
    }
    if (!latest) {
      return false;
    }
    const meta = latest.meta || {};
    const name = latest.name;
    const previous = this._offers.get(notebook);
    if (previous) {
      Notification.dismiss(previous); // one question at a time per notebook: the newest
    }
    // the cell the state followed, short: JupyterLab cuts a notification after 140 characters
    const label = latest.label;
    const point = label.length > 40 ? `${label.slice(0, 39)}…` : label;
    // the heap warning the kernel stored with it when it was saved (the sidebar item and
    // %checkpoints say it too): first, as a notification shows 140 characters; the whole
    // text behind "Why?"
    const warning = typeof meta.restoreWarning === 'string' ? meta.restoreWarning : null;
    const when = formatTime(meta.createdMs);
    const sizes = `(${meta.variables ?? '?'} variables, ${fmtBytes(meta.size)})`;
    const text = warning
      ? `Restore the last checkpoint? Too large to restore in this browser: the one of ${notebook} from ${when} ${sizes}.`
      : `Restore the last checkpoint? ${notebook} has one from ${when}${point ? `, after ${point}` : ''} ${sizes}.`;
    const why = {
      label: 'Why?',
      callback: (event: MouseEvent) => {
        event.preventDefault(); // the offer stays
        void showDialog({
          title: 'This checkpoint may not restore here',
          body: shownText(`Warning: ${warning}`),
          buttons: [Dialog.okButton({ label: 'OK' })]
        });
      }
    };
    const id = Notification.emit(
      shownText(text),
      warning ? 'warning' : 'info',
      {
        autoClose: false,
        actions: [
          ...(warning ? [why] : []),
          {
            label: 'Restore',
            displayType: 'accent',
            callback: () => {
              this.restore(panel, name).then(
                () => Notification.success(this.status, { autoClose: 4000 }),
                e => Notification.error((e as Error).message, { autoClose: false })
              );
            }
          },
          { label: 'Not now', callback: () => undefined }
        ]
      }
    );
    this._offers.set(notebook, id);
    return true;
  }

  private _autoRunning = new Set<NotebookPanel>();
  private _autoAgain = new Map<NotebookPanel, ICellPoint>(); // the next point, while one runs
  /**
   * `options.replay` (read at each call: the live setting): plan and run replay — what a
   * checkpoint cannot store is recomputed on restore by re-running the recorded cells.
   */
  options: { replay?: boolean } = {};
  private _offers = new Map<string, string>(); // notebook -> its restore offer's notification
  private _ownPoints = new WeakMap<NotebookPanel, Set<string>>(); // panel -> its kernel's automatic points
  private _bound = new WeakMap<NotebookPanel, string>(); // panel -> 'kernel id + path' told
  private _binding = new WeakMap<NotebookPanel, Promise<boolean>>(); // panel -> set_notebook under way
  private _host = new WeakMap<NotebookPanel, string>(); // panel -> 'kernel id + pyodide|cpython' (its answer)
  private _status = 'Ready.';
  private _historyStatus = '';
  private _changed = new Signal<this, string>(this);
}

/** Lists of store entries (each newest first) as one, newest first, each name once. */
function mergeNewestFirst<T extends IStoreEntry>(lists: T[][]): T[] {
  const seen = new Set<string>();
  return lists
    .flat()
    .filter(e => !seen.has(e.name) && !!seen.add(e.name))
    .sort((a, b) => (b.meta?.createdMs ?? 0) - (a.meta?.createdMs ?? 0));
}

/** The cell a checkpoint is taken after (meta.cell). */
export interface ICellPoint {
  executionCount: number | null;
  firstLine: string;
  timeMs: number;
}

/** "; 5 of 6 records unchanged (98 MiB not written again)" for a checkpoint's reuse stats. */
export function reuseNote(report: IReport): string {
  const r = report.reuse;
  if (!r || !r.reused) {
    return '';
  }
  return `; ${r.reused} of ${r.reused + r.written} records unchanged (${fmtBytes(r.reused_bytes)} not written again)`;
}

/**
 * One line about a checkpoint or restore report: the variables, what replay recomputes (or
 * did), and what did not make it.
 */
export function describe(report: IReport, label = ''): string {
  const names: string[] = (report.variables ?? report.restored ?? []).map((v: { name: string }) => v.name);
  const shown = names.slice(0, 8).join(', ') + (names.length > 8 ? ', …' : '');
  const parts = [`${names.length} variables (${shown})`];
  if (typeof report.size === 'number') {
    parts.push(fmtBytes(report.size));
  }
  if (typeof report.timings?.total_ms === 'number') {
    parts.push(`${Math.round(report.timings.total_ms)} ms`);
  }
  // Recomputed by re-running recorded cells: planned (a checkpoint) or done (a restore).
  const replayed = ((report.op === 'restore' ? report.recomputed : report.replay?.recompute) ?? []) as
    { name: string; cells: number[] }[];
  if (replayed.length) {
    const what = replayed.map(r => `${r.name} (cells ${r.cells.map(c => `[${c}]`).join(', ')})`).join('; ');
    parts.push(`${report.op === 'restore' ? 'recomputed by replay' : 'recomputed on restore'}: ${what}`);
  }
  const skipped = (report.skipped ?? []) as { name: string; reason: string }[];
  // A checkpoint's replay plan says why each one stays skipped (a restore's reasons hold it).
  const stays = new Map<string, string>(
    ((report.replay?.skipped ?? []) as { name: string; message: string }[]).map(s => [s.name, s.message]));
  if (skipped.length) {
    const why = (s: { name: string; reason: string }) =>
      report.op === 'checkpoint' && stays.has(s.name) ? `${s.reason}; ${stays.get(s.name)}` : s.reason;
    parts.push(`skipped: ${skipped.map(s => `${s.name} (${why(s)})`).join('; ')}`);
  }
  if (report.problems?.length) {
    parts.push(`NOT restored: ${report.problems.map(p => problemLine(label, p)).join('; ')}`);
  }
  // e.g. a state too large to restore in this browser's heap: said now, not at restore time
  parts.push(...((report.warnings ?? []) as string[]).map(w => `WARNING: ${w}`));
  return parts.join(', ');
}
