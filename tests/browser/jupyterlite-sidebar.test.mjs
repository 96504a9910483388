// The Elastic Lite sidebar and commands in the offline JupyterLite site, in Chromium:
// checkpoint from the command palette and by keyboard shortcut, inspect (records, serializers,
// what each would import: elastic_lite.host.inspect in the kernel), export to a file, delete, import the
// file back and restore it into a restarted kernel, refuse a damaged file with a clear message,
// and the auto-checkpoint after a successful cell (turned off, then on again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  CELL_BUILD, CELL_CHECK, CELL_MAGICS, ITEM, SITE, appendCell, answerRestoreOffer, openNotebook, openSidebar, openSite,
  restartKernelFromMenu, runCell, runFromPalette, sidebarItems, waitForItemCount, waitForStatus,
} from './jupyterlite-page.mjs';
import { tempDirSync } from '../helpers/tempdir.mjs';

// Every "jupyter.lab.shortcuts" entry of the built site (JupyterLab's and every extension's
// settings schemas), keys normalized the way Lumino matches them on Linux (Accel = Ctrl).
function siteShortcuts() {
  const found = [];
  const walk = (dir) => {
    for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, ent.name);
      if (ent.isDirectory()) walk(p);
      else if (ent.name.endsWith('.json') && p.includes(`${path.sep}schemas${path.sep}`)) {
        let schema;
        try { schema = JSON.parse(fs.readFileSync(p, 'utf8')); } catch { continue; }
        for (const s of schema?.['jupyter.lab.shortcuts'] ?? []) {
          if (!s.disabled) found.push({ command: s.command, keys: normalizeKeys(s.keys), file: p });
        }
      }
    }
  };
  walk(path.join(SITE, 'build', 'schemas'));
  walk(path.join(SITE, 'extensions'));
  return found;
}

function normalizeKeys(keys) {
  return keys.map((k) => k.split(/\s+/).map((t) => (t === 'Accel' ? 'Ctrl' : t))
    .sort((x, y) => (x.length === 1) - (y.length === 1) || x.localeCompare(y)).join('+')).join(' ');
}

function shortcutClashes() {
  const all = siteShortcuts();
  const ours = all.filter((s) => s.command.startsWith('elastic-lite:'));
  assert.equal(ours.length, 2, `our two shortcuts are in the site: ${JSON.stringify(ours)}`);
  return all.filter((s) => !s.command.startsWith('elastic-lite:') && ours.some((o) => o.keys === s.keys))
    .map((s) => `${s.command} (${s.keys}) in ${s.file}`);
}

test('shortcuts: no JupyterLab command uses the keys of ours', () => {
  assert.deepEqual(shortcutClashes(), []);
});

test('palette, shortcut, inspect, export, delete, import (good and damaged), restore the import, auto-checkpoint', { timeout: 600_000 }, async () => {
  const site = await openSite();
  const { page, browser } = site;
  const tmp = tempDirSync('elastic-lite-jl-');
  try {
    await openNotebook(page, site.url);
    // auto-checkpoint is on by default (the history); off here, so each step below adds
    // exactly the checkpoints it makes (jupyterlite-points-after-cells.test.mjs tests it)
    await runFromPalette(page, 'Auto-checkpoint after each successful cell');
    await runCell(page, CELL_BUILD, 'state built');
    await openSidebar(page);
    await waitForItemCount(page, 0);

    // 1. command palette
    await runFromPalette(page, 'Checkpoint kernel');
    await waitForStatus(page, /Checkpoint saved/);
    await waitForItemCount(page, 1);

    // 2. keyboard shortcut, in the notebook's command mode
    await page.locator('.jp-Notebook .jp-Cell').nth(CELL_BUILD).locator('.jp-InputPrompt').click();
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+Alt+Shift+S');
    await waitForItemCount(page, 2);
    const meta = await sidebarItems(page).first().locator('.jp-ElasticLite-itemMeta').innerText();
    assert.match(meta, /variables: .*\bscale\b/, meta);
    assert.match(meta, /\bholder\b/, meta);

    // the shortcut worked above; no other command of this site's JupyterLab uses its keys
    assert.deepEqual(shortcutClashes(), []);

    // 3. inspect: the validator's report of every record (host.inspect in the kernel)
    const first = sidebarItems(page).first();
    await first.locator('button', { hasText: 'Inspect' }).click();
    const table = first.locator('table.jp-ElasticLite-report');
    await table.waitFor({ timeout: 30_000 });
    const report = await first.locator('.jp-ElasticLite-inspect').innerText();
    assert.match(report, /all valid/, report);
    // cloudpickle for most groups; the group holding a lock went through dill, in this kernel
    assert.match(report, /\bguarded\s+dill\b/, report);
    assert.match(report, /\bdata\s+cloudpickle\b/, report);
    assert.match(report, /\bscale\b/, report);
    // a record whose payload imports something lists it (module.name)
    assert.match(report, /\b[a-z_]+\.[A-Za-z_]+\b/, report);

    // 4. export to a file
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 30_000 }),
      first.locator('button', { hasText: 'Export' }).click(),
    ]);
    const file = path.join(tmp, download.suggestedFilename());
    await download.saveAs(file);
    assert.match(path.basename(file), /\.elc$/);
    const bytes = fs.readFileSync(file);
    assert.ok(bytes.length > 100, `exported ${bytes.length} bytes`);

    // 5. delete both
    for (let n = 2; n > 0; n--) {
      await sidebarItems(page).first().locator('button', { hasText: 'Delete' }).click();
      await waitForItemCount(page, n - 1);
    }

    // 6. a damaged file is refused with the reason, nothing is added
    const damaged = path.join(tmp, 'damaged.elc');
    fs.writeFileSync(damaged, Buffer.concat([bytes.subarray(0, 40), Buffer.alloc(200, 0x41)]));
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-fileInput').setInputFiles(damaged);
    const refused = await waitForStatus(page, /Import failed/);
    assert.match(refused, /^Import failed: damaged\.elc: \S/, refused); // the host's sentence follows
    await waitForItemCount(page, 0);

    // 7. import the good file, restart the kernel, restore the import
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-fileInput').setInputFiles(file);
    await waitForStatus(page, /Imported /);
    await waitForItemCount(page, 1);
    await restartKernelFromMenu(page);
    await answerRestoreOffer(page, 'Restore');
    // an import is foreign: JupyterLab's dialog asks first (what it would import), then restores
    // (the restart's new kernel starts first: Pyodide, then the restore's report)
    await page.locator('.jp-Dialog').getByRole('button', { name: 'Restore anyway' }).click({ timeout: 180_000 });
    await waitForStatus(page, /^Restored /);
    await runCell(page, CELL_CHECK, 'restore verified');

    // 7b. a damaged IndexedDB entry: Restore fails with the reason; the kernel and its state
    //     are untouched (the bytes are validated before anything is unpickled)
    await page.evaluate(async () => {
      const url = `${location.origin}/extensions/elastic-lite-jupyterlite/static/elastic-lite/js/store/indexeddb.mjs`;
      const { IndexedDBStore } = await import(url);
      const store = new IndexedDBStore();
      const garbage = new Uint8Array(300).map((_, i) => (i * 7919) & 255);
      await store.put('elastic-lite-demo.ipynb damaged', garbage,
        { notebook: 'elastic-lite-demo.ipynb', createdMs: Date.now(), variables: 1, names: ['x'] });
      await store.close();
    });
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Refresh' }).click();
    await waitForItemCount(page, 2);
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-item[data-name="elastic-lite-demo.ipynb damaged"] button',
      { hasText: 'Restore' }).click();
    const failed = await waitForStatus(page, /Restore failed/);
    assert.match(failed, /Restore failed: \S.{10,}/, failed); // a reason, not just "failed"
    await runCell(page, CELL_CHECK, 'restore verified');
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-item[data-name="elastic-lite-demo.ipynb damaged"] button',
      { hasText: 'Delete' }).click();
    await waitForItemCount(page, 1);

    // 8. auto-checkpoint back on: a successful cell leads to one checkpoint, named by that cell
    await runFromPalette(page, 'Auto-checkpoint after each successful cell');
    await runCell(page, CELL_BUILD, 'state built');
    await waitForItemCount(page, 2);
    assert.match(await sidebarItems(page).first().getAttribute('title'), /^elastic-lite-demo\.ipynb \[\d+\] \d{4}-/);

    // 9. the browser's storage: the sidebar and %checkpoints say whether it is persistent as
    //    navigator.storage.persisted() does in the page, and how much is used and left
    // (automatic points off again: the list below must not grow while it is looked at)
    await runFromPalette(page, 'Auto-checkpoint after each successful cell');
    const magics = await runCell(page, CELL_MAGICS, /a bare %restore brings back/);
    const lineSel = '#elastic-lite-sidebar .jp-ElasticLite-storageLine';
    await page.waitForFunction((sel) => / used, .* left$/.test(document.querySelector(sel)?.textContent ?? ''), lineSel, { timeout: 30_000 });
    const persisted = await page.evaluate(() => navigator.storage.persisted());
    const shown = persisted ? /^Browser storage: persistent \(/ : /^Browser storage: not persistent \(/;
    assert.match(await page.locator(lineSel).innerText(), shown);
    assert.match(magics, new RegExp(`${shown.source.slice(1)}.* used, .* left$`, 'm'), magics);
    assert.equal(await page.locator('#elastic-lite-sidebar button', { hasText: 'Keep checkpoints' }).isVisible(), !persisted);
    if (!persisted) {
      // the button asks again (a user gesture); the line then says what the browser decided
      await page.locator('#elastic-lite-sidebar button', { hasText: 'Keep checkpoints' }).click();
      await page.waitForFunction((sel) => /declined|^Browser storage: persistent \(/.test(document.querySelector(sel)?.textContent ?? ''), lineSel, { timeout: 30_000 });
      const now = await page.evaluate(() => navigator.storage.persisted());
      assert.match(await page.locator(lineSel).innerText(), now ? /^Browser storage: persistent \(/
        : /^Browser storage: not persistent \(.*\. The browser declined to keep it: keep copies with Export or in a folder\.$/);
    }

    // 10. eviction: the records are removed behind the store's back (as the browser's eviction
    //     or clearing site data does): every listed checkpoint is marked lost; %restore and
    //     %checkpoints say so plainly; the lost ones can be deleted at once
    await page.locator(`${ITEM}[data-name="magic-demo"]`).waitFor({ timeout: 30_000 });
    const listed = await sidebarItems(page).count();
    await page.evaluate(() => new Promise((resolve, reject) => {
      const open = indexedDB.open('elastic-lite');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const tx = open.result.transaction(['records', 'recordChunks'], 'readwrite');
        tx.objectStore('records').clear();
        tx.objectStore('recordChunks').clear();
        tx.oncomplete = () => { open.result.close(); resolve(); };
        tx.onerror = () => reject(tx.error);
      };
    }));
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Refresh' }).click();
    const lostSel = `${ITEM}.jp-ElasticLite-lost`;
    await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length === n, [lostSel, listed], { timeout: 30_000 });
    for (const text of await page.locator(`${lostSel} .jp-ElasticLite-itemLost`).allInnerTexts()) {
      assert.match(text, /^lost: its data was removed by the browser \(\d+ of \d+ records gone\)$/, text);
    }
    assert.match(await page.locator('#elastic-lite-sidebar .jp-ElasticLite-lostSummary').innerText(),
      new RegExp(`^${listed} checkpoints are lost: their data was removed by the browser`));
    const at = await appendCell(page, '%restore magic-demo');
    const lostLine = await runCell(page, at, 'elastic_lite:');
    assert.match(lostLine, /^elastic_lite: checkpoint "magic-demo" is lost: its data is no longer in this browser's storage; it was removed by the browser or cleared/, lostLine);
    assert.doesNotMatch(lostLine, /damaged|Traceback/, lostLine);
    const listing = await runCell(page, await appendCell(page, '%checkpoints'), /a bare %restore/);
    assert.match(listing, /^magic-demo \(lost\)\s/m, listing);
    assert.match(listing, /^magic-demo: lost: its data was removed by the browser/m, listing);
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Delete lost checkpoints' }).click();
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 0, lostSel, { timeout: 30_000 });
    assert.equal(await page.locator('#elastic-lite-sidebar .jp-ElasticLite-lostSummary').count(), 0);

    browser.assertOffline();
  } finally {
    await site.close();
  }
});
