// Test helpers: fresh Pyodide interpreters with Elastic Lite installed through the real glue
// (js/pyodide-glue.mjs, wheels from build/wheels), and Python errors shown short.
import { createPyodide } from '../../../js/pyodide-glue.mjs';

/** A new interpreter; its printed output is collected in `.out` (not echoed). */
export async function freshPyodide(options = {}) {
  const out = [];
  const pyodide = await createPyodide({
    stdout: (line) => out.push(line),
    stderr: (line) => out.push(line),
    ...options,
  });
  pyodide.out = out;
  return pyodide;
}

/** Runs Python; a Python exception becomes an Error whose message is the traceback tail. */
export async function py(pyodide, code) {
  try {
    return await pyodide.runPythonAsync(code);
  } catch (err) {
    const lines = String(err.message ?? err).trim().split('\n');
    const tail = lines.slice(-12).join('\n');
    throw new Error(`Python failed:\n${tail}\n--- printed ---\n${pyodide.out.slice(-20).join('\n')}`);
  }
}

/** Bytes of a Python `bytes` expression, as a Uint8Array owned by JS. */
export async function pyBytes(pyodide, expr) {
  const proxy = await py(pyodide, expr);
  try {
    return proxy.toJs();
  } finally {
    proxy.destroy();
  }
}

/** Python JSON of an expression, parsed in JS. As UTF-8 bytes read through getBuffer (the
 * unsigned address): Pyodide hands a long ASCII str above 2 GiB of its heap to JS as NULs. */
export async function pyJson(pyodide, expr) {
  const proxy = await py(pyodide, `import json as _j; _j.dumps(${expr}, default=str).encode()`);
  try {
    const view = proxy.getBuffer('u8');
    try {
      return JSON.parse(new TextDecoder().decode(view.data));
    } finally {
      view.release();
    }
  } finally {
    proxy.destroy();
  }
}

// A JupyterLite-like user namespace: a fresh module installed as sys.modules['__main__'] (as
// IPython's stand-in `__main__` is), cells exec'd in its dict by `cell(src)`.
export const STAND_IN_MAIN = String.raw`
import sys, types
_main = types.ModuleType("__main__")
_main.__dict__["__builtins__"] = __builtins__
sys.modules["__main__"] = _main
def cell(src):
    exec(compile(src, "<cell>", "exec"), _main.__dict__)
`;
