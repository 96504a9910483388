// Publisher keys: a checkpoint a site ships with its notebooks, signed by whoever published it.
//
// A store's own signature (HMAC, js/store/indexeddb.mjs "Signatures") can only vouch for what
// that store saved; a state computed on the publisher's machine and served with the site is
// foreign to every visitor's browser. A publisher signs it instead with an asymmetric key
// (ECDSA P-256 with SHA-256: WebCrypto verifies it in every browser and in Node without any
// library), the private key stays with the publisher, and a site pins the public keys it
// trusts. What a visitor's page does with a published state follows from `verifyPublished`:
//   trusted   signed by a pinned key and the checkpoint's bytes are the ones signed;
//   damaged   the bytes differ from the signed digest or size (changed on the way or on disk);
//   unpinned  signed by a key the site does not pin (or not signed at all): foreign, as today;
//   invalid   the signature does not verify under the pinned key it names, or the document is
//             not a published-state document: treated like damage.
//
// The signed text is a domain line plus the canonical JSON of the document without its
// `signature` field, so every field shown to a person (notebook, cells, computed, variables)
// is covered, and the checkpoint's bytes through their SHA-256 and size.
import { canonicalJson } from '../store/indexeddb.mjs';

export const PUBLISHED_FORMAT = 'elastic-lite published state';
export const PUBLISHED_VERSION = 1;
export const KEY_FORMAT = 'elastic-lite publisher key';
const ALG = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGN_ALG = { name: 'ECDSA', hash: 'SHA-256' };
const SIG_ALG_NAME = 'ECDSA-P256-SHA256';
const DOMAIN = `${PUBLISHED_FORMAT} ${PUBLISHED_VERSION}\n`;

function subtle() {
  const s = globalThis.crypto?.subtle;
  if (!s) {
    throw new Error('this page cannot check published states: WebCrypto is only available on https:// ' +
      'or http://localhost pages (a secure context).');
  }
  return s;
}

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromB64url(text) {
  if (typeof text !== 'string' || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const s = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** SHA-256 of bytes, as lowercase hex. */
export async function sha256Hex(bytes) {
  return hex(await subtle().digest('SHA-256', bytes));
}

/** The public half a site pins: {kty, crv, x, y} (JWK members, nothing else). */
export function publicKeyOf(jwk) {
  if (!jwk || jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string') {
    throw new Error('not a P-256 public key: expected a JSON object {"kty":"EC","crv":"P-256","x":...,"y":...}.');
  }
  return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
}

/** A key's id: the first 16 hex digits of SHA-256 over its canonical public JWK. */
export async function publisherKeyId(jwk) {
  const pub = publicKeyOf(jwk);
  return (await sha256Hex(new TextEncoder().encode(canonicalJson(pub)))).slice(0, 16);
}

/**
 * A new key pair: {format, keyId, publicKey, privateKey} — the whole object is the publisher's
 * secret key file; `publicKey` (with `keyId`) is what a site pins.
 */
export async function generatePublisherKey() {
  const pair = await subtle().generateKey(ALG, true, ['sign', 'verify']);
  const privateKey = await subtle().exportKey('jwk', pair.privateKey);
  const publicKey = publicKeyOf(await subtle().exportKey('jwk', pair.publicKey));
  return { format: KEY_FORMAT, keyId: await publisherKeyId(publicKey), publicKey, privateKey };
}

/** Reads a key file's text back (the object generatePublisherKey made), with a clear error. */
export async function parsePublisherKey(text) {
  let doc;
  try { doc = JSON.parse(text); } catch { doc = null; }
  if (!doc || doc.format !== KEY_FORMAT || !doc.privateKey || typeof doc.privateKey.d !== 'string') {
    throw new Error(`not a publisher key file (expected the JSON that "elastic-lite keygen" writes, format "${KEY_FORMAT}").`);
  }
  const publicKey = publicKeyOf(doc.privateKey);
  return { ...doc, publicKey, keyId: await publisherKeyId(publicKey) };
}

function signedText(doc) {
  const { signature, ...rest } = doc;
  return new TextEncoder().encode(DOMAIN + canonicalJson(rest));
}

/**
 * The published-state document for a checkpoint file's bytes: `info` = {notebook, computed
 * (ISO time), cells: [{number, firstLine}], variables (count), python, pyodide, checkpoint
 * (file name)}; signed with the key file object `key`.
 */
export async function signPublished(key, bytes, info) {
  const priv = await subtle().importKey('jwk', key.privateKey, ALG, false, ['sign']);
  const doc = {
    format: PUBLISHED_FORMAT, v: PUBLISHED_VERSION, alg: SIG_ALG_NAME, keyId: key.keyId,
    size: bytes.byteLength, sha256: await sha256Hex(bytes), ...info,
  };
  return { ...doc, signature: b64url(await subtle().sign(SIGN_ALG, priv, signedText(doc))) };
}

/** Parses a site setting's list of pinned keys: JWKs (with or without keyId) → [{keyId, jwk}]. */
export async function pinnedKeys(list) {
  const out = [];
  for (const item of Array.isArray(list) ? list : []) {
    try {
      const jwk = publicKeyOf(item?.publicKey ?? item);
      out.push({ keyId: await publisherKeyId(jwk), jwk });
    } catch { /* a malformed pin is ignored here; the settings schema shows it */ }
  }
  return out;
}

/**
 * What a page may make of a published state: {state, keyId, reason} (states in the header).
 * `doc` is the parsed sidecar (anything: it comes from the network), `bytes` the checkpoint,
 * `pins` from pinnedKeys().
 */
export async function verifyPublished(doc, bytes, pins) {
  const bad = (state, reason) => ({ state, keyId: typeof doc?.keyId === 'string' ? doc.keyId : null, reason });
  if (!doc || typeof doc !== 'object' || doc.format !== PUBLISHED_FORMAT) {
    return bad('invalid', 'it is not a published-state document');
  }
  if (doc.v !== PUBLISHED_VERSION || doc.alg !== SIG_ALG_NAME) {
    return bad('invalid', `it uses a version or algorithm this page does not know (${String(doc.v)}, ${String(doc.alg)})`);
  }
  const pin = pins.find((p) => p.keyId === doc.keyId);
  if (!pin) return bad('unpinned', `it is signed by publisher key ${String(doc.keyId)}, which this site does not pin`);
  if (doc.size !== bytes.byteLength || doc.sha256 !== await sha256Hex(bytes)) {
    return bad('damaged', `the checkpoint's bytes are not the ones its publisher signed (${bytes.byteLength} bytes, signed ${String(doc.size)})`);
  }
  const sig = fromB64url(doc.signature);
  let ok = false;
  if (sig && sig.byteLength === 64) {
    const pub = await subtle().importKey('jwk', pin.jwk, ALG, false, ['verify']);
    ok = await subtle().verify(SIGN_ALG, pub, sig, signedText(doc));
  }
  if (!ok) return bad('invalid', 'its signature does not verify under the pinned key it names: it was changed after it was signed');
  return { state: 'trusted', keyId: doc.keyId, reason: null };
}

/** Where a notebook's published state lies beside it: NOTEBOOK.ipynb → the .elc and the .json. */
export function publishedPaths(notebookPath) {
  const stem = notebookPath.replace(/\.ipynb$/i, '');
  return { checkpoint: `${stem}.published.elc`, document: `${stem}.published.json` };
}

/**
 * "N variables, computed DATE": what a published document says it holds, as every host offers
 * it (its fields come from the network: checked). `formatTime(ms)`: the host's own clock format.
 */
export function publishedSummary(doc, formatTime) {
  const n = Number.isInteger(doc?.variables) ? doc.variables : '?';
  const at = typeof doc?.computed === 'string' ? Date.parse(doc.computed) : NaN;
  return `${n} variables, computed ${Number.isNaN(at) ? 'at an unknown time' : formatTime(at)}`;
}
