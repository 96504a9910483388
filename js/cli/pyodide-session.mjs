// A fresh Pyodide with elastic_lite installed (through js/pyodide-glue.mjs), and the one way
// the CLI uses it: elastic_lite.host (js/shared/host.mjs). Python's stdout is captured per
// cell and, unless --json, echoed to the terminal as it is printed.
import { CliError, EXIT, repairHint } from './errors.mjs';
import { callHost } from '../shared/host.mjs';

/**
 * @param {object} [options]
 * @param {boolean} [options.echo] print Python's stdout as it comes (off under --json)
 * @param {object} [options.store] elastic_lite's store (the CLI's --store), so the host API
 *   and code that calls `await elastic_lite.checkpoint()` itself both use it
 */
export async function startSession({ echo = true, store } = {}) {
  let glue;
  try {
    glue = await import('../pyodide-glue.mjs');
  } catch (err) {
    throw new CliError(`cannot load js/pyodide-glue.mjs (${err.message}); ${repairHint()}`, EXIT.ENV);
  }
  let pyodide;
  try {
    pyodide = await glue.createPyodide({ store });
  } catch (err) {
    throw new CliError(`cannot start Python (Pyodide with elastic_lite): ${err.message}; ${repairHint()}`, EXIT.ENV);
  }
  return new Session(pyodide, echo);
}

class Session {
  constructor(pyodide, echo) {
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
  }

  /** elastic_lite.host operation `op`: its report (docs/INTERFACES.md, "Report schema"). */
  call(op, kwargs = {}, options = {}) {
    return callHost(this.pyodide, op, kwargs, options);
  }

  /**
   * Runs code as the next notebook cell: host.run_cell's report plus `output` (its stdout).
   * `count`: the number the session's history gives the cell (the notebook's cell number).
   */
  async runCell(code, label, count) {
    this._captured = [];
    const report = await this.call('run_cell', count == null ? { code, label } : { code, label, count });
    return { ...report, output: this._captured.join('') };
  }
}
