// Differential test of the WebAssembly validator against CPython's pickletools (the reference
// the issue names). Thousands of mutants of real pickle/cloudpickle/dill streams (bit flips,
// byte changes, cuts, splices) go through validatePickle; every stream it ACCEPTS must also
// pass pickletools.dis (which checks stack, marks and memo) and list exactly the globals an
// independent genops-based tracer finds. The validator may be stricter than pickletools
// (frames, trailing bytes, STACK_GLOBAL on computed strings), never looser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { loadCore } from '../../js/core.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = path.join(ROOT, 'wasm/tests/fixtures');
const PY = path.join(ROOT, '.venv/bin/python');

const REFERENCE = `
import base64, io, json, pickletools, sys
sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'wasm/tests'))})
from make_fixtures import reference_globals
out = []
for line in sys.stdin:
    data = base64.b64decode(line)
    try:
        pickletools.dis(data, out=io.StringIO())
        out.append({"ok": True, "globals": reference_globals(data)})
    except UnicodeDecodeError as e:
        # pickletools (3.11) reads GLOBAL/INST/PERSID lines as ASCII; the unpickler as UTF-8
        out.append({"ok": e.encoding == "ascii" and "skip", "error": f"UnicodeDecodeError: {e}"})
    except Exception as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
`;

function rng(seed) { // xorshift32: the same mutants on every run
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
}

function mutate(src, r) {
  const b = Uint8Array.from(src);
  const at = r() % b.length;
  switch (r() % 6) {
    case 0: b[at] ^= 1 << (r() % 8); return b;
    case 1: b[at] = r() & 0xff; return b;
    case 2: return b.subarray(0, at);
    case 3: { const cut = 1 + (r() % 8); return Uint8Array.from([...b.subarray(0, at), ...b.subarray(Math.min(b.length, at + cut))]); }
    case 4: { const k = r() % b.length; return Uint8Array.from([...b.subarray(0, at), ...b.subarray(k, k + 1 + (r() % 16)), ...b.subarray(at)]); }
    default: { // a random opcode-ish byte inserted
      const ops = [0x28, 0x2e, 0x30, 0x31, 0x32, 0x4e, 0x5d, 0x29, 0x7d, 0x93, 0x94, 0x85, 0x86, 0x87, 0x52, 0x62, 0x65, 0x73, 0x75, 0x61];
      return Uint8Array.from([...b.subarray(0, at), ops[r() % ops.length], ...b.subarray(at)]);
    }
  }
}

test('every stream the validator accepts passes pickletools.dis with the same globals', async () => {
  const core = await loadCore();
  const names = (await readdir(FIXTURES)).filter((n) => n.endsWith('.pkl')).sort();
  const sources = [];
  for (const n of names) {
    const b = await readFile(path.join(FIXTURES, n));
    if (b.length <= 4096) sources.push(b);
  }
  const r = rng(20261202);
  const accepted = [];
  let rejected = 0;
  for (let i = 0; i < 6000; i++) {
    const m = mutate(sources[i % sources.length], r);
    const v = core.validatePickle(m);
    if (v.ok) accepted.push({ m, v });
    else {
      rejected++;
      assert.equal(typeof v.error.message, 'string');
      assert.ok(Number.isInteger(v.error.offset) && v.error.offset <= m.length);
    }
  }
  // the originals too
  for (const s of sources) accepted.push({ m: s, v: core.validatePickle(s) });
  assert.ok(rejected > 1000 && accepted.length > 300, `accepted ${accepted.length}, rejected ${rejected}`);
  const input = accepted.map(({ m }) => Buffer.from(m).toString('base64')).join('\n') + '\n';
  const ref = JSON.parse(execFileSync(PY, ['-c', REFERENCE], { input, encoding: 'utf8', maxBuffer: 1 << 28 }));
  let memoRedefined = 0, asciiOnly = 0;
  ref.forEach((res, i) => {
    const { m, v } = accepted[i];
    if (!res.ok && /memo key .* already defined/.test(res.error)) { memoRedefined++; return; } // CPython allows it too
    if (res.ok === 'skip') { asciiOnly++; return; }
    assert.ok(res.ok, `validator accepted a stream pickletools rejects (${res.error}): ${Buffer.from(m).toString('hex')}`);
    assert.deepEqual(v.globals, res.globals, `globals differ for ${Buffer.from(m).toString('hex')}`);
  });
  assert.ok(memoRedefined + asciiOnly < accepted.length / 4, `${memoRedefined} + ${asciiOnly} skipped`);
});

test('the validator knows exactly the opcodes pickletools defines, by the same names', async () => {
  const core = await loadCore();
  const ref = JSON.parse(execFileSync(PY, ['-c',
    'import json, pickletools; print(json.dumps({ord(o.code.encode("latin-1")): o.name for o in pickletools.opcodes}))'],
  { encoding: 'utf8' }));
  assert.equal(Object.keys(ref).length, 68);
  for (let b = 0; b < 256; b++) {
    const r = core.validatePickle(new Uint8Array([b, 0xff]));
    const unknown = r.error.offset === 0 && /unknown opcode/.test(r.error.message);
    assert.equal(!unknown, b in ref, `byte 0x${b.toString(16)}: ${r.error.message}`);
    if (b in ref && r.error.offset === 0) assert.equal(r.error.opcode, ref[b], `byte 0x${b.toString(16)}`);
  }
});
