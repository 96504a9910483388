// The JupyterLite extension wheel, as a site's author uses it: in a fresh virtual environment,
// offline (the wheels set-up downloaded, with the packages of dist/), `pip install
// jupyterlite-core[contents] jupyterlite-pyodide-kernel jupyterlite_elastic_lite-*.whl` (the
// `contents` extra puts notebooks into a site) and `jupyter lite build`:
//   - with no option at all, the site has the extension and offers the kernel wheel through the
//     extension's piplite index (Pyodide itself would come from its CDN: not run here);
//   - with the one documented offline setting (`--pyodide` + the Pyodide archive of dist/), on
//     the project's lite dir (lite/), the site is build/lite file for file and byte for byte
//     (less the source maps build/lite leaves out, the build's times in the contents listing
//     and a language-pack note of the build environment). build/lite is the site the Chromium
//     suite drives offline: its reload-and-restore test (tests/browser/jupyterlite.test.mjs)
//     and the other JupyterLite tests checkpoint and restore on these very bytes, so they are
//     not run a second time here.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT, VERSION, distFile, freshVenv, run, tempDir } from './helpers.mjs';

const versions = Object.fromEntries(fs.readFileSync(path.join(ROOT, 'versions.env'), 'utf8')
  .split('\n').map((l) => l.match(/^([A-Z0-9_]+)=("?)([^"]*)\2\s*$/)).filter(Boolean).map((m) => [m[1], m[3]]));
const PROJECT_SITE = path.join(ROOT, 'build', 'lite');

/** A venv in `dir` with the JupyterLite build tools and our extension, installed offline. */
function siteBuilder(dir) {
  const wheels = path.join(dir, 'wheels');
  fs.cpSync(path.join(ROOT, 'build', 'pip-wheels'), wheels, { recursive: true });
  const ext = path.join(wheels, path.basename(distFile('jupyterlite_elastic_lite-', '.whl')));
  fs.copyFileSync(distFile('jupyterlite_elastic_lite-', '.whl'), ext);
  // nothing but these wheels, and no Jupyter configuration or data of this machine's user
  const venv = freshVenv(path.join(dir, 'venv'), {
    JUPYTER_CONFIG_DIR: path.join(dir, 'jupyter-config'), JUPYTER_DATA_DIR: path.join(dir, 'jupyter-data'),
  });
  const env = { ...venv.env, PATH: `${venv.bin}:${process.env.PATH}` };
  delete env.JUPYTER_PATH;
  venv.pip('--find-links', wheels, `jupyterlite-core[contents]==${versions.JUPYTERLITE_CORE_VERSION}`,
    `jupyterlite-pyodide-kernel==${versions.JUPYTERLITE_PYODIDE_KERNEL_VERSION}`, ext);
  return {
    /** `jupyter lite build ARGS` in a lite dir holding `copy` (paths copied in); returns the output folder. */
    build(name, args = [], copy = []) {
      const lite = path.join(dir, `${name}-src`);
      fs.mkdirSync(lite, { recursive: true });
      for (const src of copy) fs.cpSync(src, path.join(lite, path.basename(src)), { recursive: true });
      const out = path.join(dir, name);
      run('jupyter', ['lite', 'build', '--lite-dir', lite, '--output-dir', out, ...args], { cwd: lite, env });
      return out;
    },
  };
}

const kernelSettings = (site) => JSON.parse(fs.readFileSync(path.join(site, 'jupyter-lite.json'), 'utf8'))['jupyter-config-data']
  .litePluginSettings['@jupyterlite/pyodide-kernel-extension:kernel'];

/** Relative paths of the files under `dir`. */
const filesOf = (dir) => fs.readdirSync(dir, { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name))).sort();

// What two builds of the same inputs may differ in: the times of the build in the contents
// listing, and the translations' note that no language pack is installed (the project's .venv
// has JupyterLab's, a site author's venv need not).
// (null: a file that must be the same bytes)
function comparable(rel, bytes) {
  const drop = rel.startsWith(`api${path.sep}contents${path.sep}`) ? ['created', 'last_modified']
    : rel.startsWith(`api${path.sep}translations${path.sep}`) ? ['message'] : null;
  if (!drop || !rel.endsWith('.json')) return null;
  return JSON.stringify(JSON.parse(bytes.toString('utf8')), (k, v) => (drop.includes(k) ? undefined : v));
}

test('pip install + jupyter lite build, no option: the extension and the kernel wheel are in the site; '
  + 'with --pyodide only, on lite/: the site is build/lite, which the Chromium suite checkpoints and restores in, offline', { timeout: 900_000 }, (t) => {
  assert.ok(fs.existsSync(path.join(PROJECT_SITE, 'jupyter-lite.json')), `${PROJECT_SITE} is missing: run \`npm run pack\``);
  const dir = tempDir(t);
  const builder = siteBuilder(dir);

  // 1. no option at all
  const plain = builder.build('site-plain');
  const ext = path.join(plain, 'extensions', 'elastic-lite-jupyterlite');
  assert.equal(JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8')).version, VERSION);
  const federated = JSON.parse(fs.readFileSync(path.join(plain, 'jupyter-lite.json'), 'utf8'))['jupyter-config-data'].federated_extensions;
  assert.ok(federated.some((e) => e.name === 'elastic-lite-jupyterlite'), 'the site loads the extension');
  const urls = kernelSettings(plain).pipliteUrls ?? [];
  const ours = urls.find((u) => u.startsWith('./extensions/elastic-lite-jupyterlite/static/pypi/all.json'));
  assert.ok(ours, `the kernel's pipliteUrls include the extension's index: ${JSON.stringify(urls)}`);
  const index = JSON.parse(fs.readFileSync(path.join(plain, ours.split('?')[0]), 'utf8'));
  const release = index['elastic-lite'].releases[VERSION][0];
  assert.ok(fs.existsSync(path.join(ext, 'static', 'pypi', release.filename)), `${release.filename} is served by the site`);
  for (const dep of ['cloudpickle', 'dill']) assert.ok(index[dep], `the index offers ${dep}`);
  assert.equal(kernelSettings(plain).pyodideUrl, undefined, 'no option: Pyodide comes from its CDN');

  // 2. offline: the one setting, a Pyodide distribution for the site to serve; the lite dir
  // of the project's own site (its notebooks and settings)
  const archive = path.join(dir, path.basename(distFile('pyodide-', '.tar.bz2')));
  fs.copyFileSync(distFile('pyodide-', '.tar.bz2'), archive);
  const offline = builder.build('site-offline', ['--pyodide', archive],
    ['files', 'jupyter-lite.json'].map((f) => path.join(ROOT, 'lite', f)));
  assert.equal(kernelSettings(offline).pyodideUrl, './static/pyodide/pyodide.mjs');

  // the same site as build/lite
  const built = filesOf(offline).filter((f) => !f.endsWith('.map'));
  const project = filesOf(PROJECT_SITE).filter((f) => !path.basename(f).startsWith('.build-stamp'));
  const stale = 'build/lite is not the site of dist/\'s packages: run `npm run pack`';
  assert.deepEqual(built, project, `the same files (source maps aside): ${stale}`);
  const differ = built.filter((f) => {
    const a = fs.readFileSync(path.join(offline, f));
    const b = fs.readFileSync(path.join(PROJECT_SITE, f));
    return !a.equals(b) && (comparable(f, a) === null || comparable(f, a) !== comparable(f, b));
  });
  assert.deepEqual(differ, [], `the same bytes: ${stale}`);
});
