// File helpers of the CLI.
import fs from 'node:fs/promises';
import path from 'node:path';
import { CliError, EXIT } from './errors.mjs';

/** Writes a file via a temporary file + fsync + rename, so FILE is never half written. */
export async function writeFileAtomic(file, data) {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    const fh = await fs.open(tmp, 'w', 0o644);
    try { await fh.writeFile(data); await fh.sync(); } finally { await fh.close(); }
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    // A target the user chose badly is their fix (2, 3); a full or failing disk is not (4).
    const code = err.code === 'ENOENT' ? EXIT.NOT_FOUND
      : ['EACCES', 'EPERM', 'EROFS', 'EISDIR', 'ENOTDIR'].includes(err.code) ? EXIT.USAGE : EXIT.ENV;
    throw new CliError(`cannot write ${file}: ${err.message}`, code);
  }
}

/** Reads a whole file, with one-line errors for the usual problems. */
export async function readFileBytes(file) {
  try {
    const st = await fs.stat(file);
    if (st.isDirectory()) throw new CliError(`${file} is a directory, not a checkpoint file.`);
    return new Uint8Array(await fs.readFile(file));
  } catch (err) {
    if (err instanceof CliError) throw err;
    if (err.code === 'ENOENT') throw new CliError(`${file}: no such file.`, EXIT.NOT_FOUND);
    throw new CliError(`cannot read ${file}: ${err.message}`, EXIT.ENV);
  }
}
