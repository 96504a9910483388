// The cells: editable code, a Run button each, outputs (stdout, stderr, the last expression's
// value, errors with their traceback). Code runs in the Python worker through the kernel client
// (elastic_lite.host.run_cell: its report is the `result` below).
// Cell text is kept in localStorage, so a reload keeps what the person typed; the Python state
// is what the checkpoints are for.
import { h } from './format.mjs';
import { EXAMPLE_CELLS } from './example-cells.mjs';

const STORAGE_KEY = 'elastic-lite-demo:cells:v1';

export class Notebook {
  constructor(listEl, kernel, { onBusy = () => {} } = {}) {
    this.listEl = listEl;
    this.kernel = kernel;
    this.onBusy = onBusy;
    this.cells = [];
    this.counter = 0; // execution count, as in Jupyter's [n]
    this.nextCellId = 1;
    for (const source of this.#loadSources()) this.addCell(source, { save: false });
  }

  #loadSources() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null');
      if (Array.isArray(saved) && saved.every((s) => typeof s === 'string') && saved.length) return saved;
    } catch { /* unreadable saved cells: fall back to the example */ }
    return EXAMPLE_CELLS;
  }

  save() {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(this.cells.map((c) => c.textarea.value)));
    } catch { /* storage full or disabled: cells still work, they just are not remembered */ }
  }

  reset() {
    for (const c of this.cells) c.li.remove();
    this.cells = [];
    for (const source of EXAMPLE_CELLS) this.addCell(source, { save: false });
    this.save();
  }

  addCell(source = '', { save = true, focus = false } = {}) {
    const id = this.nextCellId++;
    const cell = { id };
    cell.label = h('span', { class: 'cell-label', 'aria-hidden': 'true' }, '[ ]');
    cell.textarea = h('textarea', {
      spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
      rows: String(Math.max(3, source.split('\n').length)),
    });
    cell.textarea.value = source;
    cell.output = h('div', { class: 'output', role: 'log', 'aria-live': 'polite' });
    cell.runButton = h('button', { type: 'button', class: 'run', onclick: () => this.run(cell) }, 'Run');
    cell.deleteButton = h('button', { type: 'button', class: 'quiet danger', onclick: () => this.remove(cell) }, 'Delete');
    cell.li = h('li', { class: 'cell', dataset: { cellId: String(id) } },
      h('div', { class: 'cell-head' }, cell.label, h('span', { class: 'spacer' }), cell.runButton, cell.deleteButton),
      cell.textarea, cell.output);
    cell.textarea.addEventListener('input', () => {
      cell.textarea.rows = Math.max(3, cell.textarea.value.split('\n').length);
      this.save();
    });
    cell.textarea.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.shiftKey || e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.run(cell);
      }
    });
    this.cells.push(cell);
    this.listEl.append(cell.li);
    this.#relabel();
    if (save) this.save();
    if (focus) cell.textarea.focus();
    return cell;
  }

  remove(cell) {
    const i = this.cells.indexOf(cell);
    if (i < 0) return;
    this.cells.splice(i, 1);
    cell.li.remove();
    this.#relabel();
    this.save();
    (this.cells[i] ?? this.cells[i - 1])?.textarea.focus();
  }

  // Accessible names carry the cell's position, so "Run cell 3" is findable by ear and by tests.
  #relabel() {
    this.cells.forEach((c, i) => {
      const n = i + 1;
      c.textarea.setAttribute('aria-label', `Code of cell ${n}`);
      c.runButton.setAttribute('aria-label', `Run cell ${n}`);
      c.deleteButton.setAttribute('aria-label', `Delete cell ${n}`);
      c.output.setAttribute('aria-label', `Output of cell ${n}`);
    });
  }

  // Runs one cell; resolves to true when it finished without an exception.
  async run(cell) {
    cell.output.replaceChildren();
    cell.li.dataset.state = 'running';
    cell.label.textContent = '[*]';
    this.onBusy(+1);
    // The execution count is the number the session's history gives the cell too: the
    // reports say "recomputed by re-running cells [4], [5]" in the numbers shown here.
    const count = ++this.counter;
    try {
      const result = await this.kernel.call('run', { code: cell.textarea.value, cellId: cell.id, count }, {
        onStream: ({ name, text }) => this.#append(cell, name, text),
      });
      cell.label.textContent = `[${count}]`;
      // IPython lines the demo's Python cannot run (%matplotlib, !pip): said, not hidden
      for (const w of result.warnings ?? []) this.#append(cell, 'warning', `${w}\n`);
      if (result.ok) {
        if (result.value !== null && result.value !== undefined) this.#append(cell, 'result', result.value + '\n');
        cell.li.dataset.state = 'done';
        return true;
      }
      this.#append(cell, 'error', result.traceback);
      cell.li.dataset.state = 'error';
      return false;
    } catch (err) {
      // The worker itself failed (not the user's code): say so in the cell.
      cell.label.textContent = '[!]';
      this.#append(cell, 'error', `The Python worker could not run this cell: ${err.message ?? err}\n`);
      cell.li.dataset.state = 'error';
      return false;
    } finally {
      this.onBusy(-1);
    }
  }

  // Runs every cell in order and stops at the first error, like a notebook's "Run all".
  async runAll() {
    for (const cell of this.cells) {
      if (!(await this.run(cell))) return false;
    }
    return true;
  }

  #append(cell, kind, text) {
    const last = cell.output.lastElementChild;
    // Consecutive writes to the same stream join one span (prints arrive line by line).
    if (last && last.dataset.kind === kind && kind !== 'result') last.textContent += text;
    else cell.output.append(h('span', { class: kind, dataset: { kind } }, text));
  }
}
