// One restore path, the CLI's leg: `elastic-lite restore [NAME] --json` in the five situations
// of tests/py/test_kernel_session.py (empty store, ok, missing name, foreign, damaged) gives
// host.restore's report, the same words (tests/vectors/host-words.json, which the Python test
// and the demo's test read too) and the same fields, and the line a person reads is that
// problem's message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { DirectoryStore } from '../../js/store/directory.mjs';
import { runCli, tempWorkdir, messageLines, NOTEBOOKS } from './cli-helpers.mjs';
import { flipped } from './cli-verify-damage.mjs';

const WORDS = JSON.parse(fs.readFileSync(new URL('../vectors/host-words.json', import.meta.url), 'utf8')).restore;

/** Whether a restore's outcome says what the vector wants (tests/py/test_kernel_session.py said). */
function said(ok, problems, want) {
  if (want.ok) return ok && problems.length === 0;
  const p = problems[0] ?? {};
  const text = p.message ?? '';
  return !ok && p.kind === want.kind && p.code === want.code && ('message' in want ? text === want.message
    : 'contains' in want ? text.includes(want.contains) : new RegExp(want.pattern).test(text));
}

/** The fields of every restore report (docs/INTERFACES.md, "Report schema"). */
const FIELDS = ['op', 'ok', 'problems', 'warnings', 'timings', 'name', 'source', 'size', 'restored',
  'recomputed', 'modules', 'skipped', 'inspection', 'replay', 'trust', 'adopted'];

test('restore --json: the five situations in the words and fields of host.restore', { timeout: 600_000 }, async () => {
  const cwd = await tempWorkdir();
  const store = new DirectoryStore(path.join(cwd, '.elastic-lite'));
  const situations = {
    'empty store': [],
    ok: ['mine'],
    'missing name': ['nope'],
    foreign: ['theirs'],
    damaged: ['hurt'],
  };
  const seen = [];
  for (const want of WORDS) {
    if (want.situation === 'ok') { // the store's own (signed, by run), whole; a copy; one not signed: foreign
      const run = await runCli(['run', path.join(NOTEBOOKS, 'basic.ipynb'), '--name', 'mine'], { cwd });
      assert.equal(run.code, 0, run.stderr);
      const { bytes, meta } = await store.get('mine');
      await store.put('hurt', bytes, meta, { sign: true });
      await store.put('theirs', bytes, { ...meta, imported: 'theirs.elc' });
    }
    if (want.situation === 'damaged') { // a byte of a record's stream changed where the store keeps it
      const entry = await store.getEntry('hurt');
      const file = path.join(store.dir, 'records', entry.records[0].key);
      await fsp.writeFile(file, flipped(new Uint8Array(await fsp.readFile(file)), 60));
    }
    const r = await runCli(['restore', ...situations[want.situation], '--json'], { cwd });
    // the one report schema: host.restore's report (with `code`, -c's cell), or the failure the
    // CLI found before Python (a name neither in the store nor a file) in the same schema
    const report = JSON.parse(r.stdout);
    assert.equal(report.op, 'restore', want.situation);
    assert.ok(said(report.ok, report.problems, want), `${want.situation}: ${JSON.stringify(report.problems)}`);
    const python = want.situation !== 'missing name';
    for (const k of python ? [...FIELDS, 'code'] : FIELDS.slice(0, 5)) assert.ok(k in report, `${want.situation}: ${k}`);
    // exit 0 when anything came back, 3 for a name not found, else 1 with the problem's message
    const code = want.ok || report.restored?.length ? 0 : want.code === 'not-found' ? 3 : 1;
    assert.equal(r.code, code, `${want.situation}: ${r.stderr}`);
    if (code !== 0) {
      const line = messageLines(r.stderr).filter((l) => l.startsWith('elastic-lite: ')).at(-1) ?? '';
      assert.ok(line.includes(report.problems[0].message.replace(/\s+/g, ' ').trim()), `${want.situation}: ${r.stderr}`);
    }
    seen.push(want.situation);
  }
  assert.deepEqual(seen, ['empty store', 'ok', 'missing name', 'foreign', 'damaged']);
});
