// Loads the Elastic Lite C core (build/wasm/elastic_lite.wasm) and wraps it in a small JS API.
// One ES module for a page, a web worker and Node: the .wasm imports nothing, so a plain
// WebAssembly.instantiate works everywhere. Bytes go in and come out as Uint8Array; input is
// copied once into wasm memory, output once out of it.
//
//   const core = await loadCore();          // or loadCore(url | path | bytes | WebAssembly.Module)
//   const w = core.newWriter({ producer, python, createdMs });
//   w.beginRecord(["x", "y"]); w.append(bytes); w.addBuffer(u8); w.endRecord("cloudpickle");
//   w.take()                                // the parts written so far, in file order
//   const file = w.finish(); w.free();      // finish(): every part not taken yet, joined
//   core.inspect(file, { validate: true })  // the report of docs/INTERFACES.md
//   core.read(file | { size, read }, opts)  // the same report, pulled range by range
//   core.validatePickle(bytes)              // { ok, error, globals, protocol, buffers, size }
//
// API misuse and allocation failures throw CoreError (message from the core). A damaged
// checkpoint is not an exception: inspect() reports it; verify() throws it as a CoreError
// whose .code is the report's machine-readable error code.

const DEFAULT_WASM = new URL('../build/wasm/elastic_lite.wasm', import.meta.url);
const SERIALIZERS = { pickle: 1, cloudpickle: 2, dill: 3 };
const KINDS = { data: 1, manifest: 2, history: 3 };
const PART_KINDS = { 1: 'bytes', 2: 'buffer', 3: 'stored' };
const PART_HEAD = 0xFFFFFFFF;
const PART_TAIL = 0xFFFFFFFE;
const END_COMPUTE_CRC = 1;
const CRC_CHUNK = 1 << 20; // bytes copied into the core per el_crc32 call
const isNode = typeof process !== 'undefined' && !!process.versions?.node &&
  typeof window === 'undefined';

/** An error from the core: message as the core wrote it, plus where (when known). */
export class CoreError extends Error {
  constructor(message, { code = null, offset = null, record = null, opcode = null, report = null } = {}) {
    super(message);
    this.name = 'CoreError';
    this.code = code;
    this.offset = offset;
    this.record = record;
    this.opcode = opcode;
    if (report) this.report = report;
  }
}

async function readBytes(source) {
  let url = source;
  if (typeof source === 'string') {
    const looksLikeUrl = /^[a-z][a-z0-9+.-]*:/i.test(source) && !/^[a-z]:[\\/]/i.test(source);
    if (isNode && !looksLikeUrl) {
      const { readFile } = await import(/* webpackIgnore: true */ 'node:fs/promises');
      return readFile(source);
    }
    url = new URL(source, globalThis.location?.href ?? import.meta.url);
  }
  if (isNode && url.protocol === 'file:') {
    const { readFile } = await import(/* webpackIgnore: true */ 'node:fs/promises');
    return readFile(url);
  }
  const res = await fetch(url);
  if (!res.ok) throw new CoreError(`cannot load the core from ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/**
 * Instantiates the core from a URL, a path (Node), bytes or a compiled WebAssembly.Module.
 * @param {string|URL|ArrayBuffer|ArrayBufferView|WebAssembly.Module} [source]
 */
export async function loadCore(source = DEFAULT_WASM) {
  let instance;
  try {
    if (source instanceof WebAssembly.Module) {
      instance = await WebAssembly.instantiate(source, {});
    } else {
      const bytes = source instanceof ArrayBuffer || ArrayBuffer.isView(source)
        ? source : await readBytes(source);
      ({ instance } = await WebAssembly.instantiate(bytes, {}));
    }
  } catch (e) {
    if (e instanceof CoreError) throw e;
    throw new CoreError(`cannot load the Elastic Lite core (${source}): ${e.message}`);
  }
  return new Core(instance);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

class Core {
  constructor(instance) {
    this.exports = instance.exports;
    this.memory = instance.exports.memory;
    if (typeof this.exports._initialize === 'function') this.exports._initialize();
    this.version = this._string(this.exports.el_version());
  }

  /** A view of wasm memory (re-created when memory grows: the old buffer is detached). */
  u8() {
    if (!this._view || this._view.buffer !== this.memory.buffer) {
      this._view = new Uint8Array(this.memory.buffer);
    }
    return this._view;
  }

  _string(ptr) { // NUL-terminated UTF-8 at ptr
    const m = this.u8();
    let end = ptr >>> 0;
    while (m[end] !== 0) end++;
    return decoder.decode(m.subarray(ptr >>> 0, end));
  }

  /** Copies bytes into freshly allocated wasm memory; returns the pointer (free it). */
  _copyIn(bytes, extra = 0) {
    const ptr = this.exports.el_malloc(bytes.length + extra) >>> 0;
    if (!ptr) throw new CoreError(`out of memory: cannot place ${bytes.length} bytes in the core`);
    this.u8().set(bytes, ptr);
    return ptr;
  }

  _cstring(s) { // a NUL-terminated UTF-8 copy of s in wasm memory
    const b = encoder.encode(String(s ?? ''));
    const ptr = this._copyIn(b, 1);
    this.u8()[ptr + b.length] = 0;
    return ptr;
  }

  _result(ptr) { // parses and frees an el_result
    if (!ptr) throw new CoreError(this._string(this.exports.el_last_error()));
    try {
      const json = this.exports.el_result_json(ptr) >>> 0;
      const len = this.exports.el_result_json_len(ptr) >>> 0;
      return JSON.parse(decoder.decode(this.u8().subarray(json, json + len)));
    } finally {
      this.exports.el_result_free(ptr);
    }
  }

  _withBytes(bytes, fn) {
    const u8 = toU8(bytes);
    const ptr = this._copyIn(u8);
    try { return fn(ptr, u8.length); } finally { this.exports.el_free(ptr); }
  }

  /** Lists and checks a checkpoint. validate: also walk each record's pickle stream and list
   * its globals; headersOnly: list records without reading payloads (no payload CRC). */
  inspect(bytes, { validate = true, headersOnly = false } = {}) {
    const flags = (validate ? 1 : 0) | (headersOnly ? 2 : 0);
    return this._withBytes(bytes, (p, n) => this._result(this.exports.el_inspect(p, n, flags)));
  }

  /** inspect(), but a damaged or unreadable checkpoint throws a CoreError (with .report). */
  verify(bytes, options) {
    const report = this.inspect(bytes, options);
    if (!report.ok) {
      const e = report.error ?? { message: 'checkpoint is damaged' };
      throw new CoreError(e.message, { ...e, report });
    }
    return report;
  }

  /**
   * Reads a checkpoint with the pull reader: the core asks for byte ranges and this feeds
   * them from `source` (a Uint8Array, or { size, read(offset, length) -> Uint8Array }), so the
   * container never has to be copied into wasm memory whole: one chunk at a time, and the
   * out-of-band buffers' bytes never (their CRC-32 is computed here, by `crc32` if given,
   * e.g. node:zlib's, else by the core on chunked copies). Same report as inspect().
   * @param {Uint8Array|ArrayBuffer|{ size: number, read(offset: number, length: number): Uint8Array }} source
   * @param {{ validate?: boolean, headersOnly?: boolean, chunk?: number,
   *   crc32?: (bytes: Uint8Array) => number }} [options]
   */
  read(source, options = {}) {
    const src = asSource(source);
    const crc = options.crc32 ?? ((u8) => this.crc32(u8));
    const it = this._pull(src.size, options);
    for (let step = it.next(); ; ) {
      if (step.done) return step.value;
      const q = step.value;
      const bytes = toU8(src.read(q.offset, q.kind === 'bytes' ? windowLength(q, src.size) : q.length));
      step = it.next(q.kind === 'bytes' ? bytes : crc(bytes));
    }
  }

  /** read() from an asynchronous source: { size, read(offset, length) -> Promise<Uint8Array> }.
   * @param {{ size: number, read(offset: number, length: number): Promise<Uint8Array>|Uint8Array }} source
   * @param {{ validate?: boolean, headersOnly?: boolean, chunk?: number,
   *   crc32?: (bytes: Uint8Array) => number }} [options]
   */
  async readAsync(source, options = {}) {
    const crc = options.crc32 ?? ((u8) => this.crc32(u8));
    const it = this._pull(source.size, options);
    for (let step = it.next(); ; ) {
      if (step.done) return step.value;
      const q = step.value;
      const bytes = toU8(await source.read(q.offset, q.kind === 'bytes' ? windowLength(q, source.size) : q.length));
      step = it.next(q.kind === 'bytes' ? bytes : crc(bytes));
    }
  }

  /** The reader's requests, one per yield ({ kind: 'bytes' | 'crc32', offset, length }); the
   * answer (the bytes, or their CRC-32) comes back through next(). Returns the report. */
  * _pull(size, { validate = true, headersOnly = false, chunk = 1 << 20 } = {}) {
    const x = this.exports;
    const flags = (validate ? 1 : 0) | (headersOnly ? 2 : 0);
    const r = x.el_reader_new(Number(size), flags, Number(chunk)) >>> 0;
    if (!r) throw new CoreError(this._string(x.el_last_error()));
    let scratch = 0, cap = 0;
    try {
      for (let k; (k = x.el_reader_next(r)) !== 0;) {
        const offset = x.el_reader_offset(r), length = x.el_reader_length(r);
        const answer = yield { kind: k === 1 ? 'bytes' : 'crc32', offset, length, chunk: Number(chunk) };
        let rc;
        if (k === 1) { // a window from offset: the core serves every request inside it
          const n = answer.length;
          if (n < length) throw new CoreError(`the source gave ${n} bytes at offset ${offset}, not ${length}`);
          if (n > cap) {
            if (scratch) x.el_free(scratch);
            scratch = x.el_malloc(n) >>> 0;
            cap = scratch ? n : 0;
            if (!scratch) throw new CoreError(`out of memory: cannot place ${n} bytes in the core`);
          }
          this.u8().set(answer, scratch);
          rc = x.el_reader_feed_window(r, offset, scratch, n);
        } else {
          rc = x.el_reader_feed_crc32(r, answer | 0);
        }
        if (rc < 0) throw new CoreError(this._string(x.el_reader_error(r)));
      }
      return this._result(x.el_reader_result(r));
    } finally {
      if (scratch) x.el_free(scratch);
      x.el_reader_free(r);
    }
  }

  /** Validates one bare pickle stream in windows of about `window` bytes (the resumable
   * validator): the same report as validatePickle(), without the stream in wasm memory whole.
   * @param {Uint8Array|ArrayBuffer|{ size: number, read(offset: number, length: number): Uint8Array }} source
   * @param {{ window?: number }} [options]
   */
  validateStream(source, { window = 1 << 20 } = {}) {
    const x = this.exports;
    const src = asSource(source);
    const v = x.el_validator_new(src.size) >>> 0;
    if (!v) throw new CoreError(this._string(x.el_last_error()));
    let scratch = 0, cap = 0;
    try {
      let offset = 0, want = window;
      for (;;) {
        const length = Math.min(Math.max(want, window), src.size - offset);
        const bytes = toU8(src.read(offset, length));
        if (length > cap) {
          if (scratch) x.el_free(scratch);
          scratch = x.el_malloc(Math.max(length, 1)) >>> 0;
          cap = scratch ? length : 0;
          if (!scratch) throw new CoreError(`out of memory: cannot place ${length} bytes in the core`);
        }
        this.u8().set(bytes, scratch);
        if (x.el_validator_feed(v, offset, scratch, length) !== 0) break;
        offset = x.el_validator_need_offset(v);
        want = x.el_validator_need_length(v);
      }
      return this._result(x.el_validator_result(v));
    } finally {
      if (scratch) x.el_free(scratch);
      x.el_validator_free(v);
    }
  }

  /** Walks one bare pickle stream without running it: { ok, error, globals, protocol, size }. */
  validatePickle(bytes) {
    return this._withBytes(bytes, (p, n) => this._result(this.exports.el_validate_pickle(p, n)));
  }

  crc32c(bytes, crc = 0) {
    return this._withBytes(bytes, (p, n) => this.exports.el_crc32c(crc, p, n) >>> 0);
  }

  /** CRC-32/ISO-HDLC (zlib's crc32) of bytes, continuing from crc; copied into the core in
   * 1 MiB chunks, so any size works without growing wasm memory. */
  crc32(bytes, crc = 0) {
    const u8 = toU8(bytes);
    const n = Math.min(u8.length, CRC_CHUNK);
    const ptr = this.exports.el_malloc(n) >>> 0;
    if (!ptr) throw new CoreError(`out of memory: cannot place ${n} bytes in the core`);
    try {
      for (let at = 0; at < u8.length; at += CRC_CHUNK) {
        const chunk = u8.subarray(at, at + CRC_CHUNK);
        this.u8().set(chunk, ptr);
        crc = this.exports.el_crc32(crc, ptr, chunk.length) >>> 0;
      }
      return crc >>> 0;
    } finally {
      this.exports.el_free(ptr);
    }
  }

  newWriter({ producer = 'elastic-lite', python = '', createdMs = Date.now() } = {}) {
    const pp = this._cstring(producer);
    const qp = this._cstring(python);
    try {
      const h = this.exports.el_writer_new(pp, qp, Number(createdMs)) >>> 0;
      if (!h) throw new CoreError(this._string(this.exports.el_last_error()));
      return new Writer(this, h);
    } finally {
      this.exports.el_free(pp);
      this.exports.el_free(qp);
    }
  }

  newSink() {
    const h = this.exports.el_sink_new() >>> 0;
    if (!h) throw new CoreError(this._string(this.exports.el_last_error()));
    return new Sink(this, h);
  }
}

/** How much the pull reader is fed for a request of bytes: a window of its chunk size. */
function windowLength(q, size) {
  return Math.min(Math.max(q.length, q.chunk), size - q.offset);
}

/** A source of bytes: { size, read(offset, length) }; a Uint8Array reads by subarray. */
function asSource(source) {
  if (source && typeof source.read === 'function' && typeof source.size === 'number') return source;
  const u8 = toU8(source);
  return { size: u8.length, read: (offset, length) => u8.subarray(offset, offset + length) };
}

function toU8(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new CoreError('expected a Uint8Array, ArrayBuffer or typed array');
}

// Handles not freed explicitly are freed when garbage collected (a safety net only).
const finalizer = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ free, h }) => free(h)) : null;

class Handle {
  constructor(core, h, freeFn, errorFn) {
    this.core = core;
    this.h = h;
    this._free = freeFn;
    this._error = errorFn;
    finalizer?.register(this, { free: freeFn, h }, this);
  }
  _live() {
    if (!this.h) throw new CoreError('this handle was already freed');
    return this.h;
  }
  _check(rc) {
    if (rc < 0) throw new CoreError(this.core._string(this._error(this.h)));
    return rc;
  }
  /** Copies bytes in with one copy: reserve space inside the core, then set(). */
  _put(reserveFn, bytes) {
    const u8 = toU8(bytes);
    const ptr = reserveFn(this._live(), u8.length) >>> 0;
    if (!ptr) this._check(-1);
    this.core.u8().set(u8, ptr);
  }
  _copyOut(ptr, len) {
    return this.core.u8().slice(ptr >>> 0, (ptr >>> 0) + (len >>> 0));
  }
  free() {
    if (!this.h) return;
    finalizer?.unregister(this);
    this._free(this.h);
    this.h = 0;
  }
}

/** Writes a checkpoint container (FORMAT.md, format 2.0) and hands it out part by part. */
class Writer extends Handle {
  constructor(core, h) {
    const x = core.exports;
    super(core, h, x.el_writer_free, x.el_writer_error);
    this._buffers = new Map(); // "record/buffer" -> the Uint8Array registered by addBuffer
    this._open = [];           // buffers of the open record
  }
  /**
   * Opens a record. kind: 'data' (a pickle stream), 'manifest' or 'history' (UTF-8 JSON).
   * @param {string|string[]} names
   * @param {{ kind?: 'data'|'manifest'|'history' }} [options]
   */
  beginRecord(names, { kind = 'data' } = {}) {
    const list = Array.isArray(names) ? names : [names];
    for (const n of list) {
      if (String(n).includes('\0')) throw new CoreError(`variable name contains NUL: ${JSON.stringify(n)}`);
    }
    const code = KINDS[kind];
    if (!code) throw new CoreError(`unknown record kind ${JSON.stringify(kind)} (data, manifest or history)`);
    const b = encoder.encode(list.join('\0'));
    const x = this.core.exports;
    const p = this.core._copyIn(b);
    try { this._check(x.el_writer_begin_record(this._live(), code, p, b.length)); } finally { x.el_free(p); }
    this._open = [];
  }
  /** @param {ArrayBuffer|ArrayBufferView} bytes stream bytes of the open record */
  append(bytes) { this._put(this.core.exports.el_writer_reserve, bytes); }
  /** An out-of-band buffer of the open record: its bytes never enter the core. Pass the bytes
   * (kept by reference and handed back by take()/finish(); the CRC-32 is computed here) or
   * { length, crc32 } when the caller writes the bytes itself. Returns its index.
   * @param {ArrayBuffer|ArrayBufferView|{ length: number, crc32: number }} buffer
   * @returns {number}
   */
  addBuffer(buffer) {
    let length, crc, bytes = null;
    if (ArrayBuffer.isView(buffer) || buffer instanceof ArrayBuffer) {
      bytes = toU8(buffer);
      length = bytes.length;
      crc = this.core.crc32(bytes);
    } else {
      ({ length, crc32: crc } = buffer ?? {});
    }
    const i = this._check(this.core.exports.el_writer_add_buffer(this._live(), Number(length), crc | 0));
    this._open.push(bytes);
    return i;
  }
  abortRecord() {
    this._check(this.core.exports.el_writer_abort_record(this._live()));
    this._open = [];
  }
  /** Ends the open record; serializer null for the JSON kinds. crc32: the stream's CRC-32
   * if the caller computed it, else the core computes it. Returns the record's index.
   * @param {'pickle'|'cloudpickle'|'dill'|number|null} serializer
   * @param {{ crc32?: number|null }} [options]
   * @returns {number}
   */
  endRecord(serializer, { crc32 = null } = {}) {
    const code = serializer == null ? 0 : typeof serializer === 'number' ? serializer : SERIALIZERS[serializer];
    if (code === undefined) throw new CoreError(`unknown serializer ${JSON.stringify(serializer)} (pickle, cloudpickle or dill)`);
    const x = this.core.exports;
    const flags = crc32 == null ? END_COMPUTE_CRC : 0;
    const index = this._check(x.el_writer_end_record(this._live(), code, (crc32 ?? 0) | 0, flags));
    this._open.forEach((bytes, i) => { if (bytes) this._buffers.set(`${index}/${i}`, bytes); });
    this._open = [];
    return index;
  }
  /**
   * A record whose bytes (length, a multiple of 64) the caller already has stored.
   * @param {number} length
   * @returns {number}
   */
  addStoredRecord(length) {
    return this._check(this.core.exports.el_writer_add_stored_record(this._live(), Number(length)));
  }
  get recordCount() { return this.core.exports.el_writer_record_count(this._live()); }
  /** Bytes of the file laid out so far (records ended, not the open one). */
  get fileSize() { return this.core.exports.el_writer_file_size(this._live()); }
  recordOffset(i) { return this.core.exports.el_writer_record_offset(this._live(), i); }
  recordLength(i) { return this.core.exports.el_writer_record_length(this._live(), i); }

  /** Every part ready now, in file order: { kind: 'bytes' | 'buffer' | 'stored', record (index,
   * 'head' or 'tail'), buffer, offset, length, bytes }. bytes: a copy of the core's bytes, the
   * Uint8Array given to addBuffer, or null (a buffer given by length, a stored record: the
   * caller writes those). views: true gives views of core memory instead of copies, valid
   * until the next call that writes to this writer.
   * @param {{ views?: boolean }} [options]
   * @returns {Array<{ kind: string, record: number|'head'|'tail', buffer: number|null, offset: number,
   *   length: number, bytes: Uint8Array|null }>}
   */
  take({ views = false } = {}) {
    const x = this.core.exports;
    const parts = [];
    for (;;) {
      const ptr = x.el_writer_take(this._live()) >>> 0;
      const d = new DataView(this.core.memory.buffer, ptr, 40);
      const kind = d.getUint32(0, true);
      if (kind === 0) break;
      const rec = d.getUint32(4, true);
      const buffer = d.getUint32(8, true);
      const offset = Number(d.getBigUint64(16, true));
      const length = Number(d.getBigUint64(24, true));
      const record = rec === PART_HEAD ? 'head' : rec === PART_TAIL ? 'tail' : rec;
      let bytes = null;
      if (kind === 1) {
        const at = Number(d.getBigUint64(32, true));
        bytes = views ? new Uint8Array(this.core.memory.buffer, at, length) : this._copyOut(at, length);
      } else if (kind === 2) {
        bytes = this._buffers.get(`${rec}/${buffer}`) ?? null;
        this._buffers.delete(`${rec}/${buffer}`);
      }
      parts.push({ kind: PART_KINDS[kind], record, buffer: kind === 2 ? buffer : null, offset, length, bytes });
    }
    return parts;
  }

  /** Writes index and footer; returns every part not taken yet, joined (the whole checkpoint
   * when nothing was taken before), or with join: false the parts as take() gives them.
   * @param {{ join?: boolean }} [options]
   */
  finish({ join = true } = {}) {
    this._check(this.core.exports.el_writer_finish(this._live()));
    const parts = this.take();
    if (!join) return parts;
    const missing = parts.find((p) => !p.bytes);
    if (missing) {
      throw new CoreError(`finish() cannot join a ${missing.kind} part whose bytes the writer does not hold ` +
        `(record ${missing.record}); use finish({ join: false }) and write those parts yourself`);
    }
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p.bytes, at); at += p.length; }
    return out;
  }
}

/** The rewindable sink: append, nested mark / rewind / commit, bytes(). */
class Sink extends Handle {
  constructor(core, h) {
    const x = core.exports;
    super(core, h, x.el_sink_free, x.el_sink_error);
  }
  append(bytes) { this._put(this.core.exports.el_sink_reserve, bytes); }
  mark() { return this._check(this.core.exports.el_sink_mark(this._live())); }
  rewind(mark) { this._check(this.core.exports.el_sink_rewind(this._live(), mark)); }
  commit(mark) { this._check(this.core.exports.el_sink_commit(this._live(), mark)); }
  setLimit(maxBytes) { this._check(this.core.exports.el_sink_set_limit(this._live(), maxBytes)); }
  get depth() { return this.core.exports.el_sink_depth(this._live()); }
  get size() { return this.core.exports.el_sink_size(this._live()) >>> 0; }
  bytes() {
    const x = this.core.exports;
    return this._copyOut(x.el_sink_data(this._live()), x.el_sink_size(this.h));
  }
}
