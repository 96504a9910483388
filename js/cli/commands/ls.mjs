// `elastic-lite ls`: the checkpoints in the store, newest first (with the cell each one
// followed, for the points of a notebook's history). A plain store read, no Python: the report
// is host.list's (listReport: labels and the restore choice by the kernel's rules, held equal
// by golden vectors), and the table renders its fields.
import { fmtDate, table } from '../format.mjs';
import { fmtBytes, listReport, quoted } from '../../shared/report.mjs';
import { lostText } from '../../shared/storage-status.mjs';

export default {
  summary: 'list the checkpoints in the store, newest first',
  usage: 'ls [--notebook NOTEBOOK]',
  options: { notebook: { type: 'string', help: 'only the checkpoints of this notebook' } },
  async run(ctx) {
    const t0 = performance.now();
    const notebook = ctx.values.notebook ?? null;
    const report = { ...listReport(await ctx.store().list({ notebook }), { notebook }), store: ctx.storeDir };
    report.timings.total_ms = performance.now() - t0;
    ctx.emit(report);
    const entries = report.checkpoints;
    if (entries.length === 0) {
      ctx.say(`No checkpoints in ${ctx.storeDir}.`);
      return 0;
    }
    // the history: the cell each checkpoint followed, when any was taken after a cell
    const cells = entries.some((e) => e.label);
    ctx.say(table(
      [{ title: 'NAME' }, { title: 'NOTEBOOK' }, { title: 'CREATED' },
        ...(cells ? [{ title: 'AFTER CELL' }] : []), { title: 'SIZE', align: 'right' },
        { title: 'VARIABLES', align: 'right' }, { title: 'SKIPPED', align: 'right' }],
      entries.map(({ name, meta, label, lost }) => [
        lost ? `${name} (lost)` : name, meta.notebook ?? '-', fmtDate(meta.createdMs),
        ...(cells ? [clip(label || '-', 40)] : []), fmtBytes(meta.size),
        countOf(meta.variables ?? meta.names), countOf(meta.skipped),
      ]),
    ));
    for (const e of entries.filter((x) => x.lost)) ctx.say(`${e.name}: ${lostText(e.lost)}`);
    if (report.restore_choice != null) ctx.say(`restore without a NAME brings back ${quoted(report.restore_choice)}.`);
    return 0;
  },
};

function countOf(v) {
  if (Array.isArray(v)) return String(v.length);
  if (typeof v === 'number') return String(v);
  return '-';
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}
