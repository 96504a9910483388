// The Pyodide entry point of the site's kernels: the Pyodide distribution the site serves
// (lite/make_pyodide.py, scripts/lite-snapshot.mjs) has this file as pyodide.mjs and Pyodide's
// own as pyodide-core.mjs. The same module, except that loadPyodide starts Python from
// `pyodide.snapshot`, a memory snapshot of a freshly started interpreter made from these very
// files when the distribution was made, in a Chromium web worker, instead of initialising Python
// anew (about 4 s less CPU per kernel start there).
// The snapshot holds the stack-switching set-up of the runtime that made it: it is used only
// where WebAssembly has JSPI (WebAssembly.Suspending) as there.
//
// What differs from a plain start: `random` is seeded afresh here (the snapshot's generator
// state would otherwise be every kernel's), but str hashes use the seed of the build, the same
// in every kernel of the site (Python's hash randomization protects servers from crafted keys;
// a kernel runs its own user's code). Without the snapshot file, or when Pyodide cannot restore
// it, or when the caller asks for snapshot options itself, this is a plain loadPyodide.
import { loadPyodide as loadPlain } from './pyodide-core.mjs';

export * from './pyodide-core.mjs';

const SNAPSHOT = new URL('./pyodide.snapshot', import.meta.url);

async function fetchSnapshot() {
  const res = await fetch(SNAPSHOT);
  if (!res.ok) throw new Error(`${SNAPSHOT}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

export async function loadPyodide(options = {}) {
  if ('_loadSnapshot' in options || '_makeSnapshot' in options || !('Suspending' in WebAssembly)) {
    return loadPlain(options);
  }
  let pyodide;
  try {
    // the download runs while Pyodide fetches and compiles its .wasm (it awaits the promise)
    pyodide = await loadPlain({ ...options, _loadSnapshot: fetchSnapshot() });
  } catch (e) {
    console.warn(`Pyodide did not start from its snapshot (${e.message}): starting it the plain way`);
    return loadPlain(options);
  }
  // loadPyodide put '' in front of sys.path in the snapshot's run already; and a fresh seed
  pyodide.runPython(`import sys
if sys.path[:2] == ['', '']: del sys.path[0]
if 'random' in sys.modules: sys.modules['random'].seed()
del sys`);
  return pyodide;
}
