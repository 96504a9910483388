// Calling elastic_lite.host from JS that holds the Pyodide instance itself (the CLI under
// Node, the demo page's worker): one function, so both cross into Python the same way.
// The JupyterLite extension reaches the kernel through silent snippets instead
// (js/extension/src/python.ts), which end in the same host.call.
//
// No imports: loadable in Node, a page and a worker.

const hostCalls = new WeakMap(); // pyodide instance -> its elastic_lite.host.call

/**
 * Runs elastic_lite.host operation `op` (docs/INTERFACES.md, "Report schema") and resolves to
 * its report, a plain object. `data`: container bytes (Uint8Array) for restore / inspect /
 * import; `progress(event)`: called with each progress event (a plain object).
 */
export async function callHost(pyodide, op, kwargs = {}, { data = null, progress = null } = {}) {
  if (!hostCalls.has(pyodide)) {
    const host = pyodide.pyimport('elastic_lite.host');
    hostCalls.set(pyodide, host.call.copy()); // an attribute proxy dies with its module proxy
    host.destroy();
  }
  // undefined, not null, for "none": JS null reaches Python as jsnull, undefined as None
  const onProgress = progress ? (json) => progress(JSON.parse(json)) : undefined;
  // the report as UTF-8 bytes (utf8 = true): a str Python made above 2 GiB of its heap would
  // cross as NULs (py/elastic_lite/_jsbytes.py, "Strings")
  const report = await hostCalls.get(pyodide)(op, JSON.stringify(kwargs), data ?? undefined, onProgress, true);
  return JSON.parse(new TextDecoder().decode(report));
}
