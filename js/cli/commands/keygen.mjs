// `elastic-lite keygen FILE`: a publisher key pair for `publish`. FILE (the private key; mode
// 0600, created exclusively, never over an existing file or through a link) stays with the
// publisher; the public key it prints is what a site pins (the extension's "publisherKeys"
// setting: lite/README.md). See js/shared/publisher.mjs for what the signature covers.
import fs from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import { CliError, EXIT, usageError } from '../errors.mjs';
import { generatePublisherKey } from '../../shared/publisher.mjs';
import { hostReport } from '../../shared/report.mjs';

export default {
  summary: 'make a publisher key pair (for publish)',
  usage: 'keygen FILE',
  description: 'FILE receives the private key (mode 0600; it must not exist). Keep it out of the site.\n' +
    'The public key is printed as the overrides.json a JupyterLite site pins it with.',
  options: {},
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw usageError('keygen needs one FILE to write the private key to.');
    const file = path.resolve(ctx.positionals[0]);
    const key = await generatePublisherKey();
    await writeSecretFile(file, `${JSON.stringify(key, null, 2)}\n`);
    const pin = { keyId: key.keyId, ...key.publicKey };
    ctx.emit(hostReport('keygen', { file, keyId: key.keyId, publicKey: pin }));
    ctx.say(`Wrote the private key ${ctx.positionals[0]} (key ${key.keyId}); keep it secret and out of the site.`);
    ctx.say('Pin its public key in the site: this in the lite dir\'s overrides.json (then jupyter lite build):');
    ctx.say(JSON.stringify({ 'elastic-lite-jupyterlite:plugin': { publisherKeys: [pin] } }));
    return EXIT.OK;
  },
};

/** Creates FILE for the owner alone: exclusive, no link followed, 0600 whatever the umask. */
async function writeSecretFile(file, text) {
  let fh;
  try {
    fh = await fs.open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if (err.code === 'EEXIST') throw new CliError(`${file} already exists; keygen never overwrites a key (choose another FILE).`, EXIT.USAGE);
    if (err.code === 'ENOENT') throw new CliError(`cannot write ${file}: its folder does not exist.`, EXIT.NOT_FOUND);
    throw new CliError(`cannot write ${file}: ${err.message}`, EXIT.USAGE);
  }
  try {
    await fh.chmod(0o600);
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
}
