// `elastic-lite import FILE [--name NAME]`: validate a checkpoint file, then store it. A file
// that is not whole is refused with the very message `verify FILE` prints.
import path from 'node:path';
import { CliError, EXIT } from '../errors.mjs';
import { timed } from '../progress.mjs';
import { fmtBytes } from '../format.mjs';
import { readFileBytes } from '../files.mjs';
import { inspectBytes, firstProblem, problemLine } from '../checkpoint-file.mjs';

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
    ctx.emit({ name, file: path.resolve(file), size: bytes.byteLength, report });
    ctx.say(`Imported ${file} as checkpoint "${name}" (${fmtBytes(bytes.byteLength)}, ${names.length} variables).`);
    return EXIT.OK;
  },
};
