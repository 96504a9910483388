// Checkpoint operations of the demo worker: checkpoint, restore, list, delete, export, import.
//
// The pipeline is spelled out here, step by step, rather than hidden in one call, because the
// page shows where the time goes:
//   checkpoint: serialize (elastic_lite.snapshot in Python) → validate (the C core re-reads the
//               container it just wrote) → store (IndexedDB, one atomic transaction)
//   restore:    read (IndexedDB) → validate (C core: CRCs, pickle opcodes) → unpickle
//               (elastic_lite.load_snapshot into __main__)
//   import:     validate with the C core FIRST; only an intact checkpoint is stored.
import { DemoError } from './worker-errors.mjs';

const NOTEBOOK = 'demo';
const WASM_URL = new URL('../build/wasm/elastic_lite.wasm', import.meta.url).href;
const WHEELS_URL = new URL('../build/wheels/', import.meta.url).href;

let core = null;
let store = null;
let python = null;

const now = () => performance.now();

// Loads the C core, the IndexedDB store and elastic_lite (through the glue) into `pyodide`.
// A missing build is reported as a reason, not thrown: the cells still work without it.
export async function setup(pyodide) {
  let step = 'the C core (js/core.mjs, build/wasm/elastic_lite.wasm)';
  try {
    const { loadCore } = await import('../js/core.mjs');
    core = await loadCore(WASM_URL);
    step = 'the IndexedDB store (js/store/indexeddb.mjs)';
    const { IndexedDBStore } = await import('../js/store/indexeddb.mjs');
    store = new IndexedDBStore({ dbName: 'elastic-lite-demo' });
    step = 'elastic_lite into Python (js/pyodide-glue.mjs, build/wheels/)';
    const { pythonSide } = await import('./worker-python.mjs');
    python = await pythonSide(pyodide, { wheelsUrl: WHEELS_URL, store });
  } catch (err) {
    core = store = python = null;
    return { elasticLite: false, reason: `Loading ${step} failed: ${err?.message ?? err}.` };
  }
  return { elasticLite: true };
}

function ready() {
  if (!python) throw new DemoError('setup', 'Elastic Lite is not loaded in this page (see the message at the top).');
}

// Records whose names are damaged, from an inspection report, as plain data for the page.
function damage(report) {
  const bad = report.records.filter((r) => !r.ok);
  return {
    variables: bad.flatMap((r) => r.names).filter((n) => n !== '__elastic_lite_manifest__'),
    // The core's messages already name the record and the byte offset.
    where: bad[0]?.error?.message ?? report.error?.message ?? null,
    reason: report.error?.message ?? bad[0]?.error?.message ?? null,
  };
}

// Runs the core's inspection; a file the core cannot even parse becomes a report with ok=false.
function inspect(bytes) {
  try {
    return core.inspect(bytes, { validate: true });
  } catch (err) {
    return {
      ok: false, records: [],
      error: { message: err.message, offset: err.offset ?? null, record: err.record ?? null },
    };
  }
}

// A report with no readable record and a failure at the very start means "not a checkpoint"
// (wrong magic, empty, some other file); anything else that fails is a damaged checkpoint.
function classify(report) {
  if (report.ok) return null;
  const notCheckpoint = report.records.length === 0 &&
    (report.error?.offset ?? 0) === 0 && !/crc|checksum|record/i.test(report.error?.message ?? '');
  return notCheckpoint ? 'not-checkpoint' : 'corrupt';
}

async function checkpoint({ name }, { progress }) {
  ready();
  name = String(name ?? '').trim() || 'default';
  const t0 = now();
  progress({ phase: 'serialize', message: 'Serializing variables…' });
  const snap = python.snapshot((done, total, label) =>
    progress({ phase: 'serialize', done, total, message: `Serializing ${label} (${done + 1 > total ? total : done + 1} of ${total})…` }));
  const t1 = now();

  progress({ phase: 'validate', message: `Checking the ${(snap.bytes.length / 1048576).toFixed(1)} MiB container…` });
  const report = inspect(snap.bytes);
  if (!report.ok) {
    // Our own writer produced something the reader rejects: never store it.
    throw new DemoError('internal', `The new checkpoint failed its own validation (${damage(report).where}); nothing was stored.`);
  }
  const t2 = now();

  progress({ phase: 'store', message: `Writing ${(snap.bytes.length / 1048576).toFixed(1)} MiB to browser storage…` });
  const meta = {
    notebook: NOTEBOOK,
    createdMs: Date.now(),
    size: snap.bytes.length,
    variables: snap.variables.length,
    names: snap.variables.map((v) => v.name),
    skipped: snap.skipped,
  };
  await store.put(name, snap.bytes, meta);
  const t3 = now();

  return {
    op: 'checkpoint', name, size: snap.bytes.length, totalMs: t3 - t0,
    phases: [
      { label: 'serialize', ms: t1 - t0 },
      { label: 'validate', ms: t2 - t1 },
      { label: 'store', ms: t3 - t2 },
    ],
    variables: snap.variables, skipped: snap.skipped, failed: [], modules: snap.modules ?? [],
  };
}

async function readEntry(name) {
  let entry;
  try {
    entry = await store.get(name);
  } catch (err) {
    // The store says the IndexedDB entry itself is broken (missing chunk, wrong size...):
    // every variable of that checkpoint is affected.
    if (/corrupt/i.test(err.message)) {
      const listed = (await store.list()).find((c) => c.name === name);
      const problem = /is corrupted: (.*?)\.(\s|$)/.exec(err.message)?.[1];
      throw new DemoError('corrupt', err.message, {
        variables: listed?.meta?.names ?? [],
        where: problem ? `in browser storage: ${problem}` : 'in browser storage',
      });
    }
    throw err;
  }
  if (!entry) throw new DemoError('missing', `No checkpoint named "${name}" is stored.`);
  return entry;
}

async function restore({ name }, { progress }) {
  ready();
  const t0 = now();
  progress({ phase: 'read', message: `Reading “${name}” from browser storage…` });
  const { bytes, meta } = await readEntry(name);
  const t1 = now();

  progress({ phase: 'validate', message: 'Checking checksums and pickle streams…' });
  const report = inspect(bytes);
  const kind = classify(report);
  const goodRecords = report.records.filter((r) => r.ok).length;
  if (kind === 'not-checkpoint' || (kind === 'corrupt' && goodRecords === 0)) {
    const d = damage(report);
    throw new DemoError('corrupt', d.reason ?? 'unreadable checkpoint',
      { variables: d.variables.length ? d.variables : meta.names ?? [], where: d.where });
  }
  const t2 = now();

  // Good records restore even when others are damaged; the result lists the failures by name.
  progress({ phase: 'unpickle', message: 'Loading variables into Python…' });
  let loaded;
  try {
    loaded = python.load(bytes);
  } catch (err) {
    if (!err.checkpointError) throw err;
    throw new DemoError('corrupt', err.message, { variables: meta.names ?? [] });
  }
  const t3 = now();

  // Serializer and record size come from the container's index (one record per group).
  const byName = new Map();
  for (const r of report.records) r.names.forEach((n, i) => byName.set(n, { r, first: i === 0 }));
  const variables = loaded.restored.map(({ name, type }) => {
    const hit = byName.get(name);
    return {
      name, type,
      serializer: hit?.r.serializer ?? null,
      size: hit?.first ? hit.r.length : null,
      ms: null, // load_snapshot times the whole restore, not each record
    };
  });

  return {
    op: 'restore', name, size: bytes.length, totalMs: t3 - t0,
    phases: [
      { label: 'read', ms: t1 - t0 },
      { label: 'validate', ms: t2 - t1 },
      { label: 'unpickle', ms: t3 - t2 },
    ],
    variables,
    skipped: loaded.skipped.length ? loaded.skipped : (meta.skipped ?? []),
    failed: loaded.failed,
    modules: loaded.modules ?? [],
    warnings: loaded.warnings,
  };
}

async function list() {
  ready();
  return store.list({ notebook: NOTEBOOK });
}

async function remove({ name }) {
  ready();
  const existed = await store.delete(name);
  if (!existed) throw new DemoError('missing', `No checkpoint named "${name}" is stored.`);
  return true;
}

async function exportOp({ name }) {
  ready();
  const { bytes } = await readEntry(name);
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '') || 'checkpoint';
  return { bytes, filename: `${safe}.elc` };
}

async function importOp({ name, bytes }, { progress }) {
  ready();
  if (!(bytes instanceof Uint8Array)) throw new DemoError('not-checkpoint', 'No file contents arrived.');
  progress({ phase: 'validate', message: 'Checking the file before storing it…' });
  const report = inspect(bytes);
  const kind = classify(report);
  if (kind) {
    const d = damage(report);
    throw new DemoError(kind, d.reason ?? 'unreadable file', { variables: d.variables, where: d.where, reason: d.reason });
  }
  const manifest = report.records.filter((r) => r.names[0] !== '__elastic_lite_manifest__');
  const names = manifest.flatMap((r) => r.names);
  let finalName = String(name ?? '').trim() || 'imported';
  // Never overwrite an existing checkpoint by importing: pick a free name instead.
  const taken = new Set((await store.list()).map((c) => c.name));
  for (let i = 2; taken.has(finalName); i++) finalName = `${name} (${i})`;
  progress({ phase: 'store', message: `Storing “${finalName}”…` });
  await store.put(finalName, bytes, {
    notebook: NOTEBOOK,
    createdMs: report.created_ms ?? Date.now(),
    size: bytes.length,
    variables: names.length,
    names,
    imported: true,
  });
  // Whole and well formed, yet it may still call os.system & co. when unpickled: say so now
  // (restore will refuse those records unless the person trusts the file).
  return { name: finalName, records: report.records.length, refused: python.refused(report.records) };
}

export const ops = {
  checkpoint,
  restore,
  list,
  delete: remove,
  export: exportOp,
  import: importOp,
};
