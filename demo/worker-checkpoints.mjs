// The demo worker's Elastic Lite side: installs elastic_lite (and the IndexedDB store it
// writes) into the worker's Pyodide, then every operation is one call of elastic_lite.host
// (js/shared/host.mjs) whose report goes to the page as it is. The page renders reports; it
// never judges a checkpoint itself.
import { callHost } from '../js/shared/host.mjs';
import { exportFileName, hostReport } from '../js/shared/report.mjs';

const NOTEBOOK = 'demo';
const WHEELS_URL = new URL('../build/wheels/', import.meta.url).href;

let pyodide = null;
let store = null; // the store elastic_lite writes: browserStore, or the folder the person picked
let browserStore = null;

// Loads the IndexedDB store and elastic_lite (through the glue) into `py`. A missing build is
// reported as a reason, not thrown: the page says what to do.
export async function setup(py) {
  let step = 'the IndexedDB store (js/store/indexeddb.mjs)';
  try {
    const { IndexedDBStore } = await import('../js/store/indexeddb.mjs');
    store = browserStore = new IndexedDBStore({ dbName: 'elastic-lite-demo' });
    step = 'elastic_lite into Python (js/pyodide-glue.mjs, build/wheels/)';
    const { installElasticLite } = await import('../js/pyodide-glue.mjs');
    (await installElasticLite(py, { wheelsUrl: WHEELS_URL, store })).destroy();
  } catch (err) {
    store = null;
    return { elasticLite: false, reason: `Loading ${step} failed: ${err?.message ?? err}.` };
  }
  pyodide = py;
  return { elasticLite: true, where: await chooseStore() };
}

// Where the checkpoints go (js/store/folder.mjs): the folder remembered in this origin when it
// is the demo's choice and the browser grants access to it (a worker can only ask whether it
// does; the page asks the person), else this browser's IndexedDB. {folder, state} for the page.
async function chooseStore() {
  let found = { store: null, folder: null, state: 'none' };
  try {
    found = await (await import('../js/store/folder.mjs')).folderStoreFor(NOTEBOOK);
  } catch { /* no File System Access here: the browser's storage */ }
  const same = store?.handle && found.store && await store.handle.isSameEntry(found.store.handle);
  if (!same) {
    store = found.store ?? browserStore; // one FolderStore per folder: it sweeps once
    const el = pyodide.pyimport('elastic_lite');
    try { el.set_store(store); } finally { el.destroy(); }
  }
  return { folder: found.folder, state: found.state };
}

function host(op, kwargs, options) {
  if (!pyodide) throw Object.assign(new Error('Elastic Lite is not loaded in this page (see the message at the top).'), { kind: 'setup' });
  return callHost(pyodide, op, kwargs, options);
}

// Progress events of the host, in the words the progress bar shows.
function progressOf(progress) {
  return (ev) => {
    if (ev.phase === 'serialize') {
      const names = ev.names.length > 3 ? `${ev.names.slice(0, 3).join(', ')} and ${ev.names.length - 3} more` : ev.names.join(', ');
      const label = ev.done < ev.total ? `Serializing ${names} (${ev.done + 1} of ${ev.total})…` : 'Serializing the manifest…';
      progress({ phase: ev.phase, done: ev.done, total: ev.total, message: label });
    } else {
      const message = { store: 'Writing to browser storage…', read: 'Reading from browser storage…', load: 'Checking and loading variables into Python…' }[ev.phase];
      progress({ phase: ev.phase, message: message ?? ev.phase });
    }
  };
}

export const ops = {
  // The folder the person picked in the page (`handle`, a FileSystemDirectoryHandle the page
  // was granted) becomes the demo's store; `browser`: back to this browser's storage; neither:
  // the remembered choice again (after the page was granted access anew).
  where: async ({ handle, browser }) => {
    const m = await import('../js/store/folder.mjs');
    if (handle) await m.rememberFolder(handle);
    if (handle || browser) await m.setFolderDefault(NOTEBOOK, !!handle);
    return chooseStore();
  },
  // Every cell is recorded by the session's history (host.run_cell), as In [count].
  run: ({ code, cellId, count }) => host('run_cell', { code, label: `cell ${cellId}`, count }),
  checkpoint: ({ name }, { progress }) =>
    host('checkpoint', { name: String(name ?? '').trim() || null, notebook: NOTEBOOK }, { progress: progressOf(progress) }),
  restore: ({ name, trust, adopt }, { progress }) =>
    host('restore', { name, trust: !!trust, adopt: !!adopt }, { progress: progressOf(progress) }),
  list: () => host('list', { notebook: NOTEBOOK }),
  delete: ({ name }) => host('delete', { name }),
  // The bytes to download: a plain store read (no judgement to make) answered as host.export's
  // report, with `data` (the bytes, as for Python callers) and the file name; a missing name,
  // or a record whose bytes no longer match their key, gets the host's own report.
  export: async ({ name }) => {
    const entry = store && await store.get(name);
    return entry && !entry.damaged?.length
      ? hostReport('export', { name, size: entry.bytes.byteLength, meta: entry.meta, data: entry.bytes, filename: exportFileName(name) })
      : host('export', { name });
  },
  // Validated before it is stored (the one import policy); never overwrites: a free name.
  // trust: a published state whose publisher key this page pins (demo/published.mjs).
  import: ({ name, fileName, bytes, trust }) =>
    host('import', { name: String(name ?? '').trim() || 'imported', notebook: NOTEBOOK, unique: true, source: fileName, trust: !!trust }, { data: bytes }),
};
