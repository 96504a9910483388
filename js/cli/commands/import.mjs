// `elastic-lite import FILE [--name NAME]`: validate a checkpoint file, then store it. A file
// that is not whole is refused with the very message `verify FILE` prints. A file whose records
// would call deny-listed globals (os.system, builtins.eval, ...) is still stored, with a warning
// on stderr: restore refuses those records unless --trust.
import path from 'node:path';
import { CliError, EXIT } from '../errors.mjs';
import { timed } from '../progress.mjs';
import { fmtBytes } from '../format.mjs';
import { readFileBytes } from '../files.mjs';
import { inspectBytes, firstProblem, problemLine } from '../checkpoint-file.mjs';
import { deniedRecords } from '../trust.mjs';

export default {
  summary: 'validate a checkpoint file and add it to the store',
  usage: 'import FILE [--name NAME] [--force]',
  options: {
    name: { type: 'string', help: 'name in the store (default: the file name without .elc)' },
    force: { type: 'boolean', help: 'replace an existing checkpoint of that name' },
  },
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw new CliError('import needs one checkpoint FILE.', EXIT.USAGE);
    const file = ctx.positionals[0];
    const name = ctx.values.name ?? path.basename(file).replace(/\.elc$/i, '');
    const bytes = await timed({}, 'read', `reading ${file}`, () => readFileBytes(file));
    const report = await timed({}, 'validate', 'validating (CRC32C, pickle streams)', () => inspectBytes(bytes));
    const problem = firstProblem(report);
    if (problem) throw new CliError(problemLine(file, problem), EXIT.FAILED, { details: 'Nothing was imported.' });
    const store = ctx.store();
    if (!ctx.values.force && (await store.list()).some((e) => e.name === name)) {
      throw new CliError(`a checkpoint named "${name}" already exists in ${ctx.storeDir}; pass --name NEW or --force.`);
    }
    const records = report.records.filter((r) => !r.names.includes('__elastic_lite_manifest__'));
    const names = records.flatMap((r) => r.names);
    const meta = {
      notebook: null, createdMs: report.created_ms, size: bytes.byteLength,
      variables: names.length, names, importedFrom: path.resolve(file), // skipped: unknown without unpickling the manifest
      producer: report.producer, python: report.python,
    };
    await timed({}, 'write', `writing checkpoint "${name}"`, () => store.put(name, bytes, meta));
    const denied = deniedRecords(report);
    ctx.emit({ name, file: path.resolve(file), size: bytes.byteLength, report, denied });
    ctx.say(`Imported ${file} as checkpoint "${name}" (${fmtBytes(bytes.byteLength)}, ${names.length} variables).`);
    for (const r of denied) {
      ctx.warn(`${file}: record ${r.index} (${r.names.join(', ')}) would call ${r.denied.map((d) => d.global).join(', ')} ` +
        `when restored (${[...new Set(r.denied.map((d) => d.why))].join('; ')}). Restore refuses it unless --trust; ` +
        'use that only if you made this checkpoint yourself (see: elastic-lite inspect).');
    }
    return EXIT.OK;
  },
};
