// Exit codes and the one error type the CLI prints without a stack trace.
//
// Every failure a user can cause or fix (bad arguments, a damaged file, a missing checkpoint,
// a cell that raised) is a CliError: the CLI prints its one-line message and exits with its
// code. Anything else is a bug or an environment problem; the CLI prints its message too, and
// the stack only with --debug or ELASTIC_LITE_DEBUG=1.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

export const EXIT = Object.freeze({
  OK: 0,
  FAILED: 1,     // the checkpoint is damaged / not a checkpoint, a cell or -c CODE raised,
                 // restore failed entirely, or another process is saving the same name
  USAGE: 2,      // bad command line, or a --store DIR that cannot be written
  NOT_FOUND: 3,  // no such checkpoint or file
  ENV: 4,        // environment / internal problem (build missing, disk error, a bug)
});

export class CliError extends Error {
  constructor(message, exitCode = EXIT.FAILED, { details, problem } = {}) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.details = details; // extra lines (e.g. a traceback) printed after the message
    this.problem = problem; // the host report's problem it is, when the kernel has words for it
  }
}

export const usageError = (message) => new CliError(message, EXIT.USAGE);

/**
 * What a person does when Elastic Lite's own files (the C core, the wheels) are missing or
 * broken: in a source checkout, build them; anywhere else (the npm package), reinstall.
 */
export function repairHint() {
  let checkout = false;
  try {
    checkout = fs.existsSync(fileURLToPath(new URL('../../scripts/build.sh', import.meta.url)));
  } catch { /* not readable from here: an installed package */ }
  return checkout ? 'in this source checkout, run: npm run build' : 'reinstall the elastic-lite package';
}
