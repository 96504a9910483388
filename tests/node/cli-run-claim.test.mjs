// `run` checks that its checkpoint can be saved BEFORE it runs the notebook: a store it cannot
// write, or a name another process is saving right now, fails in one line with nothing run
// (the notebook's cell would print "cell ran"). No Python is started in either case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { runCli, tempWorkdir, oneLineError } from './cli-helpers.mjs';

async function notebookIn(dir) {
  await fs.writeFile(path.join(dir, 'nb.ipynb'), JSON.stringify({
    nbformat: 4, metadata: {},
    cells: [{ cell_type: 'code', metadata: {}, source: 'x = 1\nprint("cell ran")', outputs: [], execution_count: null }],
  }));
}

test('run into a store it cannot write: exit 2, nothing run', async () => {
  const cwd = await tempWorkdir();
  await notebookIn(cwd);
  const dir = path.join(cwd, 'store');
  await new DirectoryStore(dir).put('older', new Uint8Array(10), {});
  // read-only for the user running the CLI: root writes anywhere, so run it as nobody then
  const user = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
  await fs.chmod(cwd, 0o755);
  for (const d of ['', 'entries', 'records', 'locks']) await fs.chmod(path.join(dir, d), 0o555);
  const r = await runCli(['run', 'nb.ipynb', '--store', 'store'], { cwd, user, timeoutMs: 60_000 });
  for (const d of ['', 'entries', 'records', 'locks']) await fs.chmod(path.join(dir, d), 0o755);
  assert.equal(r.code, 2, r.stderr);
  assert.doesNotMatch(r.stdout, /cell ran/);
  assert.doesNotMatch(r.stderr, /Pyodide/);
  assert.match(oneLineError(r.stderr), /^elastic-lite: cannot save checkpoints in .*store \(EACCES: .*\); nothing was run\. Pass --store DIR with a folder you can write\.$/);
});

test('run to a name another process is saving: exit 1 at once, nothing run, the other save untouched', async () => {
  const cwd = await tempWorkdir();
  await notebookIn(cwd);
  const store = new DirectoryStore(path.join(cwd, '.elastic-lite'));
  const held = await store.lock('nb');
  try {
    const r = await runCli(['run', 'nb.ipynb'], { cwd, timeoutMs: 50_000 });
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stdout, /cell ran/);
    assert.doesNotMatch(r.stderr, /Pyodide/);
    assert.match(oneLineError(r.stderr), /^elastic-lite: checkpoint "nb" is being saved by another process right now; nothing was run\./);
  } finally {
    await held.release();
  }
  assert.deepEqual(await store.list(), []);
});
