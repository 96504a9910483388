// `elastic-lite inspect NAME|FILE`: what a checkpoint holds, from the validator alone: header,
// records (names, serializer, sizes, CRC state) and the globals each record would import when
// restored. Nothing is unpickled, so it is safe on a file from anywhere. Globals on the restore
// deny-list (js/cli/trust.mjs: os.system, builtins.eval, ...) are marked "⚠ runs code".
import { CliError, EXIT } from '../errors.mjs';
import { timed } from '../progress.mjs';
import { fmtBytes, fmtDate, table } from '../format.mjs';
import { resolveCheckpoint, inspectBytes, firstProblem, problemLine } from '../checkpoint-file.mjs';
import { deniedRecords } from '../trust.mjs';

const MANIFEST = '__elastic_lite_manifest__';

export default {
  summary: 'show the header, records and imported globals of a checkpoint (nothing is unpickled)',
  usage: 'inspect NAME|FILE',
  description: 'Exit status 1 when the checkpoint is not whole (the report is still printed when the header is readable).',
  options: {},
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw new CliError('inspect needs one checkpoint NAME or FILE.', EXIT.USAGE);
    const src = await timed({}, 'read', 'reading the checkpoint', () => resolveCheckpoint(ctx, ctx.positionals[0]));
    const report = await timed({}, 'validate', 'validating (CRC32C, pickle streams)', () => inspectBytes(src.bytes));
    const problem = firstProblem(report);
    const denied = deniedRecords(report);
    ctx.emit({ source: src.label, meta: src.meta ?? null, report, problem: problem && { ...problem, line: problemLine(src.label, problem) }, denied });
    const records = report.records ?? [];
    if (problem && records.length === 0 && report.format_version == null) {
      // Not even a header: one line, like verify.
      if (ctx.json) { ctx.stderr.write(`elastic-lite: ${problemLine(src.label, problem)}\n`); return EXIT.FAILED; }
      throw new CliError(problemLine(src.label, problem), EXIT.FAILED);
    }
    const head = [
      ['checkpoint', src.kind === 'store' ? `${src.name}  (store ${ctx.storeDir})` : src.file],
      ['format', String(report.format_version ?? '?')],
      ['producer', report.producer ?? '?'],
      ['python', report.python ?? '?'],
      ['created', fmtDate(report.created_ms)],
      ['size', `${fmtBytes(report.size ?? src.bytes.byteLength)} (${report.size ?? src.bytes.byteLength} bytes)`],
      ['status', problem ? `DAMAGED: ${problemLine(src.label, problem)}` : `whole (${records.length} records; CRC32C and pickle streams valid)`],
    ];
    if (src.meta?.notebook) head.splice(1, 0, ['notebook', src.meta.notebook]);
    ctx.say(head.map(([k, v]) => `${k.padEnd(10)}  ${v}`).join('\n'));
    ctx.say('');
    ctx.say(table(
      [{ title: '#', align: 'right' }, { title: 'NAMES' }, { title: 'SERIALIZER' }, { title: 'OFFSET', align: 'right' },
        { title: 'LENGTH', align: 'right' }, { title: 'CRC' }, { title: 'STATE' }],
      records.map((r) => [
        String(r.index), r.names?.length ? r.names.join(', ') : '?', r.serializer ?? '?', String(r.offset ?? '-'),
        String(r.length ?? '-'), r.crc32 ?? r.crc32c ?? '-', r.ok ? 'ok' : 'BAD', // format 2 | 1
      ]),
    ));
    const bad = records.filter((r) => !r.ok);
    if (bad.length) {
      ctx.say('\nProblems:');
      for (const r of bad) ctx.say(`  ${problemLine(src.label, { ...(r.error ?? {}), record: r.index, names: r.names })}`);
      const own = new Set(bad.map((r) => r.error?.message));
      if (report.error && !own.has(report.error.message)) ctx.say(`  ${problemLine(src.label, report.error)}`);
    } else if (report.error) {
      ctx.say(`\nProblem:\n  ${problemLine(src.label, report.error)}`);
    }
    const withGlobals = records.filter((r) => r.globals?.length);
    if (withGlobals.length) {
      ctx.say('\nGlobals each record would import when restored:');
      for (const r of withGlobals) {
        const label = r.names.includes(MANIFEST) ? 'manifest' : r.names.join(', ');
        ctx.say(`  ${r.index} (${label}): ${r.globals.map((g) => g.join('.')).join(', ')}`);
        const hit = denied.find((d) => d.index === r.index);
        if (hit) ctx.say(`      ⚠ runs code: ${hit.denied.map((d) => `${d.global} (${d.why})`).join(', ')}`);
      }
    }
    if (denied.length) {
      ctx.say(`\n⚠ ${denied.length} record${denied.length === 1 ? '' : 's'} would call code-running globals when restored; ` +
        'restore refuses them unless --trust (trust=True in Python). Use that only for a checkpoint you made yourself.');
    }
    if (problem) ctx.stderr.write(`elastic-lite: ${problemLine(src.label, problem)}\n`);
    return problem ? EXIT.FAILED : EXIT.OK;
  },
};
