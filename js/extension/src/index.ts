// Elastic Lite for JupyterLite: checkpoint the Pyodide kernel's session into this origin's
// IndexedDB and restore it into a fresh kernel. This file wires the parts into JupyterLab:
// commands + palette + shortcuts (schema/plugin.json), notebook toolbar buttons, the sidebar,
// the restore offer after a reload or a kernel restart, and the opt-in auto-checkpoint.
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification, ToolbarButton } from '@jupyterlab/apputils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { ElasticLiteController } from './controller';
import { CheckpointSidebar } from './sidebar';

const PLUGIN_ID = 'elastic-lite-jupyterlite:plugin';

export const CommandIDs = {
  checkpoint: 'elastic-lite:checkpoint',
  restore: 'elastic-lite:restore',
  showSidebar: 'elastic-lite:show-sidebar',
  toggleAuto: 'elastic-lite:toggle-auto-checkpoint'
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
    const controller = new ElasticLiteController();
    const settings: ISettings = { autoCheckpoint: false, autoCheckpointDelayMs: 3000, offerRestore: true };
    let pluginSettings: ISettingRegistry.ISettings | null = null;
    if (settingRegistry) {
      void settingRegistry.load(PLUGIN_ID).then(
        s => {
          pluginSettings = s;
          const read = () => {
            Object.assign(settings, s.composite as unknown as Partial<ISettings>);
            app.commands.notifyCommandChanged(CommandIDs.toggleAuto);
          };
          read();
          s.changed.connect(read);
        },
        e => console.warn('Elastic Lite: cannot load settings, using defaults:', e)
      );
    }

    // --- commands -------------------------------------------------------------------------
    const current = (): NotebookPanel | null => tracker.currentWidget;
    const notify = async (what: () => Promise<unknown>) => {
      try {
        await what();
        Notification.success(controller.status, { autoClose: 4000 });
      } catch (e) {
        Notification.error((e as Error).message, { autoClose: false });
      }
    };
    app.commands.addCommand(CommandIDs.checkpoint, {
      label: 'Checkpoint kernel',
      caption: "Save this notebook's kernel session (Elastic Lite)",
      icon,
      isEnabled: () => current() !== null,
      execute: () => {
        const panel = current();
        return panel ? notify(() => controller.checkpoint(panel)) : undefined;
      }
    });
    app.commands.addCommand(CommandIDs.restore, {
      label: 'Restore kernel',
      caption: "Restore this notebook's latest checkpoint into its kernel (Elastic Lite)",
      isEnabled: () => current() !== null,
      execute: () => {
        const panel = current();
        return panel ? notify(() => controller.restore(panel)) : undefined;
      }
    });

    // --- sidebar --------------------------------------------------------------------------
    const sidebar = new CheckpointSidebar(controller, tracker);
    sidebar.title.icon = icon;
    app.shell.add(sidebar, 'left', { rank: 650 });
    restorer?.add(sidebar, sidebar.id);
    app.commands.addCommand(CommandIDs.showSidebar, {
      label: 'Show Elastic Lite checkpoints',
      execute: () => app.shell.activateById(sidebar.id)
    });
    app.commands.addCommand(CommandIDs.toggleAuto, {
      label: 'Auto-checkpoint after each successful cell',
      caption: 'Checkpoint the kernel automatically (debounced) after each successful cell execution',
      isToggled: () => settings.autoCheckpoint,
      execute: async () => {
        const value = !settings.autoCheckpoint;
        if (pluginSettings) {
          await pluginSettings.set('autoCheckpoint', value); // persisted; `changed` updates `settings`
        } else {
          settings.autoCheckpoint = value; // no settings registry: for this page only
        }
      }
    });
    for (const command of Object.values(CommandIDs)) {
      palette?.addItem({ command, category: 'Elastic Lite' });
    }

    // --- notebook toolbar -----------------------------------------------------------------
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew(panel: NotebookPanel, _context: DocumentRegistry.IContext<INotebookModel>): IDisposable {
        const checkpoint = new ToolbarButton({
          className: 'jp-ElasticLite-checkpointButton',
          label: 'Checkpoint',
          tooltip: 'Checkpoint the kernel (Accel+Alt+Shift+S)',
          onClick: () => void notify(() => controller.checkpoint(panel))
        });
        const restore = new ToolbarButton({
          className: 'jp-ElasticLite-restoreButton',
          label: 'Restore',
          tooltip: "Restore this notebook's latest checkpoint (Accel+Alt+Shift+R)",
          onClick: () => void notify(() => controller.restore(panel))
        });
        panel.toolbar.insertAfter('cellType', 'elastic-lite-checkpoint', checkpoint);
        panel.toolbar.insertAfter('elastic-lite-checkpoint', 'elastic-lite-restore', restore);
        return new DisposableDelegate(() => {
          checkpoint.dispose();
          restore.dispose();
        });
      }
    });

    // --- restore offer after a reload or a kernel restart ----------------------------------
    tracker.widgetAdded.connect((_, panel) => watchKernel(panel, controller, settings));

    // --- opt-in auto-checkpoint ----------------------------------------------------------
    const timers = new Map<NotebookPanel, number>();
    NotebookActions.executed.connect((_, { notebook, cell, success }) => {
      if (!settings.autoCheckpoint || !success || cell.model.type !== 'code') {
        return;
      }
      const panel = tracker.find(p => p.content === notebook);
      if (!panel) {
        return;
      }
      window.clearTimeout(timers.get(panel));
      timers.set(
        panel,
        window.setTimeout(() => {
          timers.delete(panel);
          controller
            .checkpoint(panel, { auto: true })
            .catch(e => console.warn('Elastic Lite auto-checkpoint:', (e as Error).message));
        }, settings.autoCheckpointDelayMs)
      );
    });
  }
};

/**
 * Whenever the notebook gets a fresh kernel (on page load: the kernel is new after a reload;
 * after a restart from the menu; after a kernel change), tells it its notebook path
 * (`elastic_lite.set_notebook`) and offers a restore. The path is sent again after a rename.
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
        void controller.offerRestore(panel);
      }
    }, 500);
  };
  const onStatus = (_: Kernel.IKernelConnection, status: Kernel.Status) => {
    if (status === 'restarting' || status === 'autorestarting') {
      restarting = true;
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
      bind();
      offer();
    }
    ctx.kernelChanged.connect((_, change) => {
      follow(change.newValue);
      if (change.newValue) {
        bind();
      }
      if (change.newValue && change.oldValue) {
        offer();
      }
    });
    panel.context.pathChanged.connect(() => {
      if (ctx.session?.kernel) {
        bind();
      }
    });
  });
}

export default plugin;
