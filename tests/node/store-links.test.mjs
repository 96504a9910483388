// The directory store never reaches outside itself (issue 19): no link is followed, its files
// and folders are private whatever the umask, and its signing key is opened once and checked
// through that descriptor. Each case plants what another user who can write the store's folder
// could plant, and checks the outside file is untouched and the refusal says what happened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import fsSync from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { DirectoryStore, nameToStem } from '../../js/store/directory.mjs';
import { createExclusive } from '../../js/store/nofollow.mjs';
import { formatTwo, payload } from './store-contract.mjs';
import { tempDir } from '../helpers/tempdir.mjs';
import { runCli, oneLineError } from './cli-helpers.mjs';

const POSIX = process.platform !== 'win32';
const mode = async (p) => (await fs.lstat(p)).mode & 0o777;

/** A store holding checkpoint "cp" (two records), and an outside folder with a file in it. */
async function setup() {
  const root = await tempDir('el-links-');
  const dir = path.join(root, 'store');
  const outside = path.join(root, 'outside');
  await fs.mkdir(outside);
  const victim = path.join(outside, 'precious.txt');
  await fs.writeFile(victim, 'keep me');
  const store = new DirectoryStore(dir);
  const file = formatTwo([payload(1000, 1), payload(300, 2)]);
  await store.put('cp', file.bytes, {}, { sign: true });
  const keys = (await store.getEntry('cp')).records.map((r) => r.key);
  return { root, dir, outside, victim, store, file, keys };
}

const unsafe = (re) => (err) => err.code === 'unsafe' && re.test(err.message) && /never follows links/.test(err.message);

test('folders 0700 and files 0600 under umask 000 (store, entries, records, locks, key, retention)', { skip: !POSIX }, async () => {
  const old = process.umask(0);
  try {
    const root = await tempDir('el-umask-');
    const dir = path.join(root, 'store');
    const store = new DirectoryStore(dir);
    const file = formatTwo([payload(500, 3)]);
    const lock = await store.lock('m');
    assert.equal(await mode(path.join(dir, 'locks', `${nameToStem('m')}.lock`)), 0o600);
    await lock.release();
    await store.put('m', file.bytes, {}, { sign: true });
    await store.setRetention(null, { keepLast: 3 });
    for (const sub of ['', 'entries', 'records', 'locks']) assert.equal(await mode(path.join(dir, sub)), 0o700, `${sub || 'store'}/`);
    const files = ['signing-key', 'retention.json', `entries/${nameToStem('m')}.json`,
      ...(await fs.readdir(path.join(dir, 'records'))).map((f) => `records/${f}`)];
    for (const f of files) assert.equal(await mode(path.join(dir, f)), 0o600, f);
    // a key file elsewhere: its new folder 0700, the key 0600
    const keyFile = path.join(root, 'keys', 'k');
    await new DirectoryStore(path.join(root, 'other'), { keyFile }).put('x', file.bytes, {}, { sign: true });
    assert.equal(await mode(path.dirname(keyFile)), 0o700);
    assert.equal(await mode(keyFile), 0o600);
  } finally {
    process.umask(old);
  }
});

test('store folders an earlier version made 0777 (umask 000) are made 0700 on first use', { skip: !POSIX }, async () => {
  const { dir, store } = await setup();
  for (const sub of ['entries', 'records', 'locks']) await fs.chmod(path.join(dir, sub), 0o777);
  await new DirectoryStore(dir).put('again', formatTwo([payload(10, 9)]).bytes, {});
  for (const sub of ['entries', 'records', 'locks']) assert.equal(await mode(path.join(dir, sub)), 0o700, sub);
  await store.close();
});

test('the signing key: a link, a file others can read, another user\'s file are refused; read once through one descriptor', { skip: !POSIX }, async () => {
  const { root, dir, store } = await setup();
  const keyFile = path.join(dir, 'signing-key');
  const real = path.join(root, 'real-key');
  await fs.rename(keyFile, real);
  await fs.symlink(real, keyFile); // a link to a perfectly good key of this user's: still refused
  await assert.rejects(new DirectoryStore(dir).getEntry('cp'), unsafe(/The signing key .*signing-key is a symbolic link/));
  await fs.rm(keyFile);
  await fs.rename(real, keyFile);
  assert.equal((await new DirectoryStore(dir).getEntry('cp')).signature.state, 'valid');

  await fs.chmod(keyFile, 0o644);
  await assert.rejects(new DirectoryStore(dir).getEntry('cp'), /can be read by other users or belongs to another one \(mode 644\).*chmod 600/);
  await fs.chmod(keyFile, 0o600);
  await fs.chown(keyFile, 65534, 65534).catch(() => {});
  if ((await fs.stat(keyFile)).uid !== process.getuid()) {
    await assert.rejects(new DirectoryStore(dir).getEntry('cp'), /belongs to another one/);
    await fs.chown(keyFile, process.getuid(), process.getgid());
  }

  // The race of issue 19 (readFile(path), then stat(path): two looks, a file swapped between
  // them) is impossible by construction: the key's path is resolved exactly once, by one open.
  const seen = [];
  const spied = ['open', 'readFile', 'stat', 'lstat', 'access', 'realpath'];
  const saved = Object.fromEntries(spied.map((m) => [m, fs[m]]));
  for (const m of spied) fs[m] = (p, ...rest) => { if (String(p) === keyFile) seen.push(m); return saved[m].call(fs, p, ...rest); };
  try {
    assert.equal((await new DirectoryStore(dir).getEntry('cp')).signature.state, 'valid');
  } finally {
    Object.assign(fs, saved);
  }
  assert.deepEqual(seen, ['open']);
  await store.close();
});

test('a relative key file (option or $ELASTIC_LITE_KEY_FILE) is relative to the working directory, not the store', async () => {
  const { dir } = await setup();
  assert.equal(new DirectoryStore(dir, { keyFile: 'keys/k' }).keyFile, path.resolve('keys/k'));
  const before = process.env.ELASTIC_LITE_KEY_FILE;
  process.env.ELASTIC_LITE_KEY_FILE = 'mykey';
  try {
    assert.equal(new DirectoryStore(dir).keyFile, path.resolve('mykey'));
  } finally {
    if (before === undefined) delete process.env.ELASTIC_LITE_KEY_FILE; else process.env.ELASTIC_LITE_KEY_FILE = before;
  }
  assert.equal(new DirectoryStore(dir).keyFile, path.join(dir, 'signing-key'));
});

test('a records/ that is a link is refused, never swept: outside files named like record keys stay', async () => {
  const { dir, outside, keys } = await setup();
  // the outside folder gets files named like records no entry uses, old enough to be swept
  const names = ['a'.repeat(64), 'b'.repeat(64)];
  for (const n of names) {
    await fs.writeFile(path.join(outside, n), 'not yours');
    await fs.utimes(path.join(outside, n), new Date(0), new Date(0));
  }
  for (const k of keys) await fs.rename(path.join(dir, 'records', k), path.join(outside, k));
  await fs.rm(path.join(dir, 'records'), { recursive: true });
  await fs.symlink(outside, path.join(dir, 'records'));
  const store = new DirectoryStore(dir, { orphanGraceMs: 0 });
  assert.deepEqual((await store.list()).map((e) => e.name), ['cp'], 'listing still works (it reads no record)');
  await assert.rejects(store.sweep(), unsafe(/The store folder .*records is a symbolic link/));
  await assert.rejects(store.get('cp'), unsafe(/records is a symbolic link/));
  await assert.rejects(store.delete('cp'), unsafe(/records is a symbolic link/));
  for (const n of [...names, ...keys]) assert.ok(fsSync.existsSync(path.join(outside, n)), `${n} untouched`);
});

test('a record, an entry, a lock or a legacy file that is a link is refused; nothing is read or written through it', async () => {
  const { dir, outside, victim, store, keys, file } = await setup();
  // a record linked to an outside file holding the very same bytes: still refused (export would
  // copy outside bytes in through it)
  const copy = path.join(outside, 'copy');
  await fs.copyFile(path.join(dir, 'records', keys[0]), copy);
  await fs.rm(path.join(dir, 'records', keys[0]));
  await fs.symlink(copy, path.join(dir, 'records', keys[0]));
  await assert.rejects(store.get('cp'), unsafe(/Record file .* is a symbolic link/));
  await assert.rejects(store.readRecords([keys[0]]), unsafe(/is a symbolic link/));
  await assert.rejects(store.putRecords([file.records[0]]), unsafe(/is a symbolic link/), 'a write does not reuse it either');
  assert.deepEqual(await store.hasRecords([keys[0]]), [false]);
  await fs.rm(path.join(dir, 'records', keys[0]));
  await store.put('cp', file.bytes, {}, { sign: true });

  const entry = path.join(dir, 'entries', `${nameToStem('cp')}.json`);
  await fs.rename(entry, path.join(outside, 'entry.json'));
  await fs.symlink(path.join(outside, 'entry.json'), entry);
  await assert.rejects(store.get('cp'), unsafe(/The entry of checkpoint "cp" .* is a symbolic link/));
  await fs.rm(entry);

  const lock = path.join(dir, 'locks', `${nameToStem('held')}.lock`);
  await fs.symlink(victim, lock);
  await assert.rejects(store.lock('held', { timeoutMs: 50 }), unsafe(/Lock file .* is a symbolic link/));
  await assert.rejects(store.put('held', file.bytes, {}), unsafe(/Lock file/));

  await fs.symlink(victim, path.join(dir, 'legacy.elc'));
  assert.ok(!(await store.list()).some((e) => e.name === 'legacy'), 'a linked legacy file is not listed');
  assert.equal(await store.get('legacy'), null);
  assert.equal(await fs.readFile(victim, 'utf8'), 'keep me');
});

test('a .damaged marker that is a link is refused: the outside file is not emptied', async () => {
  const { dir, victim, store, keys } = await setup();
  const rec = path.join(dir, 'records', keys[1]);
  const bytes = await fs.readFile(rec);
  bytes[10] ^= 1;
  await fs.writeFile(rec, bytes); // damage, so that verifyRecords marks it
  await fs.symlink(victim, `${rec}.damaged`);
  await assert.rejects(store.verifyRecords([keys[1]]), unsafe(/The damage marker .*\.damaged is a symbolic link/));
  const got = await store.get('cp'); // get() marks too (best effort): damage reported, the link left alone
  assert.deepEqual(got.damaged.map((d) => d.key), [keys[1]]);
  assert.equal(await fs.readFile(victim, 'utf8'), 'keep me');
  assert.ok((await fs.lstat(`${rec}.damaged`)).isSymbolicLink());
});

test('temporary files are created exclusively: a link planted at the name is never written through', async () => {
  const { outside, victim } = await setup();
  const tmp = path.join(outside, '.tmp-planted');
  await fs.symlink(victim, tmp);
  await assert.rejects(createExclusive(tmp), (err) => err.code === 'EEXIST');
  await fs.symlink(path.join(outside, 'does-not-exist'), `${tmp}-dangling`);
  await assert.rejects(createExclusive(`${tmp}-dangling`), (err) => err.code === 'EEXIST');
  assert.ok(!fsSync.existsSync(path.join(outside, 'does-not-exist')), 'a dangling link is not followed to create its target');
  assert.equal(await fs.readFile(victim, 'utf8'), 'keep me');
});

test('a FIFO where a record belongs is refused at once, never waited on', { skip: !POSIX }, async () => {
  const { dir, store, keys } = await setup();
  const rec = path.join(dir, 'records', keys[0]);
  await fs.rm(rec);
  assert.equal(spawnSync('mkfifo', [rec]).status, 0);
  await assert.rejects(store.get('cp'), (err) => err.code === 'unsafe' && /not a regular file/.test(err.message));
  await assert.rejects(store.readRecords([keys[0]]), (err) => err.code === 'unsafe');
});

test('CLI: ls, rm and export on a store whose records/ or a record is a link: refused in one line, nothing outside touched', async () => {
  const { root, dir, outside, victim, keys } = await setup();
  const cwd = root;
  const store = ['--store', dir];
  // export through a record that is a link to an outside file of the record's length: no
  // outside byte is copied out
  const secret = path.join(outside, 'secret');
  await fs.writeFile(secret, Buffer.alloc((await fs.stat(path.join(dir, 'records', keys[0]))).size, 'S'));
  await fs.rm(path.join(dir, 'records', keys[0]));
  await fs.symlink(secret, path.join(dir, 'records', keys[0]));
  const ex = await runCli(['export', 'cp', 'out.elc', ...store], { cwd });
  assert.notEqual(ex.code, 0);
  assert.match(oneLineError(ex.stderr) ?? ex.stderr, /is a symbolic link, not a file of the store: the store never follows links/);
  assert.ok(!fsSync.existsSync(path.join(cwd, 'out.elc')));
  await fs.rm(path.join(dir, 'records', keys[0]));

  // records/ itself a link to an outside folder holding files named like records, old enough
  // for the sweep that every command runs first (even ls)
  const names = ['c'.repeat(64), keys[1]];
  for (const n of names) await fs.writeFile(path.join(outside, n), 'not yours');
  for (const n of names) await fs.utimes(path.join(outside, n), new Date(0), new Date(0));
  await fs.rm(path.join(dir, 'records'), { recursive: true });
  await fs.symlink(outside, path.join(dir, 'records'));
  const ls = await runCli(['ls', ...store], { cwd });
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /\bcp\b/);
  const rm = await runCli(['rm', 'cp', ...store], { cwd });
  assert.notEqual(rm.code, 0);
  assert.match(oneLineError(rm.stderr) ?? rm.stderr, /records is a symbolic link/);
  for (const n of names) assert.equal(await fs.readFile(path.join(outside, n), 'utf8'), 'not yours', `${n} untouched`);
  assert.equal(await fs.readFile(victim, 'utf8'), 'keep me');
});
