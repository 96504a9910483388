// Small formatting helpers for the sidebar and dialogs.

export function formatBytes(n: number | undefined | null): string {
  if (n === undefined || n === null || !Number.isFinite(n)) {
    return '?';
  }
  if (n < 1024) {
    return `${n} B`;
  }
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

export function formatTime(ms: number | undefined | null): string {
  if (!ms) {
    return '?';
  }
  return new Date(ms).toLocaleString();
}

/** A checkpoint name for a notebook: its path plus a timestamp, unique and readable. */
export function checkpointName(notebook: string, auto = false): string {
  return auto ? `${notebook} (auto)` : `${notebook} ${new Date().toISOString()}`;
}

/** A file name for an exported checkpoint. */
export function exportFileName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '_') + '.elc';
}
