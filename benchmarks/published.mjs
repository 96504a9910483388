// `npm run bench` part "published": a notebook published warm against the same notebook cold,
// as a visitor of a JupyterLite site meets it. The site is built the plain way with the
// notebook published beside it (tests/browser/helpers/published-site.mjs); each visit is a new
// origin (a server of its own), so nothing is cached between them but the browser's HTTP cache
// of the site's files, which both sides share. Measured from opening the notebook's URL to the
// first result a person waits for — the prediction printed by its second cell:
//   cold  run the first cell (the slow "fit"), then the second;
//   warm  accept the offer of the published state, then run the second cell only.
// Both include the kernel's start; rounds alternate which side goes first.
import { startTestServer } from '../tests/browser/helpers/server.mjs';
import { FIRST_RESULT, acceptPublishedOffer, buildSite } from '../tests/browser/helpers/published-site.mjs';
import { runCell } from '../tests/browser/jupyterlite-page.mjs';
import { tempDirSync } from '../tests/helpers/tempdir.mjs';

async function visit(browser, site, nb, steps) {
  const server = await startTestServer({ root: site });
  const page = await browser.newPage();
  page.on('dialog', (d) => d.accept().catch(() => {}));
  try {
    const t0 = Date.now();
    await steps(page, `${server.url}lab/index.html?path=${nb}.ipynb`);
    return Date.now() - t0;
  } finally {
    await page.close();
    await server.close();
  }
}

const cold = (browser, site) => visit(browser, site, 'warm', async (page, url) => {
  await page.goto(url);
  await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').first().waitFor({ timeout: 60_000 });
  await runCell(page, 0, 'fitted');
  await runCell(page, 1, FIRST_RESULT);
});

const warm = (browser, site) => visit(browser, site, 'warm', async (page, url) => {
  await acceptPublishedOffer(page, url);
  await page.locator('.Toastify__toast', { hasText: /^Restored/ }).first().waitFor({ timeout: 300_000 });
  await runCell(page, 1, FIRST_RESULT);
});

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** {cold_ms, warm_ms, speedup, colds, warms}: medians of `runs` alternating rounds. */
export async function publishedPart(browser, { runs, log }) {
  log('published notebook: building a site with a published notebook');
  const site = await buildSite(tempDirSync('el-bench-published-'));
  const colds = []; const warms = [];
  for (let r = 0; r < runs; r += 1) {
    if (r % 2) { warms.push(await warm(browser, site)); colds.push(await cold(browser, site)); } else { colds.push(await cold(browser, site)); warms.push(await warm(browser, site)); }
    log(`  time to the first result: cold ${(colds[r] / 1000).toFixed(1)} s, warm ${(warms[r] / 1000).toFixed(1)} s`);
  }
  return { cold_ms: median(colds), warm_ms: median(warms), speedup: median(colds.map((c, i) => c / warms[i])), colds, warms };
}

/** The report's line. */
export function publishedText(p) {
  if (p.error) return `Published notebook: FAILED — ${p.error}`;
  return `Published notebook in JupyterLite (a new visitor, kernel start included): time to the first result cold `
    + `${(p.cold_ms / 1000).toFixed(1)} s (run the slow first cell, then the second), warm ${(p.warm_ms / 1000).toFixed(1)} s `
    + `(accept the published state, run the second): ${p.speedup.toFixed(2)}× faster`;
}
