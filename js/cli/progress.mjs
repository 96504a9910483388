// A progress line on stderr for any step that takes longer than a second, and the per-phase
// timings run/restore report. Quick steps print nothing, so scripted use stays quiet.
//
//   const t = phase('starting Python (Pyodide)');   // silent for the first second
//   ...; const ms = t.end();                          // "... done (2.41 s)" if it was shown
import { fmtMs } from './format.mjs';

const SHOW_AFTER_MS = 1000;
const TICK_MS = 250;

export function phase(label, { stream = process.stderr } = {}) {
  const start = performance.now();
  const tty = !!stream.isTTY;
  let shown = false;
  let ticker = null;
  const draw = () => {
    const text = `elastic-lite: ${label}... ${fmtMs(performance.now() - start)}`;
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
    /** Stops the line; returns the elapsed milliseconds. */
    end(outcome = 'done') {
      clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      const ms = performance.now() - start;
      if (shown) {
        const text = `elastic-lite: ${label}: ${outcome} (${fmtMs(ms)})`;
        stream.write(tty ? `\r\x1b[K${text}\n` : `${text}\n`);
      }
      return ms;
    },
  };
}

/** Runs fn inside a phase; records the elapsed ms in timings[key]. */
export async function timed(timings, key, label, fn) {
  const p = phase(label);
  try {
    const result = await fn();
    timings[key] = p.end();
    return result;
  } catch (err) {
    timings[key] = p.end('failed');
    throw err;
  }
}
