// The JupyterLite extension wheel, as a site's author uses it: in a fresh virtual environment,
// offline (the wheels set-up downloaded, copied into a temporary folder with the packages of
// dist/), `pip install jupyterlite-core jupyterlite-pyodide-kernel jupyterlite_elastic_lite-*.whl`
// and `jupyter lite build` (plus jupyterlite-core's `contents` extra, to put a notebook in):
//   - with no option at all, the site has the extension and offers the kernel wheel through the
//     extension's piplite index (Pyodide itself would come from its CDN: not run here);
//   - with the one documented offline setting (`--pyodide` + the Pyodide archive of dist/), the
//     site passes the reload-and-restore browser test (tests/browser/jupyterlite.test.mjs, run
//     against this site), offline.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT, VERSION, distFile, run, tempDir } from './helpers.mjs';

const versions = Object.fromEntries(fs.readFileSync(path.join(ROOT, 'versions.env'), 'utf8')
  .split('\n').map((l) => l.match(/^([A-Z0-9_]+)=("?)([^"]*)\2\s*$/)).filter(Boolean).map((m) => [m[1], m[3]]));

/** A venv in `dir` with the JupyterLite build tools and our extension, installed offline. */
function siteBuilder(dir) {
  const wheels = path.join(dir, 'wheels');
  fs.cpSync(path.join(ROOT, 'build', 'pip-wheels'), wheels, { recursive: true });
  const ext = path.join(wheels, path.basename(distFile('jupyterlite_elastic_lite-', '.whl')));
  fs.copyFileSync(distFile('jupyterlite_elastic_lite-', '.whl'), ext);
  const venv = path.join(dir, 'venv');
  run('python3', ['-m', 'venv', venv]);
  // nothing but these wheels, and no Jupyter configuration or data of this machine's user
  const env = {
    ...process.env, PIP_CONFIG_FILE: '/dev/null', PIP_FIND_LINKS: '', PIP_NO_INDEX: '1',
    JUPYTER_CONFIG_DIR: path.join(dir, 'jupyter-config'), JUPYTER_DATA_DIR: path.join(dir, 'jupyter-data'),
    PATH: `${path.join(venv, 'bin')}:${process.env.PATH}`,
  };
  delete env.JUPYTER_PATH;
  run(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--no-index', '--find-links', wheels,
    `jupyterlite-core==${versions.JUPYTERLITE_CORE_VERSION}`,
    `jupyterlite-pyodide-kernel==${versions.JUPYTERLITE_PYODIDE_KERNEL_VERSION}`, ext], { env });
  return {
    env,
    /** pip install ARGS into the venv, from the same wheels only. */
    pip(...args) {
      run(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--no-index', '--find-links', wheels, ...args], { env });
    },
    /** `jupyter lite build ARGS` in a lite dir holding `files`; returns the output folder. */
    build(name, args = [], files = {}) {
      const lite = path.join(dir, `${name}-src`);
      fs.mkdirSync(path.join(lite, 'files'), { recursive: true });
      for (const [file, src] of Object.entries(files)) fs.copyFileSync(src, path.join(lite, 'files', file));
      const out = path.join(dir, name);
      run('jupyter', ['lite', 'build', '--lite-dir', lite, '--output-dir', out, ...args], { cwd: lite, env });
      return out;
    },
  };
}

const kernelSettings = (site) => JSON.parse(fs.readFileSync(path.join(site, 'jupyter-lite.json'), 'utf8'))['jupyter-config-data']
  .litePluginSettings['@jupyterlite/pyodide-kernel-extension:kernel'];

test('pip install + jupyter lite build, no option: the extension and the kernel wheel are in the site; '
  + 'with --pyodide only: the reload-and-restore test passes on it, offline', { timeout: 900_000 }, (t) => {
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

  // 2. offline: the one setting, a Pyodide distribution for the site to serve. The example
  // notebook goes into the site too, which JupyterLite does with jupyter-server (its
  // `contents` extra), as any site with notebooks of its own needs.
  builder.pip(`jupyterlite-core[contents]==${versions.JUPYTERLITE_CORE_VERSION}`);
  const archive = path.join(dir, path.basename(distFile('pyodide-', '.tar.bz2')));
  fs.copyFileSync(distFile('pyodide-', '.tar.bz2'), archive);
  const offline = builder.build('site-offline', ['--pyodide', archive],
    { 'elastic-lite-demo.ipynb': path.join(ROOT, 'lite', 'files', 'elastic-lite-demo.ipynb') });
  assert.equal(kernelSettings(offline).pyodideUrl, './static/pyodide/pyodide.mjs');

  // a test run of its own (NODE_TEST_CONTEXT would make it a silent no-op inside this one)
  const { NODE_TEST_CONTEXT: _, ...outside } = process.env;
  const browser = run('node', ['--test', '--test-name-pattern=reload the page', 'tests/browser/jupyterlite.test.mjs'],
    { cwd: ROOT, env: { ...outside, ELASTIC_LITE_SITE: offline }, allowFail: true, timeout: 600_000 });
  const count = (what) => Number((browser.stdout.match(new RegExp(`^# ${what} (\\d+)$`, 'm')) ?? [])[1] ?? -1);
  assert.ok(browser.status === 0 && count('pass') === 1 && count('fail') === 0,
    `the reload-and-restore test on the site built from the wheel:\n${browser.stdout.slice(-6000)}\n${browser.stderr.slice(-2000)}`);
});
