// Checkpoints in a folder (File System Access) in the offline JupyterLite site, in Chromium:
// "Save checkpoints to a folder…" with the picker stubbed through the page, a checkpoint from
// the kernel (its worker writes the folder), the sidebar listing it, a restore after a reload
// (the handle remembered in IndexedDB, read again by the new kernel's worker); the same folder
// read by the CLI (ls, verify, restore), and a folder written by the CLI (run) restored in the
// browser.
//
// The picker returns a folder of the origin's private file system (OPFS): a real
// FileSystemDirectoryHandle, which can be kept in IndexedDB and reach the kernel's worker as
// the product's handle does (no Chromium switch picks a disk folder without the dialog, and a
// handle made of JS functions could not be cloned). The folder's files are copied byte for
// byte to a real directory for the CLI, and a CLI-written directory into OPFS for the page:
// the layout is what is tested both ways. The store's own writes to a real directory through
// a handle: tests/node/store-folder.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  CELL_BUILD, CELL_CHECK, ITEM, answerRestoreOffer, appendCell, openNotebook, openSidebar, openSite, runCell,
  runFromPalette, waitForItemCount, waitForNotebook, waitForRestoreOffer, waitForStatus,
} from './jupyterlite-page.mjs';
import { tempDirSync } from '../helpers/tempdir.mjs';
import { runCli } from '../node/cli-helpers.mjs';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { LOWER_HEAP } from './lower-heap.mjs';

// window.showDirectoryPicker: the OPFS folder named by localStorage 'el-test-folder'.
// In the page only, a folder's permission is what localStorage 'el-test-permission' says
// (OPFS is always granted: this stands for a reload that lost the grant); asking grants it.
const PICKER = `window.showDirectoryPicker = async () => (await navigator.storage.getDirectory())
  .getDirectoryHandle(localStorage.getItem('el-test-folder') || 'checkpoints', { create: true });
FileSystemHandle.prototype.queryPermission = async () => localStorage.getItem('el-test-permission') || 'granted';
FileSystemHandle.prototype.requestPermission = async () => { localStorage.removeItem('el-test-permission'); return 'granted'; };`;

/** Every file of OPFS folder `name`: [{path, base64}]. */
function readOpfs(page, name) {
  return page.evaluate(async (top) => {
    const out = [];
    const walk = async (dir, at) => {
      for await (const [n, h] of dir.entries()) {
        if (h.kind === 'directory') await walk(h, `${at}${n}/`);
        else {
          const b = new Uint8Array(await (await h.getFile()).arrayBuffer());
          let s = ''; for (const x of b) s += String.fromCharCode(x);
          out.push({ path: at + n, base64: btoa(s) });
        }
      }
    };
    await walk(await (await navigator.storage.getDirectory()).getDirectoryHandle(top), '');
    return out;
  }, name);
}

/** Copies OPFS folder `name` to `dir` as Chromium makes files on disk (0600, folders 0700). */
async function opfsToDisk(page, name, dir) {
  for (const f of await readOpfs(page, name)) {
    const file = path.join(dir, f.path);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, Buffer.from(f.base64, 'base64'), { mode: 0o600 });
  }
}

/** Copies directory `dir` into OPFS folder `name` (made afresh). */
async function diskToOpfs(page, dir, name) {
  const files = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
    .map((e) => { const p = path.join(e.parentPath ?? e.path, e.name); return { path: path.relative(dir, p), base64: fs.readFileSync(p).toString('base64') }; });
  await page.evaluate(async ([top, list]) => {
    const root = await navigator.storage.getDirectory();
    await root.removeEntry(top, { recursive: true }).catch(() => {});
    const base = await root.getDirectoryHandle(top, { create: true });
    for (const f of list) {
      const parts = f.path.split('/');
      let dir = base;
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create: true });
      const out = await (await dir.getFileHandle(parts.at(-1), { create: true })).createWritable();
      await out.write(Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0)));
      await out.close();
    }
  }, [name, files]);
}

// In the page: how many checkpoints the browser's own store (IndexedDB) lists.
async function countIdb() {
  const m = await import(`${location.origin}/extensions/elastic-lite-jupyterlite/static/elastic-lite/js/store/indexeddb.mjs`);
  return (await new m.IndexedDBStore().list()).length;
}

test('checkpoints saved to a folder: the kernel writes it, restored after a reload, read by the CLI; a CLI-written folder restores in the browser', { timeout: 900_000 }, async () => {
  const site = await openSite();
  const { page } = site;
  const tmp = tempDirSync('elastic-lite-folder-');
  try {
    await page.addInitScript(PICKER);
    await openNotebook(page, site.url);
    await runFromPalette(page, 'Auto-checkpoint after each successful cell'); // off: one checkpoint per step
    await runCell(page, CELL_BUILD, 'state built');
    await openSidebar(page);
    await waitForItemCount(page, 0);

    // 1. the folder becomes this notebook's store; the kernel checkpoints into it
    await runFromPalette(page, 'Save checkpoints to a folder…');
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-folderChoice').filter({ has: page.locator('option[value="folder"]') })
      .waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('#elastic-lite-sidebar .jp-ElasticLite-folderChoice')?.value === 'folder',
      null, { timeout: 30_000 });
    await runFromPalette(page, 'Checkpoint kernel');
    await waitForStatus(page, /Checkpoint saved/);
    await waitForItemCount(page, 1);
    const name = await page.locator(ITEM).first().getAttribute('data-name');
    const files = (await readOpfs(page, 'checkpoints')).map((f) => f.path);
    assert.ok(files.includes('signing-key') && files.includes('counter.json'), files.join(' '));
    // the folder keeps the history as the browser's store does (the settings' retention)
    const kept = JSON.parse(Buffer.from((await readOpfs(page, 'checkpoints')).find((f) => f.path === 'retention.json').base64, 'base64'));
    assert.deepEqual(kept.default, { keepLast: 30, keepHourly: 24, maxBytes: 1024 * 1024 * 1024 });
    assert.ok(files.some((f) => f.startsWith('entries/')) && files.some((f) => /^records\/[0-9a-f]{64}$/.test(f)), files.join(' '));
    // nothing of it in the browser's own store
    assert.equal(await page.evaluate(countIdb), 0, 'the checkpoint went to the folder, not to IndexedDB');

    // 2. the CLI reads the same folder: ls, verify, restore
    const dir = path.join(tmp, 'from-browser');
    await opfsToDisk(page, 'checkpoints', dir);
    const ls = await runCli(['ls', '--store', dir, '--json']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.deepEqual(JSON.parse(ls.stdout).checkpoints.map((c) => c.name), [name]);
    const verify = await runCli(['verify', name, '--store', dir]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    const restored = await runCli(['restore', name, '--store', dir, '-c', 'print("cli sees", scale([1, 2]), holder["ref"] is shared)']);
    assert.equal(restored.code, 0, restored.stdout + restored.stderr);
    assert.match(restored.stdout, /cli sees \[3, 6\] True/);
    assert.doesNotMatch(restored.stdout + restored.stderr, /foreign|not signed/i, 'the folder\'s own key signed it');

    // 3. after a reload: the remembered folder, the new kernel's store; its checkpoint restores
    await page.reload();
    await waitForNotebook(page);
    await answerRestoreOffer(page, 'Restore', 180_000);
    await waitForStatus(page, /Restored/);
    await runCell(page, CELL_CHECK, 'restore verified');

    // 3b. the notebook's store back to the browser's: the kernel's next checkpoint goes there
    await openSidebar(page);
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-folderChoice').selectOption('browser');
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-folderStatus', { hasText: "now go to this browser's storage" })
      .waitFor({ timeout: 60_000 });
    const before = (await readOpfs(page, 'checkpoints')).length;
    await runFromPalette(page, 'Checkpoint kernel');
    await waitForStatus(page, /Checkpoint saved/);
    assert.equal(await page.evaluate(countIdb), 1, 'saved in IndexedDB');
    assert.equal((await readOpfs(page, 'checkpoints')).length, before, 'the folder unchanged');

    // 3c. "Copy all checkpoints to the folder": the browser's one is copied, signed by the folder's key
    await runFromPalette(page, 'Copy all checkpoints to the folder');
    await page.locator('.Toastify__toast', { hasText: 'Copied 1 checkpoint(s) to the folder "checkpoints"' }).waitFor({ timeout: 60_000 });
    const backup = path.join(tmp, 'backup');
    await opfsToDisk(page, 'checkpoints', backup);
    const copied = (await new DirectoryStore(backup).list()).map((e) => e.name).filter((n) => n !== name);
    assert.equal(copied.length, 1, 'the browser\'s checkpoint is in the folder too');
    assert.equal((await new DirectoryStore(backup).getEntry(copied[0])).signature.state, 'valid');

    // 4. a folder written by the CLI restores in the browser
    const nbDir = path.join(tmp, 'nb');
    fs.mkdirSync(nbDir);
    const nb = path.join(nbDir, 'cli.ipynb');
    fs.writeFileSync(nb, JSON.stringify({ nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [
      { cell_type: 'code', metadata: {}, outputs: [], execution_count: null, source: ['made_by_cli = {"n": 41 + 1}'] }] }));
    const cliStore = path.join(tmp, 'from-cli');
    const run = await runCli(['run', nb, '--store', cliStore, '--name', 'from the CLI']);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    await diskToOpfs(page, cliStore, 'cli-folder');
    await page.evaluate(() => localStorage.setItem('el-test-folder', 'cli-folder'));
    await runFromPalette(page, 'Save checkpoints to a folder…');
    const at = await appendCell(page, 'import elastic_lite; _r = await elastic_lite.restore("from the CLI"); print("browser sees", made_by_cli["n"])');
    await runCell(page, at, 'browser sees 42');

    // 5. permission lost (as after a reload): the sidebar says so and Reconnect asks again
    await page.evaluate(() => localStorage.setItem('el-test-permission', 'prompt'));
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Refresh' }).click();
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-folderStatus', { hasText: 'needs your permission again' })
      .waitFor({ timeout: 60_000 });
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Reconnect folder' }).click();
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-folderStatus', { hasText: 'is connected again' })
      .waitFor({ timeout: 60_000 });
    assert.equal(await page.evaluate(() => localStorage.getItem('el-test-permission')), null, 'asked the browser');

    // 6. record files deleted from the folder behind the store's back (by hand, a sync tool):
    // the sidebar marks the checkpoint lost in the folder's words, %restore names it, and
    // "Delete lost checkpoints" deletes it from the folder
    await runFromPalette(page, 'Checkpoint kernel');
    await waitForStatus(page, /Checkpoint saved/);
    await waitForItemCount(page, 1);
    const gone = await page.locator(ITEM).first().getAttribute('data-name');
    const removed = await page.evaluate(async (nb) => {
      const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('cli-folder');
      const entries = await top.getDirectoryHandle('entries');
      let doc = null;
      for await (const [, h] of entries.entries()) {
        const d = JSON.parse(await (await h.getFile()).text());
        if (d.name === nb) doc = d;
      }
      const records = await top.getDirectoryHandle('records');
      const keys = [...new Set(doc.records.map((r) => r.key))];
      for (const k of keys) await records.removeEntry(k);
      return keys.length;
    }, gone);
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Refresh' }).click();
    await page.locator(`${ITEM}.jp-ElasticLite-lost`).waitFor({ timeout: 60_000 });
    assert.equal(await page.locator(`${ITEM}.jp-ElasticLite-lost .jp-ElasticLite-itemLost`).innerText(),
      `lost: its data was removed from the folder (${removed} of ${removed} records gone)`);
    assert.match(await page.locator('#elastic-lite-sidebar .jp-ElasticLite-lostSummary').innerText(),
      /^1 checkpoint is lost: its data was deleted from the folder \(by hand, or by a sync or cleanup tool\)\. It cannot be restored/);
    const magic = await appendCell(page, `%load_ext elastic_lite\n%restore ${gone}`);
    const said = await runCell(page, magic, 'is lost');
    assert.match(said, /is lost: its records are no longer in the folder "cli-folder"; they were deleted from it/, said);
    await page.locator('#elastic-lite-sidebar button', { hasText: 'Delete lost checkpoints' }).click();
    await waitForItemCount(page, 0);
    assert.equal(await page.locator('#elastic-lite-sidebar .jp-ElasticLite-lostSummary').count(), 0);

    // 7. a state that would not restore in this browser's heap says so when it is saved (the
    // heap limit lowered in this kernel: a fresh kernel's own 256 MiB are then over it)
    const lower = await appendCell(page, LOWER_HEAP);
    await runCell(page, lower, 'heap lowered');
    await runFromPalette(page, 'Checkpoint kernel');
    const warned = await waitForStatus(page, /Checkpoint saved: .*WARNING: this checkpoint cannot be restored in this browser: restoring its .* needs about .* of Python's memory/);
    assert.match(warned, /checkpoint fewer or smaller variables/, warned);
    // and the sidebar's item keeps saying it (the kernel stored it with the checkpoint)
    const itemWarning = page.locator('#elastic-lite-sidebar .jp-ElasticLite-itemWarning').first();
    await itemWarning.waitFor({ timeout: 60_000 });
    assert.match(await itemWarning.innerText(), /^Warning: this checkpoint cannot be restored in this browser: restoring its .* needs about/);
    // and the restore offer after a reload says it: first in the notification (it shows 140
    // characters), the stored text behind "Why?"
    await page.reload();
    await waitForNotebook(page);
    const offer = await waitForRestoreOffer(page);
    assert.match(await offer.innerText(), /^Restore the last checkpoint\? Too large to restore in this browser: the one of /);
    await offer.locator('button.jp-toast-button', { hasText: 'Why?' }).click();
    const why = page.locator('.jp-Dialog', { hasText: 'This checkpoint may not restore here' });
    await why.waitFor({ timeout: 10_000 });
    assert.match(await why.innerText(), /Warning: this checkpoint cannot be restored in this browser: restoring its .* needs about/);
    await why.locator('button.jp-mod-accept').click();
    await why.waitFor({ state: 'detached', timeout: 10_000 });
    await offer.locator('button.jp-toast-button', { hasText: 'Not now' }).click();
    await offer.waitFor({ state: 'detached', timeout: 10_000 });

    // 8. the browser removes the whole site's storage (as eviction does: IndexedDB and the
    // origin's files, localStorage kept): after a reload the sidebar says the checkpoints saved
    // in this browser (step 3b's) were removed
    assert.notEqual(await page.evaluate(() => localStorage.getItem('elastic-lite:saved-in-this-browser')), null);
    const cdp = await site.browser.context.newCDPSession(page);
    await cdp.send('Storage.clearDataForOrigin', { origin: new URL(site.url).origin, storageTypes: 'indexeddb,file_systems,cache_storage' });
    await openNotebook(page, site.url);
    await openSidebar(page);
    // the line is on the page from the start, hidden and empty, until the store has been read
    const removedLine = page.locator('#elastic-lite-sidebar .jp-ElasticLite-removed');
    await removedLine.waitFor({ state: 'visible', timeout: 60_000 }).catch(() => {});
    assert.match(await removedLine.innerText(),
      /^The checkpoints saved in this browser since .* are gone: the browser removed this site's storage/);
  } finally {
    await site.close();
  }
});
