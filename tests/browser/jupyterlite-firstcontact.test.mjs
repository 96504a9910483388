// First contact, as a person makes it, in the site built the way README's Install says (the
// extension wheel pip-installed, a plain `jupyter lite build`: build/lite). Nothing here waits
// for a signal of the extension: a person opens a new notebook from the launcher and types the
// first cell at once, while the kernel is still starting.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  CELL_BUILD, CELL_CHECK, CHECKPOINT_BUTTON, OFFER, RESTORE_BUTTON, clickWhenFree, labUrl, newNotebookFromLauncher, openSite, runCell,
  typeAndRun, waitForNotebook, waitForOutput,
} from './jupyterlite-page.mjs';

const TIMEOUT = 600_000;
const CURRENT = '.jp-NotebookPanel:not(.lm-mod-hidden)'; // the notebook shown

// one site and one browser for the file; each test has its own tab, closed at its end
let site;
before(async () => { site = await openSite(); });
after(async () => { await site?.close(); });

async function newTab() {
  const page = await site.browser.context.newPage();
  page.on('dialog', (d) => d.accept().catch(() => {}));
  page.__consoleLines = site.browser.consoleLines;
  return page;
}

/** The notification an action ends with (success or error), its text. */
async function actionOutcome(page, pattern) {
  const toast = page.locator(OFFER, { hasText: pattern });
  await toast.first().waitFor({ timeout: 300_000 });
  return (await toast.first().innerText()).trim();
}

test('a new notebook: %load_ext elastic_lite as the first cell works; %checkpoint, reload, %restore as the new kernel\'s first cell: the state is back',
  { timeout: TIMEOUT }, async () => {
    const page = await newTab();
    try {
      await page.goto(labUrl(site));
      await newNotebookFromLauncher(page);
      // typed and run at once: the kernel is still starting. Without the package preloaded by
      // the kernel itself this printed ModuleNotFoundError: No module named 'elastic_lite'.
      await typeAndRun(page, 0, '%load_ext elastic_lite\nprint("first cell ok")');
      const first = await waitForOutput(page, 0, /first cell ok|Error/);
      assert.equal(first, 'first cell ok');

      await typeAndRun(page, 1, 'x = 41 + 1\nnotes = {"k": [1, 2], "s": "kept"}');
      await typeAndRun(page, 2, '%checkpoint first-contact');
      await waitForOutput(page, 2, /checkpoint 'first-contact' saved/);

      // the notebook was never saved by hand: a reload opens it as it is on disk, with a new
      // kernel; the new kernel's first cell restores, typed at once again
      // a fresh browser: JupyterLab named it Untitled.ipynb
      await page.locator('.lm-TabBar-tab', { hasText: 'Untitled.ipynb' }).first().waitFor({ timeout: 10_000 });
      const notebook = 'Untitled.ipynb';
      await page.goto(labUrl(site, notebook));
      await waitForNotebook(page);
      await typeAndRun(page, 0, '%load_ext elastic_lite\n%restore\nprint("restored:", x, notes)');
      const out = await waitForOutput(page, 0, /restored:|Error/);
      assert.match(out, /restored: 42 \{'k': \[1, 2\], 's': 'kept'\}/, out);
      site.browser.assertOffline();
    } finally {
      await page.close();
    }
  });

test('toolbar Checkpoint pressed while the kernel starts is queued, not an error; Restore pressed right after a reload brings the state back',
  { timeout: TIMEOUT }, async () => {
    const page = await newTab();
    try {
      await page.goto(site.url);
      // pressed as soon as the button is there: the kernel is still starting
      await clickWhenFree(page, `${CURRENT} ${CHECKPOINT_BUTTON}`);
      const early = await actionOutcome(page, /Checkpoint saved|failed|no running kernel/);
      assert.match(early, /^Checkpoint saved/, early);

      await runCell(page, CELL_BUILD, 'state built');
      await clickWhenFree(page, `${CURRENT} ${CHECKPOINT_BUTTON}`);
      await page.locator(OFFER, { hasText: /Checkpoint saved: \d+ variables \(.*holder/ }).first().waitFor({ timeout: 300_000 });

      // a reload: a new kernel, starting; Restore pressed at once
      await page.reload();
      await clickWhenFree(page, `${CURRENT} ${RESTORE_BUTTON}`);
      const restored = await actionOutcome(page, /Restored|failed|no running kernel/);
      assert.match(restored, /^Restored \d+ variables/, restored);
      const out = await runCell(page, CELL_CHECK, 'restore verified');
      assert.doesNotMatch(out, /Error/);
      site.browser.assertOffline();
    } finally {
      await page.close();
    }
  });
