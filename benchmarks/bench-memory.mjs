// Memory of a Chromium instance as the operating system sees it (Linux /proc), for
// `npm run bench`: the resident memory of every process of one browser (the browser process,
// where IndexedDB's backend runs, the renderer running the page and its worker, the GPU and
// utility processes), summed, sampled while an operation runs. Resident memory counts what a
// person's machine really gives up, including copies in the browser's own processes that no
// JavaScript or Python measurement can see.
import fs from 'node:fs';

function readText(file) {
  try { return fs.readFileSync(file, 'utf8'); } catch { return null; }
}

function parentOf(pid) {
  const stat = readText(`/proc/${pid}/stat`);
  if (!stat) return null;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; ppid follows the last ')'
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The pids of the browser started with --user-data-dir=`userDataDir` and all its descendants. */
export function browserPids(userDataDir) {
  const all = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
  const root = all.find((pid) => {
    const cmd = readText(`/proc/${pid}/cmdline`);
    return cmd && cmd.split('\0').includes(`--user-data-dir=${userDataDir}`) && !cmd.includes('--type=');
  });
  if (root === undefined) throw new Error(`no Chromium process with --user-data-dir=${userDataDir} (is /proc readable?)`);
  const kids = new Map();
  for (const pid of all) {
    const ppid = parentOf(pid);
    if (ppid != null) kids.set(ppid, [...(kids.get(ppid) ?? []), pid]);
  }
  const out = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop();
    out.push(pid);
    todo.push(...(kids.get(pid) ?? []));
  }
  return out;
}

/** Summed resident memory (bytes) of `pids` now; processes that exited count 0. */
export function residentBytes(pids) {
  return Object.values(residentByType(pids)).reduce((a, b) => a + b, 0);
}

// "browser" for the main process, else its --type (renderer, gpu-process, utility, zygote).
function processType(pid) {
  const cmd = readText(`/proc/${pid}/cmdline`) ?? '';
  return /--type=([\w-]+)/.exec(cmd)?.[1] ?? 'browser';
}

/** Resident memory (bytes) of `pids` now, summed per Chromium process type. */
export function residentByType(pids) {
  const out = {};
  for (const pid of pids) {
    const m = /VmRSS:\s+(\d+) kB/.exec(readText(`/proc/${pid}/status`) ?? '');
    if (!m) continue;
    const type = processType(pid);
    out[type] = (out[type] ?? 0) + Number(m[1]) * 1024;
  }
  return out;
}

/**
 * Runs `fn()` while sampling the summed resident memory of the browser every `everyMs`;
 * resolves to { value, before, peak, after, extraByType } (bytes; extraByType: what each
 * process type held at the peak above what it held before). Processes started meanwhile (a
 * new renderer) are picked up every 40 samples.
 */
export async function sampled(userDataDir, fn, everyMs = 5) {
  let pids = browserPids(userDataDir);
  const beforeByType = residentByType(pids);
  const before = residentBytes(pids);
  let peak = before;
  let peakByType = { ...beforeByType }; // each type's share at the moment of the peak
  let ticks = 0;
  const sample = () => {
    const now = residentByType(pids);
    const total = Object.values(now).reduce((a, b) => a + b, 0);
    if (total > peak) { peak = total; peakByType = now; }
  };
  const timer = setInterval(() => {
    if (++ticks % 40 === 0) pids = browserPids(userDataDir);
    sample();
  }, everyMs);
  try {
    const value = await fn();
    sample();
    const after = residentBytes(browserPids(userDataDir));
    const extraByType = Object.fromEntries(Object.entries(peakByType).map(([t, v]) => [t, v - (beforeByType[t] ?? 0)]));
    return { value, before, peak, after, extraByType };
  } finally {
    clearInterval(timer);
  }
}
