// `elastic-lite ls`: the checkpoints in the store, newest first.
import { fmtDate, table } from '../format.mjs';
import { fmtBytes } from '../../shared/report.mjs';

export default {
  summary: 'list the checkpoints in the store, newest first',
  usage: 'ls [--notebook NOTEBOOK]',
  options: { notebook: { type: 'string', help: 'only the checkpoints of this notebook' } },
  async run(ctx) {
    const entries = await ctx.store().list({ notebook: ctx.values.notebook });
    ctx.emit({ store: ctx.storeDir, checkpoints: entries });
    if (entries.length === 0) {
      ctx.say(`No checkpoints in ${ctx.storeDir}.`);
      return 0;
    }
    ctx.say(table(
      [{ title: 'NAME' }, { title: 'NOTEBOOK' }, { title: 'CREATED' }, { title: 'SIZE', align: 'right' },
        { title: 'VARIABLES', align: 'right' }, { title: 'SKIPPED', align: 'right' }],
      entries.map(({ name, meta }) => [
        name, meta.notebook ?? '-', fmtDate(meta.createdMs), fmtBytes(meta.size),
        countOf(meta.variables ?? meta.names), countOf(meta.skipped),
      ]),
    ));
    return 0;
  },
};

function countOf(v) {
  if (Array.isArray(v)) return String(v.length);
  if (typeof v === 'number') return String(v);
  return '-';
}
