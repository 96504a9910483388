// `elastic-lite restore NAME|FILE [-c CODE]`: a fresh Pyodide, the checkpoint read and
// validated (before anything is unpickled), the session restored into __main__, then CODE run
// exactly as the notebook's next cell would run it (stdout printed, the value of a final
// expression shown like Out[n]). Damaged records are reported by variable name while the rest
// restore. Exit 1 if nothing could be restored or CODE raised. Records that would call
// deny-listed globals (os.system, builtins.eval, ...; js/cli/trust.mjs) are refused unless --trust.
//
// With -c, stdout carries only CODE's output (so `x=$(elastic-lite restore NAME -c ...)`
// works); the restore summary and timings go to stderr.
import { CliError, EXIT, usageError } from '../errors.mjs';
import { fmtMs, table } from '../format.mjs';
import { resolveCheckpoint, inspectBytes, firstProblem, problemLine } from '../checkpoint-file.mjs';
import { startSession } from '../pyodide-session.mjs';
import { timed } from '../progress.mjs';

export default {
  summary: 'restore a checkpoint into a fresh Pyodide and run code in it',
  usage: 'restore NAME|FILE [-c CODE] [--trust]',
  description: 'Exit status 1 when nothing could be restored or CODE raised (its traceback is printed).\n' +
    'Damaged records are reported by variable name; the others are restored.\n' +
    'Records that would call code-running globals (os.system, eval, ...; see inspect) are refused\n' +
    'unless --trust. Not a sandbox: trust only checkpoints you made yourself.',
  options: {
    code: { type: 'string', short: 'c', help: 'Python to run in the restored namespace, as the next cell' },
    trust: { type: 'boolean', help: 'also load records that would call code-running globals (only for your own checkpoints)' },
  },
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw usageError('restore needs one checkpoint NAME (or FILE).');
    const timings = {};
    const src = await timed(timings, 'store_read_ms', 'reading the checkpoint', () => resolveCheckpoint(ctx, ctx.positionals[0]));
    const check = await timed(timings, 'validate_ms', 'validating (CRC32C, pickle streams)', () => inspectBytes(src.bytes));
    const problem = firstProblem(check);
    const usable = (check.records ?? []).some((r) => r.ok && !r.names.includes('__elastic_lite_manifest__'));
    if (problem && !usable) {
      throw new CliError(`${problemLine(src.label, problem)}; nothing can be restored from it.`, EXIT.FAILED);
    }

    const session = await timed(timings, 'interpreter_start_ms', 'starting Python (Pyodide)', () => startSession({ echo: !ctx.json, store: ctx.store() }));
    let report;
    try {
      report = await timed(timings, 'unpickle_ms', 'restoring variables', () => session.load(src.bytes, { trust: !!ctx.values.trust }));
    } catch (err) {
      const msg = String(err.message).trim().split('\n').filter(Boolean).pop() ?? 'restore failed';
      throw new CliError(`${src.label}: restore failed: ${msg.replace(/^[\w.]*(Error|Exception): /, '')}`, EXIT.FAILED);
    }
    // load_snapshot validates again (it never trusts its caller), so "unpickle" includes a
    // second, fast validation pass.
    const code = ctx.values.code;
    // Where the human summary goes: stdout normally, stderr when stdout belongs to CODE.
    const human = (text) => {
      if (ctx.json) return;
      (code != null ? ctx.stderr : ctx.stdout).write(`${text}\n`);
    };
    human(summary(src.label, report, problem ? problemLine(src.label, problem) : null));
    human(`Timings: interpreter start ${fmtMs(timings.interpreter_start_ms)}, store read ${fmtMs(timings.store_read_ms)}, ` +
      `validate ${fmtMs(timings.validate_ms)}, unpickle ${fmtMs(timings.unpickle_ms)}`);
    for (const w of report.warnings ?? []) ctx.warn(w);

    const nothing = report.restored.length === 0 && (report.failed.length > 0 || (check.records ?? []).length > 1);
    let cell = null;
    if (code != null && !nothing) {
      cell = await timed(timings, 'code_ms', 'running CODE', () => session.runCell(code, 'restore -c'));
      if (cell.value != null && !ctx.json) ctx.stdout.write(`${cell.value}\n`);
    }
    ctx.emit({
      ok: !nothing && (cell == null || cell.ok), source: src.label, restore: report,
      problem: problem && { ...problem, line: problemLine(src.label, problem) }, code: cell, timings,
    });
    if (nothing) throw new CliError(`${src.label}: nothing could be restored (see the reasons above).`, EXIT.FAILED);
    if (cell && !cell.ok) throw new CliError('CODE raised an exception in the restored session.', EXIT.FAILED, { details: cell.traceback });
    return EXIT.OK;
  },
};

function summary(label, report, damage) {
  const lines = [`Restored ${report.restored.length} variable${report.restored.length === 1 ? '' : 's'} from ${label}` +
    (report.restored.length ? `: ${report.restored.join(', ')}` : '.')];
  const imports = (report.modules ?? []).filter((m) => m.ok).map((m) => m.name);
  if (imports.length) lines.push(`Re-imported: ${imports.join(', ')}`);
  const bad = [
    ...report.failed.map((f) => [f.names.join(', '), f.reason]),
    ...(report.modules ?? []).filter((m) => !m.ok).map((m) => [m.name, `import ${m.module} failed: ${m.error}`]),
  ];
  if (damage) lines.push(`DAMAGED: ${damage}`);
  if (bad.length) lines.push('NOT restored:', table([{ title: 'VARIABLE' }, { title: 'REASON' }], bad));
  if (report.skipped?.length) {
    lines.push('Not in the checkpoint (skipped when it was taken):',
      table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'REASON' }], report.skipped.map((s) => [s.name, s.type, s.reason])));
  }
  return lines.join('\n');
}
