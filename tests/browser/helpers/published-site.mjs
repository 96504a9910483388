// A JupyterLite site built the plain way with published notebooks in it, for the published-state
// browser test and benchmark: `elastic-lite keygen` and `elastic-lite publish` beside the
// notebook, the publisher's public key pinned in the lite dir's overrides.json, `jupyter lite
// build --pyodide` with the extension pip-installed in .venv (as README's Install says).
// Three copies of one notebook whose first cell takes seconds: warm (signed by the pinned key),
// tampered (one byte of its checkpoint changed), unpinned (signed by another key). The demo's
// test publishes its notebook the same way (publishThreeWays).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { settleDialogs, OFFER } from '../jupyterlite-page.mjs';
import { runCli, ROOT } from '../../node/cli-helpers.mjs';

const PYODIDE = fs.readdirSync(path.join(ROOT, 'build', 'jupyterlite')).find((f) => /^pyodide-.*\.tar\.bz2$/.test(f));

function notebook(cells) {
  return JSON.stringify({
    cells: cells.map((source) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source })),
    metadata: { kernelspec: { display_name: 'Python (Pyodide)', language: 'python', name: 'python' } },
    nbformat: 4, nbformat_minor: 5,
  });
}

// The first cell takes seconds (a "fit": compute-heavy, a small state); the second uses it.
export const WARM = notebook([
  'import random\nrandom.seed(1)\nxs = [random.random() for _ in range(2000)]\n' +
  'ys = [3 * x + 0.5 + random.gauss(0, 0.1) for x in xs]\nw = b = 0.0\n' +
  'for epoch in range(1500):\n    gw = gb = 0.0\n    for x, y in zip(xs, ys):\n        e = w * x + b - y\n' +
  '        gw += e * x\n        gb += e\n    w -= 0.5 * gw / len(xs)\n    b -= 0.5 * gb / len(xs)\n' +
  'model = {"w": w, "b": b}\nprint("fitted")',
  'print("prediction", round(model["w"] * 2 + model["b"], 6), len(xs))',
]);
/** What the second cell prints (host CPython computes the same floats). */
export const FIRST_RESULT = /prediction [0-9.]+ 2000/;
export const PREDICTION = 'prediction 6.533229 2000';

async function cli(args, cwd) {
  const res = await runCli(args, { cwd, timeoutMs: 300_000 });
  assert.equal(res.code, 0, `elastic-lite ${args.join(' ')}: ${res.stderr}`);
  return res;
}

/**
 * Publishes `folder/BASE.ipynb` three ways beside itself, with keys and the publisher's store in
 * `work` (never in a site): BASE signed by the pinned key, `unpinned` (a copy of the notebook
 * must be there) signed by another key, `tampered` one byte of BASE's checkpoint changed on the
 * way. Returns the pinned key's public half ({keyId, kty, crv, x, y}).
 */
export async function publishThreeWays(folder, base, work) {
  fs.mkdirSync(work, { recursive: true });
  const pinned = JSON.parse((await cli(['keygen', 'pinned.key', '--json'], work)).stdout);
  await cli(['keygen', 'other.key'], work);
  await cli(['publish', path.join(folder, `${base}.ipynb`), '--key', 'pinned.key'], work);
  await cli(['publish', path.join(folder, 'unpinned.ipynb'), '--key', 'other.key', '--from', `${base} (published)`], work);
  fs.copyFileSync(path.join(folder, `${base}.published.json`), path.join(folder, 'tampered.published.json'));
  const bytes = fs.readFileSync(path.join(folder, `${base}.published.elc`));
  bytes[bytes.length >> 1] ^= 0x20;
  fs.writeFileSync(path.join(folder, 'tampered.published.elc'), bytes);
  return pinned.publicKey;
}

/** The lite dir: three copies of the notebook, published three ways; the site built from it. */
export async function buildSite(dir) {
  const lite = path.join(dir, 'lite');
  const files = path.join(lite, 'files');
  fs.mkdirSync(files, { recursive: true });
  for (const nb of ['warm', 'tampered', 'unpinned']) fs.writeFileSync(path.join(files, `${nb}.ipynb`), WARM);
  const pinned = await publishThreeWays(files, 'warm', path.join(dir, 'publisher'));
  fs.writeFileSync(path.join(lite, 'overrides.json'),
    JSON.stringify({ 'elastic-lite-jupyterlite:plugin': { publisherKeys: [pinned] } }));
  const out = path.join(dir, 'site');
  execFileSync(path.join(ROOT, '.venv', 'bin', 'jupyter'), ['lite', 'build', '--no-sourcemaps', '--lite-dir', lite,
    '--output-dir', out, '--pyodide', path.join(ROOT, 'build', 'jupyterlite', PYODIDE)],
  { cwd: lite, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PATH: `${path.join(ROOT, '.venv', 'bin')}:${process.env.PATH}` } });
  return out;
}

/** Opens a notebook of the site and answers its published-state offer; returns the offer's text. */
export async function acceptPublishedOffer(page, url) {
  await page.goto(url);
  // the notebook opened last is the visible one (the workspace may reopen earlier ones in tabs)
  await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').first().waitFor({ timeout: 60_000 });
  await settleDialogs(page);
  const offer = page.locator(OFFER, { hasText: 'start from the published state' }).first();
  await offer.waitFor({ timeout: 180_000 });
  const text = await offer.innerText();
  await offer.locator('button.jp-toast-button', { hasText: 'Start from it' }).click();
  await offer.waitFor({ state: 'detached', timeout: 10_000 });
  return text;
}
