// A checkpoint whose state would not restore in this browser's heap says so when saved, and
// "Keep checkpoints" asks the browser to keep the storage while it is not persistent.
// Storage full: Chromium's real quota for the test origin is set low (DevTools protocol,
// Storage.overrideQuotaForOrigin), then a 16 MiB checkpoint is attempted over an existing one
// of the same name. The page must say so in plain words, show progress while writing, and the
// previous checkpoint must still be listed and restore into a new kernel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import {
  openDemo, runCell, checkpoint, restore, listedCheckpoints, setCellCode,
} from './helpers/demo-page.mjs';
import { LOWER_HEAP } from './lower-heap.mjs';

let srv;
let browser;

before(async () => {
  srv = await startTestServer();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await srv?.close();
});

test('storage: a state too large for the heap warns when saved, Keep checkpoints asks the browser; quota exceeded: a clear message, progress was shown, the previous checkpoint still restores', async () => {
  const page = await browser.newPage();
  // The origin may hold 4 MiB in total. Chromium applies an override only to an origin whose
  // storage has not been opened yet, so it is set before the page first loads.
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(srv.url).origin, quotaSize: 4 * 1024 * 1024 });
  // the folder picker answers with a folder of the origin's private file system (a real
  // directory handle; no Chromium switch picks a disk folder without the dialog)
  await page.addInitScript(() => {
    window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle('demo-folder', { create: true });
  });
  await openDemo(page, srv.url);
  assert.equal(await page.locator('#where-line').innerText(), 'Checkpoints are saved in this browser.');
  await setCellCode(page, 1, 'marker = "first"\nprint("ok")');
  assert.match(await runCell(page, 1), /ok/);
  const first = await checkpoint(page, 'q');
  assert.match(first.title, /saved/, first.text);

  // A state that would not restore in this browser's heap says so when it is saved: the message
  // and the report's warnings (the heap limit lowered in this kernel, as the extension's test does)
  await setCellCode(page, 1, LOWER_HEAP);
  assert.match(await runCell(page, 1), /heap lowered/);
  const warned = await checkpoint(page, 'big');
  assert.match(warned.title, /^Checkpoint “big” saved, with a warning$/, warned.text);
  assert.match(warned.text, /Warning: this checkpoint cannot be restored in this browser: restoring its .* needs about .* of Python's memory/);
  assert.match(await page.locator('#report-skipped').innerText(), /Warnings\nthis checkpoint cannot be restored in this browser/);

  // "Keep checkpoints" is offered while the storage is not persistent (the extension's words),
  // and says what the browser answered
  const keep = page.locator('#keep-checkpoints');
  await page.locator('#storage-line').waitFor();
  if (await page.evaluate(() => navigator.storage.persisted())) {
    assert.equal(await keep.isVisible(), false);
  } else {
    assert.equal(await keep.innerText(), 'Keep checkpoints (ask the browser not to evict them)');
    await keep.click();
    await page.locator('#storage-line', { hasText: /^Browser storage: persistent|The browser declined to keep it: keep copies with Export\.$/ })
      .waitFor({ timeout: 30_000 });
    const line = await page.locator('#storage-line').innerText();
    assert.match(line, (await page.evaluate(() => navigator.storage.persisted()))
      ? /^Browser storage: persistent / : /^Browser storage: not persistent .*\. The browser declined to keep it: keep copies with Export\.$/);
  }

  const before = await listedCheckpoints(page);

  // Random bytes: IndexedDB compresses values, so only incompressible data really fills it.
  await setCellCode(page, 1, 'import os\nmarker = "second"\nblob = os.urandom(16 * 2**20)\nprint(len(blob))');
  assert.match(await runCell(page, 1), /16777216/);

  // Record every progress text the panel shows while the checkpoint runs.
  await page.evaluate(() => {
    window.__progressSeen = [];
    const label = document.querySelector('#progress-label');
    new MutationObserver(() => window.__progressSeen.push(label.textContent))
      .observe(label, { childList: true, characterData: true, subtree: true });
  });
  const failed = await checkpoint(page, 'q');
  assert.match(failed.title, /Not enough browser storage/, failed.text);
  assert.match(failed.text, /earlier checkpoints are still stored/);
  assert.match(failed.text, /delete old checkpoints/i);
  // how much it needs against what the browser says is left, and the folder store offered
  assert.match(failed.text, /it needs \d+ bytes \(16\.\d MiB\), the browser estimates about .* free/);
  assert.match(failed.text, /save checkpoints to a folder on disk instead \(“Save checkpoints to a folder…”\)/);
  // the panel's storage line says what navigator.storage.persisted() says in the page
  const persisted = await page.evaluate(() => navigator.storage.persisted());
  assert.match(await page.locator('#storage-line').innerText(),
    persisted ? /^Browser storage: persistent \(.* used, .* left$/
      : /^Browser storage: not persistent \(.* used, .* left\. The browser declined to keep it: keep copies with Export\.$/);
  const seen = await page.evaluate(() => window.__progressSeen);
  assert.ok(seen.some((t) => /Writing to browser storage/.test(t)), JSON.stringify(seen));

  assert.deepEqual(await listedCheckpoints(page), before, 'the old "q" is still listed, same size');

  // A new kernel restores the previous checkpoint whole. The new page's offer names the latest
  // checkpoint, "big", with the heap warning the kernel stored with it when it was saved.
  await openDemo(page, srv.url);
  const offer = page.locator('#messages .message[data-key="offer"]');
  await offer.waitFor({ timeout: 120_000 });
  assert.match(await offer.innerText(),
    /Checkpoint “big” from .*\n+Warning: this checkpoint cannot be restored in this browser: restoring its .* needs about .* of Python's memory/);
  await setCellCode(page, 1, 'print(marker, "blob" in globals())');
  const restored = await restore(page, 'q');
  assert.match(restored.title, /Restored “q”/, restored.text);
  assert.match(await runCell(page, 1), /^first False$/m);

  // What the quota message offers: "Save checkpoints to a folder…" makes a folder the store;
  // the next checkpoint goes there (the CLI's layout), a reload keeps the choice and restores
  // from it, and "Use browser storage" goes back
  await page.getByRole('button', { name: 'Save checkpoints to a folder…' }).click();
  await page.locator('#where-line', { hasText: 'Checkpoints are saved in the folder “demo-folder” on disk' }).waitFor({ timeout: 30_000 });
  await page.locator('#list-empty', { hasText: 'No checkpoints in the folder “demo-folder” yet.' }).waitFor({ timeout: 30_000 });
  await setCellCode(page, 1, 'marker = "in the folder"\nprint("ok")');
  assert.match(await runCell(page, 1), /ok/);
  const inFolder = await checkpoint(page, 'f');
  assert.match(inFolder.text, /variables stored in the folder “demo-folder”/, inFolder.text);
  const files = await page.evaluate(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('demo-folder');
    const out = [];
    for await (const [n, h] of dir.entries()) {
      if (h.kind === 'directory') for await (const m of h.keys()) out.push(`${n}/${m}`);
      else out.push(n);
    }
    return out;
  });
  assert.ok(files.includes('entries/f.json') && files.some((f) => /^records\/[0-9a-f]{64}$/.test(f)), files.join(' '));
  assert.deepEqual((await listedCheckpoints(page)).map((c) => c.name), ['f']);
  await openDemo(page, srv.url);
  assert.match(await page.locator('#where-line').innerText(), /^Checkpoints are saved in the folder “demo-folder” on disk/);
  await setCellCode(page, 1, 'print(marker)');
  assert.match((await restore(page, 'f')).title, /Restored “f”/);
  assert.match(await runCell(page, 1), /^in the folder$/m);
  await page.getByRole('button', { name: 'Use browser storage' }).click();
  await page.locator('#where-line', { hasText: /^Checkpoints are saved in this browser\.$/ }).waitFor({ timeout: 30_000 });
  await page.waitForFunction(() => [...document.querySelectorAll('#checkpoint-list tbody tr')].some((r) => r.dataset.name === 'q'),
    null, { timeout: 30_000 });

  // The browser removes the whole site's storage (as eviction does: IndexedDB and the origin's
  // files; localStorage is not evicted): the next page says the checkpoints were removed
  await page.waitForFunction(() => localStorage.getItem('elastic-lite:saved-in-this-browser') !== null, null, { timeout: 30_000 });
  await cdp.send('Storage.clearDataForOrigin', { origin: new URL(srv.url).origin, storageTypes: 'indexeddb,file_systems,cache_storage' });
  await openDemo(page, srv.url);
  const removed = await page.locator('#messages .message', { hasText: 'Your checkpoints were removed by the browser' }).innerText();
  assert.match(removed, /The checkpoints saved in this browser since .* are gone: the browser removed this site's storage/);
  assert.deepEqual(await listedCheckpoints(page), []); // (said once: storage-status.test)

  browser.assertOffline();
});
