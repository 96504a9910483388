// Drives the built JupyterLite site (build/lite) in Chromium for the JupyterLite tests and for
// the screenshot script: open the example notebook, run cells, use the Elastic Lite toolbar
// buttons, sidebar and restore offer. Selectors are JupyterLab's own classes plus the
// extension's (jp-ElasticLite-*); every wait has a timeout whose failure says what was awaited.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium } from './helpers/chromium.mjs';
import { startTestServer } from './helpers/server.mjs';

// The notebook toolbar's buttons (declared in the extension's settings schema, placed by
// JupyterLab as command buttons).
export const CHECKPOINT_BUTTON = '.jp-Toolbar [data-command="elastic-lite:checkpoint"]';
export const RESTORE_BUTTON = '.jp-Toolbar [data-command="elastic-lite:restore"]';
// The restore offer after a reload or a restart: a notification, not a dialog.
export const OFFER = '.Toastify__toast';

// ELASTIC_LITE_SITE: test another build of the site (e.g. a deployment's output folder).
export const SITE = process.env.ELASTIC_LITE_SITE ||
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'lite');
export const NOTEBOOK = 'elastic-lite-demo.ipynb';
// The example notebook's cells (lite/files/elastic-lite-demo.ipynb): 0 intro, 1 builds the
// state, 2 checks it, 3 intro to the magics, 4 the magics.
export const CELL_BUILD = 1;
export const CELL_CHECK = 2;
export const CELL_MAGICS = 4;
// The sidebar's list of this notebook's checkpoints (not the "not tied to a notebook" one).
export const ITEM = '#elastic-lite-sidebar .jp-ElasticLite-list:not(.jp-ElasticLite-unattached) .jp-ElasticLite-item';
// A Pyodide kernel starts in ~10 s here; leave room for a loaded CI machine.
const KERNEL_MS = 180_000;

/** Serves build/lite on 127.0.0.1 and opens Chromium (guarded: only 127.0.0.1 is reachable). */
export async function openSite() {
  if (!fs.existsSync(path.join(SITE, 'jupyter-lite.json'))) {
    throw new Error(`${SITE} is missing: run \`npm run build\` first (scripts/build.d/40-jupyterlite.sh builds it).`);
  }
  const server = await startTestServer({ root: SITE });
  const browser = await launchChromium();
  const page = await browser.newPage();
  // JupyterLab asks before leaving a page with unsaved changes; a reload must go through.
  page.on('dialog', (d) => d.accept().catch(() => {}));
  page.__consoleLines = browser.consoleLines; // for failure messages
  return {
    server, browser, page,
    url: `${server.url}lab/index.html?path=${NOTEBOOK}`,
    async close() { await browser.close(); await server.close(); },
  };
}

export async function openNotebook(page, url) {
  await page.goto(url);
  await waitForNotebook(page);
}

/** Waits until the notebook and the extension's toolbar buttons are on the page. */
export async function waitForNotebook(page) {
  // (as long as a kernel may take: on a loaded machine JupyterLab itself took over 60 s to show
  // a notebook after a reload, in one fresh-clone run)
  // (a cell a person sees: the first cell of a notebook open behind it stays hidden)
  try {
    await page.locator('.jp-Notebook .jp-Cell').filter({ visible: true }).first().waitFor({ timeout: KERNEL_MS });
  } catch (e) {
    // what a person would see instead: the tabs, a dialog, the notifications, the address
    const seen = await page.evaluate(() => ({
      url: location.href,
      tabs: [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab')].map((t) => `${t.classList.contains('lm-mod-current') ? '*' : ''}${t.innerText.trim()}`),
      panels: [...document.querySelectorAll('.jp-NotebookPanel')].map((p) => `${p.classList.contains('lm-mod-hidden') ? 'hidden' : 'shown'}, ${p.querySelectorAll('.jp-Cell').length} cells`),
      dialog: document.querySelector('.jp-Dialog')?.innerText ?? null,
      toasts: [...document.querySelectorAll('.Toastify__toast')].map((t) => t.innerText.trim()),
    })).catch((err) => ({ evaluate: String(err) }));
    throw new Error(`no notebook cell became visible (${e.message.split('\n')[0]}); the page shows ${JSON.stringify(seen)}` +
      `\nlast browser console lines:\n  ${(page.__consoleLines || []).slice(-25).join('\n  ')}`);
  }
  // the notebook shown (another one of the workspace may be open behind it)
  try {
    await page.locator(`.jp-NotebookPanel:not(.lm-mod-hidden) ${CHECKPOINT_BUTTON}`).waitFor({ timeout: 30_000 });
  } catch (e) {
    const seen = await page.evaluate(() => ({
      toolbars: [...document.querySelectorAll('.jp-NotebookPanel')].map((p) =>
        `${p.classList.contains('lm-mod-hidden') ? 'hidden' : 'shown'}: ${[...p.querySelectorAll('.jp-Toolbar > *')]
          .map((b) => b.getAttribute('data-jp-item-name') || b.className).join(', ')}`),
      dialog: document.querySelector('.jp-Dialog')?.innerText ?? null,
    })).catch(() => ({}));
    throw new Error(`the notebook's Elastic Lite toolbar button never showed (${e.message.split('\n')[0]}); ` +
      `the notebook toolbars hold ${JSON.stringify(seen)}\nlast browser console lines:\n  ${(page.__consoleLines || []).slice(-25).join('\n  ')}`);
  }
}

export function cell(page, n) {
  return page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').nth(n);
}

/** Appends a code cell after the last one, types `code` (one line) into it; its index. */
export async function appendCell(page, code) {
  const cells = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
  const last = (await cells.count()) - 1;
  await cell(page, last).locator('.jp-InputPrompt').click();
  await page.keyboard.press('Escape');
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.type(code);
  await page.keyboard.press('Escape');
  return last + 1;
}

/** The text of a cell's outputs (stdout, results and errors). */
export async function cellOutput(page, n) {
  return (await cell(page, n).locator('.jp-OutputArea').innerText()).trim();
}

/**
 * Runs cell n (click its prompt area, Shift+Enter) and waits until its outputs contain
 * `expect` (a string or RegExp). Fails with the cell's actual output otherwise.
 */
export async function runCell(page, n, expect, timeout = KERNEL_MS) {
  await settleDialogs(page);
  const c = cell(page, n);
  const prompt = c.locator('.jp-InputPrompt');
  const before = (await prompt.innerText()).trim();
  await prompt.click();
  await page.keyboard.press('Escape'); // command mode: Shift+Enter runs the selected cell
  await page.keyboard.press('Shift+Enter');
  // the prompt turns to [*] (queued or running) or a new number once the run is accepted;
  // on a loaded machine the first key press can land before the notebook has focus: retry once
  const handle = await prompt.elementHandle();
  const accepted = () => page.waitForFunction(
    ([el, old]) => el.textContent.trim() !== old, [handle, before], { timeout: 15_000 });
  if (!(await accepted().then(() => true, () => false))) {
    await settleDialogs(page);
    await prompt.click();
    await page.keyboard.press('Escape');
    await page.keyboard.press('Shift+Enter');
  }
  return waitForOutput(page, n, expect, timeout);
}

/**
 * JupyterLab may ask which kernel to use when the notebook opens before the kernel specs are
 * known (seen on a heavily loaded machine): answer with its default (Python (Pyodide)). Any
 * other open dialog is unexpected here: fail with its text.
 */
export async function settleDialogs(page) {
  const dialog = page.locator('.jp-Dialog');
  if (!(await dialog.count())) return;
  const text = await dialog.first().innerText().catch(() => '');
  if (/Select Kernel/i.test(text) || (await dialog.first().locator('button[aria-label="Select Kernel"]').count())) {
    await dialog.first().locator('button.jp-mod-accept').click();
    await dialog.first().waitFor({ state: 'detached', timeout: 10_000 });
    return;
  }
  throw new Error(`an unexpected dialog is open: ${text}`);
}

/** Opens the Elastic Lite sidebar. */
export async function openSidebar(page) {
  const panel = page.locator('#elastic-lite-sidebar');
  if (!(await panel.isVisible())) {
    await page.locator('.jp-SideBar [data-id="elastic-lite-sidebar"]').click();
  }
  await panel.waitFor({ state: 'visible', timeout: 10_000 });
  return panel;
}

/** Waits for the sidebar's status line to match `pattern`; fails with its last text. */
export async function waitForStatus(page, pattern, timeout = KERNEL_MS) {
  const status = page.locator('#elastic-lite-sidebar .jp-ElasticLite-status');
  try {
    await status.filter({ hasText: pattern }).waitFor({ state: 'attached', timeout });
  } catch (e) {
    const last = await status.textContent().catch(() => '(no status line)');
    throw new Error(`Elastic Lite status never matched ${pattern}; last status: ${last}`);
  }
  return (await status.textContent()).trim();
}

/** Clicks the notebook toolbar's Checkpoint button and waits for the checkpoint to be listed. */
export async function clickCheckpoint(page) {
  const before = await page.locator(ITEM).count();
  await page.locator(CHECKPOINT_BUTTON).first().click();
  const status = await waitForStatus(page, /Checkpoint saved|Checkpoint failed/);
  if (!/Checkpoint saved/.test(status)) throw new Error(status);
  await page.waitForFunction(
    ([sel, n]) => document.querySelectorAll(sel).length > n, [ITEM, before], { timeout: 30_000 });
  return status;
}

/**
 * The restore offer (a notification that takes no focus), once it shows; its locator. It asks
 * the new kernel what Restore brings back, so it shows once that kernel has started: the same
 * time allowed as for a kernel.
 */
export async function waitForRestoreOffer(page, timeout = KERNEL_MS) {
  const offer = page.locator(OFFER, { hasText: 'Restore the last checkpoint?' });
  await offer.first().waitFor({ timeout });
  return offer.first();
}

/** Waits for the restore offer, answers it ('Restore' or 'Not now'), returns its text. */
export async function answerRestoreOffer(page, answer, timeout = KERNEL_MS) {
  const offer = await waitForRestoreOffer(page, timeout);
  const text = await offer.innerText();
  await offer.locator('button.jp-toast-button', { hasText: answer }).click();
  await offer.waitFor({ state: 'detached', timeout: 10_000 });
  return text;
}

/** Kernel menu → Restart Kernel…, confirmed. */
export async function restartKernelFromMenu(page) {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Kernel$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Restart Kernel…$/ }).click();
  const confirm = page.locator('.jp-Dialog', { hasText: 'Restart Kernel?' });
  await confirm.waitFor({ timeout: 10_000 });
  await confirm.locator('button.jp-mod-accept').click();
  await confirm.waitFor({ state: 'detached', timeout: 10_000 });
}

/** Runs a command through the command palette (Accel+Shift+C), by its label. */
export async function runFromPalette(page, label) {
  await page.keyboard.press('Control+Shift+C');
  const input = page.locator('.lm-CommandPalette-input');
  await input.waitFor({ state: 'visible', timeout: 10_000 });
  await input.fill(label);
  await page.locator('.lm-CommandPalette-item', { hasText: label }).first().click();
}

/** The sidebar's checkpoint items (locator). */
export function sidebarItems(page) {
  return page.locator(ITEM);
}

/** Waits until the sidebar lists exactly n checkpoints. */
export async function waitForItemCount(page, n, timeout = 60_000) {
  try {
    await page.waitForFunction(
      ([sel, k]) => document.querySelectorAll(sel).length === k, [ITEM, n], { timeout });
  } catch {
    const have = await sidebarItems(page).count();
    const status = await page.locator('#elastic-lite-sidebar .jp-ElasticLite-status').textContent();
    throw new Error(`expected ${n} checkpoints in the sidebar, it lists ${have} (status: ${status})`);
  }
}

/**
 * The site's JupyterLab: with `notebook`, that notebook opened; without, the launcher (or the
 * workspace's last layout). `workspace`: a JupyterLab workspace of its own (a test's tabs do
 * not open again, each with a kernel, in the next test's page).
 */
export function labUrl(site, notebook = '', workspace = '') {
  const query = new URLSearchParams();
  if (notebook) query.set('path', notebook);
  if (workspace) query.set('workspace', workspace);
  const q = query.toString();
  return `${site.server.url}lab/index.html${q ? `?${q}` : ''}`;
}

/** The label of the notebook tab shown (e.g. Untitled1.ipynb). */
export async function currentNotebookName(page) {
  const tab = page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel');
  await tab.first().waitFor({ timeout: 30_000 });
  return (await tab.first().innerText()).trim();
}

/**
 * As a person starts: the launcher's "Python (Pyodide)" notebook card. Returns as soon as the
 * new notebook's first cell is on the page — the kernel is still starting.
 */
export async function newNotebookFromLauncher(page) {
  const card = page.locator('.jp-LauncherCard[data-category="Notebook"]', { hasText: 'Python (Pyodide)' });
  await card.first().waitFor({ timeout: 60_000 });
  await card.first().click();
  await cell(page, 0).waitFor({ timeout: 60_000 });
}

/**
 * Types `code` into cell n as a person does (the cell in edit mode, one key at a time; the
 * lines typed are the cell's lines) and runs it with Shift+Enter, without waiting for anything
 * in between. Returns when the run was accepted (the prompt left its old text).
 */
export async function typeAndRun(page, n, code) {
  const c = cell(page, n);
  const prompt = c.locator('.jp-InputPrompt');
  const before = (await prompt.innerText()).trim();
  await settleDialogs(page);
  await c.locator('.jp-InputArea-editor').click();
  // each line typed, then Enter and Home: no auto-indent carries over to the next line
  const lines = code.split('\n');
  for (const [i, line] of lines.entries()) {
    await page.keyboard.type(line);
    if (i < lines.length - 1) {
      await page.keyboard.press('Enter');
      await page.keyboard.press('Shift+Home');
      await page.keyboard.press('Delete');
    }
  }
  await page.keyboard.press('Shift+Enter');
  const handle = await prompt.elementHandle();
  await page.waitForFunction(([el, old]) => el.textContent.trim() !== old, [handle, before], { timeout: 30_000 });
}

/** Waits until cell n's outputs contain `expect`; fails with its output and the console. */
export async function waitForOutput(page, n, expect, timeout = KERNEL_MS) {
  const c = cell(page, n);
  try {
    await c.locator('.jp-OutputArea-output', { hasText: expect }).first().waitFor({ timeout });
  } catch (e) {
    const out = await cellOutput(page, n).catch(() => '(no output)');
    const log = (page.__consoleLines || []).slice(-25).join('\n  ');
    throw new Error(`cell ${n} did not print ${expect}; its output:\n${out}\n(${e.message.split('\n')[0]})\n` +
      `last browser console lines:\n  ${log}`);
  }
  return cellOutput(page, n);
}

/**
 * Clicks `selector` as soon as a person could: when JupyterLab asks which kernel to use first
 * (settleDialogs), that is answered, as a person would, and the click follows.
 */
export async function clickWhenFree(page, selector, timeout = 60_000) {
  const end = Date.now() + timeout;
  for (;;) {
    await settleDialogs(page);
    try {
      await page.locator(selector).click({ timeout: 2_000 });
      return;
    } catch (e) {
      if (Date.now() > end) throw e;
    }
  }
}
