// File helpers of the CLI.
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { CliError, EXIT } from './errors.mjs';

// A new file of a random name, created exclusively: never a file or link planted there followed.
const EXCLUSIVE = fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW;

/**
 * Writes a file via a temporary file + fsync + rename, so FILE is never half written. The
 * temporary file has an unpredictable name in FILE's folder and is created exclusively
 * (O_CREAT|O_EXCL|O_NOFOLLOW): a link or file planted there by someone else is never
 * followed or overwritten, and the rename replaces FILE itself, never what a link at FILE
 * points to.
 */
export async function writeFileAtomic(file, data) {
  let tmp = null;
  try {
    let fh;
    for (let tries = 0; !fh; tries += 1) {
      tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(8).toString('hex')}.tmp`);
      try {
        fh = await fs.open(tmp, EXCLUSIVE, 0o644);
      } catch (err) {
        if (err.code !== 'EEXIST' || tries >= 8) { tmp = null; throw err; }
      }
    }
    try { await fh.writeFile(data); await fh.sync(); } finally { await fh.close(); }
    await fs.rename(tmp, file);
  } catch (err) {
    if (tmp) await fs.rm(tmp, { force: true });
    // A target the user chose badly is their fix (2, 3); a full or failing disk is not (4).
    const code = err.code === 'ENOENT' ? EXIT.NOT_FOUND
      : ['EACCES', 'EPERM', 'EROFS', 'EISDIR', 'ENOTDIR'].includes(err.code) ? EXIT.USAGE : EXIT.ENV;
    throw new CliError(`cannot write ${file}: ${err.message}`, code);
  }
}

/**
 * Throws the system's error (EACCES, EROFS, ...) unless this process can create a file in
 * `dir`: a file is made there exclusively under a random name and removed at once.
 */
export async function probeWritable(dir) {
  const probe = path.join(dir, `.probe-${process.pid}-${randomBytes(6).toString('hex')}`);
  await (await fs.open(probe, EXCLUSIVE, 0o600)).close();
  await fs.rm(probe, { force: true });
}

/** Reads a whole file, with one-line errors for the usual problems. */
export async function readFileBytes(file) {
  try {
    await checkIsFile(file);
    return new Uint8Array(await fs.readFile(file));
  } catch (err) {
    throw readError(file, err);
  }
}

/**
 * A file to read piece by piece, with readFileBytes' errors: { size, read(offset, length) ->
 * Promise<Uint8Array>, close() } (the source js/core.mjs's readAsync takes), so a file is
 * never held whole in memory.
 */
export async function openFileSource(file) {
  let fh;
  try {
    await checkIsFile(file);
    fh = await fs.open(file, 'r');
    const { size } = await fh.stat();
    return {
      size,
      async read(offset, length) {
        const out = new Uint8Array(Math.max(0, Math.min(length, size - offset)));
        try {
          for (let got = 0; got < out.length;) {
            const { bytesRead } = await fh.read(out, got, out.length - got, offset + got);
            if (bytesRead === 0) throw new Error(`it ended at ${offset + got} bytes while being read (was ${size})`);
            got += bytesRead;
          }
        } catch (err) {
          throw readError(file, err);
        }
        return out;
      },
      close: () => fh.close(),
    };
  } catch (err) {
    await fh?.close();
    throw readError(file, err);
  }
}

async function checkIsFile(file) {
  if ((await fs.stat(file)).isDirectory()) throw new CliError(`${file} is a directory, not a checkpoint file.`);
}

/** A one-line CliError for a failed read (a CliError passes through). */
function readError(file, err) {
  if (err instanceof CliError) return err;
  if (err.code === 'ENOENT') return new CliError(`${file}: no such file.`, EXIT.NOT_FOUND);
  return new CliError(`cannot read ${file}: ${err.message}`, EXIT.ENV);
}
