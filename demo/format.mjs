// Small formatting helpers shared by the page's views (byte sizes and durations come from
// js/shared/report.mjs, the same for every host).
export { fmtBytes as formatBytes, fmtMs as formatMs } from '../js/shared/report.mjs';
// Today: just the time; otherwise the date too. Short enough for a narrow table column.
export function formatTime(ms) {
  if (!Number.isFinite(ms)) return '?';
  const d = new Date(ms);
  const time = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  if (d.toDateString() === new Date().toDateString()) return time;
  return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${time}`;
}

// Creates an element with attributes and children; strings become text (never HTML), so
// names and messages coming from Python or a file cannot inject markup.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
