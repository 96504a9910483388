// The demo's Python kernel: a module web worker running Pyodide, so a long cell or a large
// checkpoint never freezes the page. Everything is loaded from the page's own server
// (node_modules/pyodide, build/wheels, build/wasm): it works with the network off.
//
// Calls are handled one at a time, in arrival order, like a notebook kernel's queue: a
// checkpoint asked for while a cell runs waits for the cell, so it sees the cell's results.
import { loadPyodide } from '../node_modules/pyodide/pyodide.mjs';
import * as checkpoints from './worker-checkpoints.mjs';
import { toTransferable } from './worker-errors.mjs';
import { loadPythonModule, privateGlobals } from './worker-pymodule.mjs';

const PYODIDE_URL = new URL('../node_modules/pyodide/', import.meta.url).href;

let pyodide = null;
let runCell = null;
let currentCall = null; // id of the call whose output is being produced

function post(msg, transfer = []) { self.postMessage(msg, transfer); }
function status(state, message) { post({ type: 'status', state, message }); }

// stdout/stderr go to whichever call is running; a decoder per stream keeps multi-byte
// characters split across writes intact.
function streamTo(name) {
  const decoder = new TextDecoder();
  return {
    write(buffer) {
      const text = decoder.decode(buffer, { stream: true });
      if (text && currentCall !== null) post({ id: currentCall, type: 'stream', name, text });
      return buffer.length;
    },
  };
}

async function init() {
  status('starting', 'Starting Python (Pyodide)…');
  pyodide = await loadPyodide({ indexURL: PYODIDE_URL });
  pyodide.setStdout(streamTo('stdout'));
  pyodide.setStderr(streamTo('stderr'));
  // The cell runner lives in its own module, out of the user's namespace (and checkpoints).
  const mod = await loadPythonModule(pyodide, 'elastic_lite_demo_cells', new URL('./cell_runner.py', import.meta.url));
  runCell = mod.run_cell.copy(); // the module proxy's attributes are borrowed: keep our own
  mod.destroy();
  status('loading', 'Installing Elastic Lite…');
  const info = await checkpoints.setup(pyodide);
  status('ready', 'Python ready');
  return {
    python: pyodide.runPython('import sys; sys.version.split()[0]', { globals: privateGlobals(pyodide) }),
    pyodide: pyodide.version,
    ...info,
  };
}

async function run({ code, cellId }) {
  const result = await runCell(code, String(cellId));
  try {
    return result.toJs({ dict_converter: Object.fromEntries });
  } finally {
    result.destroy();
  }
}

const ops = {
  init,
  run,
  ...checkpoints.ops,
};

let queue = Promise.resolve();
self.addEventListener('message', (event) => {
  const { id, op, args } = event.data;
  queue = queue.then(async () => {
    currentCall = id;
    try {
      const handler = ops[op];
      if (!handler) throw new Error(`unknown operation ${op}`);
      if (op !== 'init' && !pyodide) throw new Error('Python is not ready yet.');
      const progress = (p) => post({ id, type: 'progress', ...p });
      const value = await handler(args ?? {}, { progress, pyodide });
      const transfer = value && value.bytes instanceof Uint8Array ? [value.bytes.buffer] : [];
      post({ id, type: 'result', value }, transfer);
    } catch (err) {
      if (op === 'init') status('failed', String(err?.message ?? err));
      post({ id, type: 'error', error: toTransferable(err) });
    } finally {
      currentCall = null;
    }
  });
});
