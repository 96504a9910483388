// Publishing a notebook warm: keygen makes a publisher key, publish runs a notebook and signs its
// checkpoint beside it, and what a visitor's page decides from the pinned keys
// (js/shared/publisher.mjs): the signed bytes are trusted, one changed byte is damage, another
// key is foreign, an edited field breaks the signature. Then a visitor's store takes the trusted
// state in and restores it without running a cell of the notebook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { runCli, tempWorkdir, NOTEBOOKS, oneLineError } from './cli-helpers.mjs';
import { generatePublisherKey, pinnedKeys, verifyPublished, publishedPaths, publishedSummary } from '../../js/shared/publisher.mjs';

const dir = await tempWorkdir('el-publish-');
const nbFile = path.join(dir, 'basic.ipynb');
await fs.copyFile(path.join(NOTEBOOKS, 'basic.ipynb'), nbFile);
const keyFile = path.join(dir, 'publisher.key');

test('keygen writes a private key for the owner alone, prints the public key, never overwrites', async () => {
  const made = await runCli(['keygen', keyFile, '--json'], { cwd: dir });
  assert.equal(made.code, 0, made.stderr);
  const out = JSON.parse(made.stdout);
  assert.match(out.keyId, /^[0-9a-f]{16}$/);
  assert.deepEqual(Object.keys(out.publicKey).sort(), ['crv', 'keyId', 'kty', 'x', 'y']);
  assert.equal((await fs.stat(keyFile)).mode & 0o777, 0o600);
  const again = await runCli(['keygen', keyFile], { cwd: dir });
  assert.equal(again.code, 2);
  assert.match(oneLineError(again.stderr), /already exists; keygen never overwrites a key/);
});

test('publish signs the notebook\'s state beside it; the page trusts only those bytes, under a pinned key', async () => {
  const missing = await runCli(['publish', nbFile], { cwd: dir });
  assert.equal(missing.code, 2);
  assert.match(oneLineError(missing.stderr), /publish needs --key FILE/);

  const res = await runCli(['publish', nbFile, '--key', keyFile, '--json'], { cwd: dir, timeoutMs: 300_000 });
  assert.equal(res.code, 0, res.stderr);
  const [pub] = JSON.parse(res.stdout).published;
  const paths = publishedPaths(nbFile);
  assert.equal(pub.checkpoint, paths.checkpoint);
  const doc = JSON.parse(await fs.readFile(paths.document, 'utf8'));
  const bytes = new Uint8Array(await fs.readFile(paths.checkpoint));
  assert.equal(doc.notebook, 'basic.ipynb');
  assert.ok(doc.names.includes('total') && doc.variables === doc.names.length, JSON.stringify(doc.names));
  assert.ok(doc.cells.length >= 3 && doc.cells.every((c) => Number.isInteger(c.number)));
  assert.ok(!Number.isNaN(Date.parse(doc.computed)));

  const key = JSON.parse(await fs.readFile(keyFile, 'utf8'));
  const pins = await pinnedKeys([key.publicKey]);
  assert.deepEqual(await verifyPublished(doc, bytes, pins), { state: 'trusted', keyId: key.keyId, reason: null });

  const flipped = bytes.slice();
  flipped[flipped.length >> 1] ^= 1;
  assert.equal((await verifyPublished(doc, flipped, pins)).state, 'damaged');
  assert.equal((await verifyPublished(doc, bytes.subarray(1), pins)).state, 'damaged');

  const other = await generatePublisherKey();
  const unpinned = await verifyPublished(doc, bytes, await pinnedKeys([other.publicKey]));
  assert.equal(unpinned.state, 'unpinned');
  assert.match(unpinned.reason, new RegExp(`publisher key ${key.keyId}, which this site does not pin`));

  // Every field a person is shown is signed: an edited date or notebook, a swapped key id.
  for (const edit of [{ computed: '2001-01-01T00:00:00.000Z' }, { notebook: 'other.ipynb' }, { variables: 1 }]) {
    assert.equal((await verifyPublished({ ...doc, ...edit }, bytes, pins)).state, 'invalid', JSON.stringify(edit));
  }
  const forged = { ...doc, keyId: other.keyId };
  assert.equal((await verifyPublished(forged, bytes, await pinnedKeys([key.publicKey, other.publicKey]))).state, 'invalid');
  for (const junk of [null, 'text', { format: 'x' }, { ...doc, signature: '!!' }, { ...doc, v: 2 }]) {
    assert.equal((await verifyPublished(junk, bytes, pins)).state, 'invalid');
  }

  // A visitor's own store: the trusted state taken in as its own, restored with no cell run.
  const visitor = path.join(dir, 'visitor');
  const imported = await runCli(['import', paths.checkpoint, '--name', 'warm', '--trust', '--store', visitor], { cwd: dir });
  assert.equal(imported.code, 0, imported.stderr);
  const restored = await runCli(['restore', 'warm', '--store', visitor, '-c', 'print(f(2), p.norm(), total)'], { cwd: dir });
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /20 5\.0 6/);
});

test('the offer of a published state says what it holds in one helper for the demo and the extension', () => {
  const at = (ms) => `T${ms}`;
  const computed = '2026-01-02T03:04:05.000Z';
  assert.equal(publishedSummary({ variables: 7, computed }, at), `7 variables, computed T${Date.parse(computed)}`);
  // fields from the network are checked, never shown as they came
  assert.equal(publishedSummary({ variables: '7<b>', computed: 'soon' }, at), '? variables, computed at an unknown time');
  assert.equal(publishedSummary(null, at), '? variables, computed at an unknown time');
});
