// Files of a DirectoryStore, opened so that no link is ever followed (Node).
//
// Someone who can write a store's folder (another user of a folder made under umask 000, a
// shared mount) can put a symbolic link where the store expects its own file: reading through
// it would copy outside bytes in, writing through it would overwrite an outside file. So:
//   - a file is opened once, with O_NOFOLLOW (a link in the last component fails with ELOOP)
//     and O_NONBLOCK (a FIFO put there cannot hang the open), and checked through the
//     descriptor (fh.stat(): a regular file) before a byte is read from that same descriptor;
//   - a new file is created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW), mode 0600 whatever
//     the umask (fchmod after create), written, fsynced, then renamed into place (rename
//     replaces a link, never follows it);
//   - a store folder (entries/, records/, locks/) is checked with lstat to be a real folder
//     before anything in it is read, written or removed; made 0700 whatever the umask.
// A link or a file of another kind where the store's own file belongs is refused with a
// StoreError whose code is 'unsafe', naming the path.
import fs from 'node:fs/promises';
import { constants as C } from 'node:fs';
import { storeError } from './common.mjs';

const O_NOFOLLOW = C.O_NOFOLLOW ?? 0; // Windows has no symbolic-link flag (and no such links by default)
const O_NONBLOCK = C.O_NONBLOCK ?? 0;
export const READ_FLAGS = C.O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
export const CREATE_FLAGS = C.O_WRONLY | C.O_CREAT | C.O_EXCL | O_NOFOLLOW;
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;
const POSIX = process.platform !== 'win32';

/** The 'unsafe' error for `file` (what: "Record file", "The signing key"...). */
export function unsafePath(file, what, kind = 'a symbolic link') {
  return storeError('unsafe', `${what} ${file} is ${kind}, not a file of the store: the store never follows links ` +
    'or reads other kinds of files (someone who can write its folder may have put it there). Nothing was read ' +
    `or written through it. Check who can write the folder, remove ${file}, and try again.`);
}

function isLinkError(err) {
  return err && (err.code === 'ELOOP' || err.code === 'EMLINK' || err.code === 'ENXIO');
}

/**
 * Opens regular file `file` for reading without following a link: {fh, st} (st from the
 * descriptor), or null when there is no such file. A link or a non-regular file: 'unsafe'.
 */
export async function openRegular(file, what) {
  let fh;
  try {
    fh = await fs.open(file, READ_FLAGS);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    if (isLinkError(err)) throw unsafePath(file, what);
    throw err;
  }
  let st;
  try {
    st = await fh.stat();
  } catch (err) {
    await fh.close();
    throw err;
  }
  if (!st.isFile()) {
    await fh.close();
    throw unsafePath(file, what, st.isDirectory() ? 'a folder' : 'not a regular file');
  }
  return { fh, st };
}

/** The contents of regular file `file` (a Buffer, or a string with `encoding`), null if absent. */
export async function readRegular(file, what, encoding) {
  const opened = await openRegular(file, what);
  if (!opened) return null;
  try {
    return await opened.fh.readFile(encoding ? { encoding } : {});
  } finally {
    await opened.fh.close();
  }
}

/** Creates `file`, which must not exist (not even as a link), mode 0600: its FileHandle. */
export async function createExclusive(file) {
  const fh = await fs.open(file, CREATE_FLAGS, FILE_MODE);
  try {
    if (POSIX) await fh.chmod(FILE_MODE); // whatever the umask (it can only take bits away, but say it)
  } catch (err) {
    await fh.close();
    await fs.rm(file, { force: true });
    throw err;
  }
  return fh;
}

/** lstat of `file`, null if absent. */
export async function lstatOrNull(file) {
  return fs.lstat(file).catch((err) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
}

/** Removes `file` only if it is a regular file (or a link: removing a link touches only the link). */
export async function removeOwn(file) {
  const st = await lstatOrNull(file);
  if (st && (st.isFile() || st.isSymbolicLink())) await fs.rm(file, { force: true });
}

/**
 * Makes folder `dir` (mode 0700 whatever the umask, parents too when `parents`) or checks the
 * one there: a real folder, not a link. One owned by this user that others can write (made
 * under umask 000 by an earlier version) is made 0700. Returns true when it was made here.
 */
export async function ensureFolder(dir, what, { parents = false } = {}) {
  let made = false;
  try {
    made = parents ? (await fs.mkdir(dir, { recursive: true, mode: DIR_MODE })) !== undefined
      : (await fs.mkdir(dir, { mode: DIR_MODE }), true);
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
  }
  const st = await fs.lstat(dir);
  if (st.isSymbolicLink()) {
    if (parents) return false; // the store's own folder may be reached by a link its user made
    throw unsafePath(dir, what);
  }
  if (!st.isDirectory()) {
    throw storeError('unsafe', `${what} ${dir} is not a folder. Remove it (the store makes it again), or pass --store DIR with another folder.`);
  }
  if (POSIX && (made || (!parents && (st.mode & 0o022) !== 0 && process.getuid && st.uid === process.getuid()))) {
    await fs.chmod(dir, DIR_MODE);
  }
  return made;
}

/** Throws 'unsafe' unless `dir` is absent or a real folder (lstat: a link is refused). */
export async function checkFolder(dir, what) {
  const st = await lstatOrNull(dir);
  if (!st) return false;
  if (st.isSymbolicLink()) throw unsafePath(dir, what);
  if (!st.isDirectory()) throw unsafePath(dir, what, 'not a folder');
  return true;
}
