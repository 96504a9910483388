// `elastic-lite run NOTEBOOK.ipynb [--name NAME]`: execute a notebook's code cells in a fresh
// Pyodide, in order, each through elastic_lite.host.run_cell, stopping at the first cell that
// raises (its number and traceback are printed, nothing is saved); then host.checkpoint the
// session into the store and print what was saved (variable, type, serializer, size, time),
// what was skipped and why, what a restore will recompute by re-running which cells (the
// cells are recorded as they run), and how long each phase took.
import path from 'node:path';
import { CliError, EXIT, usageError } from '../errors.mjs';
import { table } from '../format.mjs';
import { fmtBytes, fmtMs, hostReport, problem, problemLine, quoted, replayNotes, shownText } from '../../shared/report.mjs';
import { probeWritable } from '../files.mjs';
import { readNotebook } from '../notebook.mjs';
import { startSession } from '../pyodide-session.mjs';
import { RETENTION_OPTIONS, retentionFrom } from '../retention.mjs';
import { phase, timed } from '../progress.mjs';

export default {
  summary: 'run a notebook in a fresh Pyodide, then checkpoint it',
  usage: 'run NOTEBOOK.ipynb [--name NAME] [--history] [--keep-last N] [--keep-hourly N] [--max-bytes SIZE]',
  description: 'Code cells run in order as Python with top-level await. IPython lines: %time/%timeit/%%time run\n' +
    'their statement (untimed); other magics and !shell lines are skipped with a warning naming the line.\n' +
    'The first cell that raises stops the run: exit status 1, nothing more is saved.\n' +
    'With --history, a checkpoint "NAME [N]" follows each cell N (only what changed is written): the\n' +
    'notebook\'s history, listed by ls with the cell each point followed.',
  options: {
    name: { type: 'string', help: 'checkpoint name (default: the notebook file name without .ipynb)' },
    'no-replay': { type: 'boolean', help: 'plan no replay: what cannot be saved is skipped, not recomputed on restore' },
    'recompute-large': { type: 'boolean', help: 'do not store large variables that deterministic cells recompute faster (cost model)' },
    history: { type: 'boolean', help: 'also checkpoint after each cell, as "NAME [N]"' },
    ...RETENTION_OPTIONS,
  },
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw usageError('run needs one NOTEBOOK.ipynb.');
    const file = ctx.positionals[0];
    const notebook = path.basename(file);
    const name = ctx.values.name ?? notebook.replace(/\.ipynb$/i, '');
    const retention = retentionFrom(ctx.values);
    ctx.checkName(name); // a name this store cannot hold fails now, not after seconds of Pyodide
    const store = ctx.store(retention ? { retention } : undefined);
    const nb = await readNotebook(file);
    const claim = await claimName(ctx, store, name); // nothing runs unless it can be saved
    try {
      return await runAndSave(ctx, { store, file, notebook, name, nb, claim });
    } finally {
      await claim.release();
    }
  },
};

/**
 * Before anything runs: the store can be written, and no other process is saving NAME. The
 * name's writer lock is taken without waiting and held while the notebook runs (released for
 * the checkpoint itself, which takes it again), so a second `run` to the same name is told at
 * once instead of silently replacing the first one's checkpoint minutes later.
 */
async function claimName(ctx, store, name) {
  let held = null;
  try {
    held = await store.lock(name, { timeoutMs: 0 });
    for (const sub of ['entries', 'records']) await probeWritable(path.join(store.dir, sub));
    return held;
  } catch (err) {
    await held?.release();
    if (err.code === 'busy') {
      throw new CliError(`checkpoint ${quoted(name)} is being saved by another process right now; nothing was run. ` +
        `Wait for it to finish, or pass --name with another name. (${err.message})`, EXIT.FAILED);
    }
    if (['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST'].includes(err.code)) {
      throw new CliError(`cannot save checkpoints in ${ctx.storeDir} (${err.code}: ${err.syscall ?? 'write'} ` +
        `${err.path ?? ctx.storeDir}); nothing was run. Pass --store DIR with a folder you can write.`, EXIT.USAGE);
    }
    throw err;
  }
}

/** The notebook's cells in a fresh Pyodide, then the checkpoint (the claim released for it). */
async function runAndSave(ctx, { store, file, notebook, name, nb, claim }) {
  const timings = {};
  const session = await timed(timings, 'interpreter_start_ms', 'starting Python (Pyodide)', () => startSession({ echo: !ctx.json, store }));

  const cells = [];
  timings.execute_ms = 0;
  for (const cell of nb.cells) {
    const label = `cell ${cell.number}`;
    const running = phase(`running ${label} of ${notebook}`);
    const r = await session.runCell(cell.source, label, cell.number);
    const ms = running.end(r.ok ? 'done' : 'failed');
    timings.execute_ms += ms;
    for (const w of r.warnings) ctx.warn(w);
    cells.push({ number: cell.number, ok: r.ok, ms, output: r.output, value: r.value, warnings: r.warnings, traceback: r.traceback });
    if (r.value != null && !ctx.json) ctx.stdout.write(`Out[${cell.number}]: ${r.value}\n`);
    if (r.ok && ctx.values.history) {
      cells.at(-1).checkpoint = await historyPoint(ctx, session, name, notebook, cell, timings);
    }
    if (!r.ok) {
      const line = `${notebook}: cell ${cell.number} raised an exception; stopped there, ` +
        `${ctx.values.history ? 'the history points before it are saved, nothing after' : 'nothing was saved'}.`;
      ctx.emit(hostReport('checkpoint', { ok: false, problems: [problem('failed', line, { code: 'exception' })], name,
        store: ctx.storeDir, notebook: path.resolve(file), failedCell: cell.number, cells, timings }));
      throw new CliError(line, EXIT.FAILED, { details: r.traceback });
    }
  }

  await claim.release(); // the checkpoint takes the name's lock itself
  const p = phase('serializing the session');
  const report = await session.call('checkpoint', {
    name, notebook, replay: !ctx.values['no-replay'], recompute_large: !!ctx.values['recompute-large'],
  }, {
    progress: (ev) => p.tick(ev.phase === 'store' ? `writing checkpoint ${quoted(name)}`
      : `group ${Math.min(ev.done + 1, ev.total)} of ${ev.total}`),
  });
  p.end(report.ok ? 'done' : 'failed');
  Object.assign(timings, report.timings);
  ctx.emit({ ...report, store: ctx.storeDir, notebook: path.resolve(file), cells: cells.map(({ traceback, ...c }) => c), timings });
  if (!report.ok) throw new CliError(problemLine(`checkpoint ${quoted(name)}`, report.problems[0]), EXIT.FAILED);
  const { variables, skipped } = report;
  const recompute = report.replay?.recompute ?? [];
  ctx.say(`\nCheckpoint ${quoted(name)} saved to ${ctx.storeDir} (${fmtBytes(report.size)}, ` +
    `${variables.length} variables, ${skipped.length} skipped` +
    `${recompute.length ? `, ${recompute.length} recomputed on restore` : ''}).\n`);
  ctx.say(variableTable(variables));
  if (skipped.length) {
    ctx.say('\nSkipped (not in the checkpoint):');
    ctx.say(table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'REASON' }],
      skipped.map((s) => [s.name, s.type, s.reason])));
  }
  if (recompute.length) {
    ctx.say('\nRecomputed on restore (not stored), by re-running the cells that made them:');
    ctx.say(table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'CELLS' }],
      recompute.map((r) => [r.name, r.type ?? '?', r.cells.map((c) => `[${c}]`).join(' ')])));
  }
  const notes = replayNotes(report.replay);
  if (notes.length) ctx.say(`\nReplay:\n${notes.map((n) => `  ${shownText(`${n.name ? `${n.name}: ` : ''}${n.text}`)}`).join('\n')}`);
  if (report.walk?.truncated) ctx.say(`\nNote: ${shownText(report.walk.truncated)}`);
  ctx.say(`\nTimings: interpreter start ${fmtMs(timings.interpreter_start_ms)}, execute ${fmtMs(timings.execute_ms)}, ` +
    `serialize ${fmtMs(timings.serialize_ms)}, store write ${fmtMs(timings.store_ms)}`);
  return EXIT.OK;
}

/** The checkpoint after a cell (--history), named by the kernel ("NAME [N]"): what it wrote, in one line. */
async function historyPoint(ctx, session, name, notebook, cell, timings) {
  const report = await session.call('checkpoint', {
    series: name, notebook, auto: true, cell: { executionCount: cell.number, firstLine: cell.source, timeMs: Date.now() },
    replay: !ctx.values['no-replay'],
  });
  timings.history_ms = (timings.history_ms ?? 0) + (report.timings?.total_ms ?? 0);
  if (!report.ok) throw new CliError(problemLine(`checkpoint ${quoted(report.name)}`, report.problems[0]), EXIT.FAILED);
  const reuse = report.reuse;
  const kept = reuse?.reused ? `, ${reuse.reused} of ${reuse.reused + reuse.written} records unchanged` : '';
  ctx.say(`  checkpoint ${quoted(report.name)} (${fmtBytes(report.size)}${kept}, ${fmtMs(report.timings.total_ms)})`);
  return { name: report.name, size: report.size, reuse, ms: report.timings.total_ms };
}

/** One row per variable; variables saved in one record (they share objects) are marked. */
export function variableTable(variables) {
  const firstOf = new Map();
  const rows = variables.map((v) => {
    const notes = [];
    if (firstOf.has(v.record)) notes.push(`same record as ${firstOf.get(v.record)}`);
    else {
      firstOf.set(v.record, v.name);
      if (v.fallback) notes.push(`fell back to ${v.serializer}: ${v.fallback}`);
      if (v.note) notes.push(v.note);
    }
    return [v.name, v.type ?? '?', v.serializer, v.bytes == null ? '' : fmtBytes(v.bytes), v.ms == null ? '' : fmtMs(v.ms), notes.join('; ')];
  });
  return table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'SERIALIZER' }, { title: 'SIZE', align: 'right' },
    { title: 'TIME', align: 'right' }, { title: 'NOTE' }], rows);
}
