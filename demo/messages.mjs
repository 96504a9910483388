// Messages in the page, in plain words: what happened, what it means for the person's data,
// and what to do. Errors are never left only in the console.
import { h, formatBytes } from './format.mjs';

let container = null;

export function initMessages(el) { container = el; }

// Shows a message box. `lines` are paragraphs; `detail` is preformatted text (a traceback,
// the store's exact words) shown under a disclosure; `actions` are [label, handler] buttons.
// A message with the same `key` replaces the previous one instead of piling up.
export function showMessage({ level = 'info', title, lines = [], detail = null, actions = [], key = null }) {
  if (key) container.querySelector(`[data-key="${CSS.escape(key)}"]`)?.remove();
  const box = h('div', {
    class: `message ${level}`,
    role: level === 'error' ? 'alert' : 'status',
    dataset: key ? { key, level } : { level },
  });
  const close = () => box.remove();
  const body = h('div', { class: 'body' },
    h('h2', {}, title),
    lines.map((l) => h('p', {}, l)),
    detail ? h('details', {}, h('summary', {}, 'Details'), h('pre', { class: 'detail' }, detail)) : null,
    actions.length
      ? h('div', { class: 'actions' }, actions.map(([label, fn, extra = {}]) =>
        h('button', { type: 'button', ...extra, onclick: () => { close(); fn(); } }, label)))
      : null);
  box.append(body, h('button', { type: 'button', class: 'quiet', 'aria-label': `Dismiss: ${title}`, onclick: close }, '✕'));
  container.append(box);
  return box;
}

export function clearMessages(level = null) {
  for (const el of [...container.children]) {
    if (!level || el.dataset.level === level) el.remove();
  }
}

// The core's reason already starts with "not an Elastic Lite checkpoint": keep only the why.
function reasonText(reason) {
  const why = String(reason ?? '').replace(/^not an Elastic Lite checkpoint[:\s]*/i, '').replace(/^\((.*)\)$/, '$1').trim();
  return why ? ` (${why})` : '';
}

function listNames(names) {
  const shown = names.slice(0, 12).join(', ');
  return names.length > 12 ? `${shown} and ${names.length - 12} more` : shown;
}

// Turns a worker error ({kind, message, ...}) into a message. `action` says what the person
// was doing ("checkpoint", "restore", "import", ...), `name` which checkpoint or file.
export function explainError(err, { action, name } = {}) {
  const kind = err?.kind ?? 'internal';
  const what = name ? `“${name}”` : 'the checkpoint';
  switch (kind) {
    case 'quota':
      return showMessage({
        level: 'error', key: 'quota',
        title: 'Not enough browser storage for this checkpoint',
        lines: [
          `The browser refused to store ${what}${err.needed ? ` (${formatBytes(err.needed)})` : ''}: ` +
            'the storage it allows this page is full.',
          'Nothing was overwritten: earlier checkpoints are still stored and can be restored.',
          'To make room, delete old checkpoints in the list (or export them to files first), then try again.',
        ],
        detail: err.message,
      });
    case 'corrupt': {
      const vars = err.variables?.length ? listNames(err.variables) : null;
      const lines = action === 'import'
        ? [`The file ${what} looks like a checkpoint but it is damaged${err.where ? ` (${err.where})` : ''}.`,
          vars ? `Affected variables: ${vars}.` : 'The damage is in the file’s header or index, so no variable can be trusted.',
          'Nothing was stored: your existing checkpoints are unchanged. Export the checkpoint again from its source.']
        : [`Checkpoint ${what} is damaged${err.where ? ` (${err.where})` : ''}.`,
          vars ? `These variables could not be restored: ${vars}.` : 'No variable could be restored from it.',
          err.restored?.length ? `Restored anyway (their records are intact): ${listNames(err.restored)}.` : null,
          'Delete this checkpoint, or restore an older one.'].filter(Boolean);
      return showMessage({ level: 'error', key: 'corrupt', title: action === 'import' ? 'Damaged checkpoint file' : 'Damaged checkpoint', lines, detail: err.message });
    }
    case 'refused': {
      // Records whose pickle would call a deny-listed function (os.system, eval, ...): never
      // loaded. Not damage: the file is whole, but restoring it as is would run its code.
      const lines = [
        `Checkpoint ${what} would run code when loaded${err.calls?.length ? ` (it calls ${err.calls.join(', ')})` : ''}, ` +
          `so these variables were not restored: ${listNames(err.variables)}.`,
        err.restored?.length ? `Restored (their records call nothing dangerous): ${listNames(err.restored)}.` : null,
        'A checkpoint saved by Elastic Lite never does this: the file was probably crafted or altered. ' +
          'Delete it unless you made it yourself (then the Python API can load it with trust=True).',
      ].filter(Boolean);
      return showMessage({ level: 'error', key: 'refused', title: 'Refused to load code-running variables', lines, detail: err.message });
    }
    case 'not-checkpoint':
      return showMessage({
        level: 'error', key: 'import',
        title: 'This file is not an Elastic Lite checkpoint',
        lines: [
          `${name ? `“${name}”` : 'The file'} does not start like a checkpoint${reasonText(err.reason)}.`,
          'Nothing was stored. Choose a file made with a checkpoint’s “Export” button.',
        ],
        detail: err.message,
      });
    case 'missing':
      return showMessage({
        level: 'error', key: 'missing',
        title: `Checkpoint ${what} is not stored any more`,
        lines: ['It may have been deleted in another tab. The list has been refreshed.'],
      });
    case 'python':
      return showMessage({
        level: 'error', key: `python-${action}`,
        title: `Python failed during ${action ?? 'the operation'}`,
        lines: [err.message],
        detail: err.traceback ?? null,
      });
    case 'setup':
      return showMessage({
        level: 'error', key: 'setup',
        title: 'Elastic Lite could not start in this page',
        lines: [err.message, 'Cells may still run, but checkpoints are unavailable. Rebuild with `npm run build` and reload.'],
      });
    default:
      return showMessage({
        level: 'error', key: `internal-${action}`,
        title: `Something went wrong during ${action ?? 'the operation'}`,
        lines: [err?.message ?? String(err)],
        detail: err?.stack ?? null,
      });
  }
}
