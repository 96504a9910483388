// ?state=URL: the demo page starts from a published state (`elastic-lite publish`: X.published.elc
// beside X.published.json) on the page's own origin, by the rule the JupyterLite extension
// follows (js/shared/publisher.mjs verifyPublished against the pinned keys of
// demo/publishers.json): a state signed by a pinned key is taken in as this browser's own and
// restored; one signed by another key is taken in as foreign and restored through the trust
// dialog; one whose bytes or signature changed is refused and nothing is stored. Offered only
// while the page has no checkpoint of its own: the person's own points take precedence.
import { pinnedKeys, publishedSummary, verifyPublished } from '../js/shared/publisher.mjs';
import { showMessage } from './messages.mjs';
import { formatTime } from './format.mjs';

/** The ?state= URL of this page, resolved; null when absent; throws when not on this origin. */
export function stateUrl(location = window.location) {
  const given = new URLSearchParams(location.search).get('state');
  if (!given) return null;
  const url = new URL(given, location.href);
  if (url.origin !== location.origin) {
    throw new Error(`?state= must name a published state on this site (${location.origin}), not ${url.origin}.`);
  }
  return url;
}

async function fetchOk(url, what) {
  const res = await fetch(url, { cache: 'no-cache' });
  if (!res.ok) throw new Error(`${what} cannot be read: ${url.pathname} (${res.status} ${res.statusText}).`);
  return res;
}

/** Offers the published state named by ?state=; resolves true when an offer was shown. */
export async function offerPublishedState({ kernel, panel }) {
  let url;
  let doc;
  try {
    url = stateUrl();
    if (!url) return false;
    const docUrl = new URL(url.pathname.replace(/\.elc$/i, '') + '.json', url);
    doc = await (await fetchOk(docUrl, 'The published state\'s document')).json();
  } catch (err) {
    showMessage({ level: 'error', key: 'offer', title: 'The published state cannot be offered', lines: [err.message] });
    return false;
  }
  showMessage({
    level: 'warn', key: 'offer',
    title: 'Start from the published state?',
    lines: [`${doc?.notebook ?? url.pathname} was published with its state: ${publishedSummary(doc, formatTime)}.`],
    actions: [
      ['Start from it', () => startFromPublished({ kernel, panel, url, doc }), { class: 'primary', id: 'offer-published' }],
      ['Not now', () => {}],
    ],
  });
  return true;
}

async function startFromPublished({ kernel, panel, url, doc }) {
  try {
    const [bytes, pins] = await Promise.all([
      fetchOk(url, 'The published state').then(async (r) => new Uint8Array(await r.arrayBuffer())),
      fetchOk(new URL('publishers.json', window.location.href), 'This page\'s pinned publishers (demo/publishers.json)')
        .then((r) => r.json()).then((cfg) => pinnedKeys(cfg?.publisherKeys)),
    ]);
    const verdict = await verifyPublished(doc, bytes, pins);
    if (verdict.state === 'damaged' || verdict.state === 'invalid') {
      showMessage({ level: 'error', key: 'op', title: 'Refused the published state as damaged', lines: [`${verdict.reason}.`, 'Nothing was stored or restored.'] });
      return;
    }
    const trusted = verdict.state === 'trusted';
    const name = `published ${doc.notebook ?? ''} ${doc.computed ?? ''}`.replace(/\s+/g, ' ').trim();
    const report = await kernel.call('import', {
      name, fileName: `${url.pathname}${trusted ? ` (publisher key ${verdict.keyId})` : ''}`, bytes, trust: trusted,
    }, { transfer: [bytes.buffer] });
    if (!report.ok) {
      showMessage({ level: 'error', key: 'op', title: 'The published state was not taken in', lines: report.problems.map((p) => p.message) });
      return;
    }
    await panel.refresh();
    await panel.restore(report.name); // trusted: signed as this browser's own; else the trust dialog
  } catch (err) {
    showMessage({ level: 'error', key: 'op', title: 'The published state could not be restored', lines: [err.message] });
  }
}
