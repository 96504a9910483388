// The project's one version number (`version` in package.json) is the one every artifact
// carries: the C core (el_version, wasm and native), the kernel wheel (file name, metadata,
// elastic_lite.__version__ from the wheel and from the checkout), the JupyterLite extension
// (its package.json, the built labextension, its wheel) and the npm tarball.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, VERSION, VENV_PYTHON, archiveText, distFile, run } from './helpers.mjs';
import { loadCore } from '../../js/core.mjs';

test('package.json holds a semantic version', () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+([-.+][0-9A-Za-z.-]+)?$/);
});

test('the C core reports it: el_version of the .wasm and of the native library', async () => {
  const core = await loadCore(path.join(ROOT, 'build/wasm/elastic_lite.wasm'));
  assert.equal(core.version, VERSION);
  const native = run(VENV_PYTHON, ['-c',
    'import ctypes,sys; lib=ctypes.CDLL(sys.argv[1]); lib.el_version.restype=ctypes.c_char_p; print(lib.el_version().decode())',
    path.join(ROOT, 'build/native/libelastic_lite.so')]).stdout.trim();
  assert.equal(native, VERSION);
});

test('the kernel wheel carries it: file name, METADATA, elastic_lite.__version__', () => {
  const wheel = path.join(ROOT, 'build/wheels', `elastic_lite-${VERSION}-py3-none-any.whl`);
  assert.ok(fs.existsSync(wheel), `${wheel} is missing: run npm run build`);
  assert.match(archiveText(wheel, `elastic_lite-${VERSION}.dist-info/METADATA`), new RegExp(`^Version: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
  assert.match(archiveText(wheel, 'elastic_lite/_build_version.py'), new RegExp(`VERSION = '${VERSION.replace(/\./g, '\\.')}'`));
  const index = JSON.parse(fs.readFileSync(path.join(ROOT, 'build/wheels/wheels.json'), 'utf8'));
  assert.equal(index.elastic_lite, path.basename(wheel));
  // from the checkout (no stamp file): read from package.json
  const fromCheckout = run(VENV_PYTHON, ['-c', 'import sys; sys.path.insert(0, sys.argv[1]); import elastic_lite; print(elastic_lite.__version__)',
    path.join(ROOT, 'py')]).stdout.trim();
  assert.equal(fromCheckout, VERSION);
});

test('the JupyterLite extension carries it: its package.json (stamped by the build) and lock', () => {
  const ext = JSON.parse(fs.readFileSync(path.join(ROOT, 'js/extension/package.json'), 'utf8'));
  assert.equal(ext.version, VERSION, 'js/extension/package.json: run npm run build (it stamps the version) and commit it');
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'js/extension/package-lock.json'), 'utf8'));
  assert.equal(lock.version, VERSION);
  assert.equal(lock.packages[''].version, VERSION);
});

test('the extension wheel carries it: file name, METADATA, the labextension and the kernel wheel inside', () => {
  const wheel = path.join(ROOT, 'build/jupyterlite', `jupyterlite_elastic_lite-${VERSION}-py3-none-any.whl`);
  assert.ok(fs.existsSync(wheel), `${wheel} is missing: run npm run build`);
  assert.match(archiveText(wheel, `jupyterlite_elastic_lite-${VERSION}.dist-info/METADATA`), new RegExp(`^Version: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
  const share = `jupyterlite_elastic_lite-${VERSION}.data/data/share/jupyter/labextensions/elastic-lite-jupyterlite`;
  const labext = JSON.parse(archiveText(wheel, `${share}/package.json`));
  assert.equal(labext.version, VERSION);
  const index = JSON.parse(archiveText(wheel, `${share}/static/pypi/all.json`));
  assert.deepEqual(Object.keys(index['elastic-lite'].releases), [VERSION]);
  assert.equal(index['elastic-lite'].releases[VERSION][0].filename, `elastic_lite-${VERSION}-py3-none-any.whl`);
});

test('dist/ holds the packages of this version: npm tarball (its package.json), both wheels', () => {
  const tgz = distFile('elastic-lite-', '.tgz');
  assert.equal(path.basename(tgz), `elastic-lite-${VERSION}.tgz`);
  assert.equal(JSON.parse(archiveText(tgz, 'package/package.json')).version, VERSION);
  assert.equal(path.basename(distFile('elastic_lite-', '-any.whl')), `elastic_lite-${VERSION}-py3-none-any.whl`);
  assert.equal(path.basename(distFile('jupyterlite_elastic_lite-', '.whl')), `jupyterlite_elastic_lite-${VERSION}-py3-none-any.whl`);
});
