// The C core's problem codes are public (wasm/include/elastic_lite.h, EL_CODE_*) and hosts
// classify damage by them: the JS list (js/shared/report.mjs CORE_CODES) is the header's, and
// every code the core gives for real damaged files (each region of a 2.0 file flipped, cut,
// a newer major, not a checkpoint) is one of them. No Python needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadCore } from '../../js/core.mjs';
import { CORE_CODES } from '../../js/shared/report.mjs';
import { ROOT } from './cli-helpers.mjs';
import { damagedFiles, sources } from './cli-verify-damage.mjs';

const header = (file) => fs.readFileSync(path.join(ROOT, 'wasm', file), 'utf8');
const codesIn = (text) => [...text.matchAll(/^#define EL_CODE_\w+ "([^"]+)"/gm)].map((m) => m[1]);

test('the public header names every problem code, and JS knows the same list', () => {
  const pub = codesIn(header('include/elastic_lite.h'));
  assert.deepEqual([...pub].sort(), [...CORE_CODES].sort());
  assert.deepEqual(codesIn(header('src/internal.h')), [], 'no private copy of the codes');
});

test('every code the core gives for damaged files is a public one', async () => {
  const core = await loadCore();
  const files = damagedFiles(core, await sources());
  const seen = new Set();
  for (const [name, { bytes }] of Object.entries(files)) {
    const info = core.inspect(bytes, { validate: true });
    for (const err of [info.error, ...(info.records ?? []).map((r) => r.error)].filter(Boolean)) {
      assert.ok(CORE_CODES.includes(err.code), `${name}: "${err.code}" is not a public code`);
      seen.add(err.code);
    }
  }
  for (const code of ['not-checkpoint', 'newer-format', 'truncated', 'checksum']) assert.ok(seen.has(code), `${code} seen`);
});
