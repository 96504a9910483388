// The JupyterLite site's wheels carry their modules' bytecode for Pyodide's Python
// (scripts/precompile-wheels.mjs, run by scripts/build.d/40-jupyterlite.sh), so that a kernel
// imports IPython, jedi, prompt_toolkit... and elastic_lite without compiling their sources on
// every start. Checked on the built site (build/lite, or ELASTIC_LITE_SITE), in a Pyodide
// started from the site's own interpreter and lock, loading packages as the kernel does:
// every module of every wheel has its pyc; importing uses it (no source is compiled); a
// traceback through a precompiled module still shows its source lines.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

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
