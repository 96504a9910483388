// Helpers of the package tests (tests/pack): where the checkout and dist/ are, running a
// command with its output kept for the failure message, and temporary folders that are
// always removed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = path.join(ROOT, 'dist');
export const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
export const VENV_PYTHON = path.join(ROOT, '.venv', 'bin', 'python');

/** The one file of dist/ matching `prefix*suffix` (fails clearly when `npm run pack` did not run). */
export function distFile(prefix, suffix) {
  const found = fs.existsSync(DIST) ? fs.readdirSync(DIST).filter((f) => f.startsWith(prefix) && f.endsWith(suffix)) : [];
  if (found.length !== 1) {
    throw new Error(`expected one dist/${prefix}*${suffix}, found ${JSON.stringify(found)}: run \`npm run pack\``);
  }
  return path.join(DIST, found[0]);
}

/** Runs a command; returns { status, stdout, stderr }; throws with the output unless `allowFail`. */
export function run(cmd, args, { cwd, env, allowFail = false, input, timeout = 600_000 } = {}) {
  const r = spawnSync(cmd, args, { cwd, env: env ?? process.env, input, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  if (r.status !== 0 && !allowFail) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}\n--- stdout ---\n${r.stdout.slice(-4000)}\n--- stderr ---\n${r.stderr.slice(-4000)}`);
  }
  return r;
}

/**
 * A fresh virtual environment at `venv` for pip installs from local wheels only (no index, no
 * pip configuration of this machine; `extraEnv` added): { python, bin, env, pip(...args) }.
 * It is made without a pip of its own (ensurepip copies and compiles pip into every venv, ~6 s
 * of CPU each): pip is the project's .venv's (`pip --python`), the same pip `python3 -m venv`
 * would copy in, installing into this venv as if run from it.
 */
export function freshVenv(venv, extraEnv = {}) {
  run('python3', ['-m', 'venv', '--without-pip', venv]);
  const bin = path.join(venv, 'bin');
  const python = path.join(bin, 'python');
  const { ELASTIC_LITE_NATIVE_LIB: _lib, PYTHONPATH: _path, ...clean } = process.env;
  const env = { ...clean, PIP_CONFIG_FILE: '/dev/null', PIP_FIND_LINKS: '', PIP_NO_INDEX: '1', ...extraEnv };
  return {
    python, bin, env,
    /** pip install ARGS into the venv, offline (give --find-links); --no-compile: these
     * venvs run a few commands once, so Python compiles only the modules they import, when
     * they import them, instead of pip compiling every file installed. */
    pip(...args) {
      run(VENV_PYTHON, ['-m', 'pip', '--python', python, 'install', '--quiet', '--no-index', '--no-compile',
        '--disable-pip-version-check', ...args],
        { cwd: path.dirname(venv), env });
    },
  };
}

/** A fresh temporary folder for one test, removed when the test ends (passed or failed). */
export function tempDir(t, prefix = 'elastic-lite-pack-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A file inside a zip (wheel) or a .tgz, as text, read with Python's standard library. */
export function archiveText(archive, member) {
  const code = archive.endsWith('.tgz')
    ? 'import sys,tarfile; print(tarfile.open(sys.argv[1]).extractfile(sys.argv[2]).read().decode(), end="")'
    : 'import sys,zipfile; print(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode(), end="")';
  return run('python3', ['-c', code, archive, member]).stdout;
}

/** Names of the members of a zip (wheel) or a .tgz. */
export function archiveNames(archive) {
  const code = archive.endsWith('.tgz')
    ? 'import sys,tarfile; print("\\n".join(tarfile.open(sys.argv[1]).getnames()))'
    : 'import sys,zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))';
  return run('python3', ['-c', code, archive]).stdout.trim().split('\n');
}
