// `elastic-lite inspect NAME|FILE`: what a checkpoint holds, from elastic_lite.host.inspect
// (the C validator alone, nothing is unpickled, so it is safe on a file from anywhere):
// header, records (names, serializer, offsets, state) and everything restoring would import:
// every global of every record and every module binding of the manifest, as the host resolved
// them (what a dotted name, a Python 2 name or an EXT code really is), marked "⚠ runs code",
// "? unknown" (counts as dangerous) or "ƒ builds code" (notebook functions and classes).
// This is what a person reviews before `restore --trust` of a foreign file.
import { EXIT } from '../errors.mjs';
import { fmtDate, table } from '../format.mjs';
import { fmtBytes, foreignLine, importRows, internalRecord, problemLine, problemsOf, recordsSummary, shownText } from '../../shared/report.mjs';
import { fileField, inspectArgument } from '../checkpoint-file.mjs';

export default {
  summary: 'show the header, records and imported globals of a checkpoint (nothing is unpickled)',
  usage: 'inspect NAME|FILE',
  description: 'Exit status 1 when the checkpoint is not whole (the report is still printed when the header is readable).',
  options: {},
  async run(ctx) {
    const { src, report } = await inspectArgument(ctx, 'inspect');
    const damaged = problemsOf(report, 'damaged');
    const refused = problemsOf(report, 'refused');
    // damage first; a checkpoint the store could not even give back is a problem too
    const first = damaged[0] ?? (report.ok ? null : problemsOf(report, 'failed')[0]) ?? null;
    const line = first ? problemLine(src.label, first) : null;
    const records = report.records ?? [];
    const h = report.header ?? {};
    // not even a header: one line, like verify
    if (line && records.length === 0 && h.format_version == null) return ctx.failWith({ ...report, ...fileField(src) }, EXIT.FAILED, line);
    ctx.emit({ ...report, ...fileField(src) });
    const head = [
      ['checkpoint', src.kind === 'store' ? `${src.name}  (store ${ctx.storeDir})` : src.file],
      ['format', String(h.format_version ?? '?')],
      ['producer', h.producer ?? '?'],
      ['python', h.python ?? '?'],
      ['created', fmtDate(h.created_ms)],
      ['size', `${fmtBytes(report.size)} (${report.size} bytes)`],
      ['status', line ? `DAMAGED: ${line}` : `whole: ${recordsSummary(records)}; checksums and pickle streams valid`],
    ];
    if (report.meta?.notebook) head.splice(1, 0, ['notebook', report.meta.notebook]);
    ctx.say(head.map(([k, v]) => `${k.padEnd(10)}  ${shownText(v)}`).join('\n'));
    ctx.say('');
    ctx.say(table(
      [{ title: '#', align: 'right' }, { title: 'NAMES' }, { title: 'SERIALIZER' }, { title: 'OFFSET', align: 'right' },
        { title: 'LENGTH', align: 'right' }, { title: 'CRC' }, { title: 'STATE' }],
      records.map((r) => [
        String(r.index), internalRecord(r) ? `(${internalRecord(r)})` : r.names?.length ? r.names.join(', ') : '?',
        r.serializer ?? (internalRecord(r) ? 'JSON' : '?'), String(r.offset ?? '-'),
        String(r.length ?? '-'), r.crc ?? '-', r.ok ? 'ok' : 'BAD',
      ]),
    ));
    if (records.some(internalRecord)) {
      ctx.say('(Internal records: the manifest lists the modules to re-import, the skipped variables and their ' +
        'types; the recorded cells are the code a restore re-runs to recompute what was not saved.)');
    }
    if (damaged.length) {
      ctx.say(`\nProblem${damaged.length === 1 ? '' : 's'}:`);
      for (const p of damaged) ctx.say(`  ${problemLine(src.label, p)}`);
    }
    const rows = importRows(report.trust);
    if (rows.length) {
      ctx.say('\nWhat restoring would import (every global of every record, and the manifest\'s module bindings):');
      ctx.say(table([{ title: 'CHECK' }, { title: 'IMPORT' }, { title: 'USED BY' }, { title: 'WHY' }],
        rows.map((r) => [r.mark, r.target + (r.written.length ? ` (written ${r.written.join(', ')})` : ''), r.usedBy, r.why])));
    }
    if (refused.length) {
      ctx.say(`\n⚠ ${refused.length} record${refused.length === 1 ? '' : 's'} would call code-running or unknown globals when restored (refused unless --trust):`);
      for (const p of refused) ctx.say(`  ${problemLine(src.label, p)}`);
    }
    const foreign = foreignLine(report.trust);
    if (foreign) {
      ctx.say(`\n${foreign}\nRestore it with --trust only if you trust where it comes from (then every record above loads, ` +
        'and functions it rebuilds can run any code), or with --data-only to load only its plain data.');
    }
    if (line) ctx.stderr.write(`elastic-lite: ${line}\n`);
    return line ? EXIT.FAILED : EXIT.OK;
  },
};
