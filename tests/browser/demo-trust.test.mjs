// The hostile corpus in Chromium: one file holding every trick of tests/py/hostile_corpus.py
// (built in a Pyodide like the page's), imported into the demo page. An import is foreign:
// restoring it opens a dialog listing what it would really import — the targets of dotted
// names, Python 2 names mapped, unknown EXT codes, the manifest's `print = builtins.exec`,
// notebook code rebuilt — with the focus on Cancel, so Enter cancels. Cancelled, nothing of it
// is loaded and no payload runs (sentinels checked inside the page's Python: files of its
// memory file system and JS globals of its worker). Confirmed, every payload that can run in a
// browser does (so the check could fail); confirmed with "Trust it from now on", it is signed
// as this browser's own and never asked about again, even in a new page of the origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import { openDemo, runCell, setCellCode, markSeen, restore, waitForMessage, listedCheckpoints } from './helpers/demo-page.mjs';
import { buildHostileFiles, SENTINEL_CHECK, checkOf, sentinelOf } from '../helpers/hostile.mjs';

let srv;
let browser;
let page;
let hostile;
let live;

before(async () => {
  ({ hostile, live } = await buildHostileFiles());
  srv = await startTestServer();
  browser = await launchChromium();
  page = await browser.newPage();
  await openDemo(page, srv.url);
});
after(async () => {
  await browser?.close();
  await srv?.close();
});

async function check() {
  await setCellCode(page, 2, SENTINEL_CHECK);
  const out = await runCell(page, 2);
  const got = checkOf(out);
  assert.ok(got, out);
  return got;
}

test('an imported hostile file: the dialog lists what it would import, Enter cancels, nothing runs', { timeout: 600_000 }, async () => {
  await markSeen(page);
  await page.locator('#import-file').setInputFiles({ name: 'hostile.elc', mimeType: 'application/octet-stream', buffer: Buffer.from(hostile) });
  await waitForMessage(page, 'Imported “hostile”');
  assert.ok((await listedCheckpoints(page)).some((c) => c.name === 'hostile'));
  await openDemo(page, srv.url); // a fresh Python

  await markSeen(page);
  await page.getByRole('button', { name: 'Restore checkpoint hostile', exact: true }).click();
  const dialog = page.locator('#trust-dialog[open]');
  await dialog.waitFor({ timeout: 120_000 });
  const text = await dialog.innerText();
  for (const row of [/⚠ runs code\s+builtins\.exec\s+written as cloudpickle builtins\.exec/, /⚠ runs code\s+posix\.mkdir\s+written as os path\.os\.mkdir/,
    /⚠ runs code\s+_pickle\.loads\s+written as .*cPickle loads/, /⚠ runs code\s+js\.eval/, /⚠ runs code\s+pyodide\.code\.run_js/,
    /\? unknown\s+EXT code 225/, /ƒ builds code\s+elastic_lite\._rebuild\.make_function/, /print =/]) {
    assert.match(text, row, text);
  }
  // The focus is on Cancel, so a key meant for a cell never confirms: Enter cancels.
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
  await page.keyboard.press('Enter');
  await waitForMessage(page, 'Not restored: “hostile” comes from elsewhere');
  assert.equal(await page.locator('#trust-dialog').count(), 0);
  assert.deepEqual(await check(), { found: [], kept: null });
  // Escape cancels too.
  await page.getByRole('button', { name: 'Restore checkpoint hostile', exact: true }).click();
  await dialog.waitFor({ timeout: 120_000 });
  await page.keyboard.press('Escape');
  await waitForMessage(page, 'Not restored: “hostile” comes from elsewhere');
  assert.deepEqual(await check(), { found: [], kept: null });
  browser.assertOffline();
});

test('confirmed, every payload that can run in a browser runs (the checks above could fail)', { timeout: 600_000 }, async () => {
  await openDemo(page, srv.url);
  const outcome = await restore(page, 'hostile', { trust: true });
  assert.match(outcome.dialog, /comes from elsewhere/);
  const got = await check();
  assert.deepEqual(got.kept, { a: [1, 2] });
  assert.deepEqual(got.found, live.map(sentinelOf).sort());
  browser.assertOffline();
});

test('"Trust it from now on" signs it as this browser\'s own: not asked again, in a new page either', { timeout: 600_000 }, async () => {
  await openDemo(page, srv.url);
  const first = await restore(page, 'hostile', { trust: true, adopt: true });
  assert.ok(first.dialog);
  await openDemo(page, srv.url); // a new page and worker of the same origin: the same key
  const again = await restore(page, 'hostile');
  assert.equal(again.dialog, undefined, 'asked again');
  // as the browser's own it is judged by the deny-list: every trick is refused but the
  // notebook function, which no list can tell from a legitimate one
  assert.match(again.title, /Refused to load code-running variables/, again.text);
  const got = await check();
  assert.deepEqual(got.kept, { a: [1, 2] });
  assert.deepEqual(got.found, ['function-body']);
  browser.assertOffline();
});
