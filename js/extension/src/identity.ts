// Which notebook a checkpoint belongs to: not its path (a rename, a move or "Save As" would
// lose the history, and the next notebook that gets the old name — JupyterLab reuses
// Untitled.ipynb — would be offered another notebook's state) but an id kept in the notebook's
// own metadata, `metadata.elastic_lite.id`, saved with the notebook. The id is what the kernel
// is told (`elastic_lite.set_notebook(id)`) and what checkpoints carry as `meta.notebook`.
//
// - A notebook without one gets it at first use (its first cell run, or a Checkpoint), when it
//   is already modified: opening a notebook never makes it dirty.
// - Until the notebook is saved with it, the id is also remembered in this browser for that
//   file (path and creation time), so a reload of a notebook never saved still finds its
//   checkpoints; the entry is dropped once the notebook is saved with the id, so a new
//   notebook that reuses the name starts empty.
// - Checkpoints made before notebooks had ids (`meta.notebook` = the path) stay listed with
//   the notebook at that path (controller.list).
// - A copy (same id, another path) shares the history: `sharedWith` names the other file.
import { Contents } from '@jupyterlab/services';
import { NotebookPanel } from '@jupyterlab/notebook';

/** The notebook metadata key: `{ "id": "..." }`. */
export const METADATA_KEY = 'elastic_lite';
// localStorage: ids not saved in their notebook yet, and where each id was last seen
const PENDING_KEY = 'elastic-lite:pending-notebook-ids'; // path -> { id, created }
const SEEN_KEY = 'elastic-lite:notebook-paths'; // id -> path

type Pending = Record<string, { id: string; created: string | null }>;

function readJson<T>(key: string): T {
  try {
    const value = JSON.parse(window.localStorage.getItem(key) ?? '{}');
    return value && typeof value === 'object' ? value : ({} as T);
  } catch {
    return {} as T;
  }
}

function writeJson(key: string, value: unknown): void {
  try {
    window.localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // storage full or blocked: ids then live as long as the page (the notebook keeps its own)
  }
}

/** The id saved in a notebook's metadata, or null. */
export function savedId(panel: NotebookPanel): string | null {
  const meta = panel.model?.getMetadata(METADATA_KEY) as { id?: unknown } | undefined;
  return typeof meta?.id === 'string' && meta.id ? meta.id : null;
}

/**
 * A new id: the notebook's file name when it got it and 12 random hex digits
 * (`analysis.ipynb#3f9a2c1e07b4`), readable where the kernel shows it (`%checkpoints`).
 */
function newId(path: string): string {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(6)), b => b.toString(16).padStart(2, '0')).join('');
  return `${path.split('/').pop() || 'notebook'}#${random}`;
}

function createdOf(panel: NotebookPanel): string | null {
  return panel.context.contentsModel?.created ?? null;
}

export class NotebookIdentity {
  constructor(private readonly contents: Contents.IManager) {}

  /**
   * The notebook's id: its metadata's, or the one this browser gave it while it was never
   * saved with one (the same file: path and creation time), or a new one (remembered).
   */
  key(panel: NotebookPanel): string {
    const saved = savedId(panel);
    if (saved) {
      return saved;
    }
    const path = panel.context.path;
    const pending = readJson<Pending>(PENDING_KEY);
    const entry = pending[path];
    const created = createdOf(panel);
    if (entry && typeof entry.id === 'string' && (!entry.created || !created || entry.created === created)) {
      return entry.id;
    }
    const id = newId(path);
    pending[path] = { id, created };
    writeJson(PENDING_KEY, pending);
    return id;
  }

  /** First use: the id goes into the notebook's metadata (saved with the notebook). */
  adopt(panel: NotebookPanel): string {
    const saved = savedId(panel);
    if (saved || !panel.model) {
      return saved ?? this.key(panel);
    }
    const id = this.key(panel);
    panel.model.setMetadata(METADATA_KEY, { id });
    this.seen(panel);
    return id;
  }

  /** A copy starts a history of its own: a new id (the one it carried stays the other's). */
  fork(panel: NotebookPanel): string {
    const id = newId(panel.context.path);
    panel.model?.setMetadata(METADATA_KEY, { id });
    this.seen(panel);
    return id;
  }

  /** After a save: once the notebook holds its id, this browser need not remember it. */
  saved(panel: NotebookPanel): void {
    const id = savedId(panel);
    if (!id) {
      return;
    }
    const pending = readJson<Pending>(PENDING_KEY);
    let changed = false;
    for (const [path, entry] of Object.entries(pending)) {
      if (entry?.id === id) {
        delete pending[path];
        changed = true;
      }
    }
    if (changed) {
      writeJson(PENDING_KEY, pending);
    }
    this.seen(panel);
  }

  /** A rename or Save As: the pending id moves with the notebook; the id is seen there. */
  moved(panel: NotebookPanel, oldPath: string): void {
    const pending = readJson<Pending>(PENDING_KEY);
    if (pending[oldPath] && !pending[panel.context.path]) {
      pending[panel.context.path] = pending[oldPath];
      delete pending[oldPath];
      writeJson(PENDING_KEY, pending);
    }
    this.seen(panel);
  }

  private seen(panel: NotebookPanel): void {
    const id = savedId(panel);
    if (id) {
      const paths = readJson<Record<string, string>>(SEEN_KEY);
      if (paths[id] !== panel.context.path) {
        paths[id] = panel.context.path;
        writeJson(SEEN_KEY, paths);
      }
    }
  }

  /**
   * Another notebook file that carries the same id (a copy, or the original of one): its
   * path, or null. The path where this browser last saw the id is checked: still there with
   * the same id, it shares the history; gone or changed, this notebook is where the id lives.
   */
  async sharedWith(panel: NotebookPanel): Promise<string | null> {
    const id = savedId(panel);
    if (!id) {
      return null;
    }
    const other = readJson<Record<string, string>>(SEEN_KEY)[id];
    if (!other || other === panel.context.path) {
      this.seen(panel);
      return null;
    }
    try {
      const model = await this.contents.get(other, { content: true, type: 'notebook' });
      const otherId = (model.content?.metadata?.[METADATA_KEY] as { id?: unknown } | undefined)?.id;
      if (otherId === id) {
        return other;
      }
    } catch {
      // gone: renamed or moved outside this page
    }
    this.seen(panel);
    return null;
  }
}
