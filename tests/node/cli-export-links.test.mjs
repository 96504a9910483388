// `export` never writes through a link: in a folder others can write, a link planted where the
// temporary file goes (its name used to be predictable: .NAME.<pid>.tmp) or at the target
// itself must not let the export overwrite the file it points to. No Python needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { writeFileAtomic } from '../../js/cli/files.mjs';
import { runCli, tempWorkdir } from './cli-helpers.mjs';

const VICTIM_TEXT = 'the victim file\n';

async function victimIn(dir) {
  const victim = path.join(dir, 'victim.txt');
  await fs.writeFile(victim, VICTIM_TEXT);
  return victim;
}

test('the temporary file is made exclusively: a link at the old predictable name is not followed', async () => {
  const cwd = await tempWorkdir();
  const victim = await victimIn(cwd);
  const target = path.join(cwd, 'out.elc');
  const planted = path.join(cwd, `.out.elc.${process.pid}.tmp`);
  await fs.symlink(victim, planted);
  await writeFileAtomic(target, new Uint8Array([1, 2, 3]));
  assert.equal(await fs.readFile(victim, 'utf8'), VICTIM_TEXT, 'the file the link points to is untouched');
  assert.deepEqual([...await fs.readFile(target)], [1, 2, 3]);
  assert.equal((await fs.lstat(target)).isFile(), true, 'the target is a regular file of its own');
  assert.equal(await fs.readlink(planted), victim, 'the planted link is left alone');
  assert.deepEqual((await fs.readdir(cwd)).filter((f) => f.endsWith('.tmp')), [path.basename(planted)], 'no temporary file left');
});

test('export --force over a link replaces the link, never the file it points to', async () => {
  const cwd = await tempWorkdir();
  const store = new DirectoryStore(path.join(cwd, '.elastic-lite'));
  const bytes = new Uint8Array(500).map((_, i) => i % 7);
  await store.put('run1', bytes, {});
  const victim = await victimIn(cwd);
  await fs.symlink(victim, path.join(cwd, 'out.elc'));
  const r = await runCli(['export', 'run1', 'out.elc', '--force'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(await fs.readFile(victim, 'utf8'), VICTIM_TEXT);
  assert.equal((await fs.lstat(path.join(cwd, 'out.elc'))).isFile(), true);
  assert.deepEqual(new Uint8Array(await fs.readFile(path.join(cwd, 'out.elc'))), bytes);
});
