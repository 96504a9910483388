// What every command gets: its parsed options, the store, and output helpers that respect
// --json (machine-readable stdout; human text only in non-JSON mode; warnings on stderr).
import path from 'node:path';
import { DirectoryStore } from '../store/directory.mjs';

export const DEFAULT_STORE = '.elastic-lite';

/** Whether this run already printed its JSON document (so an error does not print a second). */
export const jsonState = { emitted: false };

export function makeContext(values, positionals, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const storeDir = path.resolve(values.store ?? DEFAULT_STORE);
  let store = null;
  return {
    values,
    positionals,
    json: !!values.json,
    storeDir,
    /** The DirectoryStore of --store, created on first use. */
    store() {
      store ??= new DirectoryStore(storeDir);
      return store;
    },
    /** Human-readable output (suppressed under --json). */
    say(text = '') { if (!values.json) stdout.write(text.endsWith('\n') ? text : `${text}\n`); },
    /** The one JSON document of a --json run. */
    emit(obj) {
      if (!values.json) return;
      stdout.write(`${JSON.stringify(obj, null, 2)}\n`);
      jsonState.emitted = true;
    },
    warn(text) { stderr.write(`elastic-lite: warning: ${text}\n`); },
    stdout,
    stderr,
  };
}
