// The demo page in a real Chromium, with the network off: run the example cells, checkpoint,
// RELOAD the page (a new worker, a new Pyodide: a new kernel), restore, and check in the page
// that the values, the notebook-defined function, the class instance and the dill-saved object
// all work, and that the generator no serializer can save is recomputed by replaying the cells
// that made and advanced it: next() continues from the same item.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import {
  openDemo, waitForKernel, runAll, runCell, cellOutput, checkpoint, restore, waitForMessage,
  listedCheckpoints, reportRows, setCellCode,
} from './helpers/demo-page.mjs';

let srv;
let browser;
// One page with a started kernel for the tests that need a kernel but not a new one
// (keyboard, layout, worker, offline guard): opened by the first of them, in file order the
// keyboard test, which checks the namespace is still empty. The tests about a reload or a
// kernel still starting open pages of their own.
let shared;

before(async () => {
  srv = await startTestServer();
  browser = await launchChromium();
});
after(async () => {
  await shared?.close();
  await browser?.close();
  await srv?.close();
});

async function sharedDemo() {
  if (!shared || shared.isClosed()) {
    shared = await browser.newPage();
    await openDemo(shared, srv.url);
  }
  return shared;
}

test('run the example, checkpoint, reload the page, restore: everything works again', async () => {
  const page = await browser.newPage();
  await openDemo(page, srv.url);

  // A fresh browser profile: nothing to offer yet.
  assert.equal(await page.locator('#messages .message h2', { hasText: 'Restore your last session?' }).count(), 0);

  await runAll(page);
  assert.match(await cellOutput(page, 1), /1000 points; prices add up to 5\.15/);
  assert.match(await cellOutput(page, 2), /ada pays 8\.22/);
  assert.match(await cellOutput(page, 3), /^49$/m);
  assert.match(await cellOutput(page, 5), /lock held: True/);
  assert.match(await cellOutput(page, 5), /^generator continues: 9$/m);

  const saved = await checkpoint(page, 'walkthrough');
  assert.match(saved.title, /Checkpoint “walkthrough” saved/, saved.text);

  // The per-variable report names the serializer each variable needed.
  const rows = await reportRows(page);
  for (const name of ['prices', 'history', 'shared', 'alias', 'rate', 'with_tax', 'Basket']) {
    assert.ok(rows[name], `report lists ${name}: ${JSON.stringify(Object.keys(rows))}`);
    assert.equal(rows[name].serializer, 'cloudpickle', `${name} via cloudpickle`);
  }
  // an instance of the notebook's class: Python's own pickler, its class (saved by value with
  // cloudpickle, just above) referred to by name
  assert.equal(rows.basket?.serializer, 'pickle', 'basket via pickle');
  assert.equal(rows.tools?.serializer, 'dill', 'the lambda + lock dict needed dill');
  // A generator cannot be saved: it is planned for replay (made by cell [4], advanced by [5];
  // [5] also used the lock in `tools` — a change, for all the recorder knows — so it needs
  // `tools` as cell [3] made it).
  assert.deepEqual(rows.countdown, { type: 'generator', serializer: 'replay', size: '[3] [4] [5]', time: '—' });
  assert.match(await page.locator('#report-skipped').innerText(),
    /Recomputed on restore \(not saved\)\ncountdown \(generator\): will be recomputed by re-running cells \[3\], \[4\], \[5\]/);
  assert.match(await page.locator('#report-skipped').innerText(),
    /cell \[5\] has side effects \(prints\): it will be re-run on restore and reported/);
  // Imports are re-imported on restore, not pickled; the demo's own modules are not among them.
  const notes = await page.locator('#report-skipped').innerText();
  assert.match(notes, /math = math, threading = threading/);
  assert.doesNotMatch(notes, /\bsys = sys|\btypes = types/);
  // The time chart has a bar for each phase.
  assert.match(await page.locator('#report-chart').getAttribute('aria-label'), /serialize .*store /);

  const listed = await listedCheckpoints(page);
  assert.deepEqual(listed.map((c) => c.name), ['walkthrough']);

  // ---- reload: a new page, a new worker, a new Python ----
  await page.reload();
  await waitForKernel(page);
  const offer = await waitForMessage(page, 'Restore your last session?');
  assert.match(offer, /walkthrough/);
  // The offer takes no keyboard focus: Enter pressed for something else does not restore.
  assert.notEqual(await page.evaluate(() => document.activeElement?.id), 'offer-restore');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Shift+Enter');
  assert.equal(await page.locator('#messages .message h2', { hasText: 'Restored' }).count(), 0);

  // Proof that the new kernel is empty: the check cell fails before the restore.
  await runCell(page, 5);
  assert.match(await cellOutput(page, 5), /NameError: name 'prices' is not defined/);
  assert.match(await cellOutput(page, 5), /<cell \d+>/, 'the traceback points into the cell');

  await page.getByRole('button', { name: 'Restore “walkthrough”' }).click();
  const restored = await waitForMessage(page, 'Restored “walkthrough”');
  assert.match(restored, /and 1 recomputed by re-running recorded cells/);
  const replayNotes = await page.locator('#report-skipped').innerText();
  assert.match(replayNotes, /Recomputed by re-running recorded cells\ncountdown \(generator\): recomputed by re-running cells \[3\], \[4\], \[5\]/);
  // Cell 5 was re-run to advance the generator: its output is in the report, not in a cell.
  assert.match(replayNotes, /Output of the re-run cells\n\[5\] data: 3\.1 1000 True/);
  assert.equal((await reportRows(page)).countdown.serializer, 'replay');

  const out = await runCell(page, 5);
  assert.match(out, /^data: 3\.1 1000 True$/m); // values, and the alias is the same list
  assert.match(out, /^function: 12\.0$/m);
  assert.match(out, /^instance: 8\.22 True$/m);
  assert.match(out, /^dill: 81 \| lock held: True$/m);
  assert.match(out, /^generator continues: 8$/m, 'next() continues from where it was at the checkpoint');

  // The restored function reads the LIVE namespace: change a global it uses, call it again.
  const cellCount = await page.locator('#cells > li').count();
  await page.getByRole('button', { name: 'Add cell' }).click();
  await page.getByRole('textbox', { name: `Code of cell ${cellCount + 1}` })
    .fill('rate = 2\nprint(with_tax(10), basket.add("pear", 5).total(), type(basket).__name__)');
  const live = await runCell(page, cellCount + 1);
  assert.match(live, /^20 21\.7 Basket$/m);

  browser.assertOffline();
});

test('keyboard: Shift+Enter runs the focused cell; the panel is reachable by Tab', async () => {
  const page = await sharedDemo();
  const box = page.getByRole('textbox', { name: 'Code of cell 1', exact: true });
  // Also checks that the demo's own helpers left nothing in the user's namespace (it is
  // what a checkpoint captures).
  await box.fill('print(6 * 7, [k for k in globals() if not k.startswith("_")])');
  await box.press('Shift+Enter');
  await page.waitForFunction(() => document.querySelector('#cells > li').dataset.state === 'done');
  assert.match(await cellOutput(page, 1), /^42 \[\]$/m);

  // Every button on the page has an accessible name.
  const unnamed = await page.$$eval('button', (bs) => bs.filter((b) => !(b.getAttribute('aria-label') || b.textContent.trim())).length);
  assert.equal(unnamed, 0);

  // Tabbing from the name field reaches "Checkpoint now" next.
  await page.getByRole('textbox', { name: 'Name' }).focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Checkpoint now');
  browser.assertOffline();
});

test('layout: two columns at 1280 px, one column and no sideways scrolling when narrow', async () => {
  const page = await sharedDemo();
  const boxes = async () => page.evaluate(() => {
    const r = (sel) => document.querySelector(sel).getBoundingClientRect();
    return { cells: r('.notebook'), panel: r('.panel'), scroll: document.documentElement.scrollWidth, width: innerWidth };
  });
  await page.setViewportSize({ width: 1280, height: 900 });
  let b = await boxes();
  assert.ok(b.panel.left >= b.cells.right, 'the panel sits beside the cells');
  assert.ok(b.scroll <= b.width, `no horizontal scroll at 1280 px (${b.scroll} > ${b.width})`);
  await page.setViewportSize({ width: 390, height: 800 });
  b = await boxes();
  assert.ok(b.panel.top >= b.cells.bottom, 'the panel comes after the cells');
  assert.ok(b.scroll <= b.width, `no horizontal scroll at 390 px (${b.scroll} > ${b.width})`);
  // The header link jumps to the checkpoint panel on a narrow screen.
  await page.getByRole('link', { name: 'Go to checkpoints' }).click();
  assert.ok(await page.evaluate(() => document.querySelector('#panel-title').getBoundingClientRect().top < innerHeight));
  await page.setViewportSize({ width: 1280, height: 900 }); // as the next test on this page expects it
});

test('Python runs in a worker: the page keeps responding while a long cell runs', async () => {
  const page = await sharedDemo();
  // The cell spins until the page tells it to stop (a file in Pyodide's memory FS would not be
  // visible to the page, so it simply spins for a while and the page acts in the meantime).
  await setCellCode(page, 1, 'import time\nt = time.time()\nwhile time.time() - t < 8: pass\nprint("long cell done")');
  const cells = await page.locator('#cells > li').count();
  await page.getByRole('button', { name: 'Run cell 1', exact: true }).click();
  await page.waitForFunction(() => document.querySelector('#cells > li').dataset.state === 'running');
  // If Python ran on the main thread, this click would only be handled after the cell ends.
  await page.getByRole('button', { name: 'Add cell' }).click();
  assert.equal(await page.locator('#cells > li').count(), cells + 1);
  assert.equal(await page.locator('#cells > li').first().getAttribute('data-state'), 'running',
    'the page handled the click while the cell was still running');
  await page.waitForFunction(() => document.querySelector('#cells > li').dataset.state === 'done', null, { timeout: 60_000 });
  assert.match(await cellOutput(page, 1), /long cell done/);
  await page.getByRole('button', { name: `Delete cell ${cells + 1}`, exact: true }).click();
  browser.assertOffline();
});

test('the offline guard itself works: a request to another host is caught and blocked', async () => {
  const page = await sharedDemo();
  const before = browser.foreignRequests.length;
  // From the page and from a worker, as the demo's Python worker would.
  const outcome = await page.evaluate(async () => {
    const direct = await fetch('http://example.com/probe').then(() => 'reached', () => 'blocked');
    const w = new Worker(URL.createObjectURL(new Blob(
      ["fetch('http://203.0.113.7/probe').then(() => postMessage('reached'), () => postMessage('blocked'))"],
      { type: 'text/javascript' })));
    const fromWorker = await new Promise((r) => { w.onmessage = (e) => r(e.data); });
    w.terminate();
    return [direct, fromWorker];
  });
  assert.deepEqual(outcome, ['blocked', 'blocked']);
  const caught = browser.foreignRequests.splice(before);
  assert.ok(caught.some((u) => u.startsWith('http://example.com/')), JSON.stringify(caught));
  assert.ok(caught.some((u) => u.startsWith('http://203.0.113.7/')), JSON.stringify(caught));
});

test('first contact: Checkpoint pressed while Python is still starting is queued, not an error; after a reload the offer restores at once', async () => {
  await shared?.close(); // the tests on the shared page are done
  const page = await browser.newPage();
  await page.goto(new URL('demo/', srv.url).href);
  // pressed as soon as the button is there
  await page.getByRole('textbox', { name: 'Name' }).fill('early');
  const state = await page.locator('#kernel-status').getAttribute('data-state');
  await page.getByRole('button', { name: 'Checkpoint now' }).click();
  assert.equal(state, 'starting', 'the click came before Python was ready');
  const early = await waitForMessage(page, /Checkpoint “early”|Something went wrong|Python/);
  assert.match(early, /Checkpoint “early” saved/, early);

  // the cells' text is kept by the page (earlier tests changed it): this test's own
  await setCellCode(page, 1, 'prices = [round(1.5 * i, 2) for i in range(5)]');
  await runCell(page, 1);
  await setCellCode(page, 2, 'print("back", prices)');
  const before = await runCell(page, 2);
  assert.match(before, /^back \S/m, before);
  const saved = await checkpoint(page, 'first-contact');
  assert.match(saved.title, /Checkpoint “first-contact” saved/, saved.text);

  // a reload: a new worker and Python; the offer's Restore pressed as soon as it shows
  await page.goto(new URL('demo/', srv.url).href);
  await page.locator('#offer-restore').click({ timeout: 120_000 });
  await waitForMessage(page, 'Restored “first-contact”');
  assert.equal(await runCell(page, 2), before); // the cell's text is kept by the page
  browser.assertOffline();
  await page.close();
});
