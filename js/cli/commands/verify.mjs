// `elastic-lite verify NAME|FILE`: is the checkpoint whole? Checks the container (header,
// every record's CRC32C, index, footer) and walks every pickle stream with the validator,
// without unpickling anything. Exit 0 when whole; exit 1 naming the record and byte offset of
// the first problem.
import { CliError, EXIT } from '../errors.mjs';
import { timed } from '../progress.mjs';
import { fmtBytes } from '../format.mjs';
import { resolveCheckpoint, inspectBytes, firstProblem, problemLine } from '../checkpoint-file.mjs';

export default {
  summary: 'check that a checkpoint is whole (CRCs, structure, pickle streams)',
  usage: 'verify NAME|FILE',
  description: 'Exit status 0 when the checkpoint is whole; 1 with the record and byte offset of the first problem.',
  options: {},
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw new CliError('verify needs one checkpoint NAME or FILE.', EXIT.USAGE);
    const src = await timed({}, 'read', 'reading the checkpoint', () => resolveCheckpoint(ctx, ctx.positionals[0]));
    const report = await timed({}, 'validate', 'validating (CRC32C, pickle streams)', () => inspectBytes(src.bytes));
    const problem = firstProblem(report);
    ctx.emit({ ok: !problem, source: src.label, problem: problem && { ...problem, line: problemLine(src.label, problem) }, report });
    if (problem) {
      if (ctx.json) { ctx.stderr.write(`elastic-lite: ${problemLine(src.label, problem)}\n`); return EXIT.FAILED; }
      throw new CliError(problemLine(src.label, problem), EXIT.FAILED);
    }
    const n = report.records.length;
    ctx.say(`${src.label}: OK, whole: ${n} record${n === 1 ? '' : 's'}, ${fmtBytes(src.bytes.byteLength)}, ` +
      'every CRC32C and pickle stream valid.');
    return EXIT.OK;
  },
};
