// `verify`'s check: is a checkpoint whole? Done by the C core alone (js/core.mjs, WebAssembly),
// without starting Python: the pull reader walks header, records, buffer tables, index and
// footer, checks every CRC and walks every pickle stream with the validator (nothing is
// unpickled); out-of-band buffers are checked with node:zlib's CRC-32 where they lie.
//
// Integrity only. What a checkpoint would import, and whether restore would refuse a record,
// is the trust judgement of elastic_lite (Python): `inspect` shows it, `verify` does not.
//
// The problems are the C core's own (its error objects: code, message, byte offset, record),
// put in the host report's problem shape the way elastic_lite's _report.core_damage puts
// them, so verify and inspect print the same line for the same damage;
// tests/node/cli-verify-parity runs both on the same damaged files and compares them.
import zlib from 'node:zlib';
import { CliError, EXIT, repairHint } from './errors.mjs';
import { hostReport, problem, quoted } from '../shared/report.mjs';

/** host._EMPTY: 0 bytes are not given to the core (it would say "only 0 bytes"). */
export const EMPTY = 'empty (0 bytes): not an Elastic Lite checkpoint';

/** Host error codes of a store failure that mean "no space left" (host._QUOTA_CODES). */
const QUOTA_CODES = ['quota', 'QuotaExceededError', 'ENOSPC', 'EDQUOT'];

let corePromise = null;

/** The C core, loaded once per process. */
export function core() {
  corePromise ??= import('../core.mjs')
    .then(({ loadCore }) => loadCore())
    .catch((err) => {
      corePromise = null;
      throw new CliError(`cannot load the C core (${err.message}); ${repairHint()}`, EXIT.ENV);
    });
  return corePromise;
}

/** The core's error object as a damaged problem (_report.core_damage): the core's words. */
const coreDamage = (err, names, record, offset) =>
  problem('damaged', err.message || 'damaged', { names, record, code: err.code ?? null, offset });

/**
 * Every damage of a core inspection report, in file order: each damaged record, and the
 * container's own error (header, index, footer) when no record names it
 * (_report.inspection_problems without the trust judgement).
 */
export function damageProblems(info) {
  const found = (info.records ?? []).filter((r) => !r.ok).map((r) => coreDamage(r.error ?? {}, r.names ?? [],
    r.index ?? null, r.error && 'offset' in r.error ? r.error.offset : (r.offset ?? null)));
  const err = info.error;
  if (err && !found.length) found.push(coreDamage(err, [], err.record ?? null, err.offset ?? null));
  const at = (p) => (Number.isInteger(p.offset) ? p.offset : Infinity);
  return found.sort((a, b) => at(a) - at(b)); // stable, like Python's sorted()
}

/** A verify report with nothing checked yet (the fields of host.inspect's, less `trust`). */
function newReport({ name = null, source = 'data', size = 0, meta = null }) {
  return hostReport('verify', { ok: false, name, source, size, whole: false, header: {}, records: [], meta });
}

/**
 * The report for a store that could not give the checkpoint's bytes, as the kernel session's
 * store_failure words it: the message of elastic_lite's store wrapper ("the checkpoint store
 * failed to read "NAME": ...", the name quoted as JSON).
 */
export function storeFailure(name, err) {
  const code = typeof err?.code === 'string' ? err.code : err?.name;
  const msg = err?.message || String(err);
  const report = newReport({ name, source: 'store' });
  report.problems.push(problem('failed', `the checkpoint store failed to read ${quoted(name)}: ${msg}`,
    { code: QUOTA_CODES.includes(code) ? 'quota' : 'store' }));
  return report;
}

/**
 * The integrity report of a checkpoint: the fields of host.inspect's report that do not need
 * Python (op "verify"; no `trust`, and records without `imports`), problems = damage only.
 * `bytes`: its bytes, or a source { size, read(offset, length) -> Promise<Uint8Array> } the
 * core's pull reader asks for windows of about 1 MiB, and for each out-of-band buffer whole.
 */
export async function checkIntegrity(bytes, { name = null, source = 'data', meta = null } = {}) {
  const t0 = performance.now();
  const size = typeof bytes.read === 'function' ? bytes.size : bytes.byteLength;
  const report = newReport({ name, source, size, meta });
  if (size === 0) {
    report.problems.push(problem('damaged', EMPTY, { code: 'empty' }));
    return report;
  }
  // zlib.crc32 (Node >= 20.15) checks buffers where they lie; without it the core does, in chunks
  const crc32 = typeof zlib.crc32 === 'function' ? zlib.crc32 : undefined;
  const from = typeof bytes.read === 'function' ? bytes : { size, read: (at, n) => bytes.subarray(at, at + n) };
  const info = await (await core()).readAsync(from, { validate: true, crc32 });
  report.whole = report.ok = !!info.ok;
  report.header = Object.fromEntries(['format_version', 'format_minor', 'producer', 'python', 'created_ms', 'size']
    .map((k) => [k, info[k] ?? null]));
  report.records = (info.records ?? []).map((r) => ({
    index: r.index, kind: r.kind, names: r.names, serializer: r.serializer, offset: r.offset, length: r.length,
    ok: r.ok, error: r.error, globals: r.globals, crc: r.crc32 || r.crc32c, // format 2 | format 1
    buffers: (r.buffers ?? []).length,
  }));
  report.problems = damageProblems(info);
  report.timings.total_ms = performance.now() - t0;
  return report;
}
