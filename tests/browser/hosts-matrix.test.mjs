// The matrix: five checkpoint files, each imported and (when stored) restored through the three
// hosts — the CLI (Node + Pyodide), the demo page (Chromium, Pyodide in a worker) and the
// JupyterLite extension (Chromium, the Pyodide kernel) — must give the same outcome (stored or
// not, which variables come back, which problems of which kind) and show the same words (every
// problem's sentence from the host API, verbatim). The files:
//   good           a checkpoint made by `elastic-lite run` (Pyodide)
//   foreign        an undamaged file made elsewhere (host CPython, the native core)
//   damaged        the good file with its header wiped: nothing in it is readable
//   partly         the good file with one byte of one record flipped
//   code-running   a whole checkpoint whose record would call builtins.exec when loaded
// An imported file is foreign: each host first refuses it whole (the CLI without --trust; the
// demo and the extension ask in a dialog, whose focus is on Cancel), then restores it once the
// person confirms (--trust; "Restore anyway"): what comes back is compared.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { loadCore } from '../../js/core.mjs';
import { runCli, ROOT } from '../node/cli-helpers.mjs';
import { tempDirSync } from '../helpers/tempdir.mjs';
import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import * as demo from './helpers/demo-page.mjs';
import * as lite from './jupyterlite-page.mjs';

const STATE = [
  'values = {"a": 1, "b": [2, 3]}',
  'def double(x):\n    return 2 * x',
  'class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y',
  'p = Point(3, 4)',
];
const EVIL = 'class Evil:\n    def __reduce__(self):\n        return (exec, ("import builtins; builtins.PWNED = 1",))\nevil = Evil()';
const FILES = ['good', 'foreign', 'damaged', 'partly', 'code-running'];

let dir; // the five files, NAME.elc
const cli = {}; // name -> outcome through the CLI, with the reports (the reference for the words)

const notebook = (cells) => JSON.stringify({
  nbformat: 4, metadata: {},
  cells: cells.map((source) => ({ cell_type: 'code', metadata: {}, source, outputs: [], execution_count: null })),
});

async function cliCheckpoint(name, cells) {
  fs.writeFileSync(path.join(dir, `${name}.ipynb`), notebook(cells));
  const run = await runCli(['run', `${name}.ipynb`, '--store', 'made'], { cwd: dir });
  assert.equal(run.code, 0, run.stderr);
  const exp = await runCli(['export', name, `${name}.elc`, '--store', 'made'], { cwd: dir });
  assert.equal(exp.code, 0, exp.stderr);
  return fs.readFileSync(path.join(dir, `${name}.elc`));
}

before(async () => {
  dir = tempDirSync('el-matrix-');
  const good = await cliCheckpoint('good', STATE);
  await cliCheckpoint('code-running', [...STATE, EVIL]);
  // Data only: a function pickled by CPython 3.11 does not load in Pyodide's 3.14.
  execFileSync(path.join(ROOT, '.venv', 'bin', 'python'), ['-c', [
    'import sys; sys.path.insert(0, sys.argv[1]); import elastic_lite as el',
    'ns = {"values": {"a": 1, "b": [2, 3]}, "words": ["x", "y"], "n": 7}',
    'open(sys.argv[2], "wb").write(el.snapshot(ns).data)'].join('\n'), path.join(ROOT, 'py'), path.join(dir, 'foreign.elc')]);
  const damaged = Buffer.from(good);
  damaged.fill(0, 0, 16);
  fs.writeFileSync(path.join(dir, 'damaged.elc'), damaged);
  const core = await loadCore();
  const rec = core.inspect(new Uint8Array(good), { validate: true }).records.find((r) => r.names.includes('values'));
  const partly = Buffer.from(good);
  partly[rec.payload_offset + Math.floor(rec.length / 2)] ^= 0x10;
  fs.writeFileSync(path.join(dir, 'partly.elc'), partly);
});

/** What a host did with one file, in a form the three hosts can be compared by. */
function outcome({ stored, restored = null, problems = [] }) {
  return {
    stored,
    restored: restored && [...restored].sort(),
    problems: problems.map((p) => `${p.kind}: ${[...p.names].sort().join(', ')}`).sort(),
  };
}

test('the CLI: import each file, restore what was stored (the reference)', async () => {
  for (const name of FILES) {
    const imp = await runCli(['import', `${name}.elc`, '--json'], { cwd: dir });
    const report = JSON.parse(imp.stdout);
    assert.equal(imp.code, report.ok ? 0 : 1, imp.stderr);
    for (const p of report.ok ? [] : report.problems) assert.ok(imp.stderr.includes(p.message), `${name}: CLI prints "${p.message}"`);
    let restore = null;
    if (report.stored) {
      const refused = JSON.parse((await runCli(['restore', name, '--json'], { cwd: dir })).stdout).restore;
      assert.deepEqual(refused.problems.map((p) => p.code), ['foreign'], `${name}: an import is foreign`);
      assert.deepEqual(refused.restored, []);
      const r = await runCli(['restore', name, '--trust', '--json'], { cwd: dir });
      restore = JSON.parse(r.stdout).restore;
    }
    cli[name] = {
      importReport: report,
      restoreReport: restore,
      outcome: outcome({
        stored: report.stored,
        restored: restore?.restored.map((v) => v.name),
        problems: [...report.problems, ...(restore?.problems ?? [])],
      }),
    };
  }
  // What the matrix is about, spelled out once.
  assert.deepEqual(cli.good.outcome, { stored: true, restored: ['Point', 'double', 'p', 'values'], problems: [] });
  assert.deepEqual(cli.foreign.outcome, { stored: true, restored: ['n', 'values', 'words'], problems: [] });
  assert.deepEqual(cli.damaged.outcome, { stored: false, restored: null, problems: ['damaged: '] });
  assert.deepEqual(cli.partly.outcome, { stored: false, restored: null, problems: ['damaged: values'] });
  // confirmed, everything loads (the import still warned about the record that runs code)
  assert.deepEqual(cli['code-running'].outcome, {
    stored: true, restored: ['Evil', 'Point', 'double', 'evil', 'p', 'values'], problems: ['refused: evil'],
  });
});

/** Every problem sentence of the CLI's reports for `name` appears in `text`. */
function assertSameWords(host, name, text) {
  const { importReport, restoreReport } = cli[name];
  for (const p of [...importReport.problems, ...(restoreReport?.problems ?? [])]) {
    assert.ok(text.includes(p.message), `${host}, ${name}: shows "${p.message}"\n--- it shows:\n${text}`);
  }
}

let browser;
let server;
before(async () => {
  browser = await launchChromium();
  server = await startTestServer();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test('the demo page: same outcomes, same words', { timeout: 600_000 }, async () => {
  assert.equal(Object.keys(cli).length, FILES.length, 'the CLI test ran first');
  const page = await browser.newPage();
  await demo.openDemo(page, server.url);
  for (const name of FILES) {
    await page.evaluate(() => document.querySelector('#messages').replaceChildren()); // this file's words only
    await page.locator('#import-file').setInputFiles(path.join(dir, `${name}.elc`));
    const title = await page.waitForFunction(() => {
      const box = document.querySelector('#messages .message[data-key="import"]');
      return box && box.querySelector('h2').textContent;
    }, null, { timeout: 120_000 }).then((h) => h.jsonValue());
    let text = await page.locator('#messages').innerText();
    const stored = title.startsWith('Imported');
    let restored = null;
    const problems = [];
    if (stored) {
      const storedAs = /^Imported “(.*)”$/.exec(title)[1];
      const r = await demo.restore(page, storedAs, { trust: true });
      assert.match(r.dialog ?? '', /comes from elsewhere/, `${name}: the demo asked first`);
      text = await page.locator('#messages').innerText();
      restored = Object.keys(await demo.reportRows(page));
      if (/Restored “/.test(r.title)) assert.ok(cli[name].restoreReport.ok, `${name}: restored whole in the demo only`);
    }
    // The demo shows problems, not kinds: compare kinds through the words (each sentence is
    // one problem of the CLI's reports) and the outcome through what is stored and restored.
    for (const p of [...cli[name].importReport.problems, ...(cli[name].restoreReport?.problems ?? [])]) {
      if (text.includes(p.message)) problems.push(p);
    }
    assert.deepEqual(outcome({ stored, restored, problems }), cli[name].outcome, name);
    assertSameWords('demo', name, text);
  }
  browser.assertOffline();
});

test('the JupyterLite extension: same outcomes, same words', { timeout: 600_000 }, async () => {
  assert.equal(Object.keys(cli).length, FILES.length, 'the CLI test ran first');
  const site = await lite.openSite();
  try {
    const { page } = site;
    await lite.openNotebook(page, site.url);
    await lite.runCell(page, lite.CELL_BUILD, 'state built'); // the kernel is up
    await lite.openSidebar(page);
    // automatic checkpoints are on (the default): the point after that cell is listed first,
    // so the imports below are counted from it and restored by name
    await lite.waitForItemCount(page, 1);
    const status = page.locator('#elastic-lite-sidebar .jp-ElasticLite-status');
    for (const name of FILES) {
      const before = await lite.sidebarItems(page).count();
      await page.locator('#elastic-lite-sidebar .jp-ElasticLite-fileInput').setInputFiles(path.join(dir, `${name}.elc`));
      const imported = await lite.waitForStatus(page, new RegExp(`^(Imported|Import failed: ${name}\\.elc)`));
      let text = imported;
      const stored = imported.startsWith('Imported');
      let restored = null;
      const problems = [];
      if (stored) {
        await lite.waitForItemCount(page, before + 1);
        const item = page.locator(`${lite.ITEM}[data-name="${/ as (.*?)(?:; warning: |$)/.exec(imported)[1]}"]`);
        // An import is foreign: JupyterLab's dialog asks, listing what it would import, with
        // the focus on Cancel (Enter cancels); then the person confirms.
        const dialog = page.locator('.jp-Dialog');
        await item.locator('button', { hasText: 'Restore' }).click();
        await dialog.waitFor({ timeout: 120_000 });
        assert.match(await dialog.innerText(), /comes from elsewhere[\s\S]*import/);
        assert.equal(await page.evaluate(() => document.activeElement?.textContent?.trim()), 'Cancel');
        await page.keyboard.press('Enter');
        await lite.waitForStatus(page, /^Not restored: /);
        await item.locator('button', { hasText: 'Restore' }).click();
        await dialog.getByRole('button', { name: 'Restore anyway' }).click();
        const done = await lite.waitForStatus(page, /^(Restored|Restore failed)/);
        text += `\n${done}`;
        restored = /^Restored \d+ variables \(([^)]*)\)/.exec(done)[1].split(', ');
      }
      for (const p of [...cli[name].importReport.problems, ...(cli[name].restoreReport?.problems ?? [])]) {
        if (text.includes(p.message)) problems.push(p);
      }
      assert.deepEqual(outcome({ stored, restored, problems }), cli[name].outcome, `${name}: ${await status.textContent()}`);
      assertSameWords('extension', name, text);
    }
    site.browser.assertOffline();
  } finally {
    await site.close();
  }
});
