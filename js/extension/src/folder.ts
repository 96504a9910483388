// Checkpoints in a folder on disk (File System Access, Chromium): "Save checkpoints to a
// folder…" asks for a folder (showDirectoryPicker), remembers its handle in this origin's
// IndexedDB and makes it the current notebook's store; "Reconnect folder" asks for permission
// again after a reload (the browser wants a click for that); "Copy all checkpoints to the
// folder" is a backup of this browser's store. The folder has the layout of the CLI's
// `--store DIR` (docs/STORE-LAYOUT.md): `elastic-lite ls --store DIR` reads it, and a folder
// the CLI wrote restores here.
//
// The kernel runs in a worker: it reads the same remembered handle from IndexedDB (a handle is
// structured-cloneable) and, while permission is granted, makes a FolderStore over it its
// store (bindKernelStore); the page lists, deletes and exports through the same folder
// (pageStore). Both import js/store/folder.mjs from this extension's static folder.
import { Kernel } from '@jupyterlab/services';

import { IKernelResult, MARKER, runInKernel } from './kernel';
import { getStore, IRetention, IStore, staticUrl } from './modules';

const FOLDER_MODULE = 'elastic-lite/js/store/folder.mjs';

/** What the extension uses of js/store/folder.mjs. */
interface IFolderModule {
  FolderStore: new (handle: FileSystemDirectoryHandle) => IFolderStore;
  rememberFolder(handle: FileSystemDirectoryHandle | null): Promise<void>;
  rememberedFolder(): Promise<FileSystemDirectoryHandle | null>;
  setFolderDefault(key: string, on: boolean): Promise<void>;
  folderIsDefault(key: string): Promise<boolean>;
  folderPermission(handle: FileSystemDirectoryHandle, options?: { request?: boolean }): Promise<PermissionState>;
  folderStoreFor(key: string): Promise<{ store: IStore | null; folder: string | null; state: string }>;
  copyCheckpoints(from: IStore, to: IStore): Promise<{ copied: string[]; same: string[]; damaged: string[]; lost: string[] }>;
}

/** A FolderStore as the page uses it. */
interface IFolderStore extends IStore {
  handle: FileSystemDirectoryHandle;
  getRetention(notebook: string | null): Promise<IRetention | null>;
}

let modulePromise: Promise<IFolderModule> | null = null;
let pageFolder: IFolderStore | null = null;

function folderModule(): Promise<IFolderModule> {
  if (!modulePromise) {
    modulePromise = import(/* webpackIgnore: true */ staticUrl(FOLDER_MODULE)) as Promise<IFolderModule>;
    modulePromise.catch(() => (modulePromise = null));
  }
  return modulePromise;
}

/** Where notebook `key` keeps its checkpoints, as the sidebar shows it. */
export interface IFolderState {
  /** the remembered folder's name, or null */
  folder: string | null;
  /** 'none' (no folder), 'browser' (the notebook uses the browser's store), 'granted',
   * 'prompt' (permission to ask again: Reconnect), 'denied' */
  state: string;
  /** whether this browser has the File System Access API */
  supported: boolean;
}

export function folderSupported(): boolean {
  return typeof (window as any).showDirectoryPicker === 'function';
}

export async function folderState(key: string): Promise<IFolderState> {
  const m = await folderModule();
  const { folder, state } = await m.folderStoreFor(key);
  return { folder, state, supported: folderSupported() };
}

/** The store the page reads for notebook `key`: the folder while it is the notebook's store
 * and permission is granted, else this origin's IndexedDB. */
export async function pageStore(key: string): Promise<IStore> {
  const found = await folderModule()
    .then(m => m.folderStoreFor(key))
    .catch(() => null);
  const store = found?.store as IFolderStore | null | undefined;
  if (!store) {
    return getStore();
  }
  // one object per folder: it sweeps what dead writers left once, on first use, not per listing
  if (!pageFolder || !(await pageFolder.handle.isSameEntry(store.handle))) {
    pageFolder = store;
  }
  return pageFolder;
}

/**
 * Makes the kernel's store the folder when it is notebook `key`'s store (and permission is
 * granted), else the kernel's default (this origin's IndexedDB). Nothing is sent while no
 * folder was ever chosen. Returns the state the kernel saw.
 */
export async function bindKernelStore(kernel: Kernel.IKernelConnection, key: string): Promise<string> {
  const remembered = await folderModule()
    .then(m => m.rememberedFolder())
    .catch(() => null);
  if (!remembered) {
    return 'none';
  }
  const url = staticUrl(FOLDER_MODULE);
  const code = `async def _elastic_lite_folder():
    import json as _json
    import elastic_lite
    from pyodide.code import run_js
    try:
        _m = await run_js("import(" + _json.dumps(${JSON.stringify(url)}) + ")")
        _r = await _m.folderStoreFor(${JSON.stringify(key)})
        _was = getattr(elastic_lite, "_folder_store", None)  # the FolderStore this set, if any
        if _r.state == "granted":
            if _was is None or not await _was.handle.isSameEntry(_r.store.handle):
                elastic_lite.set_store(_r.store)  # (the same folder again: kept, with what it tracks)
                elastic_lite._folder_store = _r.store
        elif _was is not None:
            elastic_lite.set_store(None)  # back to the browser's store
            elastic_lite._folder_store = None
        print(${JSON.stringify(MARKER)} + _json.dumps({"ok": True, "state": _r.state}))
    except Exception as e:
        print(${JSON.stringify(MARKER)} + _json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
await _elastic_lite_folder()
del _elastic_lite_folder
`;
  const result = await runInKernel(kernel, code).catch(e => ({ ok: false, error: String(e) }) as IKernelResult);
  if (!result.ok) {
    console.warn('Elastic Lite: the kernel cannot use the checkpoint folder:', result.error);
    return 'error';
  }
  return result.state as string;
}

/** "Save checkpoints to a folder…": the picker, then the folder is notebook `key`'s store. */
export async function chooseFolder(key: string): Promise<string> {
  const m = await folderModule();
  let handle: FileSystemDirectoryHandle;
  try {
    handle = await (window as any).showDirectoryPicker({ id: 'elastic-lite', mode: 'readwrite' });
  } catch (e) {
    if ((e as DOMException).name === 'AbortError') {
      return '';
    }
    throw e;
  }
  if ((await m.folderPermission(handle, { request: true })) !== 'granted') {
    throw new Error(`The browser did not allow writing to the folder "${handle.name}": checkpoints stay in the browser's storage.`);
  }
  await m.rememberFolder(handle);
  await m.setFolderDefault(key, true);
  // a folder without retention settings of its own keeps the history like this browser's store
  const folder = new m.FolderStore(handle);
  if (!(await folder.getRetention(null))) {
    const policy = await ((await getStore()) as unknown as IFolderStore).getRetention(null);
    if (policy) {
      await folder.setRetention(null, policy);
    }
  }
  return `Checkpoints of this notebook now go to the folder "${handle.name}".`;
}

/** "Reconnect folder": asks the browser for permission again (a click). */
export async function reconnectFolder(): Promise<string> {
  const m = await folderModule();
  const handle = await m.rememberedFolder();
  if (!handle) {
    throw new Error('No checkpoint folder was chosen yet: use "Save checkpoints to a folder…".');
  }
  const state = await m.folderPermission(handle, { request: true });
  if (state !== 'granted') {
    throw new Error(`The browser did not allow using the folder "${handle.name}" (${state}): checkpoints go to the browser's storage.`);
  }
  return `The folder "${handle.name}" is connected again.`;
}

/** The notebook's store: the folder (true) or the browser's storage (false). */
export async function useFolder(key: string, on: boolean): Promise<void> {
  await (await folderModule()).setFolderDefault(key, on);
}

/** "Copy all checkpoints to the folder": every checkpoint of this origin's IndexedDB. */
export async function copyToFolder(): Promise<string> {
  const m = await folderModule();
  const handle = await m.rememberedFolder();
  if (!handle) {
    throw new Error('No checkpoint folder was chosen yet: use "Save checkpoints to a folder…".');
  }
  if ((await m.folderPermission(handle, { request: true })) !== 'granted') {
    throw new Error(`The browser did not allow writing to the folder "${handle.name}".`);
  }
  const { copied, same, damaged, lost } = await m.copyCheckpoints(await getStore(), new m.FolderStore(handle));
  return `Copied ${copied.length} checkpoint(s) to the folder "${handle.name}"` +
    (same.length ? ` (${same.length} were there already)` : '') +
    (damaged.length ? `; not copied, their data is damaged: ${damaged.join(', ')}` : '') +
    (lost.length ? `; not copied, their data was removed by the browser: ${lost.join(', ')}` : '') + '.';
}
