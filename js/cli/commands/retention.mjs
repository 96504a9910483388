// `elastic-lite retention [--notebook NB] [--keep-last N] [--keep-hourly N] [--max-bytes SIZE] [--clear]`:
// show or set how many checkpoints the store keeps (per notebook, or the default of every
// notebook). Kept in the store (retention.json), applied by every later save.
import { fmtBytes, hostReport } from '../../shared/report.mjs';
import { usageError } from '../errors.mjs';
import { RETENTION_OPTIONS, describeRetention, retentionFrom } from '../retention.mjs';

export default {
  summary: "show or set how many checkpoints (the history) the store keeps",
  usage: 'retention [--notebook NOTEBOOK] [--keep-last N] [--keep-hourly N] [--max-bytes SIZE] [--clear]',
  description: 'Without options: the policy in force. A checkpoint is kept when it is one of the last N or the\n' +
    'newest of one of the last N hours; then the newest are kept within the byte budget. The\n' +
    'checkpoint just saved is always kept. Applied at every save of that notebook (or of every\n' +
    'notebook, without --notebook).',
  options: {
    notebook: { type: 'string', help: 'the policy of this notebook (default: of every notebook)' },
    ...RETENTION_OPTIONS,
    clear: { type: 'boolean', help: 'remove the policy (keep everything, or the default)' },
  },
  async run(ctx) {
    if (ctx.positionals.length) throw usageError('retention takes options only (see: elastic-lite retention --help).');
    const notebook = ctx.values.notebook ?? null;
    const policy = retentionFrom(ctx.values);
    if (policy && ctx.values.clear) throw usageError('--clear removes the policy; give it alone.');
    const store = ctx.store();
    if (policy || ctx.values.clear) await store.setRetention(notebook, policy);
    const now = await store.getRetention(notebook);
    ctx.emit(hostReport('retention', { notebook, retention: now ?? null }));
    ctx.say(`${notebook ? `Checkpoints of ${notebook}` : 'Checkpoints of every notebook'} in ${ctx.storeDir}: ` +
      `${describeRetention(now, fmtBytes)}.`);
    return 0;
  },
};
