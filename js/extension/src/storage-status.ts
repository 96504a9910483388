// The sidebar's storage part: one line saying whether the browser keeps this origin's
// checkpoints (navigator.storage.persisted()) and how much is used and left (estimate()), a
// button that asks the browser to keep them (persist() wants a user gesture in some browsers),
// and the checkpoints whose data the browser removed (the store lists them with `lost`), each
// marked, with an offer to delete them. Words shared with the demo and %checkpoints
// (js/shared/storage-status.mjs).
import {
  askPersistence,
  canAskToKeep,
  declinedText,
  ILost,
  KEEP_LABEL,
  KEEP_TITLE,
  lostSummary,
  lostText,
  markSaved,
  removedText,
  storageLine,
  storageRemoved,
  storageStatus
} from '../../shared/storage-status.mjs';
import { IStore } from './modules';

interface IMaybeLost {
  name: string;
  lost?: ILost | null;
}

// the browser said no to the button's request (kept across the sidebar's re-renders)
let declined = false;

function div(className: string, text = ''): HTMLDivElement {
  const node = document.createElement('div');
  node.className = className;
  node.textContent = text;
  return node;
}

function button(label: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement('button');
  b.className = 'jp-ElasticLite-button jp-mod-styled';
  b.textContent = label;
  b.title = title;
  b.addEventListener('click', onClick);
  return b;
}

/** Deletes checkpoints from `store` (the one they were listed from: the browser's or the folder). */
async function deleteLost(store: IStore, names: string[]): Promise<void> {
  for (const name of names) {
    await store.delete(name);
  }
}

/**
 * The storage line (filled in when the browser answers), the "Keep checkpoints" button while
 * the storage is not persistent, and the lost checkpoints among `entries` with a button that
 * deletes them (then `changed()`). Once a checkpoint exists, persistence is asked for once per
 * page.
 */
export function storageSection(
  entries: IMaybeLost[],
  changed: () => void,
  listedFrom: () => Promise<IStore>
): HTMLElement {
  const section = div('jp-ElasticLite-storage');
  const line = div('jp-ElasticLite-storageLine', 'Browser storage: …');
  const keep = button(KEEP_LABEL, KEEP_TITLE, () =>
    void askPersistence({ again: true }).then(granted => {
      declined = granted === false;
      return show();
    })
  );
  keep.hidden = true;
  section.append(line, keep);
  async function show(): Promise<void> {
    const status = await storageStatus();
    line.textContent =
      (storageLine(status) || 'Browser storage: not reported by this browser') +
      (declined && status?.persistent === false ? declinedText() : '');
    keep.hidden = !canAskToKeep(status);
  }
  // best effort, silently: some browsers grant it by their own rules, others ask the person
  void (entries.length ? askPersistence() : Promise.resolve(null)).then(show, show);
  // the whole store removed since checkpoints were saved in it (said in this page), and the
  // mark that lets a later page tell, while this browser's store (not a folder) holds some
  const removed = div('jp-ElasticLite-removed jp-ElasticLite-error');
  removed.hidden = true;
  section.append(removed);
  void storageRemoved().then(gone => {
    removed.hidden = !gone;
    removed.textContent = gone ? removedText(gone) : '';
  });
  if (entries.length) {
    void listedFrom().then(store => ('handle' in store ? undefined : markSaved()));
  }
  section.append(lostSection(entries, names => listedFrom().then(store => deleteLost(store, names)), changed));
  return section;
}

/**
 * The lost checkpoints among `entries`, said in one sentence, with a button that deletes them
 * all through `remove` (the store they were listed from, or the kernel that keeps them), then
 * `changed()`. Empty (and hidden) when none is lost.
 */
export function lostSection(
  entries: IMaybeLost[],
  remove: (names: string[]) => Promise<void>,
  changed: () => void
): HTMLElement {
  const section = div('jp-ElasticLite-lostSection');
  const lost = entries.filter(e => e.lost);
  section.hidden = !lost.length;
  if (lost.length) {
    section.append(
      div('jp-ElasticLite-lostSummary jp-ElasticLite-error', lostSummary(lost)),
      button('Delete lost checkpoints', 'Delete the listed checkpoints whose data is gone', () =>
        void remove(lost.map(e => e.name)).then(changed, e => console.warn('Elastic Lite:', (e as Error).message))
      )
    );
  }
  return section;
}

/** Marks the sidebar item of a checkpoint whose data is gone. */
export function markLost(li: HTMLElement, entry: IMaybeLost): void {
  if (!entry.lost) {
    return;
  }
  li.classList.add('jp-ElasticLite-lost');
  li.append(div('jp-ElasticLite-itemLost jp-ElasticLite-error', lostText(entry.lost)));
}
