// Where the demo's checkpoints go: this browser's storage (IndexedDB) or a folder on disk the
// person picks ("Save checkpoints to a folder…", File System Access: Chromium), in the layout
// of the CLI's `--store DIR` (docs/STORE-LAYOUT.md), so `elastic-lite ls --store DIR` reads it.
// A folder is not limited by the browser's storage quota and is not evicted with the site's
// data. The page picks the folder and asks for access (both need a click); the worker keeps the
// handle (js/store/folder.mjs remembers it in this origin) and writes through it.
import { h } from './format.mjs';
import { showMessage, explainError } from './messages.mjs';
import { folderPermission, rememberedFolder } from '../js/store/folder.mjs';

export class FolderChoice {
  /** The row goes after element `after`. `onChange(where)`: the store changed ({folder, state} as the worker's `where` answers). */
  constructor(after, kernel, { onChange = () => {} } = {}) {
    this.kernel = kernel;
    this.onChange = onChange;
    this.where = { folder: null, state: 'none' };
    const button = (id, label, onclick, cls) => h('button', { type: 'button', id, class: cls, onclick }, label);
    this.line = h('p', { id: 'where-line', class: 'storage-line' });
    this.pick = button('use-folder', 'Save checkpoints to a folder…', () => this.#run(() => this.#pick()));
    this.reconnect = button('reconnect-folder', 'Reconnect folder', () => this.#run(() => this.#reconnect()));
    this.back = button('use-browser', 'Use browser storage', () => this.#run(() => this.kernel.call('where', { browser: true })), 'quiet');
    this.row = h('div', { id: 'where-row', class: 'import-row', hidden: true }, this.line, this.pick, this.reconnect, this.back);
    after.after(this.row);
  }

  /** The folder's name while checkpoints go there, else null. */
  get folder() { return this.where.state === 'granted' ? this.where.folder : null; }

  show(where) {
    this.where = where ?? { folder: null, state: 'none' };
    const { folder, state } = this.where;
    const supported = typeof window.showDirectoryPicker === 'function';
    this.row.hidden = !supported && !folder;
    this.line.textContent = state === 'granted'
      ? `Checkpoints are saved in the folder “${folder}” on disk (elastic-lite ls --store DIR reads it).`
      : state === 'prompt' || state === 'denied'
        ? `Checkpoints go to the folder “${folder}” once you allow it again (the browser asks after a reload); until then they are saved in this browser.`
        : 'Checkpoints are saved in this browser.';
    this.pick.hidden = !supported || state === 'granted';
    this.reconnect.hidden = !(state === 'prompt' || state === 'denied');
    this.back.hidden = !folder || state === 'browser' || state === 'none';
  }

  async #run(fn) {
    try {
      const where = await fn();
      if (where) {
        this.show(where);
        await this.onChange(where);
      }
    } catch (err) {
      explainError(err, { action: 'choosing where checkpoints go' });
    }
  }

  async #pick() {
    let handle;
    try {
      handle = await window.showDirectoryPicker({ id: 'elastic-lite', mode: 'readwrite' });
    } catch (err) {
      if (err?.name === 'AbortError') return null; // the person closed the dialog
      throw err;
    }
    if ((await folderPermission(handle, { request: true })) !== 'granted') return this.#refused(handle.name);
    return this.kernel.call('where', { handle });
  }

  async #reconnect() {
    const handle = await rememberedFolder();
    if (!handle) return this.kernel.call('where', {});
    if ((await folderPermission(handle, { request: true })) !== 'granted') return this.#refused(handle.name);
    return this.kernel.call('where', {});
  }

  #refused(name) {
    showMessage({
      level: 'warn', key: 'where', title: `No access to the folder “${name}”`,
      lines: ['The browser did not allow this page to read and write it: checkpoints stay in this browser.'],
    });
    return null;
  }
}
