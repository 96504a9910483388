// DirectoryStore on a real temporary directory. Crashes are real: a child process is killed
// with SIGKILL in the middle of put().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { DirectoryStore, nameToStem, stemToName } from '../../js/store/directory.mjs';
import { storeContract, payload } from './store-contract.mjs';

const STORE_URL = new URL('../../js/store/directory.mjs', import.meta.url).href;
const tmpDirs = [];
async function tempDir() {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), 'el-store-'));
  tmpDirs.push(d);
  return d;
}
test.after(async () => { await Promise.all(tmpDirs.map((d) => fs.rm(d, { recursive: true, force: true }))); });

storeContract('DirectoryStore', async (opts) => new DirectoryStore(path.join(await tempDir(), 'store'), opts));

test('file layout: <stem>.elc holds exactly the checkpoint bytes, plus <stem>.meta.json', async () => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir);
  await store.put('my run', payload(1234, 1), { notebook: 'n.ipynb' });
  assert.deepEqual((await fs.readdir(dir)).sort(), ['my%20run.elc', 'my%20run.meta.json']);
  assert.deepEqual(new Uint8Array(await fs.readFile(path.join(dir, 'my%20run.elc'))), payload(1234, 1));
  const side = JSON.parse(await fs.readFile(path.join(dir, 'my%20run.meta.json'), 'utf8'));
  assert.equal(side.name, 'my run');
  assert.equal(side.meta.notebook, 'n.ipynb');
});

test('names cannot escape the directory and map one-to-one to file names', () => {
  for (const name of ['..', '.', '../x', 'a/b', 'a\\b', '/etc/passwd', '.hidden', 'ünï', '%41', 'A', 'a.b.c', '-']) {
    const stem = nameToStem(name);
    assert.match(stem, /^[A-Za-z0-9_%-][A-Za-z0-9_.%-]*$/, name);
    assert.ok(!stem.startsWith('.'));
    assert.equal(stemToName(stem), name);
  }
  assert.notEqual(nameToStem('%41'), nameToStem('A'));
  assert.equal(stemToName('.tmp-1-x'), null);
  assert.equal(stemToName('%zz'), null);
  assert.throws(() => nameToStem('é'.repeat(150)), /too long for a file name/);
});

test('files that are not checkpoints are ignored by list', async () => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir);
  await store.put('real', payload(10, 1), {});
  await fs.writeFile(path.join(dir, 'notes.txt'), 'hello');
  await fs.mkdir(path.join(dir, 'sub.elc'));
  assert.deepEqual((await store.list()).map((e) => e.name), ['real']);
});

test('a container copied in by hand is listed with metadata derived from the file', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, 'copied.elc'), payload(77, 2));
  const store = new DirectoryStore(dir);
  const [entry] = await store.list();
  assert.equal(entry.name, 'copied');
  assert.equal(entry.meta.size, 77);
  assert.equal(entry.meta.metadataMissing, true);
  assert.deepEqual((await store.get('copied')).bytes, payload(77, 2));
});

test('a store path that is a file gives a clear error', async () => {
  const file = path.join(await tempDir(), 'plain-file');
  await fs.writeFile(file, 'x');
  await assert.rejects(new DirectoryStore(file).list(), /is not a directory/);
});

/**
 * Runs put() in a child process that SIGKILLs itself at its `killAt`-th fs.rename call (1 =
 * after the container's temp file is written and fsynced, before its rename; 2 = after the
 * container's rename, before the metadata's).
 */
function putAndDie(dir, killAt) {
  const script = `
    import fs from 'node:fs/promises';
    import { DirectoryStore } from ${JSON.stringify(STORE_URL)};
    const rename = fs.rename;
    let calls = 0;
    fs.rename = async (...args) => {
      if (++calls === ${killAt}) process.kill(process.pid, 'SIGKILL');
      return rename(...args);
    };
    const bytes = new Uint8Array(200000).fill(0xab);
    await new DirectoryStore(${JSON.stringify(dir)}).put('nb', bytes, { notebook: 'new', createdMs: 2 });
    console.log('put finished');`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

test('killed between temp file and rename: the old checkpoint is whole, the temp file is swept', async () => {
  const dir = await tempDir();
  const old = payload(5000, 1);
  await new DirectoryStore(dir).put('nb', old, { notebook: 'old', createdMs: 1 });

  const r = putAndDie(dir, 1);
  assert.equal(r.signal, 'SIGKILL', r.stderr);
  assert.doesNotMatch(r.stdout, /put finished/);
  const leftovers = (await fs.readdir(dir)).filter((f) => f.startsWith('.tmp-'));
  assert.equal(leftovers.length, 2, 'both temp files were written before the kill');

  const store = new DirectoryStore(dir);
  const got = await store.get('nb');
  assert.deepEqual(got.bytes, old);
  assert.equal(got.meta.notebook, 'old');
  assert.deepEqual((await store.list()).map((e) => e.name), ['nb']);
  assert.deepEqual((await fs.readdir(dir)).sort(), ['nb.elc', 'nb.meta.json'], 'temp files of the dead process are removed');
});

test('killed between the container and metadata renames: the new bytes load, stale metadata is detected', async () => {
  const dir = await tempDir();
  await new DirectoryStore(dir).put('nb', payload(200000, 1), { notebook: 'old', createdMs: 1 });

  const r = putAndDie(dir, 2);
  assert.equal(r.signal, 'SIGKILL', r.stderr);
  const store = new DirectoryStore(dir);
  const got = await store.get('nb');
  assert.deepEqual(got.bytes, new Uint8Array(200000).fill(0xab));
  assert.equal(got.meta.metadataMissing, true, 'same size, but the sha256 no longer matches');
  const [entry] = await store.list();
  assert.equal(entry.meta.metadataMissing, true, 'list notices the mtime change');
  // The next successful put repairs everything.
  await store.put('nb', payload(10, 3), { notebook: 'fixed' });
  assert.equal((await store.get('nb')).meta.notebook, 'fixed');
  assert.deepEqual((await fs.readdir(dir)).sort(), ['nb.elc', 'nb.meta.json']);
});

test('a write error leaves no temp file and keeps the old checkpoint', async (t) => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir);
  await store.put('nb', payload(100, 1), {});
  const orig = fs.rename;
  fs.rename = async () => { const e = new Error('ENOSPC: no space left on device, rename'); e.code = 'ENOSPC'; throw e; };
  t.after(() => { fs.rename = orig; });
  await assert.rejects(store.put('nb', payload(4000, 2), {}),
    /Not enough disk space in .* to save checkpoint "nb": it needs 4000 bytes, \d+ bytes .*free\. Delete old checkpoints \(elastic-lite rm NAME\)/);
  fs.rename = orig;
  assert.deepEqual((await store.get('nb')).bytes, payload(100, 1));
  assert.deepEqual((await fs.readdir(dir)).sort(), ['nb.elc', 'nb.meta.json']);
});

