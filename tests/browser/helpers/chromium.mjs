// Launches Debian's Chromium through playwright-core for browser tests, the same way every
// time: headless, a fresh profile, no background network, every host name but 127.0.0.1 left
// unresolved (so any other request fails), and a guard that records every request to a host
// other than the test server's. Generic: any browser test (the demo, JupyterLite) can use it.
//
//   const browser = await launchChromium();
//   const page = await browser.newPage();            // guarded
//   ...
//   browser.assertOffline();                          // throws listing foreign requests
//   await browser.close();                            // also removes the profile
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
  // "No network": any host (a name or an address) but the loopback address fails to resolve,
  // in pages and workers alike. The guard below records what was tried.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

const ALLOWED_HOSTS = new Set(['127.0.0.1']);

function isAllowed(url) {
  let u;
  try { u = new URL(url); } catch { return false; }
  // Page-internal schemes never reach the network.
  if (['data:', 'blob:', 'about:', 'chrome-error:'].includes(u.protocol)) return true;
  return (u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'ws:') && ALLOWED_HOSTS.has(u.hostname);
}

// Options: viewport, acceptDownloads, extraArgs, headless (default true; HEADED=1 to watch).
export async function launchChromium({ viewport = { width: 1280, height: 900 }, extraArgs = [], headless } = {}) {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium not found at ${CHROMIUM_PATH}: run \`bash scripts/setup.sh\` (installs Debian's chromium) or set CHROMIUM_PATH.`);
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'elastic-lite-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: headless ?? process.env.HEADED !== '1',
    args: [...CHROMIUM_ARGS, ...extraArgs],
    viewport,
    acceptDownloads: true,
    serviceWorkers: 'block',
  });
  const foreign = [];
  const consoleLines = [];
  // Every request of every page and worker in this context is seen here: anything not for the
  // loopback test server is recorded (the resolver rule above makes it fail), and
  // assertOffline() turns it into a failure. Recorded, not routed: routing every request
  // through playwright (context.route) would carry every byte of Pyodide, its standard library
  // and the wheels through Node and back, and playwright turns the HTTP cache off while routes
  // are on (microsoft/playwright#7220): about 3 s of CPU more per JupyterLite page and kernel.
  context.on('request', (req) => { if (!isAllowed(req.url())) foreign.push(req.url()); });
  const watch = (page) => {
    page.on('console', (msg) => consoleLines.push(`[${msg.type()}] ${msg.text()}`));
    page.on('pageerror', (err) => consoleLines.push(`[pageerror] ${err.message}`));
    page.on('worker', (w) => w.on('console', (msg) => consoleLines.push(`[worker ${msg.type()}] ${msg.text()}`)));
  };
  context.pages().forEach(watch);
  context.on('page', watch);

  return {
    context,
    userDataDir,
    consoleLines,
    foreignRequests: foreign,
    // The persistent context opens with one blank page: reuse it first.
    async newPage() {
      const blank = context.pages().find((p) => p.url() === 'about:blank' && !p.__used);
      const page = blank ?? await context.newPage();
      page.__used = true;
      return page;
    },
    assertOffline() {
      if (foreign.length) {
        throw new Error(`the page tried to reach the network (only 127.0.0.1 is allowed):\n  ${[...new Set(foreign)].join('\n  ')}`);
      }
    },
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
