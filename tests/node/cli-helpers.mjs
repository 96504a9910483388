// Helpers for the CLI tests: spawn the real CLI (node js/cli/elastic-lite.mjs) in a temporary
// working directory (removed when the test file's process ends) and collect exit code, stdout
// and stderr.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tempdir.mjs';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = path.join(ROOT, 'js', 'cli', 'elastic-lite.mjs');
export const NOTEBOOKS = path.join(ROOT, 'tests', 'notebooks');

// Each CLI run is a short process that starts a Pyodide: V8's optimizing tier (TurboFan) would
// compile the interpreter's hot functions in the background for much of its CPU time, and the
// process exits before that code pays off. So the CLI runs here with WebAssembly on V8's
// baseline compiler (Liftoff) alone: the same program and the same results for about half the
// CPU per run (inspect 1.7 -> 0.9 s). Code that runs long (moving 100 MiB in Python) is slower
// on Liftoff: a run whose outcome depends on its own timings passes { tierUp: true }.
// EL_CLI_TIER_UP=1 runs every one as V8 does by default (an A/B run).
const TIER_UP = process.env.EL_CLI_TIER_UP === '1';

export async function tempWorkdir(prefix = 'el-cli-') {
  return tempDir(prefix);
}

/**
 * Runs the CLI; resolves { code, stdout, stderr } (never rejects on a non-zero exit). `user`:
 * { uid, gid } to run it as another user (the test runs as root); `tierUp`: V8's optimizing
 * tier on (see above).
 */
export function runCli(args, { cwd, env = {}, timeoutMs = 120_000, user, tierUp = TIER_UP } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(tierUp ? [] : ['--liftoff-only']), CLI, ...args], {
      cwd, env: { ...process.env, ELASTIC_LITE_DEBUG: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...user,
    });
    let stdout = ''; let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The lines of stderr that are not progress or warning lines. */
export function messageLines(stderr) {
  return stderr.trimEnd().split('\n').filter((l) => !/^elastic-lite: (warning|.*\.\.\.|.*: (done|failed) \()/.test(l));
}

/** The stderr of a failed run is exactly one "elastic-lite: ..." line (no stack trace). */
export function oneLineError(stderr) {
  const lines = messageLines(stderr);
  return lines.length === 1 && lines[0].startsWith('elastic-lite: ') && !/\n\s+at /.test(stderr) ? lines[0] : null;
}
