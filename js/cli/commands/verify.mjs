// `elastic-lite verify NAME|FILE`: is the checkpoint whole? elastic_lite.host.inspect checks
// the container (header, every record's checksums, index, footer) and walks every pickle
// stream with the C validator, without unpickling anything. Exit 0 when whole; exit 1 with
// the first problem in file order (its record, variables and byte offset).
import { CliError, EXIT } from '../errors.mjs';
import { fmtBytes, problemLine, problemsOf } from '../../shared/report.mjs';
import { inspectArgument } from '../checkpoint-file.mjs';

export default {
  summary: 'check that a checkpoint is whole (checksums, structure, pickle streams)',
  usage: 'verify NAME|FILE',
  description: 'Exit status 0 when the checkpoint is whole; 1 with the record and byte offset of the first problem.\n' +
    'NAME is a checkpoint in the store; FILE a file (write ./NAME for a file that has a stored name).',
  options: {},
  async run(ctx) {
    const { src, report } = await inspectArgument(ctx, 'verify');
    const first = problemsOf(report, 'damaged')[0] ?? (report.ok ? null : report.problems[0]);
    ctx.emit({ ok: report.ok, source: src.label, problem: first && { ...first, line: problemLine(src.label, first) }, report });
    if (first) {
      if (ctx.json) { ctx.stderr.write(`elastic-lite: ${problemLine(src.label, first)}\n`); return EXIT.FAILED; }
      throw new CliError(problemLine(src.label, first), EXIT.FAILED);
    }
    const n = report.records.length;
    ctx.say(`${src.label}: OK, whole: ${n} record${n === 1 ? '' : 's'}, ${fmtBytes(report.size)}, ` +
      'every checksum and pickle stream valid.');
    return EXIT.OK;
  },
};
