// `elastic-lite export NAME FILE|DIR`: copy a checkpoint out of the store as a container file
// (byte for byte what the store holds; `verify FILE` checks it, `import FILE` brings it back).
// A DIR gets the file DIR/<name>.elc. A plain store read: no Python is started.
import fs from 'node:fs/promises';
import path from 'node:path';
import { CliError, EXIT, usageError } from '../errors.mjs';
import { exportFileName, fmtBytes, hostReport, notFound, problem, problemLine, quoted } from '../../shared/report.mjs';
import { checkIntegrity } from '../integrity.mjs';
import { writeFileAtomic } from '../files.mjs';
import { timed } from '../progress.mjs';

export default {
  summary: 'write a checkpoint to a file',
  usage: 'export NAME FILE|DIR [--force]',
  description: 'Into a directory DIR the file is DIR/NAME.elc (NAME made safe for a file name).',
  options: { force: { type: 'boolean', help: 'overwrite the file if it exists' } },
  async run(ctx) {
    const [name, file, ...extra] = ctx.positionals;
    if (!name || !file || extra.length) throw usageError('export needs a checkpoint NAME and a FILE (or DIR) to write.');
    ctx.checkName(name);
    const target = await exportTarget(file, name, !!ctx.values.force);
    const report = hostReport('export', { name, size: 0, meta: null, file: target.file });
    const entry = await timed(report.timings, 'read_ms', `reading checkpoint ${quoted(name)}`, () => ctx.store().get(name));
    if (!entry) {
      report.ok = false;
      report.problems.push(notFound(name));
      return ctx.failWith(report, EXIT.NOT_FOUND, ctx.missing(name).message);
    }
    if (entry.damaged?.length) {
      // records whose bytes no longer match their keys came back zeroed (the store's check):
      // never written out, the damage in verify's words
      const { problems } = await checkIntegrity(entry.bytes, { name, source: 'store', meta: entry.meta });
      report.ok = false;
      report.problems.push(...(problems.length ? problems : [problem('damaged', 'a record does not match its content key', { code: 'content-key' })]));
      return ctx.failWith(report, EXIT.FAILED, `${problemLine(`checkpoint ${quoted(name)}`, report.problems[0])}; nothing was exported.`);
    }
    await timed(report.timings, 'write_ms', `writing ${target.shown}`, () => writeFileAtomic(target.file, entry.bytes));
    ctx.emit(Object.assign(report, { size: entry.bytes.byteLength, meta: entry.meta }));
    ctx.say(`Exported checkpoint ${quoted(name)} to ${target.shown} (${fmtBytes(entry.bytes.byteLength)}).`);
    return 0;
  },
};

/**
 * Where export writes, checked before anything is read: a directory means DIR/NAME.elc; an
 * existing file needs --force; a missing folder is exit 3 and a folder that is a file exit 2,
 * each in one sentence.
 */
async function exportTarget(arg, name, force) {
  let file = path.resolve(arg);
  let shown = arg;
  const st = await fs.stat(file).catch(() => null);
  if (st?.isDirectory()) {
    file = path.join(file, exportFileName(name));
    shown = path.join(arg, exportFileName(name));
  }
  const dir = path.dirname(file);
  const dst = await fs.stat(dir).catch(() => null);
  if (!dst) throw new CliError(`cannot write ${shown}: the folder ${path.dirname(shown)} does not exist.`, EXIT.NOT_FOUND);
  if (!dst.isDirectory()) throw new CliError(`cannot write ${shown}: ${path.dirname(shown)} is a file, not a folder.`, EXIT.USAGE);
  const existing = await fs.stat(file).catch(() => null);
  if (existing?.isDirectory()) throw new CliError(`cannot write ${shown}: it is a folder.`, EXIT.USAGE);
  if (existing && !force) throw new CliError(`${shown} already exists; pass --force to overwrite it.`);
  return { file, shown };
}
