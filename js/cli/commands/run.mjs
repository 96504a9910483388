// `elastic-lite run NOTEBOOK.ipynb [--name NAME]`: execute a notebook's code cells in a fresh
// Pyodide, in order, stopping at the first cell that raises (its number and traceback are
// printed, nothing is saved); then checkpoint the session into the store and print what was
// saved (variable, type, serializer, size, time), what was skipped and why, and how long each
// phase took.
import path from 'node:path';
import { CliError, EXIT, usageError } from '../errors.mjs';
import { fmtBytes, fmtMs, table } from '../format.mjs';
import { readNotebook } from '../notebook.mjs';
import { startSession } from '../pyodide-session.mjs';
import { DirectoryStore, nameToStem } from '../../store/directory.mjs';
import { phase, timed } from '../progress.mjs';

export default {
  summary: 'run a notebook in a fresh Pyodide, then checkpoint it',
  usage: 'run NOTEBOOK.ipynb [--name NAME]',
  description: 'Code cells run in order as plain Python (IPython %magics and !shell lines are skipped with a\n' +
    'warning). The first cell that raises stops the run: exit status 1, nothing is saved.',
  options: {
    name: { type: 'string', help: 'checkpoint name (default: the notebook file name without .ipynb)' },
    'keep-last': { type: 'string', arg: 'n', help: 'keep only the newest N checkpoints of this notebook' },
  },
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw usageError('run needs one NOTEBOOK.ipynb.');
    const file = ctx.positionals[0];
    const notebook = path.basename(file);
    const name = ctx.values.name ?? notebook.replace(/\.ipynb$/i, '');
    const keepLast = ctx.values['keep-last'] == null ? undefined : Number(ctx.values['keep-last']);
    if (keepLast !== undefined && !(Number.isInteger(keepLast) && keepLast >= 1)) throw usageError('--keep-last needs a whole number >= 1.');
    nameToStem(name); // a bad name fails now, not after seconds of Pyodide
    const store = new DirectoryStore(ctx.storeDir, { keepLast });
    const nb = await readNotebook(file);
    for (const w of nb.warnings) ctx.warn(w);

    const timings = {};
    const session = await timed(timings, 'interpreter_start_ms', 'starting Python (Pyodide)', () => startSession({ echo: !ctx.json, store }));

    const cells = [];
    timings.execute_ms = 0;
    for (const cell of nb.cells) {
      const label = `cell ${cell.number}`;
      const running = phase(`running ${label} of ${notebook}`);
      const r = await session.runCell(cell.source, label);
      const ms = running.end(r.ok ? 'done' : 'failed');
      timings.execute_ms += ms;
      cells.push({ number: cell.number, ok: r.ok, ms, output: r.output, value: r.value, traceback: r.traceback });
      if (r.value != null && !ctx.json) ctx.stdout.write(`Out[${cell.number}]: ${r.value}\n`);
      if (!r.ok) {
        ctx.emit({ ok: false, notebook: path.resolve(file), failedCell: cell.number, cells, timings });
        throw new CliError(`${notebook}: cell ${cell.number} raised an exception; stopped there, nothing was saved.`,
          EXIT.FAILED, { details: r.traceback });
      }
    }

    const snap = await timed(timings, 'serialize_ms', 'serializing the session',
      (p) => session.snapshot((done, total) => p.tick(`group ${Math.min(done + 1, total)} of ${total}`)));
    const { groups, skipped } = snap.report;
    const variables = groups.flatMap((g) => g.names);
    const meta = {
      notebook, notebookPath: path.resolve(file), createdMs: Date.now(), size: snap.bytes.byteLength,
      variables: variables.length, names: variables,
      skipped: skipped.map((s) => ({ name: s.name, type: s.type, reason: s.reason })),
    };
    await timed(timings, 'store_write_ms', `writing checkpoint "${name}"`, () => store.put(name, snap.bytes, meta));

    ctx.emit({
      ok: true, name, store: ctx.storeDir, notebook: path.resolve(file), size: snap.bytes.byteLength,
      cells: cells.map(({ traceback, ...c }) => c), groups, skipped, walk: snap.report.walk ?? null, timings,
    });
    ctx.say(`\nCheckpoint "${name}" saved to ${ctx.storeDir} (${fmtBytes(snap.bytes.byteLength)}, ` +
      `${variables.length} variables, ${skipped.length} skipped).\n`);
    ctx.say(variableTable(groups));
    if (skipped.length) {
      ctx.say('\nSkipped (not in the checkpoint):');
      ctx.say(table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'REASON' }],
        skipped.map((s) => [s.name, s.type, s.reason])));
    }
    if (snap.report.walk?.truncated) ctx.say(`\nNote: ${snap.report.walk.truncated}`);
    ctx.say(`\nTimings: interpreter start ${fmtMs(timings.interpreter_start_ms)}, execute ${fmtMs(timings.execute_ms)}, ` +
      `serialize ${fmtMs(timings.serialize_ms)}, store write ${fmtMs(timings.store_write_ms)}`);
    return EXIT.OK;
  },
};

/** One row per variable; variables saved in one record (they share objects) are marked. */
export function variableTable(groups) {
  const rows = [];
  for (const g of groups) {
    g.names.forEach((n, i) => {
      const notes = [];
      if (i > 0) notes.push(`same record as ${g.names[0]}`);
      else {
        if (g.fallback) notes.push(`fell back to ${g.serializer}: ${g.fallback}`);
        if (g.note) notes.push(g.note);
      }
      rows.push([n, g.types[i] ?? '?', g.serializer, i === 0 ? fmtBytes(g.bytes) : '', i === 0 ? fmtMs(g.ms) : '', notes.join('; ')]);
    });
  }
  return table([{ title: 'VARIABLE' }, { title: 'TYPE' }, { title: 'SERIALIZER' }, { title: 'SIZE', align: 'right' },
    { title: 'TIME', align: 'right' }, { title: 'NOTE' }], rows);
}
