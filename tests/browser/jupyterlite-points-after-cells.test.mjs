// The notebook's history in the offline JupyterLite site, in Chromium with real IndexedDB:
// auto-checkpoint is on by default, each successful cell leaves one point in the sidebar
// labelled with that cell, Restore on an earlier point brings its state back (undo), a run of
// queued cells (Run All) leaves one point after the last instead of holding each cell up,
// `%autocheckpoint off` and the setting stop them, and the history settings reach the store
// as its retention.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  ITEM, RESTORE_BUTTON, answerRestoreOffer, appendCell, cell, openNotebook, openSidebar, openSite,
  restartKernelFromMenu, runCell, runFromPalette, sidebarItems, waitForItemCount,
  waitForNotebook, waitForRestoreOffer, waitForStatus,
} from './jupyterlite-page.mjs';

const TIMEOUT = 600_000;

/** Waits for the sidebar's history line (the last automatic checkpoint) to match `pattern`. */
async function waitForHistoryStatus(page, pattern, timeout = 120_000) {
  const line = page.locator('#elastic-lite-sidebar .jp-ElasticLite-historyStatus');
  try {
    await line.filter({ hasText: pattern }).waitFor({ state: 'attached', timeout });
  } catch {
    throw new Error(`the history line never matched ${pattern}; last: ${await line.textContent().catch(() => '(none)')}`);
  }
  return (await line.textContent()).trim();
}

/** The sidebar item of the point taken after the cell whose first line is `line`. */
function pointAfter(page, line) {
  return page.locator(ITEM, { has: page.locator('.jp-ElasticLite-itemCell', { hasText: `] ${line}` }) });
}

/**
 * The negative checks ("no point after that cell"): no fixed wait. Points are taken one at a
 * time per notebook, in order, so once the point of a LATER successful cell is listed, every
 * point asked for before it is listed too: then the sidebar lists exactly `names` (the cells'
 * first lines, or checkpoint names) and nothing after the cells in `none`.
 */
async function settledOn(page, names, none) {
  await waitForItemCount(page, names.length);
  const listed = await sidebarItems(page).evaluateAll((items) => items.map((li) =>
    li.querySelector('.jp-ElasticLite-itemCell')?.textContent.replace(/^after \[\d+\] /, '') || li.dataset.name));
  for (const line of none) assert.ok(!listed.some((l) => l.startsWith(line)), `a point after ${line}: ${listed}`);
  assert.deepEqual(listed.map((l) => names.find((n) => l.startsWith(n)) ?? l).sort(), [...names].sort());
}

test('a point after each cell; restore an earlier one; Run All gives one; off by magic and by setting', { timeout: TIMEOUT }, async () => {
  const site = await openSite();
  const { page, browser } = site;
  try {
    await openNotebook(page, site.url);
    await openSidebar(page);
    await waitForItemCount(page, 0);

    // 1. each successful cell: one point, labelled with the cell
    const a = await appendCell(page, 'value = 1; print("v", value)');
    await runCell(page, a, 'v 1');
    await pointAfter(page, 'value = 1;').waitFor({ timeout: 120_000 });
    const b = await appendCell(page, 'value = value + 1; print("v", value)');
    await runCell(page, b, 'v 2');
    await pointAfter(page, 'value = value + 1;').waitFor({ timeout: 120_000 });
    await waitForItemCount(page, 2);
    const label = await sidebarItems(page).first().locator('.jp-ElasticLite-itemCell').innerText();
    assert.match(label, /^after \[\d+\] value = value \+ 1; print\("v", value\)$/, label);
    const status = await waitForHistoryStatus(page, /^After \[\d+\] value = value/);
    assert.match(status, /saved 1 variables \(value\)/, status);

    // a failed cell leaves no point (checked once the next cell's point is listed)
    const bad = await appendCell(page, 'value = value + 1; raise ValueError("no")');
    await runCell(page, bad, 'ValueError');

    // 2. undo: restore the point after the first cell
    await pointAfter(page, 'value = 1;').locator('button', { hasText: 'Restore' }).click();
    await waitForStatus(page, /^Restored /);
    const check = await appendCell(page, 'print("now", value)');
    await runCell(page, check, 'now 1');
    await pointAfter(page, 'print("now", value)').waitFor({ timeout: 120_000 }); // a point of the restored state
    await settledOn(page, ['value = 1;', 'value = value + 1; print', 'print("now"'], ['value = value + 1; raise']);

    // 3. Run All: the cells are queued, each runs without waiting for a checkpoint. The demo
    //    notebook's magics cell takes a checkpoint of its own (%checkpoint magic-demo); Run All
    //    then stops at the failing cell, and no point follows a failure or a cancelled cell
    await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click();
    await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click();
    await cell(page, bad).locator('.jp-OutputArea-output', { hasText: 'ValueError' }).first().waitFor({ timeout: 180_000 });
    await page.locator(`${ITEM}[data-name="magic-demo"]`).waitFor({ timeout: 120_000 });

    // 4. %autocheckpoint off: the kernel refuses them, the sidebar says so
    const magic = await appendCell(page, '%autocheckpoint off');
    await runCell(page, magic, 'after each cell: off');
    await waitForHistoryStatus(page, /Automatic checkpoints are off in this kernel/);
    const quiet = await appendCell(page, 'print("quiet", value)');
    await runCell(page, quiet, 'quiet');
    const on = await appendCell(page, '%autocheckpoint on');
    await runCell(page, on, 'after each cell: on');
    await pointAfter(page, '%autocheckpoint on').waitFor({ timeout: 120_000 });
    // nothing after Run All's cells (it stopped at a failure) nor after the quiet cell
    const before = ['value = 1;', 'value = value + 1; print', 'print("now"', 'magic-demo'];
    await settledOn(page, [...before, '%autocheckpoint on'], ['value = value + 1; raise', 'print("quiet"', '%autocheckpoint off']);

    // 5. the setting off: no point at all (nothing is asked of the kernel)
    await runFromPalette(page, 'Auto-checkpoint after each successful cell');
    const last = await appendCell(page, 'print("last", value)');
    await runCell(page, last, 'last');
    // the setting on again: the next cell's point is listed, and none after the last cell
    await runFromPalette(page, 'Auto-checkpoint after each successful cell');
    const probe = await appendCell(page, 'print("probe", value)');
    await runCell(page, probe, 'probe');
    await pointAfter(page, 'print("probe", value)').waitFor({ timeout: 120_000 });
    await settledOn(page, [...before, '%autocheckpoint on', 'print("probe"'], ['print("last"']);

    // 6. the history settings are the store's retention (defaults: last 30, one per hour for
    //    24 hours, 1 GiB per notebook)
    const policy = await page.evaluate(async () => {
      const url = `${location.origin}/extensions/elastic-lite-jupyterlite/static/elastic-lite/js/store/indexeddb.mjs`;
      const { IndexedDBStore } = await import(url);
      const store = new IndexedDBStore();
      try {
        return await store.getRetention(null);
      } finally {
        await store.close();
      }
    });
    assert.deepEqual(policy, { keepLast: 30, keepHourly: 24, maxBytes: 1024 * 1024 * 1024 });
    browser.assertOffline();
  } finally {
    await site.close();
  }
});

test('after a restart, the point of the new kernel\'s first cell is not what Restore or the offer bring back', { timeout: TIMEOUT }, async () => {
  const site = await openSite();
  const { page, browser } = site;
  try {
    await openNotebook(page, site.url);
    await openSidebar(page);
    await waitForItemCount(page, 0);
    const made = await appendCell(page, 'kept = [1, 2, 3]; print("kept", kept)');
    await runCell(page, made, 'kept [1, 2, 3]');
    await pointAfter(page, 'kept = [1, 2, 3];').waitFor({ timeout: 120_000 });

    // a restart: the offer names the point that holds the state, then the person goes on
    await restartKernelFromMenu(page);
    const offer = await answerRestoreOffer(page, 'Not now');
    assert.match(offer, /has one from .*, after \[\d+\] kept = \[1, 2, 3\];/, offer);
    const plain = await appendCell(page, '1+1');
    await runCell(page, plain, '2');
    await pointAfter(page, '1+1').waitFor({ timeout: 120_000 }); // the fresh kernel's point: newest
    await waitForItemCount(page, 2);
    const choice = page.locator(`${ITEM}.jp-ElasticLite-restoreChoice`);
    assert.equal(await choice.count(), 1);
    assert.match(await choice.innerText(), /what Restore brings back[\s\S]*after \[\d+\] kept = /);

    // Restore (toolbar): the state from before the restart, not the point after 1+1
    await page.locator(RESTORE_BUTTON).first().click();
    const restored = await waitForStatus(page, /^Restored /);
    assert.match(restored, /^Restored 1 variables \(kept\)/, restored);
    const check = await appendCell(page, 'print("back", kept)');
    await runCell(page, check, 'back [1, 2, 3]');
    await pointAfter(page, 'print("back", kept)').waitFor({ timeout: 120_000 });
    const empty = await appendCell(page, 'del kept; 2+2');
    await runCell(page, empty, '4');
    await pointAfter(page, 'del kept; 2+2').waitFor({ timeout: 120_000 }); // newest, holds nothing

    // a reload: the offer points at the last state of the kernel before it that holds
    // something (the check cell's point, not the empty one after `del kept`), and its
    // Restore brings that back
    await page.reload();
    await waitForNotebook(page);
    const again = await waitForRestoreOffer(page);
    const text = await again.innerText();
    assert.match(text, /after \[\d+\] print\("back", kept\)/, text);
    await again.locator('button.jp-toast-button', { hasText: 'Restore' }).click();
    await openSidebar(page);
    assert.match(await waitForStatus(page, /^Restored /), /^Restored 1 variables \(kept\)/);
    browser.assertOffline();
  } finally {
    await site.close();
  }
});
