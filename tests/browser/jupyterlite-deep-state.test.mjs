// A notebook cell that builds a long linked list, in the offline JupyterLite site (Chromium,
// the Pyodide kernel in its web worker, automatic checkpoints on by default). Before, the
// automatic checkpoint after that cell overflowed the worker's JS stack in the C pickler: a
// fatal error, the kernel gone, and the next cell never ran. Now a value nested past
// DEEP_LEVELS (600) levels is skipped with the reason, and one just under it (595 nodes)
// checkpoints in the kernel's real stack: a canary for the margin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendCell, openNotebook, openSidebar, openSite, runCell } from './jupyterlite-page.mjs';

const chain = (n, name) => JSON.stringify(`class L:\n    __slots__ = ("v", "next")\n` +
  `    def __init__(s, v, n): s.v, s.next = v, n\n${name} = None\nfor i in range(${n}): ${name} = L(i, ${name})`);

test('a long linked list is skipped by the automatic checkpoint, and the kernel lives on', { timeout: 600_000 }, async () => {
  const site = await openSite();
  const { page } = site;
  const status = page.locator('#elastic-lite-sidebar .jp-ElasticLite-historyStatus');
  try {
    await openNotebook(page, site.url);
    await openSidebar(page);
    await runCell(page, await appendCell(page, `exec(${chain(595, 'near')}); print("built near")`), 'built near');
    await status.filter({ hasText: /saved \d+ variables \(.*near/ }).waitFor({ state: 'attached', timeout: 120_000 });
    await runCell(page, await appendCell(page, `exec(${chain(5000, 'far')}); print("built far")`), 'built far');
    await status.filter({ hasText: /skipped: far \(nested more than 600 levels deep/ })
      .waitFor({ state: 'attached', timeout: 120_000 });
    const out = await runCell(page, await appendCell(page, 'print("alive", near.next.v, far.v)'), 'alive', 120_000);
    assert.match(out, /alive 593 4999/);
  } finally {
    await site.close();
  }
});
