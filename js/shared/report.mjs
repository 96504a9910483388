// What every JS host (the CLI, the demo page, the JupyterLite extension) needs to render the
// reports of elastic_lite.host (docs/INTERFACES.md, "Report schema"): the manifest record's
// name, labels for records, one line per problem, byte and time formatting, the export file
// name. One copy, so the three hosts say the same things in the same words.
//
// Plain ES module importing only its neighbour storage-status.mjs: Node imports it, the demo
// page loads it by URL, the extension bundles it.
import { sizeText } from './storage-status.mjs';

/**
 * A report of the host schema (docs/INTERFACES.md, "Report schema") made by a host with no
 * kernel at hand: the CLI's ls, rm, export, retention and verify (plain store reads, or the C
 * core alone), the demo's export. `{op, ok, problems, warnings, timings, ...fields}`.
 */
export function hostReport(op, fields = {}) {
  return { op, ok: true, problems: [], warnings: [], timings: {}, ...fields };
}

/** One problem of a host report, {kind, names, record, message, code, calls, offset} (Python: _report.problem). */
export function problem(kind, message, { names = [], record = null, code = null, offset = null, calls = [] } = {}) {
  return { kind, names: names.map(String), record, message: String(message), code, calls: [...calls], offset };
}

/** A name in the words a person reads, quoted as JSON, as the kernel quotes it (elastic_lite._words). */
export const quoted = (name) => JSON.stringify(String(name));

/** A name the store does not hold, as a `not-found` problem in the kernel's words (session.kernel.not_found). */
export const notFound = (name) => problem('failed', `no checkpoint named ${quoted(name)}`, { code: 'not-found' });

/** What a checkpoint without a name is called in every host (host.list's `default_name`). */
export const DEFAULT_NAME = 'checkpoint';

/**
 * host.list's report for a store's entries (newest first) where no kernel can be asked (the
 * CLI's ls runs without Python; the JupyterLite page lists while its kernel runs a cell): each
 * entry with its point `label`, the `restore_choice` and the `default_name`, by the rules the
 * kernel applies (tests/vectors/point-labels.json, restore-choice.json). `own`: as restoreChoice's.
 */
export function listReport(entries, { notebook = null, own } = {}) {
  return hostReport('list', {
    notebook,
    checkpoints: entries.map((e) => ({ ...e, label: pointLabel(e.meta) })),
    restore_choice: restoreChoice(entries, own)?.name ?? null,
    default_name: DEFAULT_NAME,
  });
}

/** The names of the manifest record (modules, skipped variables, types; no user variable). */
export const MANIFEST = '__elastic_lite_manifest__';

/** The names of the recorded-cells record (the cells replay re-runs; no user variable). */
export const RECORDED_CELLS = '__elastic_lite_history__';

/**
 * What an internal record of a checkpoint holds, in a person's words ("the manifest", "the
 * recorded cells"), or '' for a record of variables. `rec`: a report's record ({kind, names}).
 */
export function internalRecord(rec) {
  const names = rec?.names ?? [];
  if (rec?.kind === 'manifest' || (names.length === 1 && names[0] === MANIFEST)) return 'the manifest';
  if (rec?.kind === 'history' || (names.length === 1 && names[0] === RECORDED_CELLS)) return 'the recorded cells';
  return '';
}

/**
 * "10 records (9 variables in 8 records, the manifest, the recorded cells)": how many records a
 * checkpoint has and what they are, so that no count is left unexplained.
 */
export function recordsSummary(records) {
  const list = records ?? [];
  const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const internal = list.map(internalRecord).filter(Boolean);
  const data = list.filter((r) => !internalRecord(r));
  const variables = data.reduce((n, r) => n + (r.names?.length ?? 0), 0);
  const parts = data.length ? [`${plural(variables, 'variable')} in ${plural(data.length, 'record')}`] : [];
  return `${plural(list.length, 'record')}${list.length ? ` (${[...parts, ...internal].join(', ')})` : ''}`;
}

/**
 * The C core's problem codes (wasm/include/elastic_lite.h, EL_CODE_*): the `code` of every
 * damage the core reports, what hosts classify damage by (never by message text).
 */
export const CORE_CODES = Object.freeze(['not-checkpoint', 'newer-format', 'truncated', 'checksum', 'structure',
  'pickle', 'nomem', 'unknown-kind', 'unknown-serializer']);

/**
 * Text that came from a file (a variable, type or module name, a notebook path, a cell's
 * first line), made safe to show on a terminal or a page: every character that could move
 * the cursor, clear or hide text, or reorder what follows is replaced by a visible escape —
 * C0 controls, DEL and C1 controls as \xNN, the Unicode bidirectional controls (embeddings,
 * overrides, isolates, marks) and the line and paragraph separators as \uNNNN. Everything
 * else, backslashes included, stays as it is, so escaping twice changes nothing. The rule is
 * Python's too (elastic_lite's tables): tests/vectors/escape-text.json holds it for both.
 */
export function shownText(text) {
  return String(text ?? '').replace(UNSAFE_TEXT, (ch) => {
    const c = ch.codePointAt(0);
    return c < 0x100 ? `\\x${c.toString(16).padStart(2, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`;
  });
}
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** "p, q" for a record's variables, "the manifest" / "the recorded cells" for those records. */
export function recordLabel(names) {
  if (!names || names.length === 0) return '';
  return internalRecord({ names }) || names.join(', ');
}

/** The variables of a report's records, without the manifest and the recorded cells. */
export function variableNames(names) {
  return (names ?? []).filter((n) => n !== MANIFEST && n !== RECORDED_CELLS);
}

/**
 * One line for one problem: "LABEL: VARIABLES: MESSAGE". The message is the host API's own
 * sentence (the same in every host); the label (a file or checkpoint name) is optional.
 * Control characters of names in it are shown escaped (shownText).
 */
export function problemLine(label, problem) {
  const who = recordLabel(problem.names);
  return shownText([label, who, String(problem.message ?? '').replace(/\s+/g, ' ').trim()]
    .filter(Boolean).join(': '));
}

/** Problems of one kind. */
export function problemsOf(report, kind) {
  return (report.problems ?? []).filter((p) => p.kind === kind);
}

/** A restore that brought nothing back (as opposed to one with some problems). */
export function restoredNothing(report) {
  return !report.ok && (report.restored ?? []).length === 0;
}

/** "512 B", "16.0 MiB" ('?' for no size): the one byte size rule of every host, Python's too
 * (sizeText; tests/vectors/storage-line.json). */
export const fmtBytes = (n) => (n == null || !Number.isFinite(n) ? '?' : sizeText(n));

/** "0.42 ms", "12 ms", "2.41 s". */
export function fmtMs(ms) {
  if (ms == null || !Number.isFinite(ms)) return '?';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** A safe file name for an exported checkpoint: "nb.ipynb 2026-01-01T10:00" -> "nb.ipynb_2026-01-01T10_00.elc". */
export function exportFileName(name) {
  const stem = String(name).replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '');
  return `${stem || 'checkpoint'}.elc`;
}

/**
 * A checkpoint report's replay notes (`report.replay`, null without a recorded session), besides
 * the variables it will recompute: what stays skipped and why, which cells re-run on restore
 * have side effects, and the cost model's decisions. [{ name, text }] (name null for a cell's
 * note); the texts are the host API's own sentences.
 */
export function replayNotes(replay) {
  if (!replay) return [];
  return [
    ...(replay.skipped ?? []).map((s) => ({ name: s.name, text: s.message })),
    ...(replay.flagged ?? []).map((f) => ({ name: null, text: f.message })),
    ...(replay.choices ?? []).map((c) => ({ name: c.names.join(', '), text: c.reason })),
  ];
}

/** What the cells a restore re-ran printed: [{ count, output }], in the order they ran. */
export function replayOutputs(report) {
  return (report.replay?.cells ?? []).filter((c) => c.ran && c.output).map((c) => ({ count: c.count, output: c.output }));
}

/** How each danger of an import is marked (elastic_lite.trust.rules judges them). */
export const DANGER_MARKS = Object.freeze({
  'runs-code': '⚠ runs code',
  unknown: '? unknown',
  'not-data': '✗ not data',
  'builds-code': 'ƒ builds code',
});

/**
 * A module binding of a manifest ({name, module, attr}) as a person reads it: the name alone
 * when it is what it is bound to (json, sqrt = math.sqrt), else "name → target" (np → numpy,
 * json → pickle), so a name never hides what it is bound to (tests/vectors/binding-text.json;
 * Python: trust.rules.binding_text). Not escaped: callers show it through shownText.
 */
export function bindingText({ name, module, attr } = {}) {
  const target = attr ? `${module}.${attr}` : String(module);
  return String(name) === String(attr || module) ? String(name) : `${name} \u2192 ${target}`;
}

/**
 * What restoring would import, one row per distinct target, as the host reported it
 * (`report.trust.imports` of inspect and restore; dangerous ones first): [{danger, mark,
 * target, written, usedBy, why}]. `written`: how the stream names it when that differs from
 * what it really is (`cloudpickle builtins.exec`); `usedBy`: the variables whose records
 * import it and the manifest bindings (`print =`).
 */
export function importRows(trust) {
  return (trust?.imports ?? []).map((r) => ({
    danger: r.danger ?? null,
    mark: DANGER_MARKS[r.danger] ?? '',
    target: String(r.target),
    written: (r.written ?? []).filter((w) => w && w !== r.target && w.replace(' ', '.') !== r.target),
    usedBy: [recordLabel(r.names ?? []), ...(r.bindings ?? []).map((b) => `${b} =`)].filter(Boolean).join(', '),
    why: r.why ?? '',
  }));
}

/** One sentence on why a checkpoint is foreign, or '' when it is the store's own. */
export function foreignLine(trust) {
  if (trust?.provenance !== 'foreign') return '';
  return `This checkpoint is foreign (${shownText(trust.foreign_reason ?? 'it does not come from this store')}): ` +
    'restoring it loads nothing until you confirm that you trust where it comes from.';
}

/**
 * "[7] df = load()": the cell a checkpoint was taken after (meta.cell: executionCount,
 * firstLine), the label of a point of the notebook's history; '' for a checkpoint without one.
 * The same words as Python's elastic_lite.session.timeline.point_label (%checkpoints).
 */
export function pointLabel(meta) {
  const cell = meta?.cell;
  if (!cell || typeof cell !== 'object') return '';
  const count = cell.executionCount ?? '?';
  return `[${count}] ${cell.firstLine ?? ''}`.trimEnd();
}

/** A checkpoint that holds nothing: no variable saved and none listed as skipped (e.g. the
 * point after `1+1` in a fresh kernel). Python: elastic_lite.session.timeline.holds_nothing. */
export function holdsNothing(meta) {
  const m = meta ?? {};
  return !m.variables && !(m.names?.length) && !(m.skipped?.length);
}

/**
 * The checkpoint a restore without a name brings back (entries: a store's list, newest
 * first), by the rule of Python's elastic_lite.session.timeline.restore_choice: the newest that is
 * neither one of the restoring kernel's own automatic points (`own`: their names) nor empty nor
 * lost (`lost`: its data removed by the browser) — never the point a fresh kernel took after
 * its first cell — failing that the newest not its own, failing that the newest. null: none.
 */
export function restoreChoice(entries, own = []) {
  const others = entries.filter((e) => !own.includes(e.name));
  return others.find((e) => !holdsNothing(e.meta) && !e.lost) ?? others[0] ?? entries[0] ?? null;
}
