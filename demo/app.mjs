// Wires the demo page together: starts the Python worker, the cells and the checkpoint panel,
// and on load offers to restore the latest checkpoint when one is stored.
import { KernelClient } from './rpc.mjs';
import { Notebook } from './notebook.mjs';
import { CheckpointPanel } from './checkpoints.mjs';
import { initMessages, showMessage, explainError } from './messages.mjs';
import { formatBytes, formatTime } from './format.mjs';
import { offerPublishedState } from './published.mjs';
import { FolderChoice } from './folder.mjs';
import { removedText, storageRemoved } from '../js/shared/storage-status.mjs';

const $ = (sel) => document.querySelector(sel);
initMessages($('#messages'));

const statusEl = $('#kernel-status');
let kernelState = 'starting';
let busy = 0;
function renderStatus(text) {
  const state = kernelState === 'ready' && busy > 0 ? 'busy' : kernelState;
  statusEl.dataset.state = state;
  statusEl.textContent = text ?? (state === 'busy' ? 'Python busy…' : state === 'ready' ? 'Python ready' : statusEl.textContent);
}
const onBusy = (delta) => { busy += delta; renderStatus(); };

const worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module', name: 'elastic-lite-python' });
const kernel = new KernelClient(worker);
kernel.onStatus = ({ state, message }) => { kernelState = state; renderStatus(message); };

const notebook = new Notebook($('#cells'), kernel, { onBusy });
const panel = new CheckpointPanel($('.panel'), kernel, { onBusy });
// this browser's storage or a folder on disk; the list shows the store checkpoints go to
const where = new FolderChoice($('.panel .import-row'), kernel, {
  onChange: () => { panel.folder = where.folder; return panel.refresh(); },
});

$('#run-all').addEventListener('click', () => notebook.runAll());
$('#add-cell').addEventListener('click', () => notebook.addCell('', { focus: true }));
$('#reset-cells').addEventListener('click', () => {
  if (window.confirm('Replace the cells with the original example? Your cell text will be lost (Python variables stay).')) notebook.reset();
});

async function start() {
  let info;
  try {
    info = await kernel.call('init');
  } catch (err) {
    kernelState = 'failed';
    statusEl.dataset.elastic = 'unavailable';
    renderStatus('Python failed to start');
    explainError(err.kind ? err : { kind: 'setup', message: err.message }, { action: 'start' });
    return;
  }
  renderStatus(`Python ${info.python} ready`);
  // Tests and styles can tell "Python runs but checkpoints are unavailable" apart.
  statusEl.dataset.elastic = info.elasticLite ? 'ready' : 'unavailable';
  if (!info.elasticLite) {
    explainError({ kind: 'setup', message: info.reason ?? 'Elastic Lite is not available.' }, { action: 'start' });
    return;
  }
  const gone = await storageRemoved(); // the browser removed this site's storage since checkpoints were saved
  if (gone) showMessage({ level: 'warn', key: 'removed', title: 'Your checkpoints were removed by the browser', lines: [removedText(gone)] });
  where.show(info.where);
  panel.folder = where.folder;
  const items = await panel.refresh();
  const choice = items.find((i) => i.name === panel.restoreChoice); // the kernel's pick (host.list)
  if (choice) offerRestore(choice);
  else await offerPublishedState({ kernel, panel }); // ?state=URL: a published state, if given
}

// A fresh page has an empty Python; if there is something to come back to, say so at once.
function offerRestore({ name, meta }) {
  showMessage({
    level: 'warn', key: 'offer',
    title: 'Restore your last session?',
    lines: [`Checkpoint “${name}” from ${formatTime(meta.createdMs)}: ${meta.variables ?? '?'} variables, ${formatBytes(meta.size)}.`,
      // the heap warning the kernel stored with it when it was saved (as the list shows it)
      ...(typeof meta.restoreWarning === 'string' ? [`Warning: ${meta.restoreWarning}`] : [])],
    actions: [
      [`Restore “${name}”`, () => panel.restore(name), { class: 'primary', id: 'offer-restore' }],
      ['Not now', () => {}],
    ],
  });
  // No focus on Restore: a key pressed for a cell at that moment must not restore.
}

start();
