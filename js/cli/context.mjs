// What every command gets: its parsed options, the store, and output helpers that respect
// --json (machine-readable stdout; human text only in non-JSON mode; warnings on stderr).
import fs from 'node:fs';
import path from 'node:path';
import { DirectoryStore, nameToStem } from '../store/directory.mjs';
import { CliError, EXIT, usageError } from './errors.mjs';
import { notFound, shownText } from '../shared/report.mjs';

export const DEFAULT_STORE = '.elastic-lite';

/** Whether this run already printed its JSON document (so an error does not print a second). */
export const jsonState = { emitted: false };

/**
 * A --store DIR that can never work (it is a file, or lies under one) is a command-line
 * mistake: one sentence, exit 2, before anything else happens. A DIR that does not exist yet
 * is fine (the store creates it on the first save).
 */
export function checkStoreDir(dir, given) {
  for (let p = dir; ; p = path.dirname(p)) {
    let st = null;
    try { st = fs.statSync(p); } catch (err) {
      // ENOTDIR: something above is a file; the loop reaches it and says so
      if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') {
        throw new CliError(`--store ${given}: cannot use ${p} (${err.code ?? err.message}).`, EXIT.USAGE);
      }
    }
    if (st) {
      if (st.isDirectory()) return;
      throw new CliError(p === dir
        ? `--store ${given} is a file, not a directory; pass --store DIR with a directory.`
        : `--store ${given} cannot be created: ${p} is a file, not a directory.`, EXIT.USAGE);
    }
    if (path.dirname(p) === p) return;
  }
}

export function makeContext(values, positionals, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const storeDir = path.resolve(values.store ?? DEFAULT_STORE);
  let store = null;
  return {
    values,
    positionals,
    json: !!values.json,
    storeDir,
    /** The DirectoryStore of --store, created on first use (options: DirectoryStore's). */
    store(options) {
      if (!store) {
        checkStoreDir(storeDir, values.store ?? DEFAULT_STORE);
        store = new DirectoryStore(storeDir, options);
      }
      return store;
    },
    /** What the store has to tell once (e.g. its signing key changed): plain sentences. */
    storeNotices() { return store?.takeNotices?.() ?? []; },
    /** Exit 3 for a name the store does not hold, in the kernel's words (report.mjs notFound). */
    missing(name) {
      return new CliError(`${notFound(name).message} in ${storeDir} (see: elastic-lite ls).`, EXIT.NOT_FOUND, { problem: notFound(name) });
    },
    /** A checkpoint name this store can hold, else exit 2 with the store's reason. */
    checkName(name) {
      try {
        nameToStem(name);
      } catch (err) {
        throw usageError(err.message);
      }
      return name;
    },
    /** Human-readable output (suppressed under --json). */
    say(text = '') { if (!values.json) stdout.write(text.endsWith('\n') ? text : `${text}\n`); },
    /** The one JSON document of a --json run. */
    emit(obj) {
      if (!values.json) return;
      stdout.write(`${JSON.stringify(obj, null, 2)}\n`);
      jsonState.emitted = true;
    },
    /**
     * A command that failed with `report` (host schema): under --json the report is the one
     * document and `line` goes to stderr; else `line` is the error. Returns or throws `exitCode`.
     */
    failWith(report, exitCode, line) {
      this.emit(report);
      if (!values.json) throw new CliError(line, exitCode);
      stderr.write(`elastic-lite: ${shownText(line)}\n`);
      return exitCode;
    },
    /** A warning on stderr, in one line (names in it from a file are shown escaped). */
    warn(text) { stderr.write(`elastic-lite: warning: ${shownText(text)}\n`); },
    stdout,
    stderr,
  };
}
