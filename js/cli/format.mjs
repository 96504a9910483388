// Text formatting for the terminal: dates and aligned tables (byte sizes and durations:
// js/shared/report.mjs, shared with the other hosts).
import { shownText } from '../shared/report.mjs';

/** "2026-12-02 13:40:12 UTC": unambiguous and the same on every machine. */
export function fmtDate(ms) {
  if (ms == null || !Number.isFinite(ms)) return '?';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

/**
 * Aligns rows under headers. columns: [{ title, key?, align: 'left'|'right' }]; rows: arrays
 * of strings in column order. Returns the lines joined by "\n". Cells often hold names from a
 * file: their control characters are shown escaped (shownText), never sent to the terminal.
 */
export function table(columns, rows) {
  const cells = rows.map((r) => r.map((c) => shownText(c == null ? '' : String(c))));
  const widths = columns.map((col, i) => Math.max(col.title.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (columns[i].align === 'right' ? c.padStart(widths[i]) : c.padEnd(widths[i])))
    .join('  ').trimEnd();
  return [line(columns.map((c) => c.title)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}
