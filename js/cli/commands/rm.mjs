// `elastic-lite rm NAME...`: delete checkpoints from the store.
import { CliError, EXIT, usageError } from '../errors.mjs';

export default {
  summary: 'delete checkpoints from the store',
  usage: 'rm NAME [NAME...]',
  options: {},
  async run(ctx) {
    if (ctx.positionals.length === 0) throw usageError('rm needs the NAME of a checkpoint (see: elastic-lite ls).');
    ctx.positionals.forEach((n) => ctx.checkName(n));
    const deleted = []; const missing = [];
    for (const name of ctx.positionals) {
      ((await ctx.store().delete(name)) ? deleted : missing).push(name);
    }
    ctx.emit({ deleted, missing });
    for (const name of deleted) ctx.say(`Deleted checkpoint "${name}".`);
    if (missing.length) {
      const msg = `no checkpoint named ${missing.map((n) => `"${n}"`).join(', ')} in ${ctx.storeDir} (see: elastic-lite ls).`;
      if (ctx.json) return EXIT.NOT_FOUND;
      throw new CliError(msg, EXIT.NOT_FOUND);
    }
    return 0;
  },
};
