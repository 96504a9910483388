#!/usr/bin/env node
// Regenerates docs/demo.png: the demo page right after a restore into a fresh kernel.
//
//   npm run build && node scripts/screenshot-demo.mjs [--out docs/demo.png]
//
// Same steps a person takes (and the browser test checks): run the example cells, checkpoint,
// reload the page, accept the restore offer, run the check cell. Offline, Debian's Chromium.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../tests/browser/helpers/chromium.mjs';
import { startTestServer } from '../tests/browser/helpers/server.mjs';
import {
  openDemo, runAll, runCell, checkpoint, waitForMessage, cell,
} from '../tests/browser/helpers/demo-page.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outArg = process.argv.indexOf('--out');
const out = path.resolve(outArg > 0 ? process.argv[outArg + 1] : path.join(REPO, 'docs', 'demo.png'));

const srv = await startTestServer();
const browser = await launchChromium({ viewport: { width: 1280, height: 860 } });
try {
  const page = await browser.newPage();
  await openDemo(page, srv.url);
  await runAll(page);
  const saved = await checkpoint(page, 'analysis');
  if (!/saved/.test(saved.title)) throw new Error(`checkpoint failed: ${saved.text}`);

  await openDemo(page, srv.url); // reload: a new Python
  await waitForMessage(page, 'Restore your last session?');
  await page.getByRole('button', { name: 'Restore “analysis”' }).click();
  await waitForMessage(page, 'Restored “analysis”');
  const checkCell = (await page.locator('#cells > li').count());
  await runCell(page, checkCell);
  // Show the check cell's output next to the restore report.
  await cell(page, checkCell).scrollIntoViewIfNeeded();
  await page.evaluate(() => window.scrollBy(0, 200));
  await page.mouse.move(0, 0);
  await page.screenshot({ path: out });
  browser.assertOffline();
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
} finally {
  await browser.close();
  await srv.close();
}
