// Replay in the real JupyterLite kernel (build/lite, Chromium, offline): the extension starts
// the session recorder when it ties the kernel to the notebook, so the person's cells are
// recorded through IPython's own events. A generator advanced by a later cell and an
// in-memory sqlite3 database are left out of the checkpoint (the toolbar's Checkpoint says
// they will be recomputed, by which cells); after a kernel restart, Restore re-runs exactly
// those cells in the fresh kernel: next() continues from the same item, the table is filled,
// and the sidebar's restore report says what was recomputed. The extension's setting turns
// replay off.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  RESTORE_BUTTON, answerRestoreOffer, cell, clickCheckpoint, openNotebook, openSidebar, openSite,
  restartKernelFromMenu, runCell, runFromPalette, waitForStatus,
} from './jupyterlite-page.mjs';

const TIMEOUT = 600_000;
const STATUS = '#elastic-lite-sidebar .jp-ElasticLite-status';

/** A new code cell after the notebook's last one, holding `lines` (typed, one per line). */
async function addCell(page, lines) {
  const n = await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').count();
  await cell(page, n - 1).locator('.jp-InputPrompt').click();
  await page.keyboard.press('Escape');
  await page.keyboard.press('b'); // a new cell below, selected
  await page.keyboard.press('Enter'); // edit it
  for (const [i, line] of lines.entries()) {
    if (i) await page.keyboard.press('Enter');
    await page.keyboard.type(line);
  }
  await page.keyboard.press('Escape');
  return n;
}

/** Waits until the kernel records cells (the extension's set_notebook snippet has run). */
async function waitForRecorder(page) {
  // (Cells run before the extension has installed elastic_lite in the new kernel are not
  // recorded: the probe waits for that, without importing anything itself.)
  const probe = await addCell(page, [
    'import sys',
    'print("recording:", "elastic_lite.replay.recorder" in sys.modules and sys.modules["elastic_lite.replay.recorder"].recorder_for(get_ipython().user_ns) is not None)',
  ]);
  for (let i = 0; i < 20; i += 1) {
    const out = await runCell(page, probe, /recording: (True|False)/);
    if (/recording: True/.test(out)) return;
    await page.waitForTimeout(1000);
  }
  throw new Error('the kernel never started recording cells (elastic_lite.record_session)');
}

test('JupyterLite: a generator, an open file and an sqlite3 database come back by replay after a kernel restart; a side effect is not re-run', { timeout: TIMEOUT }, async () => {
  const site = await openSite();
  const { page, browser } = site;
  // A file outside the notebook's drive (the drive needs JupyterLite's service worker, which
  // the test browser does not run): the fresh kernel gets it again before the restore, as a
  // drive would keep it.
  const file = `/tmp/replay-${Date.now()}.csv`;
  try {
    await openNotebook(page, site.url);
    await waitForRecorder(page);
    // A cell with a side effect: it writes the file, stamped (a re-run would stamp it anew).
    const wrote = await addCell(page, [
      'import time',
      'stamp = str(time.time_ns())',
      `print("wrote", open("${file}", "w").write("h\\n1\\n2\\n3\\n#" + stamp) > 0, stamp)`,
      'ticks = (t for t in range(3))',
    ]);
    const stamp = (await runCell(page, wrote, /wrote True \d+/)).match(/wrote True (\d+)/)[1];
    const made = await addCell(page, [
      'import sqlite3',
      'squares = (n * n for n in range(10))',
      `f = open("${file}")`,
      'print("first", next(squares), f.readline().strip())',
    ]);
    await runCell(page, made, 'first 0 h');
    const filled = await addCell(page, [
      'con = sqlite3.connect(":memory:")',
      'con.execute("create table t (x)")',
      'con.executemany("insert into t values (?)", [(1,), (2,), (3,)])',
      'print("second", next(squares), f.readline().strip())',
    ]);
    await runCell(page, filled, 'second 1 1');
    // The execution counts the notebook shows (the extension's own snippets take numbers too).
    const count = async (n) => Number((await cell(page, n).locator('.jp-InputPrompt').innerText()).match(/\d+/)[0]);
    const cells = `(cells [${await count(made)}], [${await count(filled)}])`;
    const planned = (status, label) => {
      const list = status.split(`${label}: `)[1] ?? '';
      return Object.fromEntries(list.split(', skipped:')[0].split('; ').map((e) => {
        const m = e.match(/^(\w+) (\(cells .*\))$/);
        return m ? [m[1], m[2]] : [e, null];
      }));
    };

    await openSidebar(page);
    const saved = await clickCheckpoint(page);
    assert.deepEqual(planned(saved, 'recomputed on restore'), { squares: cells, f: cells, con: cells }, saved);
    assert.match(saved, new RegExp(`skipped: ticks \\(.*recreating it needs cell \\[${await count(wrote)}\\].*writes files`), saved);

    await restartKernelFromMenu(page);
    await answerRestoreOffer(page, 'Not now');
    const setup = await addCell(page, [
      `print("file back", open("${file}", "w").write("h\\n1\\n2\\n3\\n#${stamp}") > 0)`,
    ]);
    await runCell(page, setup, 'file back True');
    await page.locator(RESTORE_BUTTON).first().click();
    const restored = await waitForStatus(page, /^Restored /);
    assert.deepEqual(planned(restored, 'recomputed by replay'), { squares: cells, f: cells, con: cells }, restored);
    assert.match(restored, /skipped: ticks \(.*not recomputed: .*writes files/, restored);

    const check = await addCell(page, [
      'print("next", next(squares), con.execute("select sum(x) from t").fetchone()[0], f.readline().strip())',
      `print("same file", open("${file}").read().endswith("#" + stamp))`,
    ]);
    const out = await runCell(page, check, /same file/);
    // The generator and the file continue from the same item, the table is filled; the cell
    // that wrote the file was not re-run (its stamp is the one restored). (No globals() here:
    // a cell that calls it can never be replayed, and this one advances the generator.)
    assert.equal(out, 'next 4 6 2\nsame file True');
    // The automatic point after that cell (what Restore brings back after the restart below) is
    // taken with replay on: wait until the sidebar says it is saved before turning replay off.
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-historyStatus', { hasText: /^After \[\d+\] print\("next"/ })
      .waitFor({ timeout: 120_000 });

    // Turned off (a setting, toggled from the palette): a restore re-runs no cell and says so.
    await runFromPalette(page, 'Recompute by replay what a checkpoint cannot store');
    await restartKernelFromMenu(page);
    await answerRestoreOffer(page, 'Not now');
    const last = await page.locator(STATUS).textContent();
    await page.locator(RESTORE_BUTTON).first().click();
    await page.waitForFunction(([sel, old]) => {
      const text = document.querySelector(sel)?.textContent ?? '';
      return text.startsWith('Restored ') && text !== old;
    }, [STATUS, last], { timeout: 120_000 });
    const plain = await page.locator(STATUS).textContent();
    assert.doesNotMatch(plain, /recomputed by replay: /, plain);
    assert.match(plain, /squares \(left out to be recomputed by replay; not recomputed: replay is turned off for this restore/, plain);
    await runFromPalette(page, 'Recompute by replay what a checkpoint cannot store'); // back on
    browser.assertOffline();
  } finally {
    await site.close();
  }
});
