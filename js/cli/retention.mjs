// The retention options of the CLI (`run` and `retention`): keep the last N checkpoints of a
// notebook, one per hour for N hours, and a byte budget — the store's policy
// {keepLast, keepHourly, maxBytes} (docs/INTERFACES.md, "Stores"), which every commit applies.
import { usageError } from './errors.mjs';

export const RETENTION_OPTIONS = {
  'keep-last': { type: 'string', arg: 'n', help: 'keep only the newest N checkpoints of a notebook' },
  'keep-hourly': { type: 'string', arg: 'n', help: 'also keep the newest checkpoint of each of the last N hours' },
  'max-bytes': { type: 'string', arg: 'size', help: 'remove the oldest checkpoints of a notebook beyond SIZE (e.g. 500M, 2G)' },
};

const UNITS = { '': 1, B: 1, K: 1024, KB: 1024, KIB: 1024, M: 1024 ** 2, MB: 1024 ** 2, MIB: 1024 ** 2,
  G: 1024 ** 3, GB: 1024 ** 3, GIB: 1024 ** 3 };

/** "500M" -> 524288000 (binary units); a whole number of bytes >= 1, else a usage error. */
export function parseSize(text, option) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(String(text));
  const unit = m && UNITS[m[2].toUpperCase()];
  const n = m && unit ? Math.floor(Number(m[1]) * unit) : NaN;
  if (!(Number.isSafeInteger(n) && n >= 1)) {
    throw usageError(`--${option} needs a size such as 1048576, 500M or 2G (K, M, G: 1024-based).`);
  }
  return n;
}

function wholeNumber(text, option) {
  const n = Number(text);
  if (!(Number.isInteger(n) && n >= 1)) throw usageError(`--${option} needs a whole number >= 1.`);
  return n;
}

/** The policy given by the options (null when none was given). */
export function retentionFrom(values) {
  const policy = {};
  if (values['keep-last'] != null) policy.keepLast = wholeNumber(values['keep-last'], 'keep-last');
  if (values['keep-hourly'] != null) policy.keepHourly = wholeNumber(values['keep-hourly'], 'keep-hourly');
  if (values['max-bytes'] != null) policy.maxBytes = parseSize(values['max-bytes'], 'max-bytes');
  return Object.keys(policy).length ? policy : null;
}

/** "keep the last 30, one per hour for 24 hours, at most 1.0 GiB" */
export function describeRetention(policy, fmtBytes) {
  if (!policy) return 'keep every checkpoint';
  const parts = [];
  if (policy.keepLast) parts.push(`keep the last ${policy.keepLast}`);
  if (policy.keepHourly) parts.push(`one per hour for ${policy.keepHourly} hours`);
  if (policy.maxBytes) parts.push(`at most ${fmtBytes(policy.maxBytes)}`);
  return parts.join(', ');
}
