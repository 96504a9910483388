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
import { RESTORE_WORDS, shows } from '../helpers/restore-words.mjs';

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
      const refused = JSON.parse((await runCli(['restore', name, '--json'], { cwd: dir })).stdout);
      assert.deepEqual(refused.problems.map((p) => p.code), ['foreign'], `${name}: an import is foreign`);
      assert.deepEqual(refused.restored, []);
      const r = await runCli(['restore', name, '--trust', '--json'], { cwd: dir });
      restore = JSON.parse(r.stdout);
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
    // one restore path, the extension's leg (tests/vectors/host-words.json, which pytest, the
    // CLI and the demo are held to): the toolbar's Restore with the store still empty
    await page.locator(lite.RESTORE_BUTTON).first().click();
    const empty = await lite.waitForStatus(page, /^Restore failed: /);
    assert.ok(empty.includes(RESTORE_WORDS['empty store'].notebook_message.replace('{notebook}', lite.NOTEBOOK)), empty);
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
        const refused = await lite.waitForStatus(page, /^Not restored: /);
        const foreign = RESTORE_WORDS.foreign.contains.replace('theirs.elc', `${name}.elc`);
        assert.ok(refused.includes(foreign), `${name}: ${refused}`); // the five situations' foreign
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
      if (name === 'good') assert.doesNotMatch(text, /NOT restored|failed/, 'the five situations\' ok');
    }
    // a missing name, by %restore in a cell (its magics loaded first, as %load_ext does): the
    // magic prints the problem's sentence
    const magic = 'get_ipython().run_line_magic("load_ext", "elastic_lite"); get_ipython().run_line_magic("restore", "nope")';
    const missing = await lite.runCell(page, await lite.appendCell(page, magic), 'elastic_lite:');
    assert.equal(missing, `elastic_lite: ${RESTORE_WORDS['missing name'].message}`);
    // damaged: one byte of the largest record of this notebook's first automatic point
    // flipped where IndexedDB keeps it; its Restore in the sidebar names the damage
    const point = lite.sidebarItems(page).last();
    const pointName = await point.getAttribute('data-name');
    await page.evaluate(async (name) => {
      const db = await new Promise((res, rej) => {
        const r = indexedDB.open('elastic-lite');
        r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error);
      });
      const tx = db.transaction(['bodies', 'records', 'recordChunks'], 'readwrite');
      const get = (store, key) => new Promise((res) => { const g = tx.objectStore(store).get(key); g.onsuccess = () => res(g.result); });
      const rec = (await get('bodies', name)).records.reduce((a, b) => (b.length > a.length ? b : a));
      const chunk = await get('recordChunks', [rec.key, 0]);
      chunk.data[new DataView(chunk.data.buffer, chunk.data.byteOffset).getUint32(4, true) + 1] ^= 0x01; // past its header
      tx.objectStore('recordChunks').put(chunk);
      await new Promise((res) => { tx.oncomplete = res; });
      db.close();
    }, pointName);
    await status.evaluate((el) => { el.textContent = ''; }); // the next status is this restore's
    await point.locator('button', { hasText: 'Restore' }).click();
    const damaged = await lite.waitForStatus(page, /^(Restored|Restore failed)/);
    assert.match(damaged, /NOT restored|Restore failed/, damaged);
    assert.ok(shows(damaged, RESTORE_WORDS.damaged), damaged);
    site.browser.assertOffline();
  } finally {
    await site.close();
  }
});
