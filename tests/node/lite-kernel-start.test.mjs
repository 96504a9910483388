// What makes the JupyterLite site's kernels start faster, checked on the built site (build/lite,
// or ELASTIC_LITE_SITE):
// - its wheels carry their modules' bytecode for Pyodide's Python (scripts/precompile-wheels.mjs,
//   run by scripts/build.d/40-jupyterlite.sh), so that a kernel imports IPython, jedi,
//   prompt_toolkit... and elastic_lite without compiling their sources on every start: in a
//   Pyodide started from the site's own interpreter and lock, loading packages as the kernel
//   does, every module has its pyc, importing uses it (no source is compiled), and a traceback
//   through a precompiled module still shows its source lines;
// - the static server (demo/server.mjs) answers a revalidation of an unchanged file with 304, so
//   a reload keeps the cached Pyodide and what V8 compiled from it;
// - its kernels start Python from a memory snapshot made in Chromium (scripts/lite-snapshot.mjs;
//   lite/pyodide-from-snapshot.mjs is the site's pyodide.mjs): the snapshot is there; with an
//   unusable one Pyodide starts the plain way. That a kernel started from it works is what every
//   JupyterLite browser test does.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { tempDirSync } from '../helpers/tempdir.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SITE = process.env.ELASTIC_LITE_SITE || path.join(ROOT, 'build', 'lite');
const PYODIDE_DIR = path.join(SITE, 'static', 'pyodide');
const OUR_PYPI = path.join(SITE, 'extensions', 'elastic-lite-jupyterlite', 'static', 'pypi');

const wheelsIn = (dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.whl')).map((f) => path.join(dir, f));

test('the site\'s wheels hold a pyc for each module, and Pyodide imports from them', async (t) => {
  assert.ok(fs.existsSync(path.join(PYODIDE_DIR, 'pyodide-lock.json')), `${SITE} is missing: run npm run build`);
  const { loadPyodide } = await import(path.join(PYODIDE_DIR, 'pyodide.mjs'));
  const snapshot = process.env.ELASTIC_LITE_PYODIDE_SNAPSHOT;
  const pyodide = await loadPyodide({
    indexURL: PYODIDE_DIR,
    ...(snapshot && fs.existsSync(snapshot) ? { _loadSnapshot: fs.readFileSync(snapshot) } : {}),
  });
  pyodide.FS.mkdirTree('/wheels');
  const wheels = [...wheelsIn(PYODIDE_DIR), ...wheelsIn(OUR_PYPI)];
  for (const w of wheels) pyodide.FS.writeFile(`/wheels/${path.basename(w)}`, fs.readFileSync(w));

  await t.test('every module of every wheel has its pyc (an unchecked-hash one)', () => {
    const missing = pyodide.runPython(`
import importlib.util, os, zipfile
missing = []
for name in sorted(os.listdir('/wheels')):
    with zipfile.ZipFile('/wheels/' + name) as z:
        names = set(z.namelist())
        for f in sorted(names):
            if f.endswith('.py') and '.dist-info/' not in f:
                pyc = importlib.util.cache_from_source(f)
                # flags 0b01: hash-based, not checked against the source (PEP 552)
                if pyc not in names or int.from_bytes(z.read(pyc)[4:8], 'little') != 1:
                    missing.append(f'{name}: {f}')
missing`).toJs();
    // (a source that is not Python 3 gets none: none of these wheels holds one)
    assert.deepEqual(missing, [], `modules without their bytecode: ${missing.slice(0, 10).join(', ')}`);
    assert.ok(wheels.length >= 20, `only ${wheels.length} wheels found in ${SITE}`);
  });

  await t.test('importing them compiles no source, and a traceback shows the source lines', async () => {
    // as the kernel loads them: from the site's lock (its start-up wheels) and by URL (ours)
    await pyodide.loadPackage(['traitlets']);
    await pyodide.loadPackage(wheelsIn(OUR_PYPI).map((w) => w));
    const result = pyodide.runPython(`
import importlib._bootstrap_external as be, sys, traceback
compiled = []
original = be.SourceLoader.source_to_code
be.SourceLoader.source_to_code = lambda self, data, path, *a, **k: (compiled.append(path), original(self, data, path, *a, **k))[1]
try:
    import traitlets, elastic_lite, dill, cloudpickle
finally:
    be.SourceLoader.source_to_code = original
try:
    traitlets.Int().validate(None, 'not a number')
    lines = []
except traitlets.TraitError as e:
    lines = [(f.filename, f.line) for f in traceback.extract_tb(e.__traceback__) if '/traitlets/' in f.filename]
{'compiled': [p for p in compiled if '/site-packages/' in p], 'cached': traitlets.traitlets.__cached__,
 'lines': lines}`).toJs({ dict_converter: Object.fromEntries });
    assert.deepEqual(result.compiled, [], `compiled at import: ${result.compiled.slice(0, 10).join(', ')}`);
    assert.match(result.cached, /__pycache__\/traitlets\.cpython-\d+\.pyc$/);
    assert.ok(result.lines.length > 0, 'the error was raised inside traitlets');
    for (const [file, line] of result.lines) assert.ok(line && line.trim(), `no source line shown for ${file}`);
  });
});

test('the site\'s kernels start from its snapshot; with an unusable one, the plain way', async (t) => {
  const config = JSON.parse(fs.readFileSync(path.join(SITE, 'jupyter-lite.json'), 'utf8'));
  const kernel = config['jupyter-config-data'].litePluginSettings['@jupyterlite/pyodide-kernel-extension:kernel'];
  assert.equal(kernel.pyodideUrl, './static/pyodide/pyodide.mjs');
  const made = 'scripts/lite-snapshot.mjs did not run (or failed) when the Pyodide archive was made (npm run build says why)';
  assert.ok(fs.existsSync(path.join(PYODIDE_DIR, 'pyodide-core.mjs')), `Pyodide's own module is not pyodide-core.mjs: ${made}`);
  assert.ok(fs.statSync(path.join(PYODIDE_DIR, 'pyodide.snapshot')).size > 2 ** 20, `no snapshot: ${made}`);
  // The snapshot was made in Chromium, with its stack switching (JSPI, WebAssembly.Suspending);
  // the browser tests start every kernel from it. Node 20 has no such JSPI (the module starts
  // Pyodide the plain way there); given a stand-in WebAssembly.Suspending (seen by the module
  // only) and a snapshot that is not one, it tries, says so, and starts plain.
  // (Node's fetch does not serve file: URLs: this stand-in serves the site's folder.)
  const realFetch = globalThis.fetch;
  const fetched = [];
  globalThis.fetch = async (url) => {
    if (!String(url).startsWith('file:')) return realFetch(url);
    fetched.push(path.basename(fileURLToPath(url)));
    delete WebAssembly.Suspending; // (the stand-in below: Pyodide itself must not see it)
    return new Response(new Uint8Array(1024));
  };
  t.after(() => { globalThis.fetch = realFetch; });
  const { loadPyodide } = await import(pathToFileURL(path.join(PYODIDE_DIR, 'pyodide.mjs')).href);
  const state = `import random, sys
str([sys.path[:2], 'pyodide_kernel' in sys.modules, 6 * 7])`;
  const fresh = /^\[\['', '\/lib\/python\d+\.zip'\], False, 42\]$/;

  await t.test('an unusable snapshot: the plain way, and a warning', async () => {
    WebAssembly.Suspending = function Suspending() {};
    const warned = [];
    const warn = console.warn;
    console.warn = (m) => warned.push(m);
    try {
      const pyodide = await loadPyodide({ indexURL: `${PYODIDE_DIR}/` });
      assert.match(pyodide.runPython(state), fresh);
    } finally {
      console.warn = warn;
      delete WebAssembly.Suspending;
    }
    assert.deepEqual(fetched, ['pyodide.snapshot']);
    assert.match(warned.join('\n'), /did not start from its snapshot .*plain way/);
  });
});

test('the static server answers a revalidation of an unchanged file with 304, so a reload keeps what the browser compiled', async (t) => {
  const { startServer } = await import('../../demo/server.mjs');
  const dir = tempDirSync('el-etag-');
  fs.writeFileSync(path.join(dir, 'a.wasm'), 'one');
  const server = await startServer({ root: dir, port: 0 });
  t.after(() => server.close());
  const url = `${server.url}a.wasm`;
  const first = await fetch(url);
  assert.equal(first.status, 200);
  assert.equal(await first.text(), 'one');
  assert.equal(first.headers.get('cache-control'), 'no-cache', 'always revalidated');
  const etag = first.headers.get('etag');
  assert.ok(etag, 'a validator');
  const again = await fetch(url, { headers: { 'If-None-Match': etag } });
  assert.equal(again.status, 304);
  // a changed file (same size, a later time) is sent again
  fs.writeFileSync(path.join(dir, 'a.wasm'), 'two');
  fs.utimesSync(path.join(dir, 'a.wasm'), new Date(), new Date(Date.now() + 1500));
  const changed = await fetch(url, { headers: { 'If-None-Match': etag } });
  assert.equal(changed.status, 200);
  assert.equal(await changed.text(), 'two');
});
