// FolderStore (the browser's folder on disk, File System Access) over a directory handle backed
// by a real temporary folder (helpers/fs-directory-handle.mjs): the store contract, and the
// same folder read and written by the Node DirectoryStore and by the `elastic-lite` CLI, both
// ways (one layout: docs/STORE-LAYOUT.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FolderStore, copyCheckpoints } from '../../js/store/folder.mjs';
import { MemoryStore } from '../../js/store/memory.mjs';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { NodeDirectoryHandle } from './helpers/fs-directory-handle.mjs';
import { storeContract, payload, formatTwo, expectedKey } from './store-contract.mjs';
import { runCli } from './cli-helpers.mjs';
import { tempDir } from '../helpers/tempdir.mjs';
import { loadCore } from '../../js/core.mjs';

const core = await loadCore();

/** A real checkpoint file (one data record: the pickle of 1), as the core writes it. */
function realCheckpoint() {
  const w = core.newWriter({ producer: 'elastic-lite test', python: '3.14.2', createdMs: 1 });
  w.beginRecord(['x'], { kind: 'data' });
  w.append(new Uint8Array([0x80, 5, 0x4b, 1, 0x2e]));
  w.endRecord('pickle');
  return w.finish();
}

async function folder(opts) {
  const dir = await tempDir('el-folder-');
  return { dir, store: new FolderStore(new NodeDirectoryHandle(dir), opts) };
}

storeContract('FolderStore', async (opts) => (await folder(opts)).store);

/** Every file under dir, relative, sorted. */
async function tree(dir) {
  const out = [];
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
  }
  return out.sort();
}

test('a folder written through a directory handle is the Node store\'s layout, file for file', async () => {
  const { dir, store } = await folder();
  const other = await tempDir('el-folder-node-');
  const file = formatTwo([payload(1000, 1), payload(70, 2)]);
  await store.put('my run', file.bytes, { notebook: 'n.ipynb', createdMs: 5 }, { sign: true });
  await new DirectoryStore(other).put('my run', file.bytes, { notebook: 'n.ipynb', createdMs: 5 }, { sign: true });
  assert.deepEqual(await tree(dir), await tree(other));
  assert.deepEqual(await tree(dir), ['counter.json', 'entries/my%20run.json', ...file.records.map((r) => `records/${expectedKey(r)}`).sort(), 'signing-key']);
});

test('the Node store and the CLI (ls, verify) read what the folder store wrote: bytes, metadata, its own signature', async () => {
  const { dir, store } = await folder();
  const file = formatTwo([payload(5000, 3), payload(64, 4)]);
  await store.put('from the browser', file.bytes, { notebook: 'a.ipynb', createdMs: 7 }, { sign: true });
  const node = new DirectoryStore(dir);
  const got = await node.get('from the browser');
  assert.deepEqual(got.bytes, file.bytes);
  assert.equal(got.meta.notebook, 'a.ipynb');
  assert.equal(got.signature.state, 'valid', 'signed with the folder\'s key, which the Node store reads');
  const ls = await runCli(['ls', '--store', dir, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.deepEqual(JSON.parse(ls.stdout).checkpoints.map((c) => c.name), ['from the browser']);
  await store.put('real', realCheckpoint(), { notebook: 'a.ipynb' }, { sign: true });
  const verify = await runCli(['verify', 'real', '--store', dir]);
  assert.equal(verify.code, 0, verify.stderr);
  assert.match(verify.stdout, /checkpoint "real": OK, whole/);
});

test('the folder store reads what the Node store wrote, checks every record against its key, signs the next commit with the same key', async () => {
  const dir = await tempDir('el-folder-');
  const file = formatTwo([payload(3000, 5), payload(200, 6)]);
  await new DirectoryStore(dir).put('from the CLI', file.bytes, { notebook: 'b.ipynb' }, { sign: true });
  const store = new FolderStore(new NodeDirectoryHandle(dir));
  assert.deepEqual((await store.list()).map((e) => e.name), ['from the CLI']);
  const got = await store.get('from the CLI');
  assert.deepEqual(got.bytes, file.bytes);
  assert.equal(got.signature.state, 'valid');
  assert.deepEqual(got.damaged, []);
  // a record changed on disk behind both stores' backs: damage, named by its key, and marked
  const key = expectedKey(file.records[0]);
  const changed = Buffer.from(file.records[0]); changed[10] ^= 1;
  await fs.writeFile(path.join(dir, 'records', key), changed);
  const again = await store.get('from the CLI');
  assert.deepEqual(again.damaged.map((d) => d.key), [key]);
  assert.deepEqual(await tree(path.join(dir, 'records')), [key, `${key}.damaged`, expectedKey(file.records[1])].sort());
  assert.deepEqual(await new DirectoryStore(dir).hasRecords([key]), [false], 'the Node store sees the marker');
  // the next write of the true bytes repairs it, and the generation goes on from the CLI's counter
  await store.put('repaired', file.bytes, {}, { sign: true });
  assert.deepEqual((await new DirectoryStore(dir).get('from the CLI')).damaged, []);
  assert.equal((await new DirectoryStore(dir).get('repaired')).signature.state, 'valid');
  assert.equal(await store.generation('repaired'), 2);
});

test('record files deleted behind the store\'s back (by hand, a sync tool): the checkpoint is listed lost by the folder store, the Node store and `elastic-lite ls`; reading it says so; it can be deleted', async () => {
  const { dir, store } = await folder();
  const shared = payload(3000, 21);
  const gone = formatTwo([shared, payload(500, 22), payload(400, 23)]);
  await store.put('whole', formatTwo([shared]).bytes, { createdMs: 1, variables: 1 }, { sign: true });
  await store.put('gone', gone.bytes, { createdMs: 2, variables: 3 }, { sign: true });
  await fs.rm(path.join(dir, 'records', expectedKey(gone.records[1])));
  await fs.rm(path.join(dir, 'records', expectedKey(gone.records[2])));
  const lost = { missing: 2, records: 3, store: 'folder' };
  for (const s of [store, new DirectoryStore(dir)]) {
    assert.deepEqual((await s.list()).map((e) => [e.name, e.lost ?? null]), [['gone', lost], ['whole', null]]);
    const err = await s.get('gone').then(() => null, (e) => e);
    assert.equal(err?.code, 'lost', err?.message);
    assert.match(err.message, /Checkpoint "gone" is lost: 2 of its 3 records are no longer in .*; they were deleted from it \(by hand, or by a sync or cleanup tool\)\. .*Delete it \(elastic-lite rm "gone"/);
    assert.deepEqual(err.loss, lost);
  }
  const ls = await runCli(['ls', '--store', dir]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /^gone \(lost\) /m);
  assert.match(ls.stdout, /^gone: lost: its data was removed from the folder \(2 of 3 records gone\)$/m);
  assert.match(ls.stdout, /restore without a NAME brings back "whole"/, 'the lost one is passed over');
  assert.deepEqual(JSON.parse((await runCli(['ls', '--store', dir, '--json'])).stdout).checkpoints[0].lost, lost);
  // a copy passes over it (nothing to copy), the others go
  const to = new MemoryStore();
  assert.deepEqual(await copyCheckpoints(store, to), { copied: ['whole'], same: [], damaged: [], lost: ['gone'] });
  assert.equal(await store.delete('gone'), true);
  assert.deepEqual((await store.list()).map((e) => e.name), ['whole']);
});

test('a checkpoint deleted while it is listed is not listed lost: its entry is read again before it is judged', async () => {
  const { dir, store } = await folder();
  const file = formatTwo([payload(700, 24)]);
  await store.put('x', file.bytes, {});
  assert.equal((await store.list()).length, 1); // opened (its sweep done) before the race below
  // the listing of records/ sees the record gone (a delete between the two reads): the entry is gone too
  const readdir = store._readdir.bind(store);
  store._readdir = async (sub) => {
    if (sub !== 'records') return readdir(sub);
    await fs.rm(path.join(dir, 'entries', 'x.json'));
    await fs.rm(path.join(dir, 'records', expectedKey(file.records[0])));
    return readdir(sub);
  };
  assert.deepEqual(await store.list(), []);
});

test('locks: a live CLI writer\'s lock file is waited for and named; a dead tab\'s lock of this origin is taken over; the CLI never breaks a browser\'s', async () => {
  const { dir, store } = await folder({ lockTimeoutMs: 60 });
  await fs.mkdir(path.join(dir, 'locks'), { mode: 0o700 });
  const lockFile = path.join(dir, 'locks', 'x.lock');
  await fs.writeFile(lockFile, JSON.stringify({ pid: process.pid, host: os.hostname(), token: 't1', sinceMs: 1 }), { mode: 0o600 });
  const err = await store.put('x', payload(10), {}).then(() => null, (e) => e);
  assert.equal(err?.code, 'busy');
  assert.match(err.message, new RegExp(`Checkpoint "x" is being saved by process ${process.pid} on ${os.hostname()}.*remove the lock file .*locks/x\\.lock`));
  // a lock file this origin's tab left when it died (no Web Lock held for it): taken over
  await fs.writeFile(lockFile, JSON.stringify({ pid: 0, host: 'browser unknown', token: 'browser-dead', sinceMs: 1 }), { mode: 0o600 });
  await store.put('x', payload(10), {});
  assert.deepEqual((await store.get('x')).bytes, payload(10));
  await assert.rejects(fs.stat(lockFile), { code: 'ENOENT' }, 'released after the write');
  // the CLI waits for a browser's lock (another host to it) and names the file
  const held = await store.lock('x');
  const node = new DirectoryStore(dir, { lockTimeoutMs: 60 });
  const nodeErr = await node.put('x', payload(11), {}).then(() => null, (e) => e);
  assert.equal(nodeErr?.code, 'busy');
  assert.match(nodeErr.message, /being saved by process 0 on browser unknown .*remove the lock file .*x\.lock/);
  await held.release();
  await node.put('x', payload(11), {});
});

test('copyCheckpoints backs a store up into the folder: own checkpoints signed by the folder, foreign ones stay foreign, nothing sent twice', async () => {
  const from = new MemoryStore();
  const shared = payload(4000, 9);
  const own = formatTwo([shared, payload(100, 10)]);
  const foreign = formatTwo([shared, payload(90, 11)], { seed: 3 });
  await from.put('own', own.bytes, { notebook: 'n', createdMs: 2 }, { sign: true });
  await from.put('imported', foreign.bytes, { notebook: 'n', createdMs: 1 });
  const { dir, store } = await folder();
  assert.deepEqual(await copyCheckpoints(from, store), { copied: ['own', 'imported'], same: [], damaged: [], lost: [] });
  const node = new DirectoryStore(dir);
  assert.deepEqual((await node.get('own')).bytes, own.bytes);
  assert.equal((await node.get('own')).signature.state, 'valid');
  assert.equal((await node.get('imported')).signature.state, 'unsigned');
  assert.equal((await node.stats()).records, 3, 'the shared record once');
  assert.deepEqual(await copyCheckpoints(from, store), { copied: [], same: ['own', 'imported'], damaged: [], lost: [] });
});
