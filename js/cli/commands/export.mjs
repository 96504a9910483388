// `elastic-lite export NAME FILE`: copy a checkpoint out of the store as a container file
// (byte for byte what the store holds; `verify FILE` checks it, `import FILE` brings it back).
import fs from 'node:fs/promises';
import path from 'node:path';
import { CliError, EXIT, usageError } from '../errors.mjs';
import { fmtBytes } from '../format.mjs';
import { writeFileAtomic } from '../files.mjs';
import { timed } from '../progress.mjs';

export default {
  summary: 'write a checkpoint to a file',
  usage: 'export NAME FILE [--force]',
  options: { force: { type: 'boolean', help: 'overwrite FILE if it exists' } },
  async run(ctx) {
    const [name, file, ...extra] = ctx.positionals;
    if (!name || !file || extra.length) throw usageError('export needs a checkpoint NAME and a FILE to write.');
    const entry = await timed({}, 'read', `reading checkpoint "${name}"`, () => ctx.store().get(name));
    if (!entry) throw new CliError(`no checkpoint named "${name}" in ${ctx.storeDir} (see: elastic-lite ls).`, EXIT.NOT_FOUND);
    const target = path.resolve(file);
    if (!ctx.values.force) {
      const exists = await fs.stat(target).then(() => true, () => false);
      if (exists) throw new CliError(`${file} already exists; pass --force to overwrite it.`);
    }
    await timed({}, 'write', `writing ${file}`, () => writeFileAtomic(target, entry.bytes));
    ctx.emit({ name, file: target, size: entry.bytes.byteLength });
    ctx.say(`Exported checkpoint "${name}" to ${file} (${fmtBytes(entry.bytes.byteLength)}).`);
    return 0;
  },
};
