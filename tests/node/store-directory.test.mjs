// DirectoryStore on a real temporary directory. Crashes: a child process writes, and the
// directory as a kill at each of its file-system steps would leave it is checked (snapshots of
// one run; real SIGKILLs at some steps leave the same files); collisions are real: two Node
// processes write one name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { DirectoryStore, nameToStem, stemToName } from '../../js/store/directory.mjs';
import { DirectoryStore as DirectoryStoreV1 } from './store-fixtures/v1/directory.mjs';
import { storeContract, payload, formatTwo, expectedKey, assertWhole } from './store-contract.mjs';

const STORE_URL = new URL('../../js/store/directory.mjs', import.meta.url).href;
const LOCKFILE_URL = new URL('../../js/store/lockfile.mjs', import.meta.url).href;
const tmpDirs = [];
async function tempDir() {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), 'el-store-'));
  tmpDirs.push(d);
  return d;
}
test.after(async () => { await Promise.all(tmpDirs.map((d) => fs.rm(d, { recursive: true, force: true }))); });

storeContract('DirectoryStore', async (opts) => new DirectoryStore(path.join(await tempDir(), 'store'), opts));

/** Every file under dir, relative, sorted. */
async function tree(dir) {
  const out = [];
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
  }
  return out.sort();
}

/** Node script text run as a child (ES module), with the store module's URL at hand. */
function child(body, env = {}) {
  return spawn(process.execPath, ['--input-type=module', '-e', `
    import { DirectoryStore } from ${JSON.stringify(STORE_URL)};
    ${body}`], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function finished(proc) {
  let stdout = ''; let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => proc.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

test('layout: one entry file per checkpoint, one file per record named by its key', async () => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir);
  const file = formatTwo([payload(1000, 1), payload(70, 2)]);
  await store.put('my run', file.bytes, { notebook: 'n.ipynb' });
  const keys = file.records.map(expectedKey);
  assert.deepEqual(await tree(dir), ['counter.json', 'entries/my%20run.json', ...keys.map((k) => `records/${k}`).sort()]);
  for (const [i, k] of keys.entries()) assert.deepEqual(new Uint8Array(await fs.readFile(path.join(dir, 'records', k))), file.records[i]);
  const doc = JSON.parse(await fs.readFile(path.join(dir, 'entries', 'my%20run.json'), 'utf8'));
  assert.equal(doc.name, 'my run');
  assert.equal(doc.meta.notebook, 'n.ipynb');
  assert.deepEqual(doc.records, keys.map((key, i) => ({ key, length: file.records[i].byteLength })));
  assert.deepEqual(Buffer.from(doc.head, 'base64'), Buffer.from(file.bytes.subarray(0, 64)));
  assert.equal(doc.size, file.bytes.byteLength);
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
  await fs.writeFile(path.join(dir, 'entries', 'not%zz.json'), '{}');
  assert.deepEqual((await store.list()).map((e) => e.name), ['real']);
});

test('checkpoints saved by the previous version are listed, read, replaced and deleted', async () => {
  const dir = await tempDir();
  const v1 = new DirectoryStoreV1(dir);
  await v1.put('before upgrade', payload(3000, 1), { notebook: 'a.ipynb', createdMs: 5, names: ['x'] });
  await v1.put('replace me', payload(10, 2), { notebook: 'a.ipynb', createdMs: 6 });
  await v1.put('delete me', payload(10, 3), { createdMs: 7 });
  await fs.writeFile(path.join(dir, 'copied.elc'), payload(77, 4)); // copied in by hand

  const store = new DirectoryStore(dir);
  // 'copied' has no metadata: its time is the file's.
  assert.deepEqual((await store.list()).map((e) => e.name), ['copied', 'delete me', 'replace me', 'before upgrade']);
  const got = await store.get('before upgrade');
  assert.deepEqual(got.bytes, payload(3000, 1));
  assert.equal(got.meta.notebook, 'a.ipynb');
  assert.deepEqual(got.meta.names, ['x']);
  assert.equal((await store.list()).find((e) => e.name === 'copied').meta.metadataMissing, true);
  assert.deepEqual((await store.get('copied')).bytes, payload(77, 4));
  const entry = await store.getEntry('before upgrade'); // one file, no records: all of it is the tail
  assert.deepEqual([entry.head.byteLength, entry.records, entry.tail], [0, [], payload(3000, 1)]);

  await store.put('replace me', payload(20, 5), { notebook: 'a.ipynb', createdMs: 8 });
  assert.deepEqual((await store.get('replace me')).bytes, payload(20, 5));
  assert.equal(await store.delete('delete me'), true);
  assert.deepEqual(await tree(dir), ['before%20upgrade.elc', 'before%20upgrade.meta.json', 'copied.elc', 'counter.json',
    'entries/replace%20me.json', `records/${expectedKey(payload(20, 5))}`]);
});

test('a store path that is a file gives a clear error', async () => {
  const file = path.join(await tempDir(), 'plain-file');
  await fs.writeFile(file, 'x');
  await assert.rejects(new DirectoryStore(file).list(), /is not a directory/);
});

test('a damaged record file or entry file is reported by name, and can be deleted', async () => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir);
  const file = formatTwo([payload(500, 1)]);
  await store.put('d', file.bytes, {});
  const key = expectedKey(file.records[0]);
  await fs.truncate(path.join(dir, 'records', key), 100);
  await assert.rejects(store.get('d'), /Checkpoint "d" in .* is corrupted: record [0-9a-f]{12}… holds 100 bytes instead of 512\. Delete it \(elastic-lite rm "d"\)/);
  await fs.rm(path.join(dir, 'records', key));
  await assert.rejects(store.get('d'), { code: 'lost', message: /Checkpoint "d" is lost: 1 of its 1 records are no longer in .*; they were deleted from it/ });
  assert.deepEqual((await store.list()).map((e) => e.lost), [{ missing: 1, records: 1, store: 'folder' }]);
  // Saving the same bytes again repairs the record.
  await store.put('d', file.bytes, {});
  assert.deepEqual((await store.get('d')).bytes, file.bytes);
  await fs.writeFile(path.join(dir, 'entries', 'd.json'), '{"format": "elastic-lite checkpoint entry", "version": 2, "na');
  await assert.rejects(store.get('d'), /Checkpoint "d" in .* is corrupted: .*d\.json is not a valid entry/);
  assert.equal(await store.delete('d'), true);
  await new DirectoryStore(dir, { orphanGraceMs: 0 }).sweep();
  assert.deepEqual(await tree(dir), ['counter.json'], 'only the counter is left (the generations go on)');
});

test('disk full: a clear message, the old checkpoint kept, nothing left behind', async (t) => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir);
  await store.put('nb', payload(100, 1), {});
  const before = await tree(dir);
  const orig = fs.rename;
  let refused = 0;
  // The records are written; the entry's rename finds the disk full.
  fs.rename = async (from, to) => {
    if (to.includes(`${path.sep}entries${path.sep}`)) {
      refused += 1;
      const e = new Error('ENOSPC: no space left on device, rename'); e.code = 'ENOSPC'; throw e;
    }
    return orig(from, to);
  };
  t.after(() => { fs.rename = orig; });
  const bytes = formatTwo([payload(4000, 2), payload(10, 3)]).bytes;
  const err = await store.put('nb', bytes, {}).then(() => null, (e) => e);
  fs.rename = orig;
  assert.ok(err, 'put must fail');
  assert.equal(refused, 1);
  assert.equal(err.code, 'ENOSPC');
  assert.match(err.message, new RegExp(`Not enough disk space in .* to save checkpoint "nb": it needs ${bytes.byteLength} bytes, ` +
    '\\d+ bytes .*free\\. Delete old checkpoints \\(elastic-lite rm NAME\\) or free disk space'));
  assert.match(err.message, /The previous checkpoint "nb", if any, is unchanged\./);
  assert.equal(err.needed, bytes.byteLength);
  assert.deepEqual((await store.get('nb')).bytes, payload(100, 1));
  assert.deepEqual(await tree(dir), before, 'the records it wrote are given back, no temporary file remains');
});

// ---- a kill at every step -------------------------------------------------------------------

// Runs in a child: counts every file-system call that changes something (and every
// FileHandle write/sync/close). With KILL_AT it SIGKILLs the process just before call number
// KILL_AT. With SNAPSHOTS it copies DIR to SNAPSHOTS/<n> just before every call n instead
// (cp -a: modes and nanosecond times kept; the process is frozen meanwhile) and runs on: what a
// kill before each call would leave, every call of one run, in one process.
const KILL_HARNESS = `
  import fs from 'node:fs/promises';
  import { execFileSync } from 'node:child_process';
  const killAt = Number(process.env.KILL_AT);
  const snapshots = process.env.SNAPSHOTS;
  let calls = 0;
  const snapshot = () => {
    const to = snapshots + '/' + calls;
    // a call still in flight may change DIR while it is copied (as it may at a kill): again
    for (let i = 0; ; i += 1) {
      try { execFileSync('cp', ['-a', process.env.DIR, to], { stdio: 'ignore' }); return; } catch (err) {
        execFileSync('rm', ['-rf', to]);
        if (i === 5) throw err;
      }
    }
  };
  const step = () => {
    calls += 1;
    if (snapshots) snapshot();
    else if (calls === killAt) process.kill(process.pid, 'SIGKILL');
  };
  process.on('exit', () => { if (snapshots) console.log('steps ' + calls); });
  const fh = await fs.open(process.execPath, 'r');
  const proto = Object.getPrototypeOf(fh);
  await fh.close();
  for (const name of ['open', 'rename', 'rm', 'unlink', 'utimes', 'writeFile', 'link', 'mkdir']) {
    const orig = fs[name];
    fs[name] = async (...args) => { step(); return orig(...args); };
  }
  for (const name of ['writev', 'write', 'sync', 'close']) {
    const orig = proto[name];
    proto[name] = async function wrapped(...args) { step(); return orig.apply(this, args); };
  }
`;

// What a directory must look like once a store has swept it: no temporary file, no lock, and
// every record named by an entry.
async function assertTidy(dir) {
  const files = await tree(dir);
  assert.deepEqual(files.filter((f) => path.basename(f).startsWith('.tmp-') || f.endsWith('.lock') || f.includes('.lock.break-')), []);
  const used = new Set();
  for (const f of files.filter((x) => x.startsWith('entries/'))) {
    for (const r of JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')).records) used.add(r.key);
  }
  assert.deepEqual(files.filter((f) => f.startsWith('records/')).map((f) => f.slice(8)).filter((k) => !used.has(k)), [], 'orphan records');
}

test('killed at every step of put, a streamed write, retention and delete: every listed checkpoint stays whole', async () => {
  const S = payload(5000, 1);
  const v = {
    nb1: formatTwo([S, payload(300, 2)], { seed: 1 }).bytes,
    nb2: formatTwo([S, payload(400, 3)], { seed: 2 }).bytes,
    other: formatTwo([S, payload(500, 4)], { seed: 3 }).bytes,
    x: formatTwo([payload(600, 5)], { seed: 4 }).bytes,
    old: payload(900, 6),
  };
  const streamed = formatTwo([S, payload(700, 7)], { seed: 5 });
  const versions = { nb: [v.nb1, v.nb2], s: [streamed.bytes], other: [v.other], x: [v.x], old: [v.old] };
  const scenario = `
    const v = ${JSON.stringify(Object.fromEntries(Object.entries(v).map(([k, b]) => [k, Buffer.from(b).toString('base64')])))};
    const b = (k) => new Uint8Array(Buffer.from(v[k], 'base64'));
    const s = ${JSON.stringify(streamed.records.map((r) => Buffer.from(r).toString('base64')))}.map((x) => new Uint8Array(Buffer.from(x, 'base64')));
    const { DirectoryStore } = await import(${JSON.stringify(STORE_URL)});
    const store = new DirectoryStore(process.env.DIR, { keepLast: 2 });
    await store.put('nb', b('nb2'), { notebook: 'n', createdMs: 5 });           // overwrite
    const lock = await store.lock('s');                                          // streamed
    const keys = await store.putRecords([s[0]]);
    keys.push(...(await store.putRecords([[s[1].subarray(0, 100), s[1].subarray(100)]])));
    await store.commit('s', { head: new Uint8Array(${JSON.stringify([...streamed.bytes.subarray(0, 64)])}),
      records: keys.map((key, i) => ({ key, length: s[i].byteLength })),
      tail: new Uint8Array(Buffer.from(${JSON.stringify(Buffer.from(streamed.bytes.subarray(64 + streamed.records[0].byteLength + streamed.records[1].byteLength)).toString('base64'))}, 'base64')),
      meta: { notebook: 'n', createdMs: 6 } });
    await lock.release();
    await store.put('x', b('x'), { notebook: 'n', createdMs: 7 });               // expires nb
    await store.delete('other');
    console.log('finished');`;

  // Every kill point is checked on the directory a kill there leaves: the snapshots of one run
  // (KILL_HARNESS); a real SIGKILL at some of them leaves the same files, and is checked too.
  const base = await tempDir();
  const setup = new DirectoryStore(base);
  await setup.put('nb', v.nb1, { notebook: 'n', createdMs: 1 });
  await setup.put('other', v.other, { createdMs: 2 });
  await new DirectoryStoreV1(base).put('old', v.old, { createdMs: 0 });
  // cp -a: the nanosecond times a store compares are kept (fs.cp rounds them)
  const copyOfBase = async () => { const dir = await tempDir(); execFileSync('cp', ['-a', `${base}/.`, dir]); return dir; };
  const run = (dir, env) => spawnSync(process.execPath, ['--input-type=module', '-e', KILL_HARNESS + scenario],
    { env: { ...process.env, ...env, DIR: dir }, encoding: 'utf8' });

  const snapshots = await tempDir();
  const finishedDir = await copyOfBase();
  const r = run(finishedDir, { SNAPSHOTS: snapshots });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /finished/);
  const steps = Number(/steps (\d+)/.exec(r.stdout)[1]);

  // What a store must find after a crash in `dir`: every listed checkpoint whole, the previous
  // version's kept, the sweep removes no checkpoint and leaves no debris, and it works on.
  const afterCrash = async (dir, killAt) => {
    const store = new DirectoryStore(dir, { orphanGraceMs: 0 });
    const names = await assertWhole(store, versions);
    assert.ok(names.includes('old'), `kill at step ${killAt}: the checkpoint of the previous version is kept`);
    await store.sweep();
    await assertTidy(dir);
    assert.deepEqual(await assertWhole(store, versions), names, 'the sweep removes no checkpoint');
    await store.put('after', payload(10, 9), {}); // the store works on
    assert.deepEqual((await store.get('after')).bytes, payload(10, 9));
    return names;
  };
  const real = new Set([1, 2, Math.floor(steps / 4), Math.floor(steps / 2), Math.floor((3 * steps) / 4), steps]);
  // A kill between a write and its sync or close leaves the same directory as a kill after them:
  // a state seen before (every name, mode, nanosecond time and byte alike) is not checked again.
  const checked = new Map();
  for (let killAt = 1; killAt <= steps; killAt += 1) {
    const snap = path.join(snapshots, String(killAt));
    if (real.has(killAt)) {
      const dir = await copyOfBase();
      const k = run(dir, { KILL_AT: String(killAt) });
      assert.equal(k.signal, 'SIGKILL', `kill at step ${killAt}: ${k.stderr}`);
      assert.deepEqual(await files(dir), await files(snap), `kill at step ${killAt}: the snapshot is what a kill leaves`);
      await afterCrash(dir, killAt);
      await fs.rm(dir, { recursive: true, force: true });
    }
    const state = await stateOf(snap);
    if (!checked.has(state)) checked.set(state, await afterCrash(snap, killAt));
    await fs.rm(snap, { recursive: true, force: true });
  }
  assert.deepEqual(await afterCrash(finishedDir, steps + 1), ['old', 's', 'x'], 'the uninterrupted run ends with nb expired and other deleted');
  console.log(`# killed at each of ${steps} steps (${real.size} of them by a real SIGKILL): ${checked.size} different directories`);
  assert.ok(steps > 40, `the scenario has ${steps} steps, each one killed once`);
});

/** Everything of dir a store could see: each name, mode, nanosecond time and content. */
async function stateOf(dir) {
  const parts = [];
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    const abs = path.join(e.parentPath ?? e.path, e.name);
    const st = await fs.lstat(abs, { bigint: true });
    const bytes = e.isFile() ? createHash('sha256').update(await fs.readFile(abs)).digest('hex') : '';
    parts.push(`${path.relative(dir, abs)} ${st.mode} ${e.isDirectory() ? '' : st.mtimeNs} ${bytes}`);
  }
  return parts.sort().join('\n');
}

/**
 * The files under dir, to compare two directories a crash left: { name: contents }, with what
 * differs from run to run made alike: the process id and random part of temporary names
 * (several such files: their contents in order), a lock file's holder (pid, token, time), the
 * signing key (random) and the signatures and key ids made with it.
 */
async function files(dir) {
  const signed = new Set(['mac', 'sig', 'keyId', 'previousKeyIds']);
  const alike = (doc) => (Array.isArray(doc) ? doc.map(alike) : doc && typeof doc === 'object'
    ? Object.fromEntries(Object.entries(doc).map(([k, x]) => [k, signed.has(k) ? '(signed)' : alike(x)])) : doc);
  const out = {};
  for (const f of await tree(dir)) {
    const name = f.replace(/\.tmp-\d+-[0-9a-f]+/, '.tmp-PID-RANDOM');
    let content = await fs.readFile(path.join(dir, f), 'utf8');
    if (/\.lock$|-lock$/.test(f)) content = '(a lock holder)';
    else if (/^signing-key/.test(f)) content = '(a signing key)';
    else { try { content = JSON.stringify(alike(JSON.parse(content))); } catch { /* bytes, or JSON cut short */ } }
    (out[name] ??= []).push(content);
  }
  for (const v of Object.values(out)) v.sort();
  return out;
}

// ---- writers never collide -------------------------------------------------------------------

test('two processes writing one name: both say saved, one after the other, nothing mixed', async () => {
  const dir = await tempDir();
  const script = (seed, size) => `
    const store = new DirectoryStore(process.env.DIR);
    const bytes = new Uint8Array(${size}).fill(${seed});
    await store.put('nb', bytes, { writer: ${seed} });
    console.log('saved ' + Date.now());`;
  const runs = await Promise.all([finished(child(script(1, 8 << 20), { DIR: dir })), finished(child(script(2, 8 << 20), { DIR: dir }))]);
  for (const r of runs) assert.equal(r.code, 0, r.stderr);
  const [t1, t2] = runs.map((r) => Number(/saved (\d+)/.exec(r.stdout)[1]));
  const got = await new DirectoryStore(dir).get('nb');
  const last = t1 > t2 ? 1 : t2 > t1 ? 2 : got.meta.writer;
  assert.equal(got.meta.writer, last, 'the checkpoint is the write that finished last');
  assert.ok(got.bytes.every((b) => b === last), 'and its bytes are that writer\'s, whole');
  assert.deepEqual((await tree(dir)).filter((f) => f.startsWith('records/')).length, 1);
});

test('a writer that cannot get the lock names the process holding it', async () => {
  const dir = await tempDir();
  const holder = child(`
    const store = new DirectoryStore(process.env.DIR);
    const lock = await store.lock('nb');
    console.log('locked');
    await new Promise((r) => setTimeout(r, 60000));`, { DIR: dir });
  await new Promise((resolve) => holder.stdout.once('data', resolve));
  try {
    const err = await new DirectoryStore(dir, { lockTimeoutMs: 200 }).put('nb', payload(10), {}).then(() => null, (e) => e);
    assert.ok(err);
    assert.equal(err.code, 'busy');
    assert.match(err.message, new RegExp(`Checkpoint "nb" is being saved by process ${holder.pid} \\(since .*\\); waited 0\\.20 s`));
    assert.match(err.message, /remove the lock file .*locks\/nb\.lock/);
  } finally {
    holder.kill('SIGKILL');
    await finished(holder);
  }
  // The holder died holding the lock: the next writer breaks it and saves.
  await new DirectoryStore(dir, { lockTimeoutMs: 200 }).put('nb', payload(10, 2), {});
  assert.deepEqual((await new DirectoryStore(dir).get('nb')).bytes, payload(10, 2));
});

test('lock files: only one holder at a time across processes, even while breaking dead holders', async () => {
  const dir = await tempDir();
  const lockFile = path.join(dir, 'test.lock');
  const counter = path.join(dir, 'counter');
  await fs.writeFile(counter, '0');
  // A lock left by a process that no longer exists: every worker will want to break it.
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  await fs.writeFile(lockFile, JSON.stringify({ pid: Number(dead.stdout), host: os.hostname(), token: 'dead-1', sinceMs: 1 }));
  const worker = `
    import fs from 'node:fs/promises';
    import { acquireLockFile } from ${JSON.stringify(LOCKFILE_URL)};
    for (let i = 0; i < 15; i += 1) {
      const lock = await acquireLockFile(process.env.LOCK, { timeoutMs: 30000, what: 'test' });
      const n = Number(await fs.readFile(process.env.COUNTER, 'utf8'));   // read, wait, write:
      await new Promise((r) => setTimeout(r, 2));                          // lost updates if two
      await fs.writeFile(process.env.COUNTER, String(n + 1));              // ever hold it at once
      await lock.release();
    }`;
  const env = { ...process.env, LOCK: lockFile, COUNTER: counter };
  const runs = await Promise.all([1, 2, 3, 4].map(() => finished(spawn(process.execPath, ['--input-type=module', '-e', worker], { env }))));
  for (const r of runs) assert.equal(r.code, 0, r.stderr);
  assert.equal(await fs.readFile(counter, 'utf8'), '60');
  assert.deepEqual((await fs.readdir(dir)).sort(), ['counter'], 'no lock, break or temporary file left');
});

test('a lock held on another host is never broken: the writer is told which file to remove', async () => {
  const dir = await tempDir();
  const store = new DirectoryStore(dir, { lockTimeoutMs: 50 });
  await fs.mkdir(path.join(dir, 'locks'), { recursive: true });
  await fs.writeFile(path.join(dir, 'locks', 'nb.lock'), JSON.stringify({ pid: 1, host: 'elsewhere', token: 't', sinceMs: 0 }));
  await assert.rejects(store.put('nb', payload(1), {}), /being saved by process 1 on elsewhere .* remove the lock file/);
});
