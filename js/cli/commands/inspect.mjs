// `elastic-lite inspect NAME|FILE`: what a checkpoint holds, from elastic_lite.host.inspect
// (the C validator alone, nothing is unpickled, so it is safe on a file from anywhere):
// header, records (names, serializer, offsets, state) and the globals each record would import
// when restored; records restore would refuse (code-running globals) are marked "⚠ runs code".
import { CliError, EXIT } from '../errors.mjs';
import { fmtDate, table } from '../format.mjs';
import { fmtBytes, problemLine, problemsOf, recordLabel } from '../../shared/report.mjs';
import { inspectArgument } from '../checkpoint-file.mjs';

export default {
  summary: 'show the header, records and imported globals of a checkpoint (nothing is unpickled)',
  usage: 'inspect NAME|FILE',
  description: 'Exit status 1 when the checkpoint is not whole (the report is still printed when the header is readable).',
  options: {},
  async run(ctx) {
    const { src, report } = await inspectArgument(ctx, 'inspect');
    const damaged = problemsOf(report, 'damaged');
    const refused = problemsOf(report, 'refused');
    const line = damaged.length ? problemLine(src.label, damaged[0]) : null;
    ctx.emit({ source: src.label, report, problem: damaged[0] ? { ...damaged[0], line } : null });
    const records = report.records ?? [];
    const h = report.header ?? {};
    if (line && records.length === 0 && h.format_version == null) {
      // Not even a header: one line, like verify.
      if (ctx.json) { ctx.stderr.write(`elastic-lite: ${line}\n`); return EXIT.FAILED; }
      throw new CliError(line, EXIT.FAILED);
    }
    const head = [
      ['checkpoint', src.kind === 'store' ? `${src.name}  (store ${ctx.storeDir})` : src.file],
      ['format', String(h.format_version ?? '?')],
      ['producer', h.producer ?? '?'],
      ['python', h.python ?? '?'],
      ['created', fmtDate(h.created_ms)],
      ['size', `${fmtBytes(report.size)} (${report.size} bytes)`],
      ['status', line ? `DAMAGED: ${line}` : `whole (${records.length} records; checksums and pickle streams valid)`],
    ];
    if (report.meta?.notebook) head.splice(1, 0, ['notebook', report.meta.notebook]);
    ctx.say(head.map(([k, v]) => `${k.padEnd(10)}  ${v}`).join('\n'));
    ctx.say('');
    ctx.say(table(
      [{ title: '#', align: 'right' }, { title: 'NAMES' }, { title: 'SERIALIZER' }, { title: 'OFFSET', align: 'right' },
        { title: 'LENGTH', align: 'right' }, { title: 'CRC' }, { title: 'STATE' }],
      records.map((r) => [
        String(r.index), r.names?.length ? r.names.join(', ') : '?', r.serializer ?? '?', String(r.offset ?? '-'),
        String(r.length ?? '-'), r.crc ?? '-', r.ok ? 'ok' : 'BAD',
      ]),
    ));
    if (damaged.length) {
      ctx.say(`\nProblem${damaged.length === 1 ? '' : 's'}:`);
      for (const p of damaged) ctx.say(`  ${problemLine(src.label, p)}`);
    }
    const withGlobals = records.filter((r) => r.globals?.length);
    if (withGlobals.length) {
      ctx.say('\nGlobals each record would import when restored:');
      for (const r of withGlobals) {
        ctx.say(`  ${r.index} (${recordLabel(r.names)}): ${r.globals.map((g) => g.join('.')).join(', ')}`);
        const hit = refused.find((p) => p.record === r.index);
        if (hit) ctx.say(`      ⚠ runs code: ${hit.calls.join(', ')}`);
      }
    }
    if (refused.length) {
      ctx.say(`\n⚠ ${refused.length} record${refused.length === 1 ? '' : 's'} would call code-running globals when restored:`);
      for (const p of refused) ctx.say(`  ${problemLine(src.label, p)}`);
    }
    if (line) ctx.stderr.write(`elastic-lite: ${line}\n`);
    return line ? EXIT.FAILED : EXIT.OK;
  },
};
