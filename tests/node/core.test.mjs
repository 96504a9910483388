// js/core.mjs against the real build/wasm/elastic_lite.wasm (run `npm run build` first).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import zlib from 'node:zlib';
import { loadCore, CoreError } from '../../js/core.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WASM = path.join(ROOT, 'build/wasm/elastic_lite.wasm');
const FIXTURES = path.join(ROOT, 'wasm/tests/fixtures');
const core = await loadCore();

test('the .wasm imports nothing and loads from a path, a file URL, bytes and a Module', async () => {
  const bytes = await readFile(WASM);
  const mod = new WebAssembly.Module(bytes);
  assert.deepEqual(WebAssembly.Module.imports(mod), []);
  for (const src of [WASM, pathToFileURL(WASM), pathToFileURL(WASM).href, bytes, mod]) {
    const c = await loadCore(src);
    assert.equal(c.version, '0.1.0');
  }
  await assert.rejects(loadCore(path.join(ROOT, 'no-such.wasm')), CoreError);
  await assert.rejects(loadCore(new Uint8Array([0, 1, 2, 3])), /cannot load the Elastic Lite core/);
});

test('writer and inspect: records, names, serializers, globals, abort', () => {
  const w = core.newWriter({ producer: 'elastic-lite 0.1.0', python: '3.14.2', createdMs: 1764680000000 });
  const od = Buffer.from('80049529000000000000008c0b636f6c6c656374696f6e73948c0b4f72646572656444696374949394295294' +
    '8c016194 4b01 732e'.replace(/ /g, ''), 'hex');
  w.beginRecord(['x', 'ÿ名']);
  w.append(od.subarray(0, 10));
  w.append(od.subarray(10));
  w.endRecord('cloudpickle');
  w.beginRecord(['failed']);
  w.append(new Uint8Array(1000).fill(7));
  w.abortRecord();
  w.beginRecord(['failed']);
  w.append(od);
  w.endRecord('dill');
  assert.equal(w.recordCount, 2);
  const file = w.finish();
  w.free();
  w.free(); // twice is harmless
  const r = core.inspect(file);
  assert.equal(r.ok, true);
  assert.equal(r.error, null);
  assert.equal(r.format_version, 2);
  assert.equal(r.producer, 'elastic-lite 0.1.0');
  assert.equal(r.python, '3.14.2');
  assert.equal(r.created_ms, 1764680000000);
  assert.equal(r.size, file.length);
  assert.deepEqual(r.records.map((x) => [x.index, x.names, x.serializer, x.ok, x.length]),
    [[0, ['x', 'ÿ名'], 'cloudpickle', true, od.length], [1, ['failed'], 'dill', true, od.length]]);
  assert.deepEqual(r.records[0].globals, [['collections', 'OrderedDict']]);
  assert.equal(r.records[0].crc32c, null);
  assert.equal(r.records[0].crc32, zlib.crc32(od).toString(16).padStart(8, '0'));
  assert.equal(r.records[0].kind, 'data');
  assert.deepEqual(Buffer.from(file.subarray(r.records[1].payload_offset, r.records[1].payload_offset + od.length)), od);
  const listed = core.inspect(file, { validate: false, headersOnly: true });
  assert.equal(listed.records[0].globals, null);
});

test('a damaged record is named with its offset; the others stay readable', () => {
  const w = core.newWriter({ python: '3.14' });
  for (const name of ['a', 'b', 'c']) {
    w.beginRecord([name]);
    w.append(new Uint8Array([0x80, 0x04, 0x4e, 0x2e])); // PROTO 4, NONE, STOP
    w.endRecord('pickle');
  }
  const file = w.finish();
  w.free();
  const good = core.inspect(file);
  const b = good.records[1];
  file[b.payload_offset + 2] ^= 0x01;
  const bad = core.inspect(file);
  assert.equal(bad.ok, false);
  assert.deepEqual(bad.records.map((x) => x.ok), [true, false, true]);
  assert.equal(bad.records[1].error.record, 1);
  assert.equal(bad.records[1].error.offset, b.payload_offset);
  assert.match(bad.records[1].error.message, /record 1 at offset \d+: payload checksum mismatch/);
  assert.throws(() => core.verify(file), (e) => e instanceof CoreError && e.record === 1 &&
    e.offset === b.payload_offset && e.report.records.length === 3);
  // truncated: no footer, records found by scanning
  const cut = core.inspect(file.subarray(0, file.length - 5));
  assert.equal(cut.ok, false);
  assert.match(cut.error.message, /truncated/);
  assert.equal(cut.records.length, 3);
  // not a checkpoint at all
  assert.match(core.inspect(new TextEncoder().encode('{"json": true}')).error.message, /not an Elastic Lite checkpoint/);
});

test('validatePickle accepts real pickle/cloudpickle/dill streams and lists their globals', async () => {
  const names = (await readdir(FIXTURES)).filter((n) => n.endsWith('.pkl'));
  assert.ok(names.length >= 90);
  for (const n of names) {
    const r = core.validatePickle(await readFile(path.join(FIXTURES, n)));
    assert.equal(r.ok, true, `${n}: ${JSON.stringify(r.error)}`);
    const want = JSON.parse(await readFile(path.join(FIXTURES, n.replace(/\.pkl$/, '.globals.json')), 'utf8'));
    assert.deepEqual(r.globals, want, n);
  }
});

test('hostile streams get a clear error with offset and opcode', () => {
  const huge = new Uint8Array([0x80, 0x04, 0x8e, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x2e]);
  const r = core.validatePickle(huge);
  assert.equal(r.ok, false);
  assert.deepEqual([r.error.offset, r.error.opcode], [2, 'BINBYTES8']);
  assert.match(r.error.message, /length 9223372036854775808 runs past the end/);
  const unk = core.validatePickle(new Uint8Array([0x80, 0x04, 0xff, 0x2e]));
  assert.match(unk.error.message, /unknown opcode 0xff at offset 2/);
  const deep = new Uint8Array(200001).fill(0x28); // 200,000 MARKs then NONE
  deep[200000] = 0x4e;
  assert.match(core.validatePickle(deep).error.message, /without STOP/);
  assert.match(core.validatePickle(new Uint8Array()).error.message, /empty stream/);
});

test('API misuse throws CoreError with the core message', () => {
  const w = core.newWriter();
  assert.throws(() => w.append(new Uint8Array(3)), /no record is open; call begin_record first/);
  assert.throws(() => w.endRecord('cloudpickle'), /no record is open to end/);
  w.beginRecord(['x']);
  assert.throws(() => w.beginRecord(['y']), /already open/);
  assert.throws(() => w.endRecord('marshal'), /unknown serializer/);
  assert.throws(() => w.endRecord(9), /unknown serializer 9/);
  assert.throws(() => w.finish(), /still open/);
  assert.throws(() => w.beginRecord(['a\0b']), CoreError);
  w.free();
  assert.throws(() => w.append(new Uint8Array(1)), /already freed/);
  assert.throws(() => core.inspect('not bytes'), CoreError);
});

test('sink: nested marks, rewind, commit, limit, large and many writes', () => {
  const s = core.newSink();
  s.append(new TextEncoder().encode('head'));
  const m0 = s.mark();
  s.append(new TextEncoder().encode('AAAA'));
  const m1 = s.mark();
  s.append(new Uint8Array(10000));
  assert.equal(s.depth, 2);
  s.rewind(m1);
  assert.equal(s.size, 8);
  s.commit(m0);
  assert.equal(new TextDecoder().decode(s.bytes()), 'headAAAA');
  assert.throws(() => s.rewind(m0), /mark 0 is not open/);
  const small = new Uint8Array([1, 2, 3]);
  for (let i = 0; i < 200000; i++) s.append(small);
  assert.equal(s.size, 8 + 600000);
  const big = new Uint8Array(64 << 20).fill(9); // grows wasm memory: views must be refreshed
  s.append(big);
  assert.equal(s.size, 8 + 600000 + big.length);
  assert.equal(s.bytes()[s.size - 1], 9);
  s.setLimit(s.size + 10);
  assert.throws(() => s.append(new Uint8Array(11)), /sink limit reached/);
  s.free();
});

test('a multi-megabyte record round-trips through writer and inspect', () => {
  const w = core.newWriter();
  const payload = new Uint8Array(30 << 20);
  payload.set([0x80, 0x05, 0x95]);
  // PROTO 5, then BINBYTES8 of the rest, STOP (no frame: a frameless stream is valid)
  const body = payload.length - 2 - 9 - 1;
  const hdr = new DataView(payload.buffer);
  payload[2] = 0x8e;
  hdr.setBigUint64(3, BigInt(body), true);
  payload[payload.length - 1] = 0x2e;
  w.beginRecord(['blob']);
  w.append(payload);
  w.endRecord('pickle');
  const file = w.finish();
  w.free();
  const r = core.inspect(file);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.records[0].length, payload.length);
});

test('damaged checkpoints: every report is valid JSON, never ok, and untouched records survive', () => {
  const w = core.newWriter({ producer: 'p', python: '3' });
  const payload = new Uint8Array([0x80, 0x04, 0x8c, 0x01, 0x61, 0x94, 0x2e]);
  for (const n of ['a', 'b', 'c', 'd']) {
    w.beginRecord([n, `${n}2`]);
    w.append(payload);
    w.endRecord('dill');
  }
  const file = w.finish();
  w.free();
  const good = core.inspect(file);
  let s = 12345;
  const rnd = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  for (let i = 0; i < 3000; i++) {
    const m = Uint8Array.from(file);
    const k = 1 + (rnd() % 3);
    for (let j = 0; j < k; j++) m[rnd() % m.length] = rnd() & 0xff;
    const changed = m.some((b, idx) => b !== file[idx]);
    const r = core.inspect(m); // JSON.parse inside: a malformed report would throw here
    assert.equal(typeof r.ok, 'boolean');
    if (!changed) continue;
    assert.equal(r.ok, false, `damage went unnoticed: ${Buffer.from(m).toString('hex')}`);
    assert.equal(typeof r.error.message, 'string');
    // records whose bytes were not touched are listed as good, with the same names
    for (const g of good.records) {
      const end = g.offset + g.record_length;
      const touched = m.subarray(g.offset, end).some((b, idx) => b !== file[g.offset + idx]);
      if (touched) continue;
      const same = r.records.find((x) => x.offset === g.offset);
      if (r.error.message.startsWith('not an Elastic Lite') || /newer than this reader/.test(r.error.message)) continue;
      assert.ok(same && same.ok, `record at ${g.offset} lost: ${JSON.stringify(r.error)}`);
      assert.deepEqual(same.names, g.names);
    }
  }
});

test('allocation failure inside wasm is an error, not a crash, and the core keeps working', () => {
  const s = core.newSink();
  s.append(new Uint8Array([1, 2, 3]));
  const x = core.exports;
  assert.equal(x.el_sink_reserve(s.h, 0x7ff00000) >>> 0, 0); // ~2 GiB: beyond the 2 GiB memory cap
  assert.match(core._string(x.el_sink_error(s.h)), /out of memory: could not grow the sink/);
  assert.equal(s.size, 3);
  s.append(new Uint8Array([4]));
  assert.deepEqual([...s.bytes()], [1, 2, 3, 4]);
  s.free();
  assert.equal(x.el_malloc(0x7ff00000) >>> 0, 0);
  assert.equal(core.validatePickle(new Uint8Array([0x4e, 0x2e])).ok, true);
});

test('crc32 is zlib\'s CRC-32 (any size, any alignment, chained)', () => {
  const big = new Uint8Array((3 << 20) + 5).map((_, i) => (i * 2654435761) >>> 24);
  assert.equal(core.crc32(big), zlib.crc32(big));
  assert.equal(core.crc32(big.subarray(3, 1000)), zlib.crc32(big.subarray(3, 1000)));
  assert.equal(core.crc32(big.subarray(10)), zlib.crc32(big.subarray(10)));
  assert.equal(core.crc32(big.subarray(500), core.crc32(big.subarray(0, 500))), zlib.crc32(big));
  assert.equal(core.crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
  assert.equal(core.crc32(new Uint8Array()), 0);
});

test('format 2.0: kinds, out-of-band buffers at aligned offsets, parts taken as written', () => {
  const w = core.newWriter({ producer: 'elastic-lite 0.1.0', python: '3.14.2', createdMs: 5 });
  const a = new Uint8Array(1000).map((_, i) => i & 0xff);
  const b = new TextEncoder().encode('second buffer');
  w.beginRecord(['arr', 'view']);
  w.append(new Uint8Array([0x80, 0x05, 0x97, 0x97, 0x86, 0x2e])); // two NEXT_BUFFERs in a tuple
  assert.equal(w.addBuffer(a), 0);
  assert.equal(w.addBuffer({ length: b.length, crc32: zlib.crc32(b) }), 1);
  assert.equal(w.endRecord('cloudpickle', { crc32: zlib.crc32(new Uint8Array([0x80, 0x05, 0x97, 0x97, 0x86, 0x2e])) }), 0);
  const first = w.take();
  assert.deepEqual(first.map((p) => [p.kind, p.record, p.buffer]),
    [['bytes', 'head', null], ['bytes', 0, null], ['buffer', 0, 0], ['bytes', 0, null], ['buffer', 0, 1], ['bytes', 0, null]]);
  assert.equal(first[2].bytes, a); // handed back by reference: never copied
  assert.equal(first[4].bytes, null); // given by length: the caller writes it
  first[4].bytes = b;
  for (const p of first) assert.equal(p.offset % (p.kind === 'buffer' ? 64 : 1), 0);
  w.beginRecord([], { kind: 'manifest' });
  w.append(new TextEncoder().encode('{"version": 2}'));
  assert.throws(() => w.addBuffer(a), /only data records/);
  assert.throws(() => w.endRecord('pickle'), /serializer must be 0/);
  assert.equal(w.endRecord(null), 1);
  assert.equal(w.recordOffset(1), w.recordOffset(0) + w.recordLength(0));
  const rest = w.finish();
  w.free();
  const file = new Uint8Array([...first.flatMap((p) => [...p.bytes]), ...rest]);
  const r = core.inspect(file);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.records.map((x) => [x.kind, x.names, x.serializer, x.offset % 64, x.record_length % 64]),
    [['data', ['arr', 'view'], 'cloudpickle', 0, 0], ['manifest', [], null, 0, 0]]);
  assert.deepEqual(r.records[0].buffers.map((x) => [x.length, x.ok, x.offset % 64]), [[1000, true, 0], [b.length, true, 0]]);
  assert.deepEqual(file.subarray(r.records[0].buffers[0].offset, r.records[0].buffers[0].offset + 1000), a);
  assert.equal(new TextDecoder().decode(file.subarray(r.records[1].payload_offset, r.records[1].payload_offset + r.records[1].length)), '{"version": 2}');
  assert.equal(r.index_offset, file.length - 32 - 12 - 32);
  // a damaged buffer is named by record, buffer and offset, with a code
  file[r.records[0].buffers[1].offset + 2] ^= 1;
  const bad = core.inspect(file);
  assert.equal(bad.records[0].buffers[1].ok, false);
  assert.equal(bad.error.code, 'checksum');
  assert.match(bad.error.message, /record 0 at offset 64: buffer 1 checksum mismatch/);
  assert.throws(() => core.verify(file), (e) => e instanceof CoreError && e.code === 'checksum' && e.record === 0);
});

test('stored records: an unchanged record is added by length, the container stays whole', () => {
  const stream = new Uint8Array([0x80, 0x04, 0x4b, 0x07, 0x2e]);
  const w1 = core.newWriter({ createdMs: 1 });
  w1.beginRecord(['x']); w1.append(stream); w1.endRecord('pickle');
  const one = w1.finish();
  w1.free();
  const rec = core.inspect(one).records[0];
  const bytes = one.subarray(rec.offset, rec.offset + rec.record_length);
  const w2 = core.newWriter({ producer: 'another, longer producer name that moves the first record', createdMs: 2 });
  assert.throws(() => w2.addStoredRecord(100), /multiple of 64/);
  assert.equal(w2.addStoredRecord(bytes.length), 0);
  w2.beginRecord(['y']); w2.append(stream); w2.endRecord('dill');
  assert.throws(() => w2.finish(), /cannot join a stored part .*\(record 0\); use finish\(\{ join: false \}\)/);
  w2.free();
  const w3 = core.newWriter({ producer: 'another, longer producer name that moves the first record', createdMs: 2 });
  w3.addStoredRecord(bytes.length);
  w3.beginRecord(['y']); w3.append(stream); w3.endRecord('dill');
  const parts = [...w3.take(), ...w3.finish({ join: false })];
  w3.free();
  assert.deepEqual(parts.map((p) => [p.kind, p.record]), [['bytes', 'head'], ['stored', 0], ['bytes', 1], ['bytes', 'tail']]);
  parts[1].bytes = bytes; // from the store
  const file = new Uint8Array(parts.flatMap((p) => [...p.bytes]));
  const r = core.inspect(file);
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.records.map((x) => [x.names, x.serializer]), [[['x'], 'pickle'], [['y'], 'dill']]);
  assert.notEqual(r.records[0].offset, rec.offset); // elsewhere in this file, same bytes
  assert.deepEqual(file.subarray(r.records[0].offset, r.records[0].offset + r.records[0].record_length), bytes);
});

test('the committed format-1.0 checkpoints still read (the reader of every later version)', async () => {
  for (const name of ['cpython-3.11.elc', 'pyodide-3.14.elc']) {
    const r = core.inspect(await readFile(path.join(FIXTURES, 'format-1.0', name)));
    assert.equal(r.ok, true, `${name}: ${JSON.stringify(r.error)}`);
    assert.equal(r.format_version, 1);
    assert.deepEqual(r.records.map((x) => x.names), [['scale'], ['triple'], ['Point'], ['p'], ['shared', 'alias'], ['lock'], ['__elastic_lite_manifest__']]);
    assert.deepEqual(r.records.map((x) => x.serializer), ['cloudpickle', 'cloudpickle', 'cloudpickle', 'cloudpickle', 'cloudpickle', 'dill', 'pickle']);
    assert.ok(r.records.every((x) => x.kind === 'data' && x.crc32 === null && /^[0-9a-f]{8}$/.test(x.crc32c) && x.buffers.length === 0));
    assert.deepEqual(r.records[5].globals, [['dill._dill', '_create_lock']]);
  }
});

test('pull reader: read() gives inspect()\'s report, range by range, never asking for a buffer\'s bytes', async () => {
  const dirs = [path.join(ROOT, 'wasm/fuzz/corpus/container'), path.join(FIXTURES, 'format-1.0')];
  let files = 0;
  for (const dir of dirs) {
    for (const name of (await readdir(dir)).filter((n) => n.endsWith('.elc') || n.startsWith('checkpoint-'))) {
      const bytes = new Uint8Array(await readFile(path.join(dir, name)));
      for (const opts of [{}, { validate: false }, { headersOnly: true, validate: false }]) {
        const whole = core.inspect(bytes, opts);
        const asked = [];
        const source = { size: bytes.length, read: (o, n) => { asked.push([o, n]); return bytes.slice(o, o + n); } };
        for (const chunk of [64, 1000]) {
          asked.length = 0;
          assert.deepEqual(core.read(source, { ...opts, chunk, crc32: zlib.crc32 }), whole, `${name} ${JSON.stringify(opts)} chunk ${chunk}`);
        }
        assert.deepEqual(await core.readAsync({ size: bytes.length, read: async (o, n) => bytes.slice(o, o + n) }, opts), whole);
        assert.deepEqual(core.read(bytes, opts), whole); // core CRC (chunked copies), Uint8Array source
      }
      files++;
    }
  }
  assert.ok(files >= 18);
  // a checkpoint with a 3 MB out-of-band buffer: the reader asks for its CRC, never its bytes
  const w = core.newWriter();
  const big = new Uint8Array(3 << 20).fill(5);
  w.beginRecord(['arr']); w.append(new Uint8Array([0x80, 0x05, 0x97, 0x2e])); w.addBuffer(big); w.endRecord('pickle');
  const file = w.finish();
  w.free();
  const reads = [];
  const crcs = [];
  const report = core.read({ size: file.length, read: (o, n) => { reads.push(n); return file.subarray(o, o + n); } },
    { chunk: 4096, crc32: (u8) => { crcs.push(u8.length); return zlib.crc32(u8); } });
  assert.equal(report.ok, true, JSON.stringify(report.error));
  assert.ok(crcs.includes(big.length));
  assert.ok(Math.max(...reads.filter((n, i) => n !== big.length || i < 0)) < 5000, `largest read ${Math.max(...reads)}`);
  assert.deepEqual(report, core.inspect(file));
});

test('validateStream(): the resumable validator in windows gives validatePickle()\'s report', async () => {
  const names = (await readdir(FIXTURES)).filter((n) => n.endsWith('.pkl'));
  for (const n of names) {
    const bytes = await readFile(path.join(FIXTURES, n));
    const whole = core.validatePickle(bytes);
    for (const window of [1, 7, 4096]) assert.deepEqual(core.validateStream(bytes, { window }), whole, `${n} window ${window}`);
  }
  const bad = new Uint8Array([0x80, 0x04, 0x8c, 0x03, 0x61, 0xff, 0x62, 0x2e]);
  assert.deepEqual(core.validateStream(bad, { window: 2 }), core.validatePickle(bad));
  assert.equal(core.validateStream(bad, { window: 2 }).error.code, 'pickle');
});
