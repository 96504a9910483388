// Drives the demo page the way a person does — buttons found by their accessible names, text
// read from the page — for the demo's browser tests and the screenshot script.
const LONG = 120_000; // a cold Pyodide start plus a checkpoint stays well under this on 2 cores

export async function openDemo(page, baseUrl) {
  await page.goto(new URL('demo/', baseUrl).href);
  await waitForKernel(page);
}

// Waits until Python and Elastic Lite are loaded (or failed: then throws the page's words).
export async function waitForKernel(page) {
  const status = page.locator('#kernel-status');
  await page.waitForFunction(() => {
    const s = document.querySelector('#kernel-status');
    return s && ['ready', 'failed'].includes(s.dataset.state) && s.dataset.elastic;
  }, null, { timeout: LONG });
  if ((await status.getAttribute('data-elastic')) !== 'ready') {
    throw new Error(`the demo did not load Elastic Lite: ${await page.locator('#messages').innerText()}`);
  }
}

export function cell(page, n) {
  return page.locator('#cells > li').nth(n - 1);
}

// Waits for every running cell to finish.
export async function waitForCells(page) {
  await page.waitForFunction(() => ![...document.querySelectorAll('#cells > li')]
    .some((li) => li.dataset.state === 'running'), null, { timeout: LONG });
}

export async function runCell(page, n) {
  await page.getByRole('button', { name: `Run cell ${n}`, exact: true }).click();
  await page.waitForFunction((i) => {
    const li = document.querySelectorAll('#cells > li')[i - 1];
    return li && ['done', 'error'].includes(li.dataset.state);
  }, n, { timeout: LONG });
  return cellOutput(page, n);
}

export async function setCellCode(page, n, code) {
  await page.getByRole('textbox', { name: `Code of cell ${n}`, exact: true }).fill(code);
}

export async function cellOutput(page, n) {
  return cell(page, n).locator('.output').innerText();
}

export async function runAll(page) {
  await page.getByRole('button', { name: 'Run all cells' }).click();
  // "Run all" marks cells one after another: wait until the last one has an outcome.
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('#cells > li')];
    return cells.some((li) => li.dataset.state === 'error') ||
      cells.every((li) => li.dataset.state === 'done');
  }, null, { timeout: LONG });
}

// Waits for a message box whose title matches, and returns its text.
export async function waitForMessage(page, titlePattern) {
  const box = page.locator('#messages .message:not([data-seen])').filter({ has: page.locator('h2', { hasText: titlePattern }) });
  await box.first().waitFor({ state: 'visible', timeout: LONG });
  return box.first().innerText();
}

export async function checkpoint(page, name) {
  await markSeen(page);
  await page.getByRole('textbox', { name: 'Name' }).fill(name);
  await page.getByRole('button', { name: 'Checkpoint now' }).click();
  return waitForOutcome(page, [`Checkpoint “${name}” saved`, 'Not enough browser storage', `Checkpoint “${name}” failed`, 'Something went wrong', 'Python failed']);
}

/**
 * Clicks Restore of checkpoint `name`; resolves to the outcome message { title, text }. A
 * foreign checkpoint (imported) first asks in a dialog: `trust` answers "Restore anyway"
 * (with `adopt`: "Trust it from now on" ticked), else "Cancel"; the outcome then carries
 * `dialog`, the dialog's text.
 */
export async function restore(page, name, { trust = false, adopt = false } = {}) {
  await markSeen(page);
  await page.getByRole('button', { name: `Restore checkpoint ${name}`, exact: true }).click();
  const titles = [`Restored “${name}”`, 'Damaged checkpoint', 'Refused to load', 'Could not restore', 'is not stored any more',
    'Something went wrong', 'Python failed', `Not restored: “${name}”`];
  const first = await waitForOutcome(page, titles, { dialog: true });
  if (first.dialog == null) return first;
  if (adopt) await page.locator('#trust-adopt').check();
  await page.locator('#trust-dialog').getByRole('button', { name: trust ? 'Restore anyway' : 'Cancel', exact: true }).click();
  return { ...(await waitForOutcome(page, titles)), dialog: first.dialog };
}

// Marks the messages on screen as old, so the next wait only sees what the action shows.
export async function markSeen(page) {
  await page.$$eval('#messages .message', (boxes) => boxes.forEach((b) => { b.dataset.seen = '1'; }));
}

// Waits for the first new message with one of several titles; returns { title, text } — or,
// with `dialog`, { dialog: its text } as soon as the foreign-checkpoint dialog is open.
async function waitForOutcome(page, titles, { dialog = false } = {}) {
  const handle = await page.waitForFunction(([wanted, dialogToo]) => {
    const open = dialogToo && document.querySelector('#trust-dialog[open]');
    if (open) return { dialog: open.innerText };
    for (const box of document.querySelectorAll('#messages .message:not([data-seen])')) {
      const t = box.querySelector('h2')?.textContent ?? '';
      if (wanted.some((w) => t.includes(w))) return { title: t, text: box.innerText };
    }
    return null;
  }, [titles, dialog], { timeout: LONG });
  return handle.jsonValue();
}

// Rows of the checkpoint list: [{ name, size, variables }].
export async function listedCheckpoints(page) {
  return page.$$eval('#checkpoint-list tbody tr', (rows) => rows.map((r) => ({
    name: r.dataset.name,
    size: r.querySelector('.size').textContent,
    variables: r.querySelector('.vars').textContent,
  })));
}

// Rows of the per-variable report table: { name: { type, serializer, size, time } }.
export async function reportRows(page) {
  return page.$$eval('#report-vars tbody tr', (rows) => Object.fromEntries(rows.map((r) => {
    const [name, type, serializer, size, time] = [...r.children].map((td) => td.textContent);
    return [name, { type, serializer, size, time }];
  })));
}
