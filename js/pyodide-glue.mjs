// Installs Elastic Lite into a Pyodide instance: the one path every part uses (CLI, demo,
// JupyterLite extension, tests), in Node, a page or a worker.
//
//   import { installElasticLite, createPyodide } from './pyodide-glue.mjs';
//   await installElasticLite(pyodide, { wheelsUrl: '/wheels/', store });   // browser
//   const pyodide = await createPyodide({ store });                          // Node
//
// What it does: reads `wheels.json` (written by scripts/build.d/20-wheel.sh next to the
// wheels; a browser cannot list a directory), unpacks the cloudpickle, dill and elastic_lite
// wheels into site-packages with `pyodide.unpackArchive` (local files or same-origin URLs
// only: never the network, never micropip), compiles the C core shipped inside our wheel
// ASYNCHRONOUSLY (a page's main thread refuses synchronous compiles over 4 KiB) and hands the
// module to Python, and optionally makes `store` the default checkpoint store.

const IN_NODE = typeof process !== 'undefined' && !!process.versions?.node &&
  typeof window === 'undefined' && typeof WorkerGlobalScope === 'undefined';

// The wheels every installation needs, by distribution name prefix.
export const WHEELS = ['cloudpickle', 'dill', 'elastic_lite'];

// Node-only modules (node:*, pyodide) are imported through this, so that a bundler building
// for the browser leaves them alone: webpack skips what webpackIgnore marks, and a specifier
// that is not a literal is not resolved by other bundlers either.
const nodeImport = (specifier) => import(/* webpackIgnore: true */ /* @vite-ignore */ specifier);

function defaultWheelsDir() {
  // Node only. Not `new URL('…', import.meta.url)` written out: bundlers would try to bundle
  // the folder as an asset.
  const here = import.meta.url;
  return new URL('../build/wheels/', here);
}

async function nodeRead(dir, file) {
  const fs = await nodeImport('node:fs/promises');
  const { fileURLToPath } = await nodeImport('node:url');
  const path = await nodeImport('node:path');
  const base = dir instanceof URL ? fileURLToPath(dir) : String(dir);
  return new Uint8Array(await fs.readFile(path.join(base, file)));
}

async function urlRead(baseUrl, file) {
  const url = new URL(file, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`Elastic Lite: cannot fetch ${url} (HTTP ${res.status}); build the wheels with \`npm run build\` and serve build/wheels/.`);
  return new Uint8Array(await res.arrayBuffer());
}

function makeReader({ wheelsDir, wheelsUrl }) {
  if (wheelsUrl) return (file) => urlRead(String(wheelsUrl), file);
  if (!IN_NODE && !wheelsDir) throw new Error('Elastic Lite: in a browser pass { wheelsUrl } (where build/wheels/ is served).');
  const dir = wheelsDir ?? defaultWheelsDir();
  return (file) => nodeRead(dir, file);
}

/**
 * The wheel file names to install, from wheels.json (Node falls back to listing the dir).
 * @param {{ wheelsDir?: string|URL, wheelsUrl?: string }} [options]
 */
export async function wheelFiles(options = {}) {
  const read = makeReader(options);
  let names;
  try {
    names = JSON.parse(new TextDecoder().decode(await read('wheels.json'))).wheels;
  } catch (err) {
    if (!IN_NODE || options.wheelsUrl) throw new Error(`Elastic Lite: cannot read wheels.json: ${err.message}; run \`npm run build\`.`);
    const fs = await nodeImport('node:fs/promises');
    const { fileURLToPath } = await nodeImport('node:url');
    const dir = options.wheelsDir ?? defaultWheelsDir();
    names = await fs.readdir(dir instanceof URL ? fileURLToPath(dir) : dir);
  }
  const picked = WHEELS.map((dist) => {
    const file = names.filter((n) => n.startsWith(`${dist}-`) && n.endsWith('.whl')).sort().pop();
    if (!file) throw new Error(`Elastic Lite: no ${dist} wheel in the wheels directory; run \`npm run build\`.`);
    return file;
  });
  return { picked, read };
}

/**
 * Installs cloudpickle, dill and elastic_lite into `pyodide` and returns the `elastic_lite`
 * module (a PyProxy). Wheels already importable (e.g. preloaded by a JupyterLite kernel) are
 * not unpacked again unless `force`.
 * @param {object} pyodide a loaded Pyodide instance
 * @param {object} [options]
 * @param {string|URL} [options.wheelsDir] Node: directory holding the wheels (default build/wheels)
 * @param {string} [options.wheelsUrl] browser: URL of that directory
 * @param {object} [options.store] a JS store (js/store/*.mjs) to make the default
 * @param {boolean} [options.force] unpack even if the module is importable already
 */
export async function installElasticLite(pyodide, { wheelsDir, wheelsUrl, store, force = false } = {}) {
  const { picked, read } = await wheelFiles({ wheelsDir, wheelsUrl });
  // pyimport, not runPython: runPython would bind `sysconfig`/`importlib` in __main__, which
  // is the user's namespace (and would end up in their checkpoints as module bindings).
  const sysconfig = pyodide.pyimport('sysconfig');
  const paths = sysconfig.get_paths();
  const site = paths.get('purelib');
  paths.destroy();
  sysconfig.destroy();
  const importlibUtil = pyodide.pyimport('importlib.util');
  try {
    for (const [i, file] of picked.entries()) {
      const spec = importlibUtil.find_spec(WHEELS[i]);
      const present = !force && spec !== undefined;
      spec?.destroy?.();
      if (present && WHEELS[i] !== 'elastic_lite') continue;
      pyodide.unpackArchive(await read(file), 'wheel', { extractDir: site });
    }
  } finally {
    importlibUtil.destroy();
  }
  const importlib = pyodide.pyimport('importlib');
  importlib.invalidate_caches();
  importlib.destroy();
  const wasm = pyodide.FS.readFile(`${site}/elastic_lite/elastic_lite.wasm`);
  const module = await WebAssembly.compile(wasm);
  const core = pyodide.pyimport('elastic_lite._core');
  core.use_wasm_module(module);
  core.destroy();
  const el = pyodide.pyimport('elastic_lite');
  if (store) el.set_store(store);
  return el;
}

/**
 * Node (tests, CLI): a fresh Pyodide from node_modules with Elastic Lite installed.
 * Extra options go to loadPyodide (e.g. stdout, stderr).
 * @param {{ wheelsDir?: string|URL, wheelsUrl?: string, store?: object } & Record<string, any>} [options]
 * @returns {Promise<import('pyodide').PyodideAPI>}
 */
export async function createPyodide({ wheelsDir, wheelsUrl, store, ...loadOptions } = {}) {
  const { loadPyodide } = await nodeImport('pyodide');
  // The test runs start every interpreter from one memory snapshot of a fresh one (scripts/test.sh)
  const snapshot = process.env.ELASTIC_LITE_PYODIDE_SNAPSHOT;
  if (snapshot) loadOptions._loadSnapshot = (await nodeImport('node:fs')).readFileSync(snapshot);
  const pyodide = await loadPyodide(loadOptions);
  if (snapshot && (await nodeImport('node:fs')).existsSync(`${snapshot}.pycache`)) { // and the wheels' bytecode
    pyodide.FS.mkdirTree('/el-pycache');
    pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: `${snapshot}.pycache` }, '/el-pycache');
    const sys = pyodide.pyimport('sys'); sys.pycache_prefix = '/el-pycache'; sys.destroy();
  }
  await installElasticLite(pyodide, { wheelsDir, wheelsUrl, store });
  return pyodide;
}
