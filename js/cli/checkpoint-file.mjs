// Reading a checkpoint given as NAME (in the store) or FILE, and judging it with the C core's
// validator (js/core.mjs): nothing is unpickled here. verify, inspect and import share this,
// so a damaged file gets the very same one-line message from each of them.
import path from 'node:path';
import fs from 'node:fs/promises';
import { CliError, EXIT } from './errors.mjs';
import { readFileBytes } from './files.mjs';

let corePromise = null;

/** The C core in WebAssembly, loaded once (the build must have produced the .wasm). */
export function getCore() {
  corePromise ??= (async () => {
    let mod;
    try {
      mod = await import('../core.mjs');
    } catch (err) {
      throw new CliError(`cannot load js/core.mjs (${err.message}); run: npm run build`, EXIT.ENV);
    }
    try {
      return await mod.loadCore();
    } catch (err) {
      throw new CliError(`cannot load the C core build/wasm/elastic_lite.wasm (${err.message}); run: npm run build`, EXIT.ENV);
    }
  })();
  return corePromise;
}

const looksLikePath = (arg) => arg.includes('/') || arg.includes(path.sep) || /\.elc$/i.test(arg);

/**
 * NAME|FILE → { bytes, label, kind: 'store'|'file', name?, file?, meta? }. A store name wins
 * unless the argument looks like a path (has a slash or ends in .elc); a file is the fallback.
 */
export async function resolveCheckpoint(ctx, arg) {
  if (!arg) throw new CliError('a checkpoint NAME or FILE is needed (see: elastic-lite ls).', EXIT.USAGE);
  if (!looksLikePath(arg)) {
    let entry = null;
    try {
      entry = await ctx.store().get(arg);
    } catch (err) {
      if (!/^Invalid checkpoint name/.test(err.message)) throw err;
    }
    if (entry) return { bytes: entry.bytes, label: `checkpoint "${arg}"`, kind: 'store', name: arg, meta: entry.meta };
    const isFile = await fs.stat(arg).then((s) => s.isFile(), () => false);
    if (!isFile) {
      throw new CliError(`no checkpoint named "${arg}" in ${ctx.storeDir}, and no file ${arg} (see: elastic-lite ls).`, EXIT.NOT_FOUND);
    }
  }
  return { bytes: await readFileBytes(arg), label: arg, kind: 'file', file: path.resolve(arg) };
}

/** The core's inspection report; a CoreError becomes a report with ok=false, never a crash. */
export async function inspectBytes(bytes, { validate = true } = {}) {
  const core = await getCore();
  if (bytes.byteLength === 0) {
    return { ok: false, size: 0, records: [], error: { message: 'empty (0 bytes): not an Elastic Lite checkpoint', offset: null } };
  }
  try {
    return core.inspect(bytes, { validate });
  } catch (err) {
    if (err && err.name === 'CoreError') {
      return {
        ok: false, size: bytes.byteLength, records: [],
        error: { message: err.message, offset: err.offset ?? null, record: err.record ?? null, opcode: err.opcode ?? null },
      };
    }
    throw err;
  }
}

/**
 * The first problem of a report, in file order: { message, offset, record, names, opcode },
 * or null when the checkpoint is whole.
 */
export function firstProblem(report) {
  const found = [];
  if (report.error) found.push({ ...report.error });
  for (const r of report.records ?? []) {
    if (!r.ok || r.error) {
      found.push({ message: 'record is damaged', offset: r.offset, opcode: null, ...(r.error ?? {}), record: r.index, names: r.names });
    }
  }
  if (report.ok && found.length === 0) return null;
  if (found.length === 0) return { message: 'the checkpoint is not whole', offset: null, record: null };
  const at = (p) => (Number.isFinite(p.offset) ? p.offset : Infinity);
  found.sort((a, b) => at(a) - at(b));
  const p = found[0];
  if (p.record != null && !p.names) p.names = report.records?.find((r) => r.index === p.record)?.names;
  return p;
}

/**
 * One line, as verify prints it: "LABEL: record 1 (x, y): MESSAGE (byte offset N)". The
 * core's messages often name the record and offset already; they are not repeated.
 */
export function problemLine(label, p) {
  let msg = String(p.message ?? 'damaged').replace(/\s+/g, ' ').trim().replace(/\.$/, '');
  const names = p.names?.length ? p.names.join(', ') : null;
  if (p.record != null) {
    if (new RegExp(`\\brecord ${p.record}\\b`).test(msg)) {
      if (names) msg = msg.replace(new RegExp(`\\brecord ${p.record}\\b`), `record ${p.record} (${names})`);
    } else {
      msg = `record ${p.record}${names ? ` (${names})` : ''}: ${msg}`;
    }
  }
  if (p.opcode && !msg.includes(p.opcode)) msg += ` (opcode ${p.opcode})`;
  if (Number.isFinite(p.offset) && !/\boffset\b/.test(msg)) msg += ` (byte offset ${p.offset})`;
  return `${label}: ${msg}`;
}
