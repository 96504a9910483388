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

export async function tempWorkdir(prefix = 'el-cli-') {
  return tempDir(prefix);
}

/**
 * Runs the CLI; resolves { code, stdout, stderr } (never rejects on a non-zero exit). `user`:
 * { uid, gid } to run it as another user (the test runs as root).
 */
export function runCli(args, { cwd, env = {}, timeoutMs = 120_000, user } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
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
