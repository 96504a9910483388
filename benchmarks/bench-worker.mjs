// The Chromium half of `npm run bench` (benchmarks/bench.mjs): a module worker running
// Pyodide with Elastic Lite and the IndexedDB store, as the demo's and JupyterLite's kernels
// do. benchmarks/bench.mjs calls `self.bench.<op>(args)` here through Playwright and times
// nothing itself: every figure is measured here, wall clock (performance.now), because
// IndexedDB works in other threads and processes.
//
// The floors are measured here too, on the same bytes, in the same worker:
//   raw put  = pickle.dumps' bytes copied out of Python's memory in 4 MiB slices (a copy is
//              unavoidable: structured clone of a view of wasm memory would clone all of it)
//              and put into a plain object store in ONE transaction, durability 'strict'
//              (what the IndexedDB store uses), until the transaction has committed;
//   raw get  = getAll of those slices, copied into one Python buffer (again unavoidable:
//              Python reads only its own memory), then pickle.loads.
import { loadPyodide } from '../node_modules/pyodide/pyodide.mjs';
import { installElasticLite } from '../js/pyodide-glue.mjs';
import { IndexedDBStore, recordKey } from '../js/store/indexeddb.mjs';

const PYODIDE_URL = new URL('../node_modules/pyodide/', import.meta.url).href;
const WHEELS_URL = new URL('../build/wheels/', import.meta.url).href;
const BENCH_FILES = ['bench_python.py', 'serializer_shapes.py', 'serializer_cases.py', 'serializer_state.py', 'small_change.py'];
const RAW_DB = 'elastic-lite-bench-raw';
const RAW_CHUNK = 4 << 20; // the IndexedDB store's chunk size
const RAW_KEY = 'raw';

let py = null;
let B = null; // the bench_python module (PyProxy)
let rawDb = null;
let stores = null; // EL_BENCH_AB_FILES: {files, chunks}, the kernel's store switched by useStore

function request(r) {
  return new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
}

function openRaw() {
  const open = indexedDB.open(RAW_DB, 1);
  open.onupgradeneeded = () => open.result.createObjectStore('chunks', { keyPath: ['key', 'seq'] });
  return request(open);
}

function transaction(stores, mode, body) {
  return new Promise((resolve, reject) => {
    const tx = mode === 'readwrite' ? rawDb.transaction(stores, mode, { durability: 'strict' }) : rawDb.transaction(stores, mode);
    let result;
    tx.oncomplete = () => resolve(result);
    tx.onabort = () => reject(tx.error ?? new Error('raw transaction aborted'));
    Promise.resolve(body(tx)).then((r) => { result = r; }, (err) => { tx.abort(); reject(err); });
  });
}

const range = () => IDBKeyRange.bound([RAW_KEY, 0], [RAW_KEY, Infinity]);

// Calls a Python function and returns plain JS data (dicts become objects).
async function call(fn, ...args) {
  let out = fn(...args);
  if (out && typeof out.then === 'function') out = await out;
  if (out && typeof out.toJs === 'function') {
    const js = out.toJs({ dict_converter: Object.fromEntries });
    out.destroy();
    return js;
  }
  return out;
}

function wasmHeap() {
  return py._module.HEAP8.buffer.byteLength;
}

self.bench = {
  async init({ files = true } = {}) {
    const t0 = performance.now();
    py = await loadPyodide({ indexURL: PYODIDE_URL, stdout: () => {}, stderr: () => {} });
    self.benchPyodide = py; // for profiling by hand: worker.evaluate('self.benchPyodide.runPython(...)')
    const store = new IndexedDBStore({ dbName: 'elastic-lite-bench', files });
    self.benchStore = store;
    (await installElasticLite(py, { wheelsUrl: WHEELS_URL, store })).destroy();
    stores = { files: store, chunks: new IndexedDBStore({ dbName: 'elastic-lite-bench-chunks', files: false }) };
    py.FS.mkdirTree('/home/pyodide/bench');
    for (const f of BENCH_FILES) {
      const res = await fetch(new URL(f, import.meta.url));
      if (!res.ok) throw new Error(`cannot fetch benchmarks/${f} (HTTP ${res.status})`);
      py.FS.writeFile(`/home/pyodide/bench/${f}`, new Uint8Array(await res.arrayBuffer()));
    }
    const sys = py.pyimport('sys');
    sys.path.insert(0, '/home/pyodide/bench');
    const version = sys.version.split(' ')[0];
    sys.destroy();
    B = py.pyimport('bench_python');
    rawDb = await openRaw();
    return { python: version, pyodide: py.version, startMs: performance.now() - t0, userAgent: navigator.userAgent, files: store.files };
  },

  setup: ({ row }) => call(B.setup, row),
  teardown: () => call(B.teardown),
  stateBytes: () => call(B.state_bytes),

  async dumps() {
    B.release();
    const [ms, size] = await call(B.dumps);
    return { ms, size };
  },

  async rawPut() {
    await transaction(['chunks'], 'readwrite', (tx) => { tx.objectStore('chunks').delete(range()); });
    const bytes = B.dumped();
    const view = bytes.getBuffer('u8');
    try {
      const t0 = performance.now();
      await transaction(['chunks'], 'readwrite', (tx) => {
        const chunks = tx.objectStore('chunks');
        const u8 = view.data;
        for (let at = 0, seq = 0; at < u8.byteLength; at += RAW_CHUNK, seq += 1) {
          chunks.put({ key: RAW_KEY, seq, data: u8.slice(at, at + RAW_CHUNK) });
        }
      });
      return { ms: performance.now() - t0, size: view.data.byteLength };
    } finally {
      view.release();
      bytes.destroy();
    }
  },

  async rawGetLoads() {
    B.release();
    const t0 = performance.now();
    const rows = await transaction(['chunks'], 'readonly', (tx) => request(tx.objectStore('chunks').getAll(range())));
    const size = rows.reduce((n, r) => n + r.data.byteLength, 0);
    const buf = B.alloc(size);
    const view = buf.getBuffer('u8');
    let at = 0;
    for (const r of rows) { view.data.set(r.data, at); at += r.data.byteLength; }
    view.release();
    const tGot = performance.now();
    B.loads(buf);
    buf.destroy();
    const t1 = performance.now();
    return { ms: t1 - t0, getMs: tGot - t0, loadsMs: t1 - tGot, size };
  },

  async checkpoint({ name }) {
    await call(B.forget, name);
    B.release();
    const t0 = performance.now();
    const rep = await call(B.checkpoint, name);
    return { ms: performance.now() - t0, ...rep };
  },

  async restore({ name }) {
    B.release();
    const t0 = performance.now();
    const rep = await call(B.restore, name);
    return { ms: performance.now() - t0, ...rep };
  },

  forget: ({ name }) => call(B.forget, name),

  // EL_BENCH_STREAM_FROM=N: restores from N bytes read record by record (A/B of _streamed)
  streamFrom({ bytes }) {
    py.pyimport('elastic_lite.load.streamed').STREAM_FROM = Number(bytes);
  },

  // EL_BENCH_AB_FILES=1: the same kernel checkpoints into a store with record files or one without
  useStore({ files }) {
    const el = py.pyimport('elastic_lite');
    el.set_store(files ? stores.files : stores.chunks);
    el.destroy();
  },

  // EL_BENCH_INTO_FROM=N: a streamed restore reads records from N bytes straight into Python's memory
  intoFrom({ bytes }) {
    py.pyimport('elastic_lite.load.streamed').INTO_FROM = Number(bytes);
  },

  // EL_BENCH_BYTES_FROM=N: a streamed restore reads read-only buffers from N bytes into the bytes
  // objects they load as (2^40: never, every buffer a bytearray copied as it loads; A/B runs)
  bytesFrom({ bytes }) {
    py.pyimport('elastic_lite.load.streamed').BYTES_FROM = Number(bytes);
  },

  // EL_BENCH_AB_STREAM_FROM=N: restores from N bytes streamed while `on` (else the default)
  streamFromSwap({ on, bytes }) {
    const s = py.pyimport('elastic_lite.load.streamed');
    self.streamFromNow ??= s.STREAM_FROM;
    s.STREAM_FROM = on ? Number(bytes) : self.streamFromNow;
    s.destroy();
  },

  // EL_BENCH_AB_STREAM=1: the restore as before while `on` (streamed from 64 MiB only, not for
  // a record of 16 MiB in a smaller checkpoint; every buffer a bytearray; the frame in two reads)
  streamBefore({ on }) {
    const s = py.pyimport('elastic_lite.load.streamed');
    self.streamNow ??= { bytesFrom: s.BYTES_FROM, frameRead: s.FRAME_READ, recordFrom: s.STREAM_RECORD_FROM };
    s.BYTES_FROM = on ? 2 ** 40 : self.streamNow.bytesFrom;
    s.FRAME_READ = on ? 40 : self.streamNow.frameRead; // the header alone, then the table
    s.STREAM_RECORD_FROM = on ? 2 ** 40 : self.streamNow.recordFrom;
    s.destroy();
  },

  memory: () => ({ wasmHeap: wasmHeap(), core: B.core_memory() }),

  // EL_BENCH_ONLY=phases: each phase of a bytes-heavy checkpoint and restore on its own, over
  // the row's large buffers (the records' out-of-band pieces), ms per phase; and the real
  // checkpoint/restore beside them with their own timings.
  async phases({ name }) {
    const bufs = B.phase_buffers();
    const n = bufs.length;
    const views = () => Array.from({ length: n }, (_, i) => { const b = bufs.get(i); try { return b.getBuffer('u8'); } finally { b.destroy(); } });
    const timed = async (fn) => { const t0 = performance.now(); await fn(); return performance.now() - t0; };
    const out = { buffers: n, bytes: 0 };
    let vs = views();
    try {
      out.bytes = vs.reduce((a, v) => a + v.data.byteLength, 0);
      out.crc_py = B.phase_crc(bufs);
      out.sha256_hashlib = B.phase_sha256(bufs);
      out.sha256_webcrypto = await timed(async () => { for (const v of vs) await recordKey(v.data); });
      const root = await navigator.storage.getDirectory();
      const dir = await root.getDirectoryHandle('elastic-lite-bench-phases', { create: true });
      // what the store does per putRecords/readRecordInto call to find its folder
      out.dir_lookup = await timed(async () => {
        for (let i = 0; i < n; i += 1) {
          await (await (await navigator.storage.getDirectory()).getDirectoryHandle('elastic-lite-bench-phases')).getDirectoryHandle('sub', { create: true });
        }
      });
      const handles = [];
      out.file_open = await timed(async () => {
        for (let i = 0; i < n; i += 1) handles.push(await (await dir.getFileHandle(`f${i}`, { create: true })).createSyncAccessHandle());
      });
      out.file_write = await timed(() => { vs.forEach((v, i) => { handles[i].truncate(0); handles[i].write(v.data, { at: 0 }); }); });
      out.file_flush = await timed(() => { for (const h of handles) h.flush(); });
      out.file_close = await timed(() => { for (const h of handles) h.close(); });
      // restore side: read back into Python memory (the same buffers stand in for the targets)
      const read = [];
      for (let i = 0; i < n; i += 1) read.push(await (await dir.getFileHandle(`f${i}`)).createSyncAccessHandle({ mode: 'read-only' }));
      const into = [];
      for (const v of vs) into.push(B.alloc(v.data.byteLength));
      out.file_read = await timed(() => {
        into.forEach((b, i) => { const t = b.getBuffer('u8'); try { read[i].read(t.data, { at: 0 }); } finally { t.release(); } });
      });
      for (const h of read) h.close();
      out.key_check_webcrypto = await timed(async () => {
        for (const b of into) { const t = b.getBuffer('u8'); try { await recordKey(t.data); } finally { t.release(); } }
      });
      const intoList = py.toPy(into);
      out.crc_check_py = B.phase_crc(intoList);
      out.bytes_copy_py = B.phase_copy(intoList);
      intoList.destroy();
      for (const b of into) b.destroy();
      for (let i = 0; i < n; i += 1) await dir.removeEntry(`f${i}`);
    } finally {
      for (const v of vs) v.release();
      bufs.destroy();
    }
    const mib = out.bytes / (1 << 20);
    out.per_mib = Object.fromEntries(Object.entries(out).filter(([k, v]) => typeof v === 'number' && !['buffers', 'bytes'].includes(k)).map(([k, v]) => [k, v / mib]));
    await call(B.forget, name);
    B.release();
    const store = self.benchStore;
    const methods = ['lock', 'hasRecords', 'putRecords', '_prepare', '_open', 'commit', 'getEntry', 'readRecordInto', 'readRecordChunks', 'readRecords', 'get'];
    const saved = {};
    let spent = {};
    for (const m of methods) {
      saved[m] = store[m];
      store[m] = async function timed(...args) {
        const t = performance.now();
        try { return await saved[m].apply(this, args); } finally { spent[`store_${m}`] = (spent[`store_${m}`] ?? 0) + performance.now() - t; }
      };
    }
    try {
      let t0 = performance.now();
      const ck = await call(B.checkpoint, name);
      out.checkpoint = { ms: performance.now() - t0, ...ck.timings, ...spent };
      spent = {};
      B.release();
      const [dumpsMs] = await call(B.dumps);
      out.dumps = dumpsMs;
      t0 = performance.now();
      const rs = await call(B.restore, name);
      out.restore = { ms: performance.now() - t0, ...rs.timings, ...spent };
    } finally {
      Object.assign(store, saved);
      for (const m of methods) delete store[m]; // the prototype's methods again
    }
    B.release();
    await call(B.forget, name);
    return out;
  },

  async runNotebook({ cells }) {
    const t0 = performance.now();
    await call(B.run_cells, py.toPy(cells));
    return { ms: performance.now() - t0 };
  },

  bind: ({ names }) => call(B.bind, py.toPy(names)),

  history: ({ cells, mib }) => call(B.history, cells, mib),

  // issue 21: automatic points after a one-variable change of the 200-variable namespace,
  // into this kernel's IndexedDB store (benchmarks/small_change.py points_in_store).
  // Per point: each store method it calls, timed (ms), with the IndexedDB requests and
  // transactions it issued (counted by wrapping the IDB prototypes in this worker); what is
  // left of the point is the kernel (Python) and the bridge. `base` (EL_BENCH_POINTS_BASE):
  // the URL of another build of js/store/indexeddb.mjs, run in alternating rounds against this
  // one in the same worker (A/B; each round its own database).
  // The floor beside it: one IndexedDB transaction putting 64 bytes, durability 'strict' (a
  // point commits at least one such transaction), as many times.
  async points({ runs, rounds = 1, base = null }) {
    const S = py.pyimport('small_change');
    const el = py.pyimport('elastic_lite');
    const variants = [['now', self.benchStore]];
    if (base) {
      const { IndexedDBStore: Base } = await import(base);
      variants.unshift(['base', new Base({ dbName: 'elastic-lite-bench-points-base', files: self.benchStore.files })]);
      variants[1] = ['now', new IndexedDBStore({ dbName: 'elastic-lite-bench-points-now', files: self.benchStore.files })];
    }
    // and as a JupyterLite notebook's points: the notebook's retention (the extension's
    // default history settings, but the last 3 points instead of 30, so that from the 5th
    // point on each commit removes the oldest one, as it does there after 30)
    for (const [, store] of variants) await store.setRetention(POINTS_NOTEBOOK, { keepLast: 3, keepHourly: 24, maxBytes: 1 << 30 });
    const counting = countRequests();
    const out = {};
    try {
      for (let round = 0; round < rounds; round += 1) {
        for (const notebook of [null, POINTS_NOTEBOOK]) {
          for (const [label, store] of variants) {
            el.set_store(store);
            const calls = [];
            const restore = timeMethods(store, calls, counting);
            let r;
            try {
              r = await call(S.points_in_store, runs, notebook);
            } finally {
              restore();
            }
            const o = (out[notebook ? `${label}_notebook` : label] ??= { rounds: [] });
            o.rounds.push({ ...r, points: perPoint(calls, r.point_all_ms, r.point_timings) });
            Object.assign(o, r);
          }
        }
      }
    } finally {
      counting.stop();
      el.set_store(self.benchStore);
      S.destroy();
      el.destroy();
    }
    const puts = [];
    for (let i = 0; i < runs; i += 1) {
      const t0 = performance.now();
      await transaction(['chunks'], 'readwrite', (tx) => { tx.objectStore('chunks').put({ key: 'tiny', seq: i, data: new Uint8Array(64) }); });
      puts.push(performance.now() - t0);
    }
    await transaction(['chunks'], 'readwrite', (tx) => { tx.objectStore('chunks').delete(IDBKeyRange.bound(['tiny', 0], ['tiny', Infinity])); });
    const more = (label) => (out[label] ? { ...out[label], ...summarize(out[label].rounds) } : undefined);
    return { ...more('now'), base: more('base'), notebook: more('now_notebook'), base_notebook: more('base_notebook'),
      strict_put_all_ms: puts, strict_put_ms: puts.slice().sort((a, b) => a - b)[puts.length >> 1],
      // marks an instrumented build of the store left (globalThis.__elTrace: [label, ms]), if any
      trace: globalThis.__elTrace?.splice(0) };
  },
};

const POINTS_NOTEBOOK = 'bench-points.ipynb';
const POINT_METHODS = ['lock', 'hasRecords', 'putRecords', 'commit', 'getEntry'];

// Wraps the methods a point calls on `store`, appending {m, ms, requests, transactions} per
// call to `calls`; returns the function that puts them back.
function timeMethods(store, calls, counting) {
  const saved = {};
  for (const m of POINT_METHODS) {
    if (typeof store?.[m] !== 'function' || Object.hasOwn(store, m)) continue;
    saved[m] = true;
    const fn = store[m];
    store[m] = async function timed(...args) {
      const t0 = performance.now();
      const c0 = { ...counting.n };
      try { return await fn.apply(this, args); } finally {
        const c = { m, start: t0, ms: performance.now() - t0 };
        for (const k of Object.keys(c0)) c[k] = counting.n[k] - c0[k];
        calls.push(c);
      }
    };
  }
  return () => { for (const m of Object.keys(saved)) delete store[m]; };
}

// Counts IndexedDB requests and transactions issued in this worker while it runs, and the
// time spent waiting on WebCrypto, OPFS and transactions (from creation to complete).
function countRequests() {
  const n = { requests: 0, transactions: 0, crypto: 0, cryptoMs: 0, opfs: 0, opfsMs: 0, txMs: 0 };
  const undo = [];
  const timeAsync = (obj, names, count, ms) => {
    for (const name of names) {
      const fn = obj?.[name];
      if (typeof fn !== 'function') continue;
      obj[name] = function timedAsync(...args) {
        n[count] += 1;
        const t0 = performance.now();
        const p = fn.apply(this, args);
        Promise.resolve(p).finally(() => { n[ms] += performance.now() - t0; }).catch(() => {});
        return p;
      };
      undo.push(() => { obj[name] = fn; });
    }
  };
  timeAsync(SubtleCrypto.prototype, ['digest', 'sign', 'verify'], 'crypto', 'cryptoMs');
  timeAsync(StorageManager.prototype, ['getDirectory'], 'opfs', 'opfsMs');
  if (globalThis.FileSystemDirectoryHandle) {
    timeAsync(FileSystemDirectoryHandle.prototype, ['getDirectoryHandle', 'getFileHandle', 'removeEntry'], 'opfs', 'opfsMs');
  }
  if (globalThis.FileSystemFileHandle) timeAsync(FileSystemFileHandle.prototype, ['createSyncAccessHandle', 'getFile'], 'opfs', 'opfsMs');
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function timedTx(...args) {
    const tx = transaction.apply(this, args);
    const t0 = performance.now();
    const done = () => { n.txMs += performance.now() - t0; };
    tx.addEventListener('complete', done); tx.addEventListener('abort', done);
    return tx;
  };
  undo.push(() => { IDBDatabase.prototype.transaction = transaction; });
  const wrap = (proto, names, key) => {
    for (const name of names) {
      const fn = proto[name];
      if (typeof fn !== 'function') continue;
      proto[name] = function counted(...args) { n[key] += 1; return fn.apply(this, args); };
      undo.push(() => { proto[name] = fn; });
    }
  };
  const reqs = ['get', 'getAll', 'getAllKeys', 'getKey', 'count', 'put', 'add', 'delete', 'clear', 'openCursor', 'openKeyCursor'];
  wrap(IDBObjectStore.prototype, reqs, 'requests');
  wrap(IDBIndex.prototype, reqs, 'requests');
  wrap(IDBDatabase.prototype, ['transaction'], 'transactions');
  wrap(FileSystemDirectoryHandle.prototype, ['keys'], 'opfs');
  return { n, stop: () => undo.forEach((f) => f()) };
}

// The calls of each point: a point's first call is its lock (the untimed first point included:
// dropped here), the rest of the point's time is the kernel's and the bridge's.
function perPoint(calls, pointMs, timings) {
  const points = [];
  for (const c of calls) {
    if (c.m === 'lock' || !points.length) points.push({ calls: [] });
    points.at(-1).calls.push(c);
  }
  const timed = points.slice(points.length - pointMs.length);
  return timed.map((p, i) => {
    const row = { total: pointMs[i], requests: 0, transactions: 0 };
    for (const c of p.calls) {
      row[c.m] = (row[c.m] ?? 0) + c.ms;
      for (const [k, v] of Object.entries(c)) if (!['m', 'start', 'ms'].includes(k)) row[`${c.m}.${k}`] = (row[`${c.m}.${k}`] ?? 0) + v;
      row.requests += c.requests;
      row.transactions += c.transactions;
    }
    row.kernel = row.total - p.calls.reduce((s, c) => s + c.ms, 0);
    row.serialize = timings?.[i]?.serialize_ms;
    return row;
  });
}

function med(xs) {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : null;
}

// Per round: the median of its points, per phase.
function summarize(rounds) {
  const phases = ['total', 'kernel', 'serialize', ...POINT_METHODS, 'requests', 'transactions'];
  const keys = (r) => [...new Set([...phases, ...r.points.flatMap((p) => Object.keys(p))])];
  return {
    phase_ms: rounds.map((r) => Object.fromEntries(keys(r).map((k) => [k, med(r.points.map((p) => p[k] ?? 0))])
      .filter(([k, v]) => phases.includes(k) || v))),
  };
}
