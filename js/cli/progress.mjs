// A progress line on stderr for any step that takes longer than a second, and the per-phase
// timings run/restore report. Quick steps print nothing, so scripted use stays quiet.
//
//   const t = phase('starting Python (Pyodide)');   // silent for the first second
//   t.tick('group 3 of 10');                          // from synchronous work (see below)
//   ...; const ms = t.end();                          // "... done (2.41 s)" if it was slow
//
// Python code runs synchronously on Node's thread, so the timer cannot fire while a long
// snapshot or cell runs: such work calls tick() itself (the snapshot's progress callback
// does), and end() still prints the line for any step that took over a second.
import { fmtMs } from '../shared/report.mjs';

const SHOW_AFTER_MS = 1000;
const TICK_MS = 250;

export function phase(label, { stream = process.stderr } = {}) {
  const start = performance.now();
  const tty = !!stream.isTTY;
  let shown = false;
  let ticker = null;
  let detail = '';
  const draw = () => {
    const text = `elastic-lite: ${label}...${detail ? ` ${detail}` : ''} ${fmtMs(performance.now() - start)}`;
    if (tty) stream.write(`\r\x1b[K${text}`);
    else if (!shown) stream.write(`elastic-lite: ${label}...\n`);
    shown = true;
  };
  const timer = setTimeout(() => {
    draw();
    if (tty) ticker = setInterval(draw, TICK_MS);
    if (ticker) ticker.unref();
  }, SHOW_AFTER_MS);
  timer.unref();
  return {
    /** Progress from synchronous work: shown once the step has taken over a second. */
    tick(text = '') {
      detail = text;
      if (performance.now() - start >= SHOW_AFTER_MS && (tty || !shown)) draw();
    },
    /** Stops the line; returns the elapsed milliseconds. */
    end(outcome = 'done') {
      clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      const ms = performance.now() - start;
      if (shown || ms >= SHOW_AFTER_MS) {
        const text = `elastic-lite: ${label}: ${outcome} (${fmtMs(ms)})`;
        stream.write(tty ? `\r\x1b[K${text}\n` : `${text}\n`);
      }
      return ms;
    },
  };
}

/** Runs fn(phase) inside a phase; records the elapsed ms in timings[key]. */
export async function timed(timings, key, label, fn) {
  const p = phase(label);
  try {
    const result = await fn(p);
    timings[key] = p.end();
    return result;
  } catch (err) {
    timings[key] = p.end('failed');
    throw err;
  }
}
