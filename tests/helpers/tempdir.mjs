// Temporary directories for tests that remove themselves: every directory made here is
// deleted when the test process exits (each `node --test` file runs in its own process), pass
// or fail. scripts/test.sh runs the suites with TMPDIR pointing at an empty folder and fails
// when anything is left in it, so a test that makes its own temporary files and forgets them
// is caught.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made = new Set();
let hooked = false;

function removeAll() {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
  made.clear();
}

/** A new empty directory under the system temp folder, removed when this process exits. */
export function tempDirSync(prefix = 'el-test-') {
  if (!hooked) {
    process.once('exit', removeAll);
    hooked = true;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.add(dir);
  return dir;
}

export async function tempDir(prefix) {
  return tempDirSync(prefix);
}

/** Removes one directory made by tempDir now (e.g. a large one in a long test file). */
export function removeTempDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}
