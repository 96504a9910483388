// The demo's Python kernel: a module web worker running Pyodide, so a long cell or a large
// checkpoint never freezes the page. Everything is loaded from the page's own server
// (node_modules/pyodide, build/wheels, build/wasm): it works with the network off.
//
// Calls are handled one at a time, in arrival order, like a notebook kernel's queue: a
// checkpoint asked for while a cell runs waits for the cell, so it sees the cell's results.
// Cells and checkpoints alike are elastic_lite.host calls (worker-checkpoints.mjs).
import { loadPyodide } from '../node_modules/pyodide/pyodide.mjs';
import * as checkpoints from './worker-checkpoints.mjs';

const PYODIDE_URL = new URL('../node_modules/pyodide/', import.meta.url).href;

let pyodide = null;
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
  status('loading', 'Installing Elastic Lite…');
  const info = await checkpoints.setup(pyodide);
  status('ready', 'Python ready');
  const sys = pyodide.pyimport('sys'); // pyimport: nothing is bound in the user's namespace
  const python = sys.version.split(' ')[0];
  sys.destroy();
  return { python, pyodide: pyodide.version, ...info };
}

// What a failed worker call tells the page (structured clone keeps only plain data): the
// page's words for `kind` are in messages.mjs. Reports of the host are not errors: they come
// back as values, with their typed problems.
function transferable(err) {
  if (err?.kind) return { kind: err.kind, message: err.message };
  if (err?.constructor?.name === 'PythonError') {
    const lines = String(err.message ?? '').trim().split('\n');
    return { kind: 'python', message: lines[lines.length - 1], traceback: err.message };
  }
  return { kind: 'internal', message: String(err?.message ?? err), stack: err?.stack ?? null };
}

const ops = { init, ...checkpoints.ops };

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
      const value = await handler(args ?? {}, { progress });
      const transfer = value && value.data instanceof Uint8Array ? [value.data.buffer] : [];
      post({ id, type: 'result', value }, transfer);
    } catch (err) {
      if (op === 'init') status('failed', String(err?.message ?? err));
      post({ id, type: 'error', error: transferable(err) });
    } finally {
      currentCall = null;
    }
  });
});
