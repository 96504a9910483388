// Loads the project's own browser modules (js/store/indexeddb.mjs, js/core.mjs and the C core's
// .wasm) at run time from this extension's static folder, where the build copies them.
//
// Why not bundle them: they are plain ES modules shared with the kernel side, the demo and Node
// (core.mjs also has Node-only branches), and they must stay byte-identical everywhere. Importing
// them by URL keeps one copy of the logic and keeps webpack out of their way.

/** What the extension uses of js/store/indexeddb.mjs (see docs/INTERFACES.md, "Stores"). */
export interface ICheckpointMeta {
  notebook?: string | null;
  createdMs?: number;
  size?: number;
  variables?: number;
  names?: string[];
  skipped?: unknown;
  [key: string]: unknown;
}
export interface IStoreEntry {
  name: string;
  meta: ICheckpointMeta;
}
export interface IStore {
  put(name: string, bytes: Uint8Array, meta: ICheckpointMeta): Promise<unknown>;
  get(name: string): Promise<{ bytes: Uint8Array; meta: ICheckpointMeta } | null>;
  list(options?: { notebook?: string }): Promise<IStoreEntry[]>;
  delete(name: string): Promise<boolean>;
  close(): Promise<void>;
}

/** The inspection report (docs/INTERFACES.md, "The inspection report"). */
export interface IInspectError {
  message: string;
  offset?: number;
  record?: number | null;
  opcode?: string | null;
}
export interface IInspectRecord {
  index: number;
  names: string[];
  serializer: string;
  length: number;
  ok: boolean;
  error: IInspectError | null;
  globals?: [string, string][];
}
export interface IInspectReport {
  ok: boolean;
  format_version?: number;
  producer?: string;
  python?: string;
  created_ms?: number;
  size?: number;
  error: IInspectError | null;
  records: IInspectRecord[];
}
export interface ICore {
  inspect(bytes: Uint8Array, options?: { validate?: boolean }): IInspectReport;
}

// webpack sets this to the folder remoteEntry.js was loaded from: .../<ext>/static/
declare let __webpack_public_path__: string;

function staticUrl(rel: string): string {
  return new URL(rel, new URL(__webpack_public_path__, document.baseURI)).href;
}

// import() of a URL only known at run time; the comment keeps webpack from resolving it.
function importUrl(url: string): Promise<any> {
  return import(/* webpackIgnore: true */ url);
}

let storePromise: Promise<IStore> | null = null;
let corePromise: Promise<ICore> | null = null;

/** The checkpoint store of this origin: the same IndexedDB database the kernel writes. */
export function getStore(): Promise<IStore> {
  if (!storePromise) {
    storePromise = importUrl(staticUrl('elastic-lite/js/store/indexeddb.mjs')).then(
      m => new m.IndexedDBStore() as IStore
    );
    storePromise.catch(() => (storePromise = null));
  }
  return storePromise;
}

/** The C core (WebAssembly), for inspecting a checkpoint without unpickling anything. */
export function getCore(): Promise<ICore> {
  if (!corePromise) {
    corePromise = importUrl(staticUrl('elastic-lite/js/core.mjs')).then(m =>
      m.loadCore(staticUrl('elastic-lite/elastic_lite.wasm'))
    );
    corePromise.catch(() => (corePromise = null));
  }
  return corePromise;
}
