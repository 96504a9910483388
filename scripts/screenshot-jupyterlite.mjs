#!/usr/bin/env node
// Regenerates docs/jupyterlite.png: the Elastic Lite sidebar in the offline JupyterLite site
// right after a checkpoint, with the checkpoint's inspection report open.
//
//   npm run build && node scripts/screenshot-jupyterlite.mjs [OUT.png]
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  CELL_BUILD, clickCheckpoint, openNotebook, openSidebar, openSite, runCell, sidebarItems,
} from '../tests/browser/jupyterlite-page.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] || path.join(ROOT, 'docs', 'jupyterlite.png'));

const site = await openSite();
try {
  const { page } = site;
  await page.setViewportSize({ width: 1400, height: 860 });
  await openNotebook(page, site.url);
  await runCell(page, CELL_BUILD, 'state built');
  await openSidebar(page);
  // drag the sidebar's edge to the right, so the report table is readable
  const handle = page.locator('#jp-main-split-panel > .lm-SplitPanel-handle').first();
  const box = await handle.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + 260, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await clickCheckpoint(page);
  const first = sidebarItems(page).first();
  await first.locator('button', { hasText: 'Inspect' }).click();
  await first.locator('table.jp-ElasticLite-report').waitFor({ timeout: 30_000 });
  await page.mouse.move(0, 0);
  await page.screenshot({ path: out });
  site.browser.assertOffline();
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
} finally {
  await site.close();
}
