// What a store has to tell once reaches the person: a CLI command that reads entries signed with
// a signing key that has since been replaced prints the store's plain notice as a warning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { formatTwo, payload } from './store-contract.mjs';
import { runCli, tempWorkdir } from './cli-helpers.mjs';

test('a replaced signing key is said once by the command that meets it', async () => {
  const dir = path.join(await tempWorkdir('el-cli-notices-'), 'store');
  const bytes = formatTwo([payload(3000, 1)], { seed: 1 }).bytes;
  await new DirectoryStore(dir).put('mine', bytes, {}, { sign: true });
  await fs.rm(path.join(dir, 'signing-key'));
  await new DirectoryStore(dir).put('new', formatTwo([payload(300, 2)], { seed: 2 }).bytes, {}, { sign: true });
  const res = await runCli(['verify', 'mine', '--store', dir]);
  const warnings = res.stderr.split('\n').filter((l) => l.includes('The signing key of'));
  assert.equal(warnings.length, 1, res.stderr);
  assert.match(warnings[0], /^elastic-lite: warning: The signing key of the checkpoint store .* changed \(it was [0-9a-f]{16}, it is [0-9a-f]{16}\)/);
});
