// `elastic-lite restore NAME|FILE [-c CODE]`: a fresh Pyodide, elastic_lite.host.restore
// (validation happens there, once, before anything is unpickled), then CODE run exactly as
// the notebook's next cell would run it (stdout printed, the value of a final expression
// shown like Out[n]). Damaged and refused records are reported by variable name while the
// rest restore; what the checkpoint planned for replay is recomputed by re-running the
// recorded cells (for a checkpoint FILE only with --trust). A FILE is foreign: nothing of it
// is unpickled unless --trust (after `inspect FILE`: what it would import is listed there, and
// again here when refused) or --data-only (plain data types only, no replay). Exit 1 if
// nothing could be restored or CODE raised.
//
// With -c, stdout carries only CODE's output (so `x=$(elastic-lite restore NAME -c ...)`
// works); the restore summary and timings go to stderr.
import { CliError, EXIT, usageError } from '../errors.mjs';
import { table } from '../format.mjs';
import { bindingText, fmtMs, foreignLine, importRows, problemLine, quoted, recordLabel, replayOutputs, restoredNothing, shownText } from '../../shared/report.mjs';
import { fileField, resolveCheckpoint, hostArgs } from '../checkpoint-file.mjs';
import { startSession } from '../pyodide-session.mjs';
import { timed } from '../progress.mjs';

export default {
  summary: 'restore a checkpoint into a fresh Pyodide and run code in it',
  usage: 'restore [NAME|FILE] [-c CODE] [--trust | --data-only] [--no-replay]',
  description: 'Without NAME: the checkpoint a restore without a name brings back (the newest that holds something).\n' +
    'Exit status 1 when nothing could be restored or CODE raised (its traceback is printed).\n' +
    'Damaged records are reported by variable name; the others are restored.\n' +
    'What could not be saved is recomputed by re-running the recorded cells that made it (a FILE: only with --trust).\n' +
    'A FILE is foreign: nothing of it is loaded until you have looked at what it would import\n' +
    '(inspect FILE) and pass --trust, or pass --data-only to load only its plain data.\n' +
    'Records that would call code-running or unknown globals (os.system, eval, ...; see inspect)\n' +
    'are refused unless --trust. Not a sandbox: trust only checkpoints whose origin you trust.',
  options: {
    code: { type: 'string', short: 'c', help: 'Python to run in the restored namespace, as the next cell' },
    trust: { type: 'boolean', help: 'load everything, even a foreign file and code-running records, and replay a FILE\'s cells (only if you trust where it comes from)' },
    'data-only': { type: 'boolean', help: 'load only plain data types (no functions, classes or code; no replay), even from a foreign file' },
    'no-replay': { type: 'boolean', help: 'do not re-run recorded cells: what the checkpoint did not save stays missing' },
  },
  async run(ctx) {
    if (ctx.positionals.length > 1) throw usageError('restore takes one checkpoint NAME (or FILE), or none for the latest.');
    if (ctx.values.trust && ctx.values['data-only']) throw usageError('restore takes --trust or --data-only, not both.');
    const timings = {};
    const src = ctx.positionals.length ? await timed(timings, 'file_read_ms', 'reading the checkpoint', () => resolveCheckpoint(ctx, ctx.positionals[0]))
      : { kind: 'choice', label: 'the store' };
    const session = await timed(timings, 'interpreter_start_ms', 'starting Python (Pyodide)', () => startSession({ echo: !ctx.json, store: ctx.store() }));
    const { kwargs, data } = hostArgs(src);
    const report = await timed(timings, 'restore_ms', 'restoring variables',
      () => session.call('restore', { ...kwargs, trust: !!ctx.values.trust, data_only: !!ctx.values['data-only'], replay: !ctx.values['no-replay'] }, { data }));
    Object.assign(timings, report.timings);
    if (src.kind === 'choice' && report.name != null) src.label = `checkpoint ${quoted(report.name)}`;
    const code = ctx.values.code;
    // Where the human summary goes: stdout normally, stderr when stdout belongs to CODE.
    const human = (text) => {
      if (ctx.json) return;
      (code != null ? ctx.stderr : ctx.stdout).write(`${text}\n`);
    };
    const nothing = restoredNothing(report);
    if (!nothing || report.problems.length > 1) human(summary(src.label, report));
    if (!nothing) {
      human(`Timings: interpreter start ${fmtMs(timings.interpreter_start_ms)}, store read ${fmtMs(timings.read_ms)}, ` +
        `validate and unpickle ${fmtMs(timings.load_ms)}` +
        (report.replay?.cells?.length ? `, replay ${fmtMs(timings.replay_ms)}` : ''));
    }
    for (const w of report.warnings ?? []) ctx.warn(w);

    let cell = null;
    if (code != null && !nothing) {
      cell = await timed(timings, 'code_ms', 'running CODE', () => session.runCell(code, 'restore -c'));
      if (cell.value != null && !ctx.json) ctx.stdout.write(`${cell.value}\n`);
    }
    ctx.emit({ ...report, ok: report.ok && (cell == null || cell.ok), ...fileField(src), code: cell, timings });
    const foreign = report.problems.find((p) => p.code === 'foreign');
    if (foreign && !ctx.json) ctx.stderr.write(`${foreignHelp(src, report)}\n`);
    if (nothing) {
      const [first] = report.problems;
      const notFound = first?.code === 'not-found';
      throw new CliError(notFound ? problemLine(src.label, first)
        : `${src.label}: nothing could be restored: ${problemLine('', first ?? { message: 'no variables' })}`,
      notFound ? EXIT.NOT_FOUND : EXIT.FAILED);
    }
    if (cell && !cell.ok) throw new CliError('CODE raised an exception in the restored session.', EXIT.FAILED, { details: cell.traceback });
    return EXIT.OK;
  },
};

function summary(label, report) {
  const names = report.restored.map((r) => shownText(r.name));
  const lines = [`Restored ${names.length} variable${names.length === 1 ? '' : 's'} from ${label}` +
    (names.length ? `: ${names.join(', ')}` : '.')];
  const imports = (report.modules ?? []).filter((m) => m.ok).map((m) => shownText(bindingText(m)));
  if (imports.length) lines.push(`Re-imported: ${imports.join(', ')}`);
  const recomputed = (report.recomputed ?? []).map((r) => `${r.name}: ${r.message}`);
  if (recomputed.length) lines.push('Recomputed by replay:', ...recomputed.map((l) => `  ${shownText(l)}`));
  for (const { count, output } of replayOutputs(report)) {
    lines.push(`Output of cell [${count}] (re-run):`, ...output.replace(/\n$/, '').split('\n').map((l) => `  ${l}`));
  }
  if (report.problems.length) {
    lines.push('NOT restored:', table([{ title: 'VARIABLE' }, { title: 'PROBLEM' }, { title: 'REASON' }],
      report.problems.map((p) => [recordLabel(p.names), p.kind, p.message])));
  }
  if (report.skipped?.length) {
    lines.push('Not in the checkpoint (skipped when it was taken):',
      table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'REASON' }], report.skipped.map((s) => [s.name, s.type, s.reason])));
  }
  return lines.join('\n');
}

/** What a refused foreign checkpoint would import (the dangerous imports named, the others
 * counted) and the two ways on. */
function foreignHelp(src, report) {
  const rows = importRows(report.trust);
  const marked = rows.filter((r) => r.mark);
  const lines = [foreignLine(report.trust)];
  if (marked.length) {
    lines.push('It would import, among others:', table([{ title: 'CHECK' }, { title: 'IMPORT' }, { title: 'USED BY' }],
      marked.map((r) => [r.mark, r.target, r.usedBy])));
  }
  lines.push(`${rows.length} imports in all (${marked.length} marked): see \`elastic-lite inspect ${src.label}\`. ` +
    'Then restore it with --trust only if you trust where it comes from, or with --data-only for its plain data.');
  return lines.join('\n');
}
