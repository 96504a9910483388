// A fresh Pyodide with elastic_lite installed (through js/pyodide-glue.mjs), plus the two
// things the CLI does with it: run code like the next notebook cell (cells.py) and take or
// load a snapshot (session.py). Python's stdout is captured per cell and, unless --json,
// echoed to the terminal as it is printed.
import fs from 'node:fs/promises';
import { CliError, EXIT } from './errors.mjs';

const here = (f) => new URL(f, import.meta.url);

/**
 * @param {object} [options]
 * @param {boolean} [options.echo] print Python's stdout as it comes (off under --json)
 * @param {object} [options.store] made elastic_lite's default store, so code that calls
 *   `await elastic_lite.checkpoint()` / `restore()` itself uses the CLI's --store too
 */
export async function startSession({ echo = true, store } = {}) {
  let glue;
  try {
    glue = await import('../pyodide-glue.mjs');
  } catch (err) {
    throw new CliError(`cannot load js/pyodide-glue.mjs (${err.message}); run: npm run build`, EXIT.ENV);
  }
  let pyodide;
  try {
    pyodide = await glue.createPyodide({ store });
  } catch (err) {
    throw new CliError(`cannot start Python (Pyodide with elastic_lite): ${err.message}; run: npm run build`, EXIT.ENV);
  }
  return new Session(pyodide, echo, await Promise.all([fs.readFile(here('cells.py'), 'utf8'), fs.readFile(here('session.py'), 'utf8')]));
}

class Session {
  constructor(pyodide, echo, sources) {
    this.pyodide = pyodide;
    this._captured = [];
    const sink = (stream, keep) => {
      const decoder = new TextDecoder();
      return {
        write: (buf) => {
          const text = decoder.decode(buf, { stream: true });
          if (keep) this._captured.push(text);
          if (echo || !keep) stream.write(text);
          return buf.length;
        },
      };
    };
    pyodide.setStdout(sink(process.stdout, true));
    pyodide.setStderr(sink(process.stderr, false));
    // A private namespace: the helpers never appear in __main__, so never in a checkpoint.
    this._ns = pyodide.globals.get('dict')();
    for (const src of sources) pyodide.runPython(src, { globals: this._ns });
    this._call('fresh_main').destroy();
  }

  _call(name, ...args) {
    const fn = this._ns.get(name);
    try { return fn(...args); } finally { fn.destroy(); }
  }

  /** Runs code as the next notebook cell: { ok, value (repr|null), traceback, output }. */
  async runCell(source, label) {
    this._captured = [];
    const proxy = await this._call('run_cell', source, label);
    const [ok, value, traceback] = proxy.toJs();
    proxy.destroy();
    return { ok, value: value ?? null, traceback: traceback ?? null, output: this._captured.join('') };
  }

  /** Snapshot of __main__: { bytes: Uint8Array, report }. onProgress(done, total) per group. */
  snapshot(onProgress) {
    const proxy = onProgress ? this._call('take_snapshot', onProgress) : this._call('take_snapshot');
    const [bytes, json] = proxy.toJs();
    proxy.destroy();
    return { bytes, report: JSON.parse(json) };
  }

  /** Loads checkpoint bytes into __main__; returns the restore report (plain data). trust:
   * also load records that would call deny-listed globals (os.system, ...; see trust.mjs). */
  load(bytes, { trust = false } = {}) {
    return JSON.parse(this._call('load', bytes, !!trust));
  }
}
