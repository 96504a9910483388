// `elastic-lite rm NAME...`: delete checkpoints from the store. A plain store delete, no
// Python; --json prints host.delete's report (names asked, deleted, a not-found problem per
// name the store does not hold, in the kernel's words).
import { EXIT, usageError } from '../errors.mjs';
import { hostReport, notFound, quoted } from '../../shared/report.mjs';

export default {
  summary: 'delete checkpoints from the store',
  usage: 'rm NAME [NAME...]',
  options: {},
  async run(ctx) {
    if (ctx.positionals.length === 0) throw usageError('rm needs the NAME of a checkpoint (see: elastic-lite ls).');
    const names = ctx.positionals.map((n) => ctx.checkName(n));
    const report = hostReport('delete', { name: names[0], names, deleted: false });
    const missing = [];
    for (const name of names) {
      if (await ctx.store().delete(name)) ctx.say(`Deleted checkpoint ${quoted(name)}.`);
      else { missing.push(name); report.problems.push(notFound(name)); }
    }
    report.ok = report.deleted = missing.length === 0;
    if (report.ok) return ctx.emit(report) ?? EXIT.OK;
    return ctx.failWith(report, EXIT.NOT_FOUND,
      `no checkpoint named ${missing.map((n) => JSON.stringify(n)).join(', ')} in ${ctx.storeDir} (see: elastic-lite ls).`);
  },
};
