// The sidebar's folder part (folder.ts): where this notebook's checkpoints go — the browser's
// storage or a folder on disk — as a choice, and the buttons "Save checkpoints to a folder…",
// "Reconnect folder" (after a reload the browser asks again, on a click) and "Copy all
// checkpoints to the folder". Also the same actions as commands (palette).
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { ElasticLiteController } from './controller';
import { bindKernelStore, chooseFolder, copyToFolder, folderState, reconnectFolder, useFolder } from './folder';

export const FolderCommandIDs = {
  choose: 'elastic-lite:save-to-folder',
  reconnect: 'elastic-lite:reconnect-folder',
  copy: 'elastic-lite:copy-to-folder'
};

function node<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text = ''): HTMLElementTagNameMap[K] {
  const n = document.createElement(tag);
  n.className = className;
  n.textContent = text;
  return n;
}

// The open folder sections' refreshers: a command run from the palette lists again too.
const refreshers = new Set<() => void>();
// What the last folder action said, per notebook: shown by the section rendered after it.
const lastSaid = new Map<string, string>();

/** Runs a folder action, then tells the kernel which store to use and lists again. */
async function act(
  panel: NotebookPanel,
  controller: ElasticLiteController,
  action: () => Promise<string>,
  changed: () => void
): Promise<string> {
  let said: string;
  try {
    said = await action();
  } catch (e) {
    lastSaid.set(controller.key(panel), (e as Error).message);
    changed();
    throw e;
  }
  lastSaid.set(controller.key(panel), said);
  const kernel = panel.sessionContext.session?.kernel;
  if (kernel) {
    await bindKernelStore(kernel, controller.key(panel));
  }
  changed();
  return said;
}

/** The folder part of the sidebar for `panel` (filled in once the store answers). */
export function folderSection(panel: NotebookPanel, controller: ElasticLiteController, changed: () => void): HTMLElement {
  const section = node('div', 'jp-ElasticLite-folder');
  refreshers.clear(); // one sidebar: the section rendered last is the one shown
  refreshers.add(changed);
  const line = node('div', 'jp-ElasticLite-folderLine', 'Checkpoints kept in: …');
  const said = node('div', 'jp-ElasticLite-folderStatus');
  section.append(line);
  said.textContent = lastSaid.get(controller.key(panel)) ?? '';
  const run = (action: () => Promise<string>) => void act(panel, controller, action, changed).catch(() => undefined);
  const key = controller.key(panel);
  void folderState(key).then(({ folder, state, supported }) => {
    if (!supported && !folder) {
      line.textContent = "Checkpoints kept in: this browser's storage (this browser cannot save to a folder)";
      return;
    }
    const select = node('select', 'jp-ElasticLite-folderChoice');
    select.append(new Option("this browser's storage", 'browser'));
    if (folder) {
      select.append(new Option(`the folder "${folder}"`, 'folder'));
    }
    select.value = state === 'browser' || state === 'none' ? 'browser' : 'folder';
    select.addEventListener('change', () => run(async () => {
      await useFolder(key, select.value === 'folder');
      return select.value === 'folder' ? `Checkpoints of this notebook now go to the folder "${folder}".`
        : "Checkpoints of this notebook now go to this browser's storage.";
    }));
    line.replaceChildren('Checkpoints kept in: ', select);
    const buttons = node('div', 'jp-ElasticLite-folderButtons');
    const button = (label: string, title: string, action: () => Promise<string>) => {
      const b = node('button', 'jp-ElasticLite-button jp-mod-styled', label);
      b.title = title;
      b.addEventListener('click', () => run(action));
      buttons.append(b);
    };
    if (state === 'prompt' || state === 'denied') {
      said.textContent = `The folder "${folder}" needs your permission again: checkpoints go to this browser's storage until you reconnect it.`;
      button('Reconnect folder', 'Ask the browser for permission to use the folder again', reconnectFolder);
    }
    if (supported) {
      button('Save checkpoints to a folder…', 'Choose a folder on disk for this notebook\'s checkpoints (the CLI reads it: elastic-lite ls --store DIR)',
        () => chooseFolder(key));
    }
    if (folder) {
      button('Copy all checkpoints to the folder', "A backup: every checkpoint of this browser's storage, copied into the folder", copyToFolder);
    }
    section.append(buttons);
  });
  section.append(said);
  return section;
}

/** The folder actions as commands (on the current notebook). */
export function addFolderCommands(app: JupyterFrontEnd, tracker: INotebookTracker, controller: ElasticLiteController): string[] {
  const withPanel = (action: (panel: NotebookPanel) => Promise<string>) => () => {
    const panel = tracker.currentWidget;
    if (!panel) {
      return;
    }
    return act(panel, controller, () => action(panel), () => refreshers.forEach(f => f())).then(
      text => text && Notification.info(text, { autoClose: 5000 }),
      e => Notification.error((e as Error).message, { autoClose: false })
    );
  };
  app.commands.addCommand(FolderCommandIDs.choose, {
    label: 'Save checkpoints to a folder…',
    caption: "Keep this notebook's checkpoints in a folder on disk (the elastic-lite CLI reads it with --store DIR)",
    isEnabled: () => tracker.currentWidget !== null,
    execute: withPanel(panel => chooseFolder(controller.key(panel)))
  });
  app.commands.addCommand(FolderCommandIDs.reconnect, {
    label: 'Reconnect checkpoint folder',
    caption: 'Ask the browser for permission to use the checkpoint folder again (after a reload)',
    execute: withPanel(() => reconnectFolder())
  });
  app.commands.addCommand(FolderCommandIDs.copy, {
    label: 'Copy all checkpoints to the folder',
    caption: "A backup: every checkpoint of this browser's storage, copied into the checkpoint folder",
    execute: withPanel(() => copyToFolder())
  });
  return Object.values(FolderCommandIDs);
}
