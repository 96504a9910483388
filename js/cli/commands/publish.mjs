// `elastic-lite publish NOTEBOOK... --key FILE`: a site's notebooks, shipped warm. Each notebook
// runs in a fresh Pyodide (the one the site's kernel uses: this package's pinned `pyodide`),
// exactly as `run` does, or its existing checkpoint is taken (--from NAME); the checkpoint is
// then written beside the notebook as NOTEBOOK.published.elc with NOTEBOOK.published.json, the
// publisher's signature over its bytes, the notebook, the cells it followed and when it was
// computed (js/shared/publisher.mjs). A plain `jupyter lite build` ships both with the
// notebook (they lie in its files/); a site that pins the publisher's public key offers the
// state to every visitor who opens the notebook.
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { CliError, EXIT, usageError } from '../errors.mjs';
import { makeContext, jsonState } from '../context.mjs';
import { fmtBytes, hostReport } from '../../shared/report.mjs';
import { parsePublisherKey, publishedPaths, signPublished } from '../../shared/publisher.mjs';
import { readNotebook } from '../notebook.mjs';
import { writeFileAtomic } from '../files.mjs';
import runCommand from './run.mjs';

export default {
  summary: 'run notebooks and sign their state for a site (warm start)',
  usage: 'publish NOTEBOOK.ipynb... --key FILE [--from NAME]',
  description: 'Writes NOTEBOOK.published.elc and NOTEBOOK.published.json beside each notebook; put them in\n' +
    'the site\'s files/ with the notebook. The site trusts them once it pins the key\'s public half\n' +
    '(printed by keygen). --from NAME signs an existing checkpoint instead of running the notebook.',
  options: {
    key: { type: 'string', arg: 'file', help: 'the publisher\'s private key file (made by keygen)' },
    from: { type: 'string', arg: 'name', help: 'publish this existing checkpoint (one notebook only)' },
  },
  async run(ctx) {
    const notebooks = ctx.positionals;
    if (!notebooks.length) throw usageError('publish needs at least one NOTEBOOK.ipynb.');
    if (!ctx.values.key) throw usageError('publish needs --key FILE (make one with: elastic-lite keygen FILE).');
    if (ctx.values.from && notebooks.length !== 1) throw usageError('--from NAME publishes one notebook at a time.');
    const key = await readKey(ctx.values.key);
    const published = [];
    for (const file of notebooks) {
      const nb = await readNotebook(file); // a bad notebook fails before anything runs
      const name = ctx.values.from ?? `${path.basename(file).replace(/\.ipynb$/i, '')} (published)`;
      if (!ctx.values.from) {
        ctx.say(`Running ${file} ...`);
        // `run` itself, its report on the terminal; under --json its document is not ours to print
        const sub = makeContext({ ...ctx.values, name, key: undefined, from: undefined }, [file],
          { stdout: ctx.json ? devNull : ctx.stdout, stderr: ctx.stderr });
        await runCommand.run(sub);
        jsonState.emitted = false;
      }
      const entry = await ctx.store().get(name);
      if (!entry) throw ctx.missing(name);
      const meta = entry.meta ?? {};
      const target = publishedPaths(file);
      const doc = await signPublished(key, entry.bytes, {
        notebook: path.basename(file),
        checkpoint: path.basename(target.checkpoint),
        computed: new Date(meta.createdMs ?? Date.now()).toISOString(),
        variables: Array.isArray(meta.names) ? meta.names.length : (meta.variables ?? null),
        names: Array.isArray(meta.names) ? meta.names : [],
        cells: nb.cells.map((c) => ({ number: c.number, firstLine: (c.source.split('\n').find((l) => l.trim()) ?? '').trim().slice(0, 200) })),
        pyodide: pyodideVersion(),
      });
      await writeFileAtomic(target.checkpoint, entry.bytes);
      await writeFileAtomic(target.document, `${JSON.stringify(doc, null, 2)}\n`);
      published.push({ notebook: path.resolve(file), checkpoint: path.resolve(target.checkpoint),
        document: path.resolve(target.document), size: entry.bytes.byteLength, keyId: key.keyId, variables: doc.variables });
      ctx.say(`Published ${file}: ${target.checkpoint} (${fmtBytes(entry.bytes.byteLength)}, ${doc.variables} variables) ` +
        `and ${target.document}, signed by key ${key.keyId}.`);
    }
    ctx.emit(hostReport('publish', { published }));
    return EXIT.OK;
  },
};

const devNull = { write: () => true };

async function readKey(file) {
  let text;
  try { text = await fs.readFile(file, 'utf8'); } catch (err) {
    if (err.code === 'ENOENT') throw new CliError(`--key ${file}: no such file (make one with: elastic-lite keygen ${file}).`, EXIT.NOT_FOUND);
    throw new CliError(`--key ${file}: cannot read it (${err.message}).`, EXIT.ENV);
  }
  try { return await parsePublisherKey(text); } catch (err) { throw new CliError(`--key ${file}: ${err.message}`, EXIT.USAGE); }
}

function pyodideVersion() {
  try { return createRequire(import.meta.url)('pyodide/package.json').version; } catch { return null; }
}
