// Damaged checkpoints for the verify / inspect / import tests, made from real containers: the
// 2.0 seeds of the container fuzzer (a Python snapshot with notebook code and a manifest; one
// with out-of-band buffers, a manifest and a session history) and the committed format 1.0
// fixtures. Each is damaged one way (a flipped byte in one region, a cut, a wrong major).
import fs from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './cli-helpers.mjs';

const read = async (rel) => new Uint8Array(await fs.readFile(path.join(ROOT, rel)));

export const SOURCES = {
  snapshot: 'wasm/fuzz/corpus/container/v2-snapshot.elc',
  buffers: 'wasm/fuzz/corpus/container/v2-buffers.elc',
  v1Pyodide: 'wasm/tests/fixtures/format-1.0/pyodide-3.14.elc',
  v1CPython: 'wasm/tests/fixtures/format-1.0/cpython-3.11.elc',
};

/** The source containers' bytes, by the keys of SOURCES. */
export async function sources() {
  return Object.fromEntries(await Promise.all(Object.entries(SOURCES).map(async ([k, rel]) => [k, await read(rel)])));
}

/** A copy of bytes with the byte at `at` flipped (every bit). */
export function flipped(bytes, at) {
  const b = bytes.slice();
  b[at] ^= 0xff;
  return b;
}

/** The same container claiming format major 3 (header and footer, checksums recomputed). */
export function newerMajor(core, bytes) {
  const b = bytes.slice();
  const dv = new DataView(b.buffer);
  const hlen = dv.getUint32(12, true);
  dv.setUint16(8, 3, true);
  dv.setUint32(hlen - 4, core.crc32c(b.subarray(0, hlen - 4)), true);
  const f = b.length - 32;
  dv.setUint16(f + 24, 3, true);
  dv.setUint32(f + 28, core.crc32c(b.subarray(f, f + 28)), true);
  return b;
}

/**
 * Files for each kind of damage: { file name: { bytes, expect } }, where expect says what the
 * core must find ({ code, record } of the first problem; null: whole).
 */
export function damagedFiles(core, src) {
  const snap = core.read(src.snapshot);
  const buf = core.read(src.buffers);
  const v1 = core.read(src.v1Pyodide);
  const rec = (info, pred) => info.records.find(pred);
  const f = rec(snap, (r) => r.names.includes('f'));
  const P = rec(snap, (r) => r.names.includes('P'));
  const arrays = rec(buf, (r) => r.buffers.length > 1);
  const manifest = rec(buf, (r) => r.kind === 'manifest');
  const triple = rec(v1, (r) => r.names.includes('triple'));
  return {
    'whole-2.0.elc': { bytes: src.snapshot, expect: null },
    'whole-buffers.elc': { bytes: src.buffers, expect: null },
    'record-stream.elc': { bytes: flipped(src.snapshot, f.payload_offset + (f.length >> 1)), expect: { code: 'checksum', record: f.index } },
    'record-header.elc': { bytes: flipped(src.snapshot, P.offset + 20), expect: { record: P.index } },
    'buffer.elc': { bytes: flipped(src.buffers, arrays.buffers[1].offset + 1), expect: { code: 'checksum', record: arrays.index } },
    'manifest.elc': { bytes: flipped(src.buffers, manifest.payload_offset + 2), expect: { code: 'checksum', record: manifest.index } },
    'index.elc': { bytes: flipped(src.snapshot, snap.index_offset + 10), expect: { code: 'checksum', record: null } },
    'footer.elc': { bytes: flipped(src.snapshot, src.snapshot.length - 12), expect: { record: null } },
    'cut.elc': { bytes: src.buffers.subarray(0, 700), expect: { code: 'truncated' } },
    'notes.txt': { bytes: new TextEncoder().encode('This is a text file, not a checkpoint.\n'.repeat(4)), expect: { code: 'not-checkpoint' } },
    'empty.elc': { bytes: new Uint8Array(0), expect: { code: 'empty' } },
    'newer.elc': { bytes: newerMajor(core, src.snapshot), expect: { code: 'newer-format' } },
    'format-1.0.elc': { bytes: src.v1Pyodide, expect: null },
    'format-1.0-cpython.elc': { bytes: src.v1CPython, expect: null },
    'format-1.0-flipped.elc': { bytes: flipped(src.v1Pyodide, triple.payload_offset + 7), expect: { code: 'checksum', record: triple.index } },
  };
}
