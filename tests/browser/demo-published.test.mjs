// The demo page's ?state=URL: a notebook's published state (elastic-lite publish) on the page's
// own origin, judged by the keys demo/publishers.json pins (here a test copy, served in its
// place). Signed by the pinned key: restored with no dialog, the next cell uses it. One byte
// changed: refused as damage. Signed by another key: the trust dialog, as for any import.
// Each visit is a new origin (a server of its own): its own IndexedDB, no checkpoint yet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { DEMO_MOUNTS } from '../../demo/server.mjs';
import { stateUrl } from '../../demo/published.mjs';
import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import { markSeen, runCell, setCellCode, waitForKernel, waitForMessage } from './helpers/demo-page.mjs';
import { publishThreeWays } from './helpers/published-site.mjs';
import { NOTEBOOKS } from '../node/cli-helpers.mjs';
import { tempDirSync } from '../helpers/tempdir.mjs';

test('?state= names a published state on the page\'s own origin only', () => {
  const at = (search) => ({ search, href: `http://127.0.0.1:8000/demo/${search}`, origin: 'http://127.0.0.1:8000' });
  assert.equal(stateUrl(at('')), null);
  assert.equal(stateUrl(at('?state=/published/nb.published.elc')).href, 'http://127.0.0.1:8000/published/nb.published.elc');
  assert.equal(stateUrl(at('?state=nb.published.elc')).pathname, '/demo/nb.published.elc');
  assert.throws(() => stateUrl(at('?state=http://127.0.0.2:8000/x.elc')), /must name a published state on this site/);
  assert.throws(() => stateUrl(at('?state=//elsewhere.example/x.elc')), /must name a published state on this site/);
});

test('the demo starts from a published state: pinned key restored, changed byte refused, other key asks', { timeout: 900_000 }, async () => {
  const dir = tempDirSync('el-demo-published-');
  const pub = path.join(dir, 'published');
  fs.mkdirSync(pub);
  for (const nb of ['basic', 'unpinned']) fs.copyFileSync(path.join(NOTEBOOKS, 'basic.ipynb'), path.join(pub, `${nb}.ipynb`));
  const pinned = await publishThreeWays(pub, 'basic', path.join(dir, 'publisher'));
  const pins = path.join(dir, 'publishers.json');
  fs.writeFileSync(pins, JSON.stringify({ publisherKeys: [pinned] }));

  const browser = await launchChromium();
  const visit = async (state, check) => {
    const server = await startTestServer({ mounts: { ...DEMO_MOUNTS, '/published/': pub, '/demo/publishers.json': pins } });
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}demo/?state=/published/${state}.published.elc`);
      await waitForKernel(page);
      const offer = await waitForMessage(page, 'Start from the published state?');
      assert.match(offer, /(basic|unpinned)\.ipynb was published with its state: 9 variables, computed /);
      await markSeen(page);
      await page.getByRole('button', { name: 'Start from it' }).click();
      await check(page);
    } finally {
      await page.close();
      await server.close();
    }
  };
  try {
    await visit('basic', async (page) => {
      await waitForMessage(page, /^Restored “published basic\.ipynb /);
      assert.equal(await page.locator('#trust-dialog[open]').count(), 0, 'a pinned publisher needs no dialog');
      await setCellCode(page, 1, 'print(f(2), p.norm(), total)');
      assert.match(await runCell(page, 1), /20 5\.0 6/);
    });
    await visit('tampered', async (page) => {
      const refused = await waitForMessage(page, 'Refused the published state as damaged');
      assert.match(refused, /the checkpoint's bytes are not the ones its publisher signed/);
      assert.match(refused, /Nothing was stored or restored/);
    });
    await visit('unpinned', async (page) => {
      const dialog = page.locator('#trust-dialog[open]');
      await dialog.waitFor({ timeout: 120_000 });
      assert.match(await dialog.innerText(), /published/);
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      await waitForMessage(page, /^Not restored: /);
    });
    browser.assertOffline();
  } finally {
    await browser.close();
  }
});
