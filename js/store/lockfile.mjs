// Lock files between processes (Node): the writer locks of DirectoryStore.
//
// A lock is a file whose content names its holder: {pid, host, token, sinceMs}. It is created
// whole or not at all (written under a temporary name, then hard-linked to the lock's name,
// which fails if the lock exists), so a reader never sees a half-written holder.
//
// A holder that died (same host, its pid no longer exists) leaves its file behind. Breaking it
// must not remove a lock somebody else has taken meanwhile, so it is done under a second lock
// whose name carries the dead holder's token (`<lock>.break-<token>`): only the process
// holding that one may remove a lock file that still names that token, and tokens are never
// reused. A breaker that dies is broken the same way, one level up. Lock files are mode 0600,
// created exclusively and read without following a link (nofollow.mjs): a link where a lock
// belongs is refused with an 'unsafe' error naming it. A holder on another host,
// or a pid reused by another process, cannot be told apart from a live writer: the waiter
// times out with a message naming the file, which a person can then remove.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createExclusive, readRegular } from './nofollow.mjs';

const HOST = os.hostname();

export function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (err) { return err.code === 'EPERM'; }
}

function holderAlive(holder) {
  return holder.host !== HOST || pidAlive(holder.pid);
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// Creates `file` holding `content` atomically; false if it already exists.
async function createWhole(file, content) {
  const tmp = path.join(path.dirname(file), `.tmp-${process.pid}-${randomBytes(6).toString('hex')}-lock`);
  const fh = await createExclusive(tmp);
  try {
    await fh.writeFile(content);
  } finally {
    await fh.close();
  }
  try {
    await fs.link(tmp, file);
    return true;
  } catch (err) {
    if (err.code === 'EEXIST') return false;
    throw err;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

/** The holder named by a lock file: {pid, host, token, sinceMs}, null if there is none. */
export async function readHolder(file) {
  const text = await readRegular(file, 'Lock file', 'utf8');
  if (text === null) return null;
  try {
    const h = JSON.parse(text);
    if (h && Number.isSafeInteger(h.pid) && typeof h.token === 'string' && typeof h.host === 'string') return h;
  } catch { /* not ours: treated as a live holder we cannot identify */ }
  return { pid: null, host: null, token: null, sinceMs: null, unreadable: true };
}

/** Removes `file` if it still names the dead `holder`; safe against every other process. */
export async function breakStale(file, holder) {
  if (!holder || holder.unreadable || holderAlive(holder)) return false;
  const breaker = await tryAcquire(`${file}.break-${holder.token}`);
  if (!breaker) return false; // another process is breaking it right now
  try {
    const now = await readHolder(file);
    if (now && now.token === holder.token) await fs.rm(file, { force: true });
    return true;
  } finally {
    await breaker.release();
  }
}

async function tryAcquire(file) {
  const holder = { pid: process.pid, host: HOST, token: `${process.pid}-${randomBytes(8).toString('hex')}`, sinceMs: Date.now() };
  for (;;) {
    if (await createWhole(file, JSON.stringify(holder))) return held(file, holder);
    const other = await readHolder(file);
    if (other === null) continue; // released between our attempt and the read
    if (!(await breakStale(file, other))) return null;
  }
}

function held(file, holder) {
  let released = false;
  return {
    file,
    holder,
    async release() {
      if (released) return;
      released = true;
      const now = await readHolder(file);
      if (now && now.token === holder.token) await fs.rm(file, { force: true });
    },
  };
}

/**
 * Takes the lock `file` (its directory must exist), waiting up to timeoutMs while a live
 * process holds it; then rejects with an Error whose .code is 'busy' and whose message names
 * `what`, the holder and the file.
 */
export async function acquireLockFile(file, { timeoutMs, what }) {
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  for (;;) {
    const lock = await tryAcquire(file);
    if (lock) return lock;
    if (Date.now() >= deadline) {
      const h = await readHolder(file);
      const who = !h ? 'another process' : h.unreadable ? 'an unknown holder'
        : `process ${h.pid}${h.host !== HOST ? ` on ${h.host}` : ''} (since ${new Date(h.sinceMs).toISOString()})`;
      const err = new Error(`${what} is being saved by ${who}; waited ${(timeoutMs / 1000).toFixed(timeoutMs < 1000 ? 2 : 0)} s ` +
        `for it to finish. Try again in a moment. If no elastic-lite process is running, remove the lock file ${file}.`);
      err.code = 'busy';
      throw err;
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
}
