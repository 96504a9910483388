// Loads the Elastic Lite C core (build/wasm/elastic_lite.wasm) and wraps it in a small JS API.
// One ES module for a page, a web worker and Node: the .wasm imports nothing, so a plain
// WebAssembly.instantiate works everywhere. Bytes go in and come out as Uint8Array; input is
// copied once into wasm memory, output once out of it.
//
//   const core = await loadCore();          // or loadCore(url | path | bytes | WebAssembly.Module)
//   const w = core.newWriter({ producer, python, createdMs });
//   w.beginRecord(["x", "y"]); w.append(bytes); w.endRecord("cloudpickle");
//   const file = w.finish(); w.free();
//   core.inspect(file, { validate: true })  // the report of docs/INTERFACES.md
//   core.validatePickle(bytes)              // { ok, error, globals, protocol, size }
//
// API misuse and allocation failures throw CoreError (message from the core). A damaged
// checkpoint is not an exception: inspect() reports it; verify() throws it as a CoreError.

const DEFAULT_WASM = new URL('../build/wasm/elastic_lite.wasm', import.meta.url);
const SERIALIZERS = { pickle: 1, cloudpickle: 2, dill: 3 };
const isNode = typeof process !== 'undefined' && !!process.versions?.node &&
  typeof window === 'undefined';

/** An error from the core: message as the core wrote it, plus where (when known). */
export class CoreError extends Error {
  constructor(message, { offset = null, record = null, opcode = null, report = null } = {}) {
    super(message);
    this.name = 'CoreError';
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

  /** Walks one bare pickle stream without running it: { ok, error, globals, protocol, size }. */
  validatePickle(bytes) {
    return this._withBytes(bytes, (p, n) => this._result(this.exports.el_validate_pickle(p, n)));
  }

  crc32c(bytes, crc = 0) {
    return this._withBytes(bytes, (p, n) => this.exports.el_crc32c(crc, p, n) >>> 0);
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

/** Writes a checkpoint container (FORMAT.md): records of pickled variable groups. */
class Writer extends Handle {
  constructor(core, h) {
    const x = core.exports;
    super(core, h, x.el_writer_free, x.el_writer_error);
  }
  beginRecord(names) {
    const list = Array.isArray(names) ? names : [names];
    for (const n of list) {
      if (String(n).includes('\0')) throw new CoreError(`variable name contains NUL: ${JSON.stringify(n)}`);
    }
    const b = encoder.encode(list.join('\0'));
    const x = this.core.exports;
    const p = this.core._copyIn(b);
    try { this._check(x.el_writer_begin_record(this._live(), p, b.length)); } finally { x.el_free(p); }
  }
  append(bytes) { this._put(this.core.exports.el_writer_reserve, bytes); }
  abortRecord() { this._check(this.core.exports.el_writer_abort_record(this._live())); }
  endRecord(serializer) {
    const code = typeof serializer === 'number' ? serializer : SERIALIZERS[serializer];
    if (!code) throw new CoreError(`unknown serializer ${JSON.stringify(serializer)} (pickle, cloudpickle or dill)`);
    this._check(this.core.exports.el_writer_end_record(this._live(), code));
  }
  get recordCount() { return this.core.exports.el_writer_record_count(this._live()); }
  get size() { return this.core.exports.el_writer_size(this._live()) >>> 0; }
  /** Writes index and footer; returns the whole checkpoint (a copy). */
  finish() {
    const x = this.core.exports;
    this._check(x.el_writer_finish(this._live()));
    return this._copyOut(x.el_writer_data(this.h), x.el_writer_size(this.h));
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

export { SERIALIZERS };
