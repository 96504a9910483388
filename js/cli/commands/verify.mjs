// `elastic-lite verify NAME|FILE`: is the checkpoint whole? The C core checks the container
// (header, every record's checksums, buffer tables, index, footer) and walks every pickle
// stream with its validator, without unpickling anything and without starting Python
// (integrity.mjs): a fraction of a second where `inspect`, which also judges what restoring
// would import, starts Pyodide. Exit 0 when whole; exit 1 with the first problem in file
// order (its record, variables and byte offset), in the words `inspect` and `import` use.
import { CliError, EXIT } from '../errors.mjs';
import { fmtBytes, problemLine, problemsOf, recordsSummary } from '../../shared/report.mjs';
import { fileField, resolveCheckpoint } from '../checkpoint-file.mjs';
import { openFileSource } from '../files.mjs';
import { checkIntegrity, storeFailure } from '../integrity.mjs';
import { timed } from '../progress.mjs';

export default {
  summary: 'check that a checkpoint is whole (checksums, structure, pickle streams)',
  usage: 'verify NAME|FILE',
  description: 'Exit status 0 when the checkpoint is whole; 1 with the record and byte offset of the first problem.\n' +
    'NAME is a checkpoint in the store; FILE a file (write ./NAME for a file that has a stored name).\n' +
    'Integrity only, without starting Python: what restoring would import, and what it would refuse, is shown by inspect.',
  options: {},
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw new CliError('verify needs one checkpoint NAME or FILE.', EXIT.USAGE);
    const src = await resolveCheckpoint(ctx, ctx.positionals[0], { readFile: false });
    const report = await timed({}, 'validate', 'reading and validating (checksums, pickle streams)', () => check(ctx, src));
    const first = problemsOf(report, 'damaged')[0] ?? (report.ok ? null : report.problems[0]);
    if (first) return ctx.failWith({ ...report, ...fileField(src) }, EXIT.FAILED, problemLine(src.label, first));
    ctx.emit({ ...report, ...fileField(src) });
    ctx.say(`${src.label}: OK, whole: ${recordsSummary(report.records)}, ${fmtBytes(report.size)}, ` +
      'every checksum and pickle stream valid.');
    return EXIT.OK;
  },
};

/**
 * The integrity report of a resolved checkpoint: a file read piece by piece (never whole in
 * memory: about 1 MiB at a time, an out-of-band buffer at once), or the store's entry.
 */
async function check(ctx, src) {
  if (src.kind === 'file') {
    const file = await openFileSource(src.label);
    try { return await checkIntegrity(file); } finally { await file.close(); }
  }
  let entry;
  try {
    entry = await ctx.store().get(src.name);
  } catch (err) {
    return storeFailure(src.name, err);
  }
  if (!entry) throw ctx.missing(src.name);
  return checkIntegrity(entry.bytes, { name: src.name, source: 'store', meta: entry.meta });
}
