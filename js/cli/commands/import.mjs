// `elastic-lite import FILE [--name NAME]`: elastic_lite.host.import_checkpoint validates the
// file, then stores it (the one import policy, docs/INTERFACES.md): a file that is not whole is
// refused with the very line `verify FILE` prints and nothing is stored; a whole file whose
// records would call code-running globals (os.system, builtins.eval, ...) is stored, with a
// warning per such record: restore refuses them unless --trust. An imported checkpoint is
// foreign (unsigned): `restore NAME` loads nothing of it unless --trust, until it is imported
// with --trust (after `inspect FILE`), which signs it as this store's own.
import path from 'node:path';
import { CliError, EXIT } from '../errors.mjs';
import { timed } from '../progress.mjs';
import { fmtBytes, problemLine, problemsOf, quoted } from '../../shared/report.mjs';
import { readFileBytes } from '../files.mjs';
import { startSession } from '../pyodide-session.mjs';

export default {
  summary: 'validate a checkpoint file and add it to the store',
  usage: 'import FILE [--name NAME] [--force] [--trust]',
  options: {
    name: { type: 'string', help: 'name in the store (default: the file name without .elc)' },
    force: { type: 'boolean', help: 'replace an existing checkpoint of that name' },
    trust: { type: 'boolean', help: 'sign it as this store\'s own: restore then loads it without asking (only after inspect, for a file whose origin you trust)' },
  },
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw new CliError('import needs one checkpoint FILE.', EXIT.USAGE);
    const file = ctx.positionals[0];
    const name = ctx.values.name ?? path.basename(file).replace(/\.elc$/i, '');
    ctx.checkName(name);
    const bytes = await timed({}, 'read', `reading ${file}`, () => readFileBytes(file));
    const session = await timed({}, 'start', 'starting Python (Pyodide)', () => startSession({ echo: false, store: ctx.store() }));
    const report = await timed({}, 'import', 'validating and storing', () => session.call('import',
      { name, replace: !!ctx.values.force, source: path.resolve(file), trust: !!ctx.values.trust }, { data: bytes }));
    ctx.emit({ ...report, file: path.resolve(file) });
    if (!report.ok) {
      const [first] = report.problems;
      const exists = first.code === 'exists';
      throw new CliError(problemLine(file, first), first.code === 'invalid-name' ? EXIT.USAGE : EXIT.FAILED,
        { details: exists ? 'Pass --name NEW or --force.' : 'Nothing was imported.' });
    }
    ctx.say(`Imported ${file} as checkpoint ${quoted(report.name)} (${fmtBytes(report.size)}, ${report.variables.length} variables)` +
      (report.signed ? ', signed as this store\'s own.' : `; it stays foreign: restore loads it only with --trust (see inspect ${quoted(report.name)}).`));
    for (const p of problemsOf(report, 'refused')) ctx.warn(problemLine(file, p));
    return EXIT.OK;
  },
};
