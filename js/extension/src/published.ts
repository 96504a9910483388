// A notebook published warm: its publisher ran it and shipped the state it computed beside it
// (`elastic-lite publish`: NOTEBOOK.published.elc + NOTEBOOK.published.json in the site's
// files). When such a notebook opens with no checkpoint of its own yet, the person is offered
// "Start from the published state". What happens on accepting is decided by the site's pinned
// publisher keys (settings "publisherKeys", js/shared/publisher.mjs verifyPublished):
//   trusted   imported as this browser's own (signed) and restored: no foreign dialog;
//   unpinned  imported as foreign and restored through the usual foreign dialog (trust.ts);
//   damaged / invalid   refused, nothing is stored or unpickled.
// Declining leaves the fresh kernel; the person's own checkpoints take precedence from then on
// (the offer is made only while the notebook has none).
import { Notification } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';

import { pinnedKeys, publishedPaths, publishedSummary, verifyPublished } from '../../shared/publisher.mjs';
import { fmtBytes, problemLine } from '../../shared/report.mjs';
import { ElasticLiteController } from './controller';
import { formatTime } from './format';
import { runInKernel } from './kernel';
import { hostCode } from './python';

/** A published state found beside a notebook: its document (as served) and where its bytes are. */
export interface IPublished {
  doc: any;
  checkpointUrl: string;
}

/** The URL of a file of the site's contents (JupyterLite and Jupyter Server both serve files/). */
function fileUrl(path: string): string {
  return URLExt.join(PageConfig.getBaseUrl(), 'files', URLExt.encodeParts(path));
}

/** The published state beside the panel's notebook, or null (none, or not readable). */
export async function findPublished(panel: NotebookPanel): Promise<IPublished | null> {
  const paths = publishedPaths(panel.context.path);
  try {
    const res = await fetch(fileUrl(paths.document), { cache: 'no-cache' });
    if (!res.ok) {
      return null;
    }
    return { doc: await res.json(), checkpointUrl: fileUrl(paths.checkpoint) };
  } catch {
    return null; // no published state, or not JSON: nothing to offer
  }
}

/**
 * Offers the published state of a notebook that has no checkpoint of its own. Resolves true
 * when an offer was shown.
 */
export async function offerPublished(
  panel: NotebookPanel,
  controller: ElasticLiteController,
  publisherKeys: () => unknown[]
): Promise<boolean> {
  const found = await findPublished(panel);
  if (!found || panel.isDisposed) {
    return false;
  }
  Notification.info(`${panel.context.path} was published with its state: start from the published state (${publishedSummary(found.doc, formatTime)})?`, {
    autoClose: false,
    actions: [
      {
        label: 'Start from it',
        displayType: 'accent',
        callback: () => {
          startFromPublished(panel, controller, found, publisherKeys()).then(
            () => Notification.success(controller.status, { autoClose: 4000 }),
            e => Notification.error((e as Error).message, { autoClose: false })
          );
        }
      },
      { label: 'Not now', callback: () => undefined }
    ]
  });
  return true;
}

/**
 * Fetches, checks and restores a published state into the panel's kernel. Throws with a
 * sentence for a person when it is refused.
 */
export async function startFromPublished(
  panel: NotebookPanel,
  controller: ElasticLiteController,
  found: IPublished,
  publisherKeys: unknown[]
): Promise<void> {
  const res = await fetch(found.checkpointUrl, { cache: 'no-cache' });
  if (!res.ok) {
    throw new Error(`The published state of ${panel.context.path} cannot be read (${res.status} ${res.statusText}).`);
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  const verdict = await verifyPublished(found.doc, bytes, await pinnedKeys(publisherKeys));
  if (verdict.state === 'damaged' || verdict.state === 'invalid') {
    throw new Error(`Refused the published state of ${panel.context.path} as damaged: ${verdict.reason}. Nothing was restored.`);
  }
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) {
    throw new Error('This notebook has no running kernel: start one, then try again.');
  }
  const notebook = panel.context.path;
  const trusted = verdict.state === 'trusted';
  const report = await runInKernel(
    kernel,
    hostCode('import', {
      name: `${notebook} published ${found.doc.computed}`,
      notebook: controller.identity.adopt(panel), // the notebook's id (identity.ts)
      unique: true,
      source: `the published state of ${notebook}${trusted ? ` (publisher key ${verdict.keyId})` : ''}`,
      trust: trusted
    }, bytes)
  );
  if (!report.ok) {
    const why = (report.problems ?? []).map((p: any) => problemLine('published state', p)).join('; ') || report.error;
    throw new Error(`The published state of ${notebook} was not taken in: ${why}`);
  }
  // trusted: signed as this browser's own, restored at once; unpinned: foreign, the usual dialog
  await controller.restore(panel, report.name as string);
  console.info(`Elastic Lite: published state of ${notebook} (${fmtBytes(bytes.byteLength)}, ${verdict.state}).`);
}
