// Names from a file are shown, not interpreted, in every dialog a person reads before trusting
// it: a checkpoint file (made in a Pyodide under Node, as another person's browser would) whose
// variables are named with terminal and bidirectional control characters — the issue's
// "data\r\x1b[2K  ok  builtins.dict  data\x1b[8m" and a right-to-left override — imported into
// the demo page and into JupyterLite's sidebar. The trust dialog, the checkpoint lists, the
// sidebar's Inspect report and the status lines show each control character as a visible
// escape (\x1b, \u202e: tests/vectors/escape-text.json's rule), never the raw character.
// One Chromium for both hosts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';
import { markSeen, openDemo, waitForMessage } from './helpers/demo-page.mjs';
import { ITEM, NOTEBOOK, SITE, openSidebar, waitForItemCount, waitForNotebook, waitForStatus } from './jupyterlite-page.mjs';
import { freshPyodide, pyBytes } from '../node/helpers/pyodide.mjs';

const TERMINAL = 'data\r\x1b[2K  ok  builtins.dict  data\x1b[8m';
const BIDI = 'rate\u202egnp.exe';
// what a person must see instead (shownText; the page's text runs of spaces read as one)
const TERMINAL_SHOWN = 'data\\x0d\\x1b[2K ok builtins.dict data\\x1b[8m';
const BIDI_SHOWN = 'rate\\u202egnp.exe';
// raw control characters a page must never show (tabs and newlines are the layout's own)
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/u;

let file;
let browser;
const servers = [];

before(async () => {
  const pyodide = await freshPyodide();
  // a notebook function under the terminal name (its row: "builds code", used by that name)
  file = Buffer.from(await pyBytes(pyodide, `(lambda ns: (
      exec("def f(v):\\n    return v + 1", ns),
      ns.__setitem__(${JSON.stringify(TERMINAL)}, ns.pop("f")),
      ns.__setitem__(${JSON.stringify(BIDI)}, 1.5),
      __import__("elastic_lite").snapshot(ns).data)[-1])({"__name__": "__main__"})`));
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  for (const s of servers) await s.close();
});

function assertShown(text, where) {
  assert.doesNotMatch(text, RAW, `${where} shows a raw control character: ${JSON.stringify(text)}`);
  assert.ok(text.replace(/ +/g, ' ').includes(TERMINAL_SHOWN), `${where} does not show ${TERMINAL_SHOWN}: ${JSON.stringify(text)}`);
  assert.ok(text.includes(BIDI_SHOWN), `${where} does not show ${BIDI_SHOWN}: ${JSON.stringify(text)}`);
}

test('demo page: the trust dialog and the report show the names escaped', { timeout: 300_000 }, async () => {
  const srv = await startTestServer();
  servers.push(srv);
  const page = await browser.newPage();
  try {
    await openDemo(page, srv.url);
    await markSeen(page);
    await page.locator('#import-file').setInputFiles({ name: 'names.elc', mimeType: 'application/octet-stream', buffer: file });
    const imported = await waitForMessage(page, 'Imported “names”');
    assert.doesNotMatch(imported, RAW, imported);
    await markSeen(page);
    await page.getByRole('button', { name: 'Restore checkpoint names', exact: true }).click();
    const dialog = page.locator('#trust-dialog[open]');
    await dialog.waitFor({ timeout: 120_000 });
    assertShown(await dialog.innerText(), 'the demo\'s trust dialog');
    await dialog.getByRole('button', { name: 'Restore anyway', exact: true }).click();
    // the restore's report (variable rows) and its message
    await waitForMessage(page, 'Restored “names”');
    assertShown(await page.locator('#report-vars').innerText(), 'the demo\'s report');
    assert.doesNotMatch(await page.locator('#messages').innerText(), RAW);
    browser.assertOffline();
  } finally {
    await page.close();
  }
});

test('JupyterLite: the trust dialog, the sidebar and its Inspect report show the names escaped', { timeout: 600_000 }, async () => {
  const srv = await startTestServer({ root: SITE });
  servers.push(srv);
  const page = await browser.newPage();
  page.on('dialog', (d) => d.accept().catch(() => {}));
  page.__consoleLines = browser.consoleLines;
  try {
    await page.goto(`${srv.url}lab/index.html?path=${NOTEBOOK}`);
    await waitForNotebook(page);
    await openSidebar(page);
    await page.locator('#elastic-lite-sidebar .jp-ElasticLite-fileInput')
      .setInputFiles({ name: 'names.elc', mimeType: 'application/octet-stream', buffer: file });
    const status = await waitForStatus(page, /Imported |Import failed/);
    assert.match(status, /^Imported /, status);
    await waitForItemCount(page, 1);
    const item = page.locator(ITEM).first();
    assertShown(await item.innerText(), 'the sidebar item');
    assert.doesNotMatch(await item.getAttribute('title'), RAW);

    await item.locator('button', { hasText: 'Inspect' }).click();
    await item.locator('table.jp-ElasticLite-report').waitFor({ timeout: 120_000 });
    assertShown(await item.locator('.jp-ElasticLite-inspect').innerText(), 'the Inspect report');

    await item.locator('button', { hasText: 'Restore' }).click();
    const dialog = page.locator('.jp-Dialog');
    await dialog.waitFor({ timeout: 120_000 });
    const text = await dialog.innerText();
    assert.match(text, /comes from elsewhere/, text);
    assertShown(text, 'JupyterLite\'s trust dialog');
    await dialog.getByRole('button', { name: 'Restore anyway' }).click();
    const restored = await waitForStatus(page, /^Restored |failed/);
    assert.match(restored, /^Restored /, restored);
    assertShown(restored, 'the status line');
    browser.assertOffline();
  } finally {
    await page.close();
  }
});
