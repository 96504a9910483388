// Elastic Lite in desktop JupyterLab, in Chromium: a real `jupyter lab` server (the project's
// .venv, where the build pip-installed the extension's Python package, so JupyterLab loads it
// as a prebuilt labextension) on 127.0.0.1, token off, its root a temporary folder, and a
// CPython kernel spec whose Python is a fresh venv with the host wheel (build/native-wheel)
// pip-installed — no environment variable of this project. The extension loads elastic_lite
// in the kernel by itself; the kernel keeps its checkpoints in `.elastic-lite/` beside the
// notebook and takes the automatic point after each cell, and the sidebar lists them through
// the kernel with the kernel's labels.
//
// 1. cells → their automatic points in the sidebar (one per cell: the page takes none of its
//    own) → Kernel → Restart → the restore offer → Restore; the record files deleted behind
//    the kernel's back → the sidebar says the checkpoints are lost and deletes them → the next
//    cell's point is whole → a cell prints the state.
// 2. sessions moving between JupyterLite (build/lite, served beside it) and CPython, the way
//    a person moves them: the sidebar's Export (a download), then Import… and Restore in the
//    other; data comes back, and the code of the other Python minor version is refused by name
//    with the reason (Pyodide is Python 3.14, the host 3.11).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import {
  ITEM, NOTEBOOK, SITE, answerRestoreOffer, appendCell, clickCheckpoint, labUrl, openSidebar,
  restartKernelFromMenu, runCell, waitForNotebook, waitForStatus,
} from './jupyterlite-page.mjs';
import { tempDirSync } from '../helpers/tempdir.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const VENV = path.join(ROOT, '.venv');
const ENV_OF_PROJECT = ['ELASTIC_LITE_NATIVE_LIB', 'ELASTIC_LITE_STORE', 'ELASTIC_LITE_KEY_FILE', 'PYTHONPATH'];
const DESKTOP = 'analysis.ipynb';
const FILE_INPUT = '#elastic-lite-sidebar .jp-ElasticLite-fileInput';

let tmp; let lab; let browser; let lite;

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A fresh venv with the host wheel (and cloudpickle, dill) installed offline; ipykernel from
 * the project's .venv through a .pth file after the venv's own site-packages. */
function kernelPython(env) {
  const wheels = fs.readdirSync(path.join(ROOT, 'build', 'native-wheel')).filter((f) => f.endsWith('.whl'));
  assert.equal(wheels.length, 1, `one host CPython wheel in build/native-wheel (npm run build): ${wheels}`);
  const venv = path.join(tmp, 'kernel-venv');
  run(path.join(VENV, 'bin', 'python'), ['-m', 'venv', venv], { env });
  const python = path.join(venv, 'bin', 'python');
  run(python, ['-m', 'pip', 'install', '--quiet', '--no-index', '--find-links', path.join(ROOT, 'build', 'wheels'),
    path.join(ROOT, 'build', 'native-wheel', wheels[0])], { env: { ...env, PIP_CONFIG_FILE: '/dev/null' }, cwd: tmp });
  const purelib = (py) => run(py, ['-c', "import sysconfig; print(sysconfig.get_paths()['purelib'])"], { env }).trim();
  fs.writeFileSync(path.join(purelib(python), 'zz_project_venv.pth'), `${purelib(path.join(VENV, 'bin', 'python'))}\n`);
  return python;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** `jupyter lab` on 127.0.0.1 (token off, root `root`, kernel spec `el` the default); resolves
 * once /api/status answers. */
async function startLab(env, root) {
  const port = await freePort();
  const proc = spawn(path.join(VENV, 'bin', 'jupyter'), ['lab', '--no-browser', '--ip=127.0.0.1', `--port=${port}`,
    '--allow-root', '--ServerApp.port_retries=0', '--IdentityProvider.token=', '--ServerApp.password=',
    '--ServerApp.disable_check_xsrf=True', `--ServerApp.root_dir=${root}`,
    '--MappingKernelManager.default_kernel_name=el', '--KernelSpecManager.ensure_native_kernel=False',
    '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'],
  { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${port}/`;
  const end = Date.now() + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`jupyter lab exited (${proc.exitCode}):\n${log}`);
    const ok = await fetch(`${url}api/status`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > end) throw new Error(`jupyter lab did not answer on ${url} within 120 s:\n${log}`);
    await new Promise((r) => setTimeout(r, 250)); // polling the server until it answers
  }
  return {
    url, log: () => log,
    async close() {
      if (proc.exitCode !== null) return;
      const gone = new Promise((r) => proc.once('exit', r));
      try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* already gone */ }
      const timer = setTimeout(() => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } }, 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}

function notebook(cells) {
  return JSON.stringify({
    nbformat: 4, nbformat_minor: 5,
    metadata: { kernelspec: { name: 'el', display_name: 'Python (elastic-lite venv)', language: 'python' } },
    cells: cells.map((source, i) => ({ id: `c${i}`, cell_type: 'code', metadata: {}, execution_count: null, outputs: [], source })),
  });
}

before(async () => {
  tmp = tempDirSync('elastic-lite-lab-');
  const home = path.join(tmp, 'home');
  const root = path.join(tmp, 'root');
  const jupyter = path.join(tmp, 'jupyter');
  fs.mkdirSync(home); fs.mkdirSync(root); fs.mkdirSync(path.join(jupyter, 'kernels', 'el'), { recursive: true });
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !ENV_OF_PROJECT.includes(k)));
  Object.assign(env, {
    HOME: home, XDG_DATA_HOME: path.join(home, 'data'), JUPYTER_CONFIG_DIR: path.join(home, 'config'),
    JUPYTER_RUNTIME_DIR: path.join(home, 'runtime'), JUPYTER_PATH: jupyter,
    JUPYTERLAB_SETTINGS_DIR: path.join(home, 'settings'), JUPYTERLAB_WORKSPACES_DIR: path.join(home, 'workspaces'),
  });
  // JupyterLite's Pyodide kernel extension, in the same .venv, is not for this JupyterLab
  fs.mkdirSync(path.join(env.JUPYTER_CONFIG_DIR, 'labconfig'), { recursive: true });
  fs.writeFileSync(path.join(env.JUPYTER_CONFIG_DIR, 'labconfig', 'page_config.json'),
    JSON.stringify({ disabledExtensions: { '@jupyterlite/pyodide-kernel-extension': true } }));
  const python = kernelPython(env);
  fs.writeFileSync(path.join(jupyter, 'kernels', 'el', 'kernel.json'), JSON.stringify({
    argv: [python, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
    display_name: 'Python (elastic-lite venv)', language: 'python',
  }));
  fs.writeFileSync(path.join(root, DESKTOP), notebook([
    "x = 41\nprint('cell one ran')",
    "y = [x, x + 1]\nprint('cell two ran')",
    "print('state', x, y)",
    "print('in cpython', moved, 'twice' in globals())",
    "back = {'from': 'cpython', 'n': 7}\nhalf = lambda v: v / 2\nprint('desktop ready')",
  ]));
  lab = await startLab(env, root);
  lab.root = root;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await lab?.close();
  await lite?.close();
});

/** A page of the browser, with JupyterLab's leave-page questions answered. */
async function newPage() {
  const page = await browser.context.newPage();
  page.on('dialog', (d) => d.accept().catch(() => {}));
  page.__consoleLines = browser.consoleLines;
  return page;
}

/** Opens the desktop notebook with the sidebar, once the kernel has loaded elastic_lite (the
 * sidebar says where the kernel keeps the checkpoints: the folder beside the notebook). */
async function openDesktop(page) {
  await page.goto(`${lab.url}lab/tree/${DESKTOP}`);
  await waitForNotebook(page);
  await openSidebar(page);
  const where = page.locator('#elastic-lite-sidebar .jp-ElasticLite-where');
  await where.waitFor({ timeout: 120_000 });
  assert.equal(await where.innerText(), `Kept by the kernel in ${path.join(lab.root, '.elastic-lite')}`);
  // nothing about the browser's storage or a browser folder: the kernel's store is neither
  assert.equal(await page.locator('#elastic-lite-sidebar :is(.jp-ElasticLite-storage, .jp-ElasticLite-folder)').count(), 0);
}

/** The sidebar's item of checkpoint `name` (data-name), once listed. */
async function itemNamed(page, name) {
  const item = page.locator(`${ITEM}[data-name="${name.replace(/["\\]/g, '\\$&')}"]`).first();
  await item.waitFor({ timeout: 60_000 });
  return item;
}

/** Checkpoint (the toolbar's button), then Export of what it saved; the file's path. */
async function checkpointAndExport(page, file) {
  await clickCheckpoint(page);
  // the newest checkpoint a person took (not an automatic point, not an import)
  const item = page.locator(`${ITEM}:not(.jp-ElasticLite-auto):not([data-name*=" imported "])`).first();
  return exportItem(page, item, file);
}

/** Exports the sidebar's checkpoint item as a person does; the saved file's path. */
async function exportItem(page, item, file) {
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: 60_000 }),
    item.locator('button', { hasText: 'Export' }).click(),
  ]);
  await download.saveAs(file);
  return file;
}

/** Import… of `file` in the sidebar, then Restore of what it was stored as, confirmed (it is
 * foreign: from elsewhere); the restore's status line. */
async function importAndRestore(page, file) {
  await page.locator(FILE_INPUT).setInputFiles(file);
  const status = await waitForStatus(page, /Imported .* as |Import failed/);
  const stored = /Imported .*? as (.*?)(; warning:|$)/.exec(status);
  assert.ok(stored, status);
  const item = await itemNamed(page, stored[1]);
  await item.locator('button', { hasText: 'Restore' }).click();
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Restore anyway' }).click({ timeout: 120_000 });
  return waitForStatus(page, /Restored |Restore failed/);
}

test('desktop JupyterLab, CPython kernel: automatic points listed by the kernel, restart, restore offer, state back', { timeout: 600_000 }, async () => {
  const page = await newPage();
  await openDesktop(page);
  await runCell(page, 0, 'cell one ran');
  await runCell(page, 1, 'cell two ran');
  // the kernel's points, with the kernel's labels ("[2] y = [x, x + 1]")
  const items = page.locator(ITEM);
  await items.filter({ hasText: 'after [2] y = [x, x + 1]' }).first().waitFor({ timeout: 60_000 });
  assert.match(await items.first().innerText(), /after \[2\] y = \[x, x \+ 1\]/);
  // in the folder beside the notebook, on the server's machine, one point per cell: the page
  // took none of its own (the restore offer below comes later than any it would take)
  const store = path.join(lab.root, '.elastic-lite');
  assert.ok(fs.existsSync(store), `no store at ${store}`);

  await restartKernelFromMenu(page);
  const offer = await answerRestoreOffer(page, 'Restore');
  assert.match(offer, /after \[2\] y = \[x, x \+ 1\]/, offer);
  const restored = await waitForStatus(page, /Restored |Restore failed/);
  assert.match(restored, /^Restored 2 variables \(x, y\)/, restored);
  const ls = JSON.parse(run('node', [path.join(ROOT, 'js', 'cli', 'elastic-lite.mjs'), 'ls', '--store', store, '--json']));
  const names = (ls.checkpoints ?? ls.entries ?? ls).map((e) => e.name);
  assert.equal(names.length, 2, `one automatic point per cell, none taken by the page: ${names.join(' | ')}`);

  // record files deleted behind the kernel's back (by hand, by a sync or cleanup tool): the
  // kernel lists both checkpoints as lost; the sidebar says so in one line and deletes them
  const records = path.join(store, 'records');
  for (const f of fs.readdirSync(records)) fs.rmSync(path.join(records, f));
  await page.locator('#elastic-lite-sidebar button', { hasText: 'Refresh' }).click();
  const summary = page.locator('#elastic-lite-sidebar .jp-ElasticLite-lostSummary');
  await summary.waitFor({ timeout: 60_000 });
  assert.match(await summary.innerText(), /^2 checkpoints are lost: their data was deleted from the folder/);
  assert.equal(await page.locator(`${ITEM}.jp-ElasticLite-lost`).count(), 2);
  await page.locator('#elastic-lite-sidebar button', { hasText: 'Delete lost checkpoints' }).click();
  await page.locator('#elastic-lite-sidebar .jp-ElasticLite-empty').waitFor({ timeout: 60_000 });
  assert.equal(await summary.count(), 0);

  // the next cell's point stores its records again: whole, not lost
  await runCell(page, 2, 'state 41 [41, 42]');
  const next = page.locator(ITEM).filter({ hasText: "print('state', x, y)" }).first();
  await next.waitFor({ timeout: 60_000 });
  assert.equal(await page.locator(`${ITEM}.jp-ElasticLite-lost`).count(), 0);
  await page.close();
});

test('sessions move: JupyterLite export → CPython import and restore, and back; code of the other Python refused by name', { timeout: 900_000 }, async () => {
  const server = await startTestServer({ root: SITE });
  lite = server;
  const files = path.join(tmp, 'files');
  fs.mkdirSync(files);

  // JupyterLite (Pyodide, Python 3.14): data and a function, a checkpoint, Export
  const litePage = await newPage();
  await litePage.goto(labUrl({ server }, NOTEBOOK, 'moving'));
  await waitForNotebook(litePage);
  const n = await appendCell(litePage, "moved = {'from': 'lite', 'xs': [1, 2, 3]}; twice = lambda v: 2 * v; print('lite ready')");
  await runCell(litePage, n, 'lite ready');
  await openSidebar(litePage);
  const fromLite = await checkpointAndExport(litePage, path.join(files, 'from-lite.elc'));

  // CPython 3.11: import it, restore it: the data back, the function refused with the reason
  const page = await newPage();
  await openDesktop(page);
  await runCell(page, 0, 'cell one ran'); // the kernel is up and has loaded elastic_lite
  const intoCPython = await importAndRestore(page, fromLite);
  assert.match(intoCPython, /^Restored .*moved/, intoCPython);
  assert.match(intoCPython, /NOT restored: .*twice.*compiled by Python 3\.14, and this is Python 3\.11/, intoCPython);
  await runCell(page, 3, "in cpython {'from': 'lite', 'xs': [1, 2, 3]} False");

  // and back: a CPython checkpoint exported from the desktop sidebar, restored in JupyterLite
  await runCell(page, 4, 'desktop ready');
  const fromCPython = await checkpointAndExport(page, path.join(files, 'from-cpython.elc'));
  const intoLite = await importAndRestore(litePage, fromCPython);
  assert.match(intoLite, /^Restored .*back/, intoLite);
  assert.match(intoLite, /NOT restored: .*half.*compiled by Python 3\.11, and this is Python 3\.14/, intoLite);
  const checkLite = await appendCell(litePage, "print('in lite', back, 'half' in globals())");
  await runCell(litePage, checkLite, "in lite {'from': 'cpython', 'n': 7} False");
  browser.assertOffline();
});
