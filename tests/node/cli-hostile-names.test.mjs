// Names from a file are shown, not interpreted: a variable named with terminal control
// characters (the one that hid the consent screen's warnings) goes through `inspect FILE` and
// `restore FILE` of the real CLI, and nothing it holds reaches the terminal raw. One Pyodide
// per command (run, inspect, restore).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { runCli, tempWorkdir } from './cli-helpers.mjs';

// Carriage return + "erase line", a fake harmless row, then "hidden text" for what follows.
const HOSTILE = 'data\r\x1b[2K  ok  builtins.dict  data\x1b[8m';
const SHOWN = 'data\\x0d\\x1b[2K  ok  builtins.dict  data\\x1b[8m';
// Every C0 control but the newline, DEL, C1, bidi controls: none may reach the terminal.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/u;

const cell = (source) => ({ cell_type: 'code', metadata: {}, source, outputs: [], execution_count: null });

let cwd;
let made;
before(async () => {
  cwd = await tempWorkdir();
  await fs.writeFile(path.join(cwd, 'hostile.ipynb'), JSON.stringify({
    nbformat: 4, metadata: {},
    cells: [
      cell('import os\nclass Evil:\n    def __reduce__(self):\n        return (os.system, ("echo pwned",))\nevil = Evil()'),
      cell(`globals()[${JSON.stringify(HOSTILE)}] = {"a": 1}\nplain = [1, 2]`),
    ],
  }));
  made = await runCli(['run', 'hostile.ipynb', '--name', 'h'], { cwd });
  if (made.code === 0) await runCli(['export', 'h', 'hostile.elc'], { cwd });
});

test('inspect FILE: a hostile variable name cannot hide the runs-code row, the warning or the foreign notice', async () => {
  assert.equal(made.code, 0, made.stderr);
  assert.doesNotMatch(made.stdout, RAW_CONTROL, 'run\'s table shows the name escaped');
  const r = await runCli(['inspect', './hostile.elc'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, RAW_CONTROL, r.stdout);
  assert.doesNotMatch(r.stderr, RAW_CONTROL, r.stderr);
  assert.ok(r.stdout.includes(SHOWN), `the name is shown escaped:\n${r.stdout}`);
  assert.match(r.stdout, /^⚠ runs code\s+\S*system/m, 'the runs-code row');
  assert.match(r.stdout, /^⚠ 1 record would call code-running or unknown globals when restored/m, 'the warning');
  assert.match(r.stdout, /^This checkpoint is foreign /m, 'the foreign notice');
});

test('restore FILE --data-only: the report names the hostile variable escaped', async () => {
  const r = await runCli(['restore', './hostile.elc', '--data-only'], { cwd });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, RAW_CONTROL, r.stdout);
  assert.doesNotMatch(r.stderr, RAW_CONTROL, r.stderr);
  assert.ok(r.stdout.includes(SHOWN), r.stdout);
});
