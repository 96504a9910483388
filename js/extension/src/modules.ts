// Loads the project's IndexedDB store (js/store/indexeddb.mjs) at run time from this
// extension's static folder, where the build copies it: the page lists, deletes and exports
// checkpoints through the same store the kernel writes (plain reads and deletes; everything
// that judges a checkpoint happens in the kernel, in elastic_lite.host).
//
// Why not bundle it: it is the very module the kernel loads from the wheel, and it must stay
// byte-identical everywhere. Importing it by URL keeps one copy and keeps webpack out of its way.

/** What the extension uses of js/store/indexeddb.mjs (see docs/INTERFACES.md, "Stores"). */
export interface ICheckpointMeta {
  notebook?: string | null;
  createdMs?: number;
  size?: number;
  variables?: number;
  names?: string[];
  skipped?: unknown;
  /** the cell the checkpoint followed (the history), and whether it was automatic */
  cell?: { executionCount?: number | null; firstLine?: string; timeMs?: number } | null;
  auto?: boolean;
  [key: string]: unknown;
}
export interface IStoreEntry {
  name: string;
  meta: ICheckpointMeta;
}
/** A retention policy of the store (docs/INTERFACES.md, "Stores"). */
export interface IRetention {
  keepLast?: number;
  keepHourly?: number;
  maxBytes?: number;
}
export interface IStore {
  setRetention(notebook: string | null, policy: IRetention | null): Promise<void>;
  put(name: string, bytes: Uint8Array, meta: ICheckpointMeta): Promise<unknown>;
  get(name: string): Promise<{ bytes: Uint8Array; meta: ICheckpointMeta } | null>;
  list(options?: { notebook?: string }): Promise<IStoreEntry[]>;
  delete(name: string): Promise<boolean>;
  close(): Promise<void>;
}

// webpack sets this to the folder remoteEntry.js was loaded from: .../<ext>/static/
declare let __webpack_public_path__: string;

export function staticUrl(rel: string): string {
  return new URL(rel, new URL(__webpack_public_path__, document.baseURI)).href;
}

// import() of a URL only known at run time; the comment keeps webpack from resolving it.
function importUrl(url: string): Promise<any> {
  return import(/* webpackIgnore: true */ url);
}

let storePromise: Promise<IStore> | null = null;

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
