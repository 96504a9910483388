// What the commands, the toolbar buttons and the sidebar do: checkpoint and restore through the
// kernel (elastic_lite runs there and writes this origin's IndexedDB from the kernel's worker),
// and list / delete / inspect / export / import in the page through the same store.
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { ISignal, Signal } from '@lumino/signaling';

import { checkpointName, exportFileName, formatBytes, formatTime } from './format';
import { IKernelResult, runInKernel } from './kernel';
import { getCore, getStore, IInspectReport, IStoreEntry } from './modules';
import { checkpointCode, restoreCode, setNotebookCode } from './python';

export class ElasticLiteController {
  /** Emitted when the checkpoints of a notebook changed (payload: the notebook path). */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /** The last thing that happened, for the sidebar's status line. */
  get status(): string {
    return this._status;
  }

  private _setStatus(text: string): void {
    this._status = text;
    this._changed.emit('');
  }

  async list(notebook: string): Promise<IStoreEntry[]> {
    const store = await getStore();
    return store.list({ notebook });
  }

  /**
   * Checkpoints tied to no notebook: taken with %checkpoint / elastic_lite.checkpoint(name)
   * in a kernel that was never told its notebook (another front end, or the notebook's kernel
   * before `bindNotebook` ran).
   */
  async listUnattached(): Promise<IStoreEntry[]> {
    const store = await getStore();
    return (await store.list()).filter(e => e.meta?.notebook === null || e.meta?.notebook === undefined);
  }

  async latest(notebook: string): Promise<IStoreEntry | null> {
    const all = await this.list(notebook);
    return all.length ? all[0] : null;
  }

  private _kernelOf(panel: NotebookPanel) {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel) {
      throw new Error('This notebook has no running kernel: start one, then try again.');
    }
    return kernel;
  }

  private _fail(what: string, result: IKernelResult | Error): never {
    const message = result instanceof Error ? result.message : result.error || 'unknown error';
    this._setStatus(`${what} failed: ${message}`);
    throw new Error(`${what} failed: ${message}`);
  }

  /**
   * Tell the notebook's (fresh) kernel which notebook it serves: `elastic_lite.set_notebook`,
   * silently, importing (or installing) elastic_lite first. Only for Python kernels; failures
   * are logged, not shown: the notebook works without it, `%checkpoint` is then unattached.
   */
  async bindNotebook(panel: NotebookPanel): Promise<boolean> {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || panel.isDisposed) {
      return false;
    }
    try {
      const info = await kernel.info;
      if (info.language_info?.name !== 'python') {
        return false;
      }
      const result = await runInKernel(kernel, setNotebookCode(panel.context.path));
      if (!result.ok) {
        console.warn(`Elastic Lite: cannot tie the kernel to ${panel.context.path}:`, result.error);
      }
      return result.ok;
    } catch (e) {
      console.warn(`Elastic Lite: cannot tie the kernel to ${panel.context.path}:`, e);
      return false;
    }
  }

  /** Checkpoint the notebook's kernel. Returns the checkpoint name. */
  async checkpoint(panel: NotebookPanel, options: { auto?: boolean } = {}): Promise<string> {
    const notebook = panel.context.path;
    const name = checkpointName(notebook, options.auto);
    this._setStatus(`Checkpointing ${notebook}…`);
    const kernel = this._kernelOf(panel);
    const result = await runInKernel(kernel, checkpointCode(name, notebook));
    if (!result.ok) {
      this._fail('Checkpoint', result);
    }
    this._setStatus(`Checkpoint saved: ${describe(result)}`);
    this._changed.emit(notebook);
    return name;
  }

  /** Restore a checkpoint (default: the notebook's latest) into the notebook's kernel. */
  async restore(panel: NotebookPanel, name?: string): Promise<IKernelResult> {
    const notebook = panel.context.path;
    if (!name) {
      const latest = await this.latest(notebook);
      if (!latest) {
        this._fail('Restore', new Error(`no checkpoint of ${notebook} in this browser yet`));
      }
      name = latest.name;
    }
    this._setStatus(`Restoring ${name}…`);
    const result = await runInKernel(this._kernelOf(panel), restoreCode(name));
    if (!result.ok) {
      this._fail('Restore', result);
    }
    this._setStatus(`Restored ${describe(result)}`);
    return result;
  }

  async delete(name: string, notebook: string): Promise<void> {
    const store = await getStore();
    await store.delete(name);
    this._setStatus(`Deleted ${name}`);
    this._changed.emit(notebook);
  }

  /** Inspect a stored checkpoint with the C core: records, serializers, globals, damage. */
  async inspect(name: string): Promise<IInspectReport> {
    const store = await getStore();
    const entry = await store.get(name);
    if (!entry) {
      throw new Error(`Checkpoint ${name} no longer exists.`);
    }
    const core = await getCore();
    return core.inspect(entry.bytes, { validate: true });
  }

  /** Download a checkpoint as a file. */
  async export(name: string): Promise<void> {
    const store = await getStore();
    const entry = await store.get(name);
    if (!entry) {
      throw new Error(`Checkpoint ${name} no longer exists.`);
    }
    const blob = new Blob([entry.bytes as BlobPart], { type: 'application/octet-stream' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = exportFileName(name);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    this._setStatus(`Exported ${name} (${formatBytes(entry.bytes.length)})`);
  }

  /**
   * Import a checkpoint file for a notebook. The bytes are untrusted: the C core checks the
   * container and every pickle stream first, and a damaged file is refused with the reason.
   */
  async importBytes(notebook: string, fileName: string, bytes: Uint8Array): Promise<string> {
    const core = await getCore();
    let report: IInspectReport;
    try {
      report = core.inspect(bytes, { validate: true });
    } catch (e) {
      return this._fail('Import', new Error(`${fileName} is not an Elastic Lite checkpoint (${(e as Error).message}).`));
    }
    const records = report.records || [];
    const good = records.filter(r => r.ok);
    if (!good.length) {
      const why = report.error ? `${report.error.message} at byte ${report.error.offset}` : 'no readable record';
      return this._fail('Import', new Error(`${fileName} cannot be restored: ${why}. Export it again from the browser that made it.`));
    }
    const names = good
      .flatMap(r => r.names)
      .filter(n => n !== '__elastic_lite_manifest__');
    const name = `${notebook} imported ${new Date().toISOString()}`;
    const store = await getStore();
    await store.put(name, bytes, {
      notebook,
      createdMs: Date.now(),
      size: bytes.length,
      variables: names.length,
      names,
      imported: fileName,
      originalCreatedMs: report.created_ms,
      damaged: report.ok ? undefined : records.filter(r => !r.ok).map(r => r.names)
    });
    this._setStatus(`Imported ${fileName} as ${name}${report.ok ? '' : ' (some records are damaged)'}`);
    this._changed.emit(notebook);
    return name;
  }

  /**
   * After a page reload or a kernel restart: if this notebook has a checkpoint, offer to
   * restore its latest one.
   */
  async offerRestore(panel: NotebookPanel): Promise<boolean> {
    const notebook = panel.context.path;
    if (this._offering.has(notebook)) {
      return false; // one question at a time per notebook
    }
    this._offering.add(notebook);
    try {
      return await this._offerRestore(panel, notebook);
    } finally {
      this._offering.delete(notebook);
    }
  }

  private async _offerRestore(panel: NotebookPanel, notebook: string): Promise<boolean> {
    let latest: IStoreEntry | null;
    try {
      latest = await this.latest(notebook);
    } catch (e) {
      console.warn('Elastic Lite: cannot read the checkpoint store:', e);
      return false;
    }
    if (!latest) {
      return false;
    }
    const meta = latest.meta || {};
    const answer = await showDialog({
      title: 'Restore the last checkpoint?',
      body:
        `${notebook} has a checkpoint from ${formatTime(meta.createdMs)} ` +
        `(${meta.variables ?? '?'} variables, ${formatBytes(meta.size)}). ` +
        'Restore it into this new kernel?',
      buttons: [Dialog.cancelButton({ label: 'Not now' }), Dialog.okButton({ label: 'Restore' })]
    });
    if (!answer.button.accept) {
      return false;
    }
    try {
      await this.restore(panel, latest.name);
      Notification.success(this.status, { autoClose: 4000 });
    } catch (e) {
      Notification.error((e as Error).message, { autoClose: false });
    }
    return true;
  }

  private _offering = new Set<string>();
  private _status = 'Ready.';
  private _changed = new Signal<this, string>(this);
}

/** One line about a kernel result: the variables saved or restored, and what did not make it. */
export function describe(result: IKernelResult): string {
  const r = result as Record<string, any>;
  const parts: string[] = [];
  const names: string[] | undefined = r.names ?? r.restored;
  if (Array.isArray(names)) {
    const shown = names.slice(0, 8).join(', ') + (names.length > 8 ? ', …' : '');
    parts.push(`${names.length} variables (${shown})`);
  }
  if (typeof r.size === 'number') {
    parts.push(formatBytes(r.size));
  }
  if (typeof r.ms === 'number') {
    parts.push(`${Math.round(r.ms)} ms`);
  }
  const skipped = (r.skipped ?? []) as { name: string; reason: string }[];
  if (skipped.length) {
    parts.push(`skipped: ${skipped.map(s => `${s.name} (${s.reason})`).join('; ')}`);
  }
  const failed = (r.failed ?? []) as { names: string[]; reason: string }[];
  if (failed.length) {
    parts.push(`NOT restored: ${failed.map(f => `${f.names.join(', ')} (${f.reason})`).join('; ')}`);
  }
  const modules = (r.modules ?? []) as { name: string; module: string; error: string }[];
  if (modules.length) {
    parts.push(`imports failed: ${modules.map(m => `${m.name} = ${m.module} (${m.error})`).join('; ')}`);
  }
  return parts.length ? parts.join(', ') : 'done';
}
