// Text formatting for the terminal: byte sizes, durations, dates and aligned tables.

export function fmtBytes(n) {
  if (n == null || !Number.isFinite(n)) return '?';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024; let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

export function fmtMs(ms) {
  if (ms == null || !Number.isFinite(ms)) return '?';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** "2026-12-02 13:40:12 UTC": unambiguous and the same on every machine. */
export function fmtDate(ms) {
  if (ms == null || !Number.isFinite(ms)) return '?';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

/**
 * Aligns rows under headers. columns: [{ title, key?, align: 'left'|'right' }]; rows: arrays
 * of strings in column order. Returns the lines joined by "\n".
 */
export function table(columns, rows) {
  const cells = rows.map((r) => r.map((c) => (c == null ? '' : String(c))));
  const widths = columns.map((col, i) => Math.max(col.title.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (columns[i].align === 'right' ? c.padStart(widths[i]) : c.padEnd(widths[i])))
    .join('  ').trimEnd();
  return [line(columns.map((c) => c.title)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}
