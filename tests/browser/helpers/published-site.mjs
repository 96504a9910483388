// A JupyterLite site built the plain way with published notebooks in it, for the published-state
// browser test and benchmark: `elastic-lite keygen` and `elastic-lite publish` beside the
// notebook, the publisher's public key pinned in the lite dir's overrides.json, `jupyter lite
// build --pyodide` with the extension pip-installed in .venv (as README's Install says).
// Three copies of one notebook whose first cell takes seconds: warm (signed by the pinned key),
// tampered (one byte of its checkpoint changed), unpinned (signed by another key).
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

/** The lite dir: three copies of the notebook, published three ways; the site built from it. */
export async function buildSite(dir) {
  const lite = path.join(dir, 'lite');
  const files = path.join(lite, 'files');
  fs.mkdirSync(files, { recursive: true });
  for (const nb of ['warm', 'tampered', 'unpinned']) fs.writeFileSync(path.join(files, `${nb}.ipynb`), WARM);
  const work = path.join(dir, 'publisher'); // keys and the publisher's store: never in the site
  fs.mkdirSync(work);
  const pinned = JSON.parse((await cli(['keygen', 'pinned.key', '--json'], work)).stdout);
  await cli(['keygen', 'other.key'], work);
  await cli(['publish', path.join(files, 'warm.ipynb'), '--key', 'pinned.key'], work);
  await cli(['publish', path.join(files, 'unpinned.ipynb'), '--key', 'other.key', '--from', 'warm (published)'], work);
  // the tampered copy: the publisher's document, one byte of the checkpoint changed on the way
  fs.copyFileSync(path.join(files, 'warm.published.json'), path.join(files, 'tampered.published.json'));
  const bytes = fs.readFileSync(path.join(files, 'warm.published.elc'));
  bytes[bytes.length >> 1] ^= 0x20;
  fs.writeFileSync(path.join(files, 'tampered.published.elc'), bytes);
  fs.writeFileSync(path.join(lite, 'overrides.json'),
    JSON.stringify({ 'elastic-lite-jupyterlite:plugin': { publisherKeys: [pinned.publicKey] } }));
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
