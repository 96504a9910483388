// Messages in the page, in plain words: what happened, what it means for the person's data,
// and what to do. Errors are never left only in the console.
//
// Operations answer with the host API's report (docs/INTERFACES.md, "Report schema"); its
// typed problems decide the message (by kind and code, never by reading text), and every
// problem is shown in the host API's own sentence (problemLine), the words the CLI and the
// JupyterLite extension print for the same file.
import { h } from './format.mjs';
import { problemLine, problemsOf, shownText, variableNames } from '../js/shared/report.mjs';

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
    // titles and lines name things from Python or a file: control characters shown escaped
    h('h2', {}, shownText(title)),
    lines.map((l) => h('p', {}, shownText(l))),
    detail ? h('details', {}, h('summary', {}, 'Details'), h('pre', { class: 'detail' }, detail)) : null,
    actions.length
      ? h('div', { class: 'actions' }, actions.map(([label, fn, extra = {}]) =>
        h('button', { type: 'button', ...extra, onclick: () => { close(); fn(); } }, label)))
      : null);
  box.append(body, h('button', { type: 'button', class: 'quiet', 'aria-label': `Dismiss: ${shownText(title)}`, onclick: close }, '✕'));
  container.append(box);
  return box;
}

function listNames(names) {
  const shown = names.slice(0, 12).join(', ');
  return names.length > 12 ? `${shown} and ${names.length - 12} more` : shown;
}

const lines = (label, problems) => problems.map((p) => problemLine(label, p));
const namesOf = (problems) => [...new Set(problems.flatMap((p) => variableNames(p.names)))];
const isNotFound = (report) => report.problems.some((p) => p.code === 'not-found');

// `problems`: the host's not-found problem, shown in its words.
function notStored(what, problems = []) {
  return showMessage({
    level: 'error', key: 'missing',
    title: `Checkpoint ${what} is not stored any more`,
    lines: [...lines('', problems), 'It may have been deleted in another tab. The list has been refreshed.'],
  });
}

/** A failed checkpoint report. */
export function explainCheckpoint(report, name) {
  const what = `“${name}”`;
  if (report.problems.some((p) => p.code === 'quota')) {
    return showMessage({
      level: 'error', key: 'quota',
      title: 'Not enough browser storage for this checkpoint',
      lines: [
        `The browser refused to store ${what}: the storage it allows this page is full.`,
        ...problemsOf(report, 'failed').filter((p) => p.code === 'quota').map((p) => p.message), // how much it needs, how much is left
        'Nothing was overwritten: earlier checkpoints are still stored and can be restored.',
        'To make room, delete old checkpoints in the list (or export them to files first), then try again; ' +
          'or save checkpoints to a folder on disk instead (“Save checkpoints to a folder…”), which this quota does not limit.',
      ],
      detail: lines(name, report.problems).join('\n'),
    });
  }
  return showMessage({ level: 'error', key: 'op', title: `Checkpoint ${what} failed`, lines: lines(name, report.problems) });
}

/**
 * A restore report with problems. `listed`: the list's entry of the checkpoint (its variable
 * names, for a checkpoint the store could not even read).
 */
export function explainRestore(report, name, listed) {
  const what = `“${name}”`;
  if (isNotFound(report)) return notStored(what, report.problems);
  const restored = report.restored.map((r) => r.name);
  const anyway = restored.length ? `Restored anyway (their records are intact): ${listNames(restored)}.` : null;
  const refused = problemsOf(report, 'refused');
  const broken = report.problems.filter((p) => p.kind === 'damaged' || p.kind === 'needs');
  const failed = problemsOf(report, 'failed');
  if (broken.length) {
    const vars = namesOf(broken);
    showMessage({
      level: 'error', key: 'corrupt', title: 'Damaged checkpoint',
      lines: [
        `Checkpoint ${what} is damaged.`,
        vars.length ? `These variables could not be restored: ${listNames(vars)}.` : 'No variable could be restored from it.',
        anyway, ...lines(name, broken), 'Delete this checkpoint, or restore an older one.',
      ].filter(Boolean),
    });
  }
  if (refused.length) {
    // Not damage: the file is whole, but loading these records as they are would run code.
    showMessage({
      level: 'error', key: 'refused', title: 'Refused to load code-running variables',
      lines: [
        `Checkpoint ${what} would run code when loaded (it calls ${[...new Set(refused.flatMap((p) => p.calls))].join(', ')}), ` +
          `so these variables were not restored: ${listNames(namesOf(refused))}.`,
        restored.length ? `Restored (their records call nothing dangerous): ${listNames(restored)}.` : null,
        ...lines(name, refused),
        'A checkpoint saved by Elastic Lite never does this: the file was probably crafted or altered. ' +
          'Delete it unless you made it yourself (then the Python API can load it with trust=True).',
      ].filter(Boolean),
    });
  }
  if (failed.length) {
    const vars = listed?.meta?.names ?? [];
    showMessage({
      level: 'error', key: 'failed', title: `Could not restore ${what}`,
      lines: [
        restored.length ? anyway : (vars.length ? `These variables could not be restored: ${listNames(vars)}.` : null),
        ...lines(name, failed),
      ].filter(Boolean),
    });
  }
  return null;
}

/** An import report: refused (nothing stored) or stored, with warnings for refused records. */
export function explainImport(report, fileName) {
  if (!report.ok) {
    const notCheckpoint = report.problems.every((p) => ['not-checkpoint', 'empty'].includes(p.code));
    const vars = namesOf(report.problems);
    return showMessage({
      level: 'error', key: 'import',
      title: notCheckpoint ? 'This file is not an Elastic Lite checkpoint' : 'Damaged checkpoint file',
      lines: [
        ...lines(fileName, report.problems),
        !notCheckpoint && vars.length ? `Affected variables: ${listNames(vars)}.` : null,
        'Nothing was stored: your existing checkpoints are unchanged. Choose a file made with a checkpoint’s “Export” button.',
      ].filter(Boolean),
    });
  }
  const refused = problemsOf(report, 'refused');
  return showMessage({
    level: refused.length ? 'warn' : 'ok', key: 'import',
    title: `Imported “${report.name}”`,
    lines: [
      `The file was checked (${report.variables.length} variables, every record intact) and stored. Restore it from the list.`,
      ...lines(fileName, refused).map((l) => `Warning: ${l}`),
    ],
  });
}

// Turns a failed worker call ({kind, message, ...}: the worker itself failed, not an
// operation) into a message. `action` says what the person was doing.
export function explainError(err, { action } = {}) {
  switch (err?.kind) {
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
        lines: [err.message, 'Cells and checkpoints need it. Rebuild with `npm run build` and reload.'],
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

export { notStored };
