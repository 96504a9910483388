// Small formatting helpers for the sidebar and the notifications (byte sizes and export file
// names: js/shared/report.mjs, the same for every host).

export function formatTime(ms: number | undefined | null): string {
  if (!ms) {
    return '?';
  }
  return new Date(ms).toLocaleString();
}
