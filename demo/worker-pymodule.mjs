// Loads a Python source file served next to the demo as its own module in the worker's Pyodide.
//
// Why not pyodide.runPython(source): that runs in __main__'s namespace, which is the user's
// notebook namespace — the very thing a checkpoint captures. The demo's helpers (and even the
// `import sys` that sets them up) must never show up among the user's variables.
export function privateGlobals(pyodide) {
  return pyodide.toPy({});
}

export async function loadPythonModule(pyodide, name, url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`cannot load ${url} (HTTP ${res.status})`);
  const source = await res.text();
  const scratch = privateGlobals(pyodide);
  try {
    const mod = pyodide.runPython(`
import sys, types
_m = types.ModuleType(${JSON.stringify(name)})
sys.modules[_m.__name__] = _m
_m`, { globals: scratch });
    pyodide.runPython(source, { globals: mod.__dict__ });
    return mod;
  } finally {
    scratch.destroy();
  }
}
