// A notebook published warm, on a site built the plain way (helpers/published-site.mjs). A
// visitor opens the notebook: the offer restores its published state, and the next cell uses it
// without the slow first cell ever running. The same state with one byte changed is refused as
// damage; signed by a key the site does not pin, it gets the foreign dialog like any file from
// elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import { FIRST_RESULT, PREDICTION, acceptPublishedOffer, buildSite } from './helpers/published-site.mjs';
import { cell, runCell } from './jupyterlite-page.mjs';
import { tempDirSync } from '../helpers/tempdir.mjs';

const TIMEOUT = 900_000;

test('a published notebook opens warm; a changed byte is damage; an unpinned key is foreign', { timeout: TIMEOUT }, async () => {
  const dir = tempDirSync('el-published-');
  const site = await buildSite(dir);
  const browser = await launchChromium();
  // Each notebook is opened by a new visitor: a server of its own is another origin (its own
  // IndexedDB and workspace), so no earlier notebook or checkpoint is in the way.
  const visit = async (nb, check) => {
    const server = await startTestServer({ root: site });
    const page = await browser.newPage();
    page.on('dialog', (d) => d.accept().catch(() => {}));
    page.__consoleLines = browser.consoleLines;
    try {
      const offered = await acceptPublishedOffer(page, `${server.url}lab/index.html?path=${nb}.ipynb`);
      await check(page, offered);
    } finally {
      await page.close();
      await server.close();
    }
  };
  try {
    await visit('warm', async (page, offered) => {
      assert.match(offered, /warm\.ipynb was published with its state/);
      assert.match(offered, /\(\d+ variables, computed /);
      await page.locator('.Toastify__toast', { hasText: /^Restored/ }).first().waitFor({ timeout: 300_000 });
      // the next cell uses the published state; the slow first cell never ran in this kernel
      const out = await runCell(page, 1, FIRST_RESULT);
      assert.ok(out.includes(PREDICTION), out);
      assert.equal((await cell(page, 0).locator('.jp-InputPrompt').innerText()).trim(), '[ ]:');
      assert.equal(await cell(page, 0).locator('.jp-OutputArea-output').count(), 0);
    });
    await visit('tampered', async (page) => {
      const refused = page.locator('.Toastify__toast', { hasText: 'as damaged' }).first();
      await refused.waitFor({ timeout: 300_000 });
      assert.match(await refused.innerText(), /Refused the published state of tampered\.ipynb as damaged: the checkpoint's bytes are not the ones its publisher signed/);
      await runCell(page, 1, 'NameError');
    });
    await visit('unpinned', async (page) => {
      const dialog = page.locator('.jp-Dialog', { hasText: 'It comes from elsewhere' });
      await dialog.waitFor({ timeout: 300_000 });
      assert.match(await dialog.innerText(), /imported from the published state of unpinned\.ipynb/);
      await dialog.locator('button', { hasText: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached', timeout: 10_000 });
      await runCell(page, 1, 'NameError');
    });
    assert.deepEqual(browser.foreignRequests, []);
  } finally {
    await browser.close();
  }
});
