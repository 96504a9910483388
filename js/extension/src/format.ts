// Small formatting helpers for the sidebar and the notifications (byte sizes and export file
// names: js/shared/report.mjs, the same for every host).

export function formatTime(ms: number | undefined | null): string {
  if (!ms) {
    return '?';
  }
  return new Date(ms).toLocaleString();
}

/** A checkpoint name for a notebook: its path plus a timestamp, unique and readable. (The
 * automatic checkpoints after a cell are named by the kernel: "<path> [<count>] <time>".) */
export function checkpointName(notebook: string): string {
  return `${notebook} ${new Date().toISOString()}`;
}
