// Elastic Lite for JupyterLite: checkpoint the Pyodide kernel's session into this origin's
// IndexedDB and restore it into a fresh kernel. This file wires the parts into JupyterLab, one
// named step each: settings, commands (+ shortcuts and the notebook toolbar, both declared in
// schema/plugin.json), the sidebar, the palette, the restore offer after a reload or a kernel
// restart, the automatic checkpoint after each cell (the notebook's history) and its
// retention.
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { INotebookTracker, Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';

import { ElasticLiteController } from './controller';
import { addFolderCommands } from './folder-ui';
import { NotebookIdentity } from './identity';
import { IRetention } from './modules';
import { offerPublished } from './published';
import { CheckpointSidebar } from './sidebar';

const PLUGIN_ID = 'elastic-lite-jupyterlite:plugin';

export const CommandIDs = {
  checkpoint: 'elastic-lite:checkpoint',
  restore: 'elastic-lite:restore',
  showSidebar: 'elastic-lite:show-sidebar',
  toggleAuto: 'elastic-lite:toggle-auto-checkpoint',
  toggleReplay: 'elastic-lite:toggle-replay'
};

// A stack of two pages with a clock hand: "saved state".
const icon = new LabIcon({
  name: 'elastic-lite:icon',
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">
  <g class="jp-icon3" fill="#616161">
    <path d="M6 3h10l4 4v11a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm0 2v13h12V8h-3V5z"/>
    <path d="M11 9h2v4h3v2h-5z"/>
  </g></svg>`
});

interface ISettings {
  autoCheckpoint: boolean;
  autoCheckpointDelayMs: number;
  offerRestore: boolean;
  historyKeepLast: number;
  historyKeepHourly: number;
  historyMaxMiB: number;
  replay: boolean;
  /** Public keys of the publishers whose published notebook states this site trusts. */
  publisherKeys: unknown[];
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Checkpoint and restore the Pyodide kernel (Elastic Lite).',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ISettingRegistry, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null
  ) => {
    const controller = new ElasticLiteController(new NotebookIdentity(app.serviceManager.contents));
    const settings = loadSettings(app, settingRegistry, controller);
    controller.options = settings; // read at each call: replay follows the live setting
    addCommands(app, tracker, controller, settings);
    addSidebar(app, tracker, controller, restorer);
    addToPalette(palette);
    addFolderCommands(app, tracker, controller).forEach(command => palette?.addItem({ command, category: 'Elastic Lite' }));
    // The toolbar buttons are declared in schema/plugin.json ("jupyter.lab.toolbars"), so
    // JupyterLab places them and a person can move or hide them in the settings.
    tracker.widgetAdded.connect((_, panel) => watchKernel(panel, controller, settings));
    autoCheckpoint(tracker, controller, settings);
  }
};

/** The settings, kept up to date (defaults until the registry has loaded them). */
interface ILiveSettings extends ISettings {
  /** Persist a change (or, without a registry, keep it for this page). */
  set(key: keyof ISettings, value: boolean | number): Promise<void>;
}

function loadSettings(
  app: JupyterFrontEnd,
  registry: ISettingRegistry | null,
  controller: ElasticLiteController
): ILiveSettings {
  let stored: ISettingRegistry.ISettings | null = null;
  let loading: Promise<unknown> = Promise.resolve();
  // changes not yet saved by the registry: a `changed` of an older save must not undo them
  const pending = new Map<keyof ISettings, boolean | number>();
  const settings: ILiveSettings = {
    autoCheckpoint: true,
    autoCheckpointDelayMs: 500,
    offerRestore: true,
    historyKeepLast: 30,
    historyKeepHourly: 24,
    historyMaxMiB: 1024,
    replay: true,
    publisherKeys: [],
    async set(key, value) {
      // In force at once: a cell run right after the toggle follows it, without waiting for
      // the registry to save it (which can take seconds on a busy page).
      Object.assign(settings, { [key]: value });
      pending.set(key, value);
      try {
        await loading; // a change made while the registry loads must not be overwritten by it
        if (stored) {
          await stored.set(key, value); // persisted; `changed` updates the fields
        }
      } finally {
        if (pending.get(key) === value) {
          pending.delete(key);
        }
      }
    }
  };
  loading = (registry?.load(PLUGIN_ID) ?? Promise.reject(new Error('no settings registry'))).then(
    s => {
      stored = s;
      const read = () => {
        Object.assign(settings, s.composite as unknown as Partial<ISettings>, Object.fromEntries(pending));
        app.commands.notifyCommandChanged(CommandIDs.toggleAuto);
        void controller.setRetention(retentionOf(settings));
        app.commands.notifyCommandChanged(CommandIDs.toggleReplay);
      };
      read();
      s.changed.connect(read);
    },
    e => {
      console.warn('Elastic Lite: cannot load settings, using defaults:', e);
      void controller.setRetention(retentionOf(settings));
    }
  );
  return settings;
}

/** The store's retention policy from the history settings (0 = that rule is not used). */
function retentionOf(settings: ISettings): IRetention | null {
  const policy: IRetention = {};
  if (settings.historyKeepLast > 0) {
    policy.keepLast = settings.historyKeepLast;
  }
  if (settings.historyKeepHourly > 0) {
    policy.keepHourly = settings.historyKeepHourly;
  }
  if (settings.historyMaxMiB > 0) {
    policy.maxBytes = settings.historyMaxMiB * 1024 * 1024;
  }
  return Object.keys(policy).length ? policy : null;
}

/** Runs an action of the current notebook and shows its outcome as a notification. */
function notifier(controller: ElasticLiteController) {
  return async (what: () => Promise<unknown>) => {
    try {
      await what();
      Notification.success(controller.status, { autoClose: 4000 });
    } catch (e) {
      Notification.error((e as Error).message, { autoClose: false });
    }
  };
}

function addCommands(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  controller: ElasticLiteController,
  settings: ILiveSettings
): void {
  const current = (): NotebookPanel | null => tracker.currentWidget;
  const notify = notifier(controller);
  app.commands.addCommand(CommandIDs.checkpoint, {
    label: 'Checkpoint kernel',
    caption: "Save this notebook's kernel session (Elastic Lite; Accel+Alt+Shift+S)",
    className: 'jp-ElasticLite-checkpointButton',
    icon,
    isEnabled: () => current() !== null,
    execute: () => {
      const panel = current();
      return panel ? notify(() => controller.checkpoint(panel)) : undefined;
    }
  });
  app.commands.addCommand(CommandIDs.restore, {
    label: 'Restore kernel',
    caption:
      "Restore this notebook's last checkpoint into its kernel: the one you saved, or the state before a restart or reload " +
      "(not this kernel's own automatic points: pick those in the sidebar) (Elastic Lite; Accel+Alt+Shift+R)",
    className: 'jp-ElasticLite-restoreButton',
    isEnabled: () => current() !== null,
    execute: () => {
      const panel = current();
      return panel ? notify(() => controller.restore(panel)) : undefined;
    }
  });
  app.commands.addCommand(CommandIDs.toggleAuto, {
    label: 'Auto-checkpoint after each successful cell',
    caption: "Checkpoint the kernel after each successful cell: the notebook's history (only what changed is written)",
    isToggled: () => settings.autoCheckpoint,
    execute: () => settings.set('autoCheckpoint', !settings.autoCheckpoint)
  });
  app.commands.addCommand(CommandIDs.toggleReplay, {
    label: 'Recompute by replay what a checkpoint cannot store',
    caption: 'Checkpoints plan, and restores run, the re-running of the recorded cells that made a generator, an open file, a connection…',
    isToggled: () => settings.replay,
    execute: () => settings.set('replay', !settings.replay)
  });
}

function addSidebar(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  controller: ElasticLiteController,
  restorer: ILayoutRestorer | null
): void {
  const sidebar = new CheckpointSidebar(controller, tracker);
  sidebar.title.icon = icon;
  app.shell.add(sidebar, 'left', { rank: 650 });
  restorer?.add(sidebar, sidebar.id);
  app.commands.addCommand(CommandIDs.showSidebar, {
    label: 'Show Elastic Lite checkpoints',
    execute: () => app.shell.activateById(sidebar.id)
  });
}

function addToPalette(palette: ICommandPalette | null): void {
  for (const command of Object.values(CommandIDs)) {
    palette?.addItem({ command, category: 'Elastic Lite' });
  }
}

/**
 * The notebook's history: after each successful code cell, once no other cell of that notebook
 * is queued and `autoCheckpointDelayMs` has passed, one automatic checkpoint of its kernel,
 * tied to that cell (execution count, first line, time). A cell scheduled meanwhile takes its
 * place, so a run of queued cells (Run All) gives one point after the last and is never held
 * up; in the kernel, only groups that changed are written. The kernel can refuse them
 * (`%autocheckpoint off`).
 */
function autoCheckpoint(tracker: INotebookTracker, controller: ElasticLiteController, settings: ISettings): void {
  const timers = new Map<Notebook, number>();
  // a cell scheduled meanwhile takes the place of the pending point
  NotebookActions.executionScheduled.connect((_, { notebook }) => window.clearTimeout(timers.get(notebook)));
  NotebookActions.executed.connect((_, { notebook, cell, success }) => {
    if (!settings.autoCheckpoint || !success || cell.model.type !== 'code' || othersQueued(notebook, cell)) {
      return;
    }
    const panel = tracker.find(p => p.content === notebook);
    if (!panel) {
      return;
    }
    const point = {
      executionCount: (cell.model as { executionCount?: number | null }).executionCount ?? null,
      firstLine: cell.model.sharedModel.getSource(), // the kernel keeps its first line that says something
      timeMs: Date.now()
    };
    window.clearTimeout(timers.get(notebook));
    timers.set(
      notebook,
      window.setTimeout(() => {
        timers.delete(notebook);
        if (!othersQueued(notebook, null)) {
          controller
            .autoCheckpoint(panel, point)
            .catch(e => console.warn('Elastic Lite auto-checkpoint:', (e as Error).message));
        }
      }, settings.autoCheckpointDelayMs)
    );
  });
}

/**
 * Whether another code cell of the notebook is queued or running (JupyterLab marks both
 * 'running'; cells cancelled after an error are set back to 'idle').
 */
function othersQueued(notebook: Notebook, cell: Notebook['widgets'][number] | null): boolean {
  return notebook.widgets.some(
    c => c !== cell && c.model.type === 'code' && (c.model as { executionState?: string }).executionState === 'running'
  );
}

/**
 * Whenever the notebook gets a fresh kernel (on page load: the kernel is new after a reload;
 * after a restart from the menu; after a kernel change), tells it its notebook path
 * (`elastic_lite.set_notebook`) and offers a restore. The path is sent again after a rename,
 * and after a cell ran while the kernel has not confirmed it yet.
 */
function watchKernel(panel: NotebookPanel, controller: ElasticLiteController, settings: ISettings): void {
  const ctx = panel.sessionContext;
  let restarting = false;
  // A restart can signal both a status change and a kernel change: coalesce them into one offer.
  let pending = 0;
  const bind = () => void controller.bindNotebook(panel);
  const offer = () => {
    restarting = false;
    window.clearTimeout(pending);
    pending = window.setTimeout(() => {
      if (settings.offerRestore && !panel.isDisposed) {
        // no checkpoint of its own yet: the state its publisher shipped with it, if any
        void controller
          .offerRestore(panel)
          .then(offered => offered || offerPublished(panel, controller, () => settings.publisherKeys));
      }
    }, 500);
  };
  const onStatus = (_: Kernel.IKernelConnection, status: Kernel.Status) => {
    if (status === 'restarting' || status === 'autorestarting') {
      restarting = true;
      controller.kernelStarted(panel);
    } else if (restarting && status === 'idle') {
      restarting = false;
      bind();
      offer();
    }
  };
  let watched: Kernel.IKernelConnection | null = null;
  const follow = (kernel: Kernel.IKernelConnection | null | undefined) => {
    watched?.statusChanged.disconnect(onStatus);
    watched = kernel ?? null;
    watched?.statusChanged.connect(onStatus);
  };
  void ctx.ready.then(() => {
    follow(ctx.session?.kernel);
    if (ctx.session?.kernel) {
      controller.kernelStarted(panel);
      bind();
      offer();
    }
    ctx.kernelChanged.connect((_, change) => {
      follow(change.newValue);
      if (change.newValue) {
        controller.kernelStarted(panel);
        bind();
      }
      if (change.newValue && change.oldValue) {
        offer();
      }
    });
    NotebookActions.executed.connect((_, { notebook }) => {
      if (notebook !== panel.content) {
        return;
      }
      // the notebook's id (identity.ts): given at first use — a cell run —, remembered by this
      // browser until the notebook is saved with it, and it follows a rename or Save As
      controller.identity.adopt(panel);
      // A cell that fails while the kernel starts makes the kernel drop requests queued behind
      // it, ours included: until the kernel has its path, tell it again after each cell.
      if (ctx.session?.kernel && !controller.isBound(panel)) {
        bind();
      }
    });
    panel.context.saveState.connect((_, state) => {
      if (state === 'completed') {
        controller.identity.saved(panel);
      }
    });
    let lastPath = panel.context.path;
    panel.context.pathChanged.connect(() => {
      controller.identity.moved(panel, lastPath);
      lastPath = panel.context.path;
      if (ctx.session?.kernel) {
        bind();
      }
    });
  });
}

export default plugin;
