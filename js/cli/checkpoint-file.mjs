// Which checkpoint a NAME|FILE argument means, decided the same way by verify, inspect and
// restore. Names and paths are never confused:
//   - an argument written as a path (it starts with ./ ../ or /) is always a file;
//   - otherwise it is a checkpoint name when the store holds that name, even if it has a
//     slash or ends in .elc (an imported "x.elc" stays reachable by name), and a file only
//     when the store has no such name (./x.elc then reaches the file of the same name);
//   - neither: exit 3, naming both places looked at.
// Nothing is validated here: the host API does that, once (verify: the C core, integrity.mjs).
import fs from 'node:fs/promises';
import path from 'node:path';
import { CliError, EXIT } from './errors.mjs';
import { notFound, quoted } from '../shared/report.mjs';
import { readFileBytes } from './files.mjs';
import { timed } from './progress.mjs';
import { startSession } from './pyodide-session.mjs';

const writtenAsPath = (arg) => /^\.{0,2}[/\\]/.test(arg) || path.isAbsolute(arg);

/**
 * NAME|FILE → { kind: 'store', name, label } | { kind: 'file', file, label, bytes }.
 * readFile: false leaves a file unread (no `bytes`; verify reads it piece by piece).
 */
export async function resolveCheckpoint(ctx, arg, { readFile = true } = {}) {
  if (!arg) throw new CliError('a checkpoint NAME or FILE is needed (see: elastic-lite ls).', EXIT.USAGE);
  if (!writtenAsPath(arg)) {
    const names = new Set((await ctx.store().list()).map((e) => e.name));
    if (names.has(arg)) {
      if (await fs.stat(arg).then(() => true, () => false)) {
        ctx.warn(`${quoted(arg)} is a checkpoint in ${ctx.storeDir} and also a file here; using the checkpoint (write ./${arg} for the file).`);
      }
      return { kind: 'store', name: arg, label: `checkpoint ${quoted(arg)}` };
    }
    if (!(await fs.stat(arg).then(() => true, () => false))) {
      throw new CliError(`${notFound(arg).message} in ${ctx.storeDir}, and no file ${arg} (see: elastic-lite ls).`,
        EXIT.NOT_FOUND, { problem: notFound(arg) });
    }
  }
  const file = { kind: 'file', file: path.resolve(arg), label: arg };
  return readFile ? { ...file, bytes: await readFileBytes(arg) } : file;
}

/** What a --json report adds for a resolved checkpoint: `file`, the path, when it is a file
 * (a store entry is the report's `name`). */
export const fileField = (src) => (src.kind === 'file' ? { file: src.file } : {});

/** The host API's arguments for a resolved checkpoint: { kwargs, data }. */
export function hostArgs(src) {
  if (src.kind === 'choice') return { kwargs: {}, data: null }; // the kernel picks (restore without NAME)
  return src.kind === 'store' ? { kwargs: { name: src.name }, data: null } : { kwargs: {}, data: src.bytes };
}

/** inspect's part: the one checkpoint argument, host.inspect on it (in Pyodide). */
export async function inspectArgument(ctx, command) {
  if (ctx.positionals.length !== 1) throw new CliError(`${command} needs one checkpoint NAME or FILE.`, EXIT.USAGE);
  const src = await timed({}, 'read', 'reading the checkpoint', () => resolveCheckpoint(ctx, ctx.positionals[0]));
  const session = await timed({}, 'start', 'starting Python (Pyodide)', () => startSession({ echo: false, store: ctx.store() }));
  const { kwargs, data } = hostArgs(src);
  const report = await timed({}, 'validate', 'validating (checksums, pickle streams)', () => session.call('inspect', kwargs, { data }));
  return { src, report };
}
