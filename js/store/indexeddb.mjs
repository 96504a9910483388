// IndexedDBStore: checkpoints in the browser's IndexedDB (page or web worker), content-addressed.
//
// This file must stay ONE self-contained ES module with no imports at all: it is shipped
// inside the Python wheel and imported from Python through a Blob URL (where relative imports
// cannot resolve), and the JupyterLab extension loads it from its static folder. It uses no
// DOM API, only `indexedDB`, `crypto.subtle` and (when present) `navigator.locks` and
// `navigator.storage`, so it also runs in workers. The rules every store shares (names,
// metadata, record keys, cutting a container into records, retention, writer locks) live in
// the first half and are re-exported by common.mjs for MemoryStore and DirectoryStore.
//
// What a store keeps (docs/INTERFACES.md, "Stores"): each record of a checkpoint once, under
// its key (a SHA-256 of its bytes), with a count of the checkpoints that use it; and per
// checkpoint an entry {head, records: [{key, length}], tail, meta}, where head + the records'
// bytes + tail is the checkpoint file exactly. A record unchanged between two checkpoints is
// stored once.

// ---------------------------------------------------------------------------------------------
// Names, metadata, bytes
// ---------------------------------------------------------------------------------------------

const MAX_NAME_LENGTH = 200;

/** Throws a clear Error unless `name` can be a checkpoint name (same rule in every store). */
export function checkName(name) {
  if (typeof name !== 'string' || name.length === 0) {
    throw new Error(`Invalid checkpoint name ${JSON.stringify(name)}: a name must be a non-empty string.`);
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new Error(`Invalid checkpoint name: ${name.length} characters, at most ${MAX_NAME_LENGTH} are allowed.`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw new Error(`Invalid checkpoint name ${JSON.stringify(name)}: control characters are not allowed.`);
  }
  return name;
}

// Meta is stored as plain data (a JSON copy) so it is structured-cloneable whatever the caller
// passed (a converted Python dict, an object with methods...), and detached from the caller.
export function plainMeta(meta, size) {
  const copy = meta == null ? {} : JSON.parse(JSON.stringify(meta));
  if (typeof copy !== 'object' || Array.isArray(copy)) throw new Error('Checkpoint metadata must be an object.');
  copy.size = size;
  if (typeof copy.createdMs !== 'number') copy.createdMs = Date.now();
  if (copy.notebook === undefined) copy.notebook = null;
  return copy;
}

export function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new Error('Checkpoint bytes must be a Uint8Array.');
}

export function byNewest(a, b) {
  return (b.meta.createdMs ?? 0) - (a.meta.createdMs ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** An Error with a machine-readable `.code` (hosts classify by code, never by text). */
export function storeError(code, message, extra = {}) {
  const err = new Error(message);
  err.code = code;
  return Object.assign(err, extra);
}

// ---------------------------------------------------------------------------------------------
// Record keys
// ---------------------------------------------------------------------------------------------
//
// key = hex SHA-256( u64le(length) || SHA-256(leaf 0) || SHA-256(leaf 1) || ... ), the leaves
// being the record's consecutive 4 MiB slices (the last one shorter; none when it is empty).
// Not a plain SHA-256 of the bytes because WebCrypto has no incremental digest: a record that
// arrives as several pieces (a pickle stream, then out-of-band buffers) would have to be copied
// into one buffer first. Leaves are hashed as they lie in the caller's pieces; only a leaf that
// straddles two pieces is copied (at most 4 MiB at a time). Python's MemoryStore computes the
// same key with hashlib (py/elastic_lite/store/stores.py, record_key).

export const KEY_LEAF_SIZE = 4 * 1024 * 1024;
const KEY_PATTERN = /^[0-9a-f]{64}$/;
const HASHES_IN_FLIGHT = 4; // WebCrypto copies its input: bound the copies alive at once

/**
 * The pieces of one record as given: a Uint8Array, or an array of pieces to concatenate.
 * A piece is a Uint8Array, or (stores whose `livePieces` is true: this one, MemoryStore,
 * DirectoryStore) a LIVE VIEW `{ byteLength, view() }` of memory that may move: view() returns
 * a Uint8Array of its bytes valid only until the next await. Python's memory in Pyodide is
 * handed over this way (the wasm heap's ArrayBuffer is replaced when it grows), so a record is
 * hashed and stored straight from it, copied a chunk at a time, never whole. A store calls
 * view() right before each synchronous use (a digest call copies its input at once, a put
 * clones it at once) and keeps nothing of it.
 */
export function recordPieces(record) {
  return (Array.isArray(record) ? record : [record]).map((p) => (isLiveView(p) ? p : toBytes(p)));
}

function isLiveView(p) {
  return p != null && !ArrayBuffer.isView(p) && typeof p.view === 'function' && Number.isSafeInteger(p.byteLength);
}

/** A piece's bytes now (a live view's current view, checked); use before the next await. */
export function pieceBytes(p) {
  if (!isLiveView(p)) return p;
  const u8 = p.view();
  if (!(u8 instanceof Uint8Array) || u8.byteLength !== p.byteLength) {
    throw new Error(`A live view of a record gave ${u8 && u8.byteLength} bytes instead of ${p.byteLength}: ` +
      'the memory it shows went away while the record was being saved. Save again.');
  }
  return u8;
}

export function piecesLength(pieces) {
  let n = 0;
  for (const p of pieces) n += p.byteLength;
  return n;
}

/**
 * Consecutive slices of `size` bytes over the concatenation of `pieces`. A slice inside one
 * piece is a view of it (use it before the next await: it may be a live view's); a slice that
 * straddles pieces is a fresh copy.
 */
export function* slices(pieces, size) {
  let i = 0; let off = 0;
  const total = piecesLength(pieces);
  for (let start = 0; start < total; start += size) {
    const want = Math.min(size, total - start);
    while (off === pieces[i].byteLength) { i += 1; off = 0; }
    if (pieces[i].byteLength - off >= want) {
      yield pieceBytes(pieces[i]).subarray(off, off + want);
      off += want;
      continue;
    }
    const out = new Uint8Array(want);
    let filled = 0;
    while (filled < want) {
      while (off === pieces[i].byteLength) { i += 1; off = 0; }
      const n = Math.min(want - filled, pieces[i].byteLength - off);
      out.set(pieceBytes(pieces[i]).subarray(off, off + n), filled);
      filled += n; off += n;
    }
    yield out;
  }
}

function webCrypto() {
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  if (!subtle) {
    throw new Error('WebCrypto (crypto.subtle) is not available here; checkpoint stores need it to name ' +
      'records. Browsers offer it only to secure pages: serve the page over https or from localhost.');
  }
  return subtle;
}

function hex(buffer) {
  let s = '';
  for (const b of new Uint8Array(buffer)) s += b.toString(16).padStart(2, '0');
  return s;
}

/**
 * The key of one record (see above); `record` as recordPieces() takes it. `onLeaf(bytes, at)`,
 * when given, is called with each 4 MiB leaf right after its digest has taken its copy, before
 * the next await (the store writes large records to a file in the same pass).
 */
export async function recordKey(record, onLeaf = null) {
  const pieces = recordPieces(record);
  const length = piecesLength(pieces);
  const subtle = webCrypto();
  const digests = [];
  const inFlight = [];
  let at = 0;
  for (const leaf of slices(pieces, KEY_LEAF_SIZE)) {
    const p = subtle.digest('SHA-256', leaf);
    if (onLeaf) onLeaf(leaf, at);
    at += leaf.byteLength;
    digests.push(p); inFlight.push(p);
    if (inFlight.length >= HASHES_IN_FLIGHT) await inFlight.shift();
  }
  const top = new Uint8Array(8 + 32 * digests.length);
  new DataView(top.buffer).setBigUint64(0, BigInt(length), true);
  (await Promise.all(digests)).forEach((d, i) => top.set(new Uint8Array(d), 8 + 32 * i));
  return hex(await subtle.digest('SHA-256', top));
}

export function isRecordKey(key) {
  return typeof key === 'string' && KEY_PATTERN.test(key);
}

// ---------------------------------------------------------------------------------------------
// Checking what is read against its key
// ---------------------------------------------------------------------------------------------
//
// An entry's signature covers its records' keys, not their bytes: the keys stand for the bytes
// only if every read checks them. So every store re-hashes each record it reads (recordKey over
// the bytes actually read, after reading) before anything can unpickle or replay it. A record
// whose bytes do not match its key (damaged in storage, or replaced by someone who can write
// the store: a same-length hostile record, an edited history record) is DAMAGE:
//   - get() returns the checkpoint with that record neutralized (neutralizeRecord: its header
//     kept, every byte after it zeroed and its stream checksum made to fail), so the core
//     reports the record damaged under the names its header gives and no byte of its payload
//     reaches a reader; get() lists it in `damaged` ([{key, record}], record = its index in
//     the entry) and marks it (as verifyRecords does) so no writer reuses it;
//   - readRecords() returns that record neutralized the same way (the array it returns has
//     `damaged`: the keys) and marks it: a reader that checks keys itself (Python's
//     store.stores.read_verified) sees the mismatch and names the variables from the header.
// A record a write would reuse is compared with the bytes being written first (sameBytes) and
// rewritten when it differs: a file planted under a key before its owner wrote it is replaced,
// never signed.

const RECORD_MAGIC = 0x43524c45; // "ELRC" read little-endian (wasm/FORMAT.md, Record)
const RECORD_HEADER_MIN = 44;
const CHECKS_IN_FLIGHT = 4;

let crcTable = null;

/** CRC-32/ISO-HDLC (zlib's crc32) of `u8`: only for neutralizeRecord, on damage. */
function crc32(u8) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n += 1) {
      let c = n;
      for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < u8.length; i += 1) c = crcTable[(c ^ u8[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * Makes the bytes of a record that failed its key check harmless, in place: a format-2 record
 * keeps its header (so the core names its variables) and everything after it becomes zero,
 * with the stream checksum certain to fail (one byte set if zeros would match the header's
 * CRC); a record whose stream is empty or does not fit gets its header check broken instead;
 * anything else (a format-1 or foreign file kept as one record) becomes all zeros.
 */
export function neutralizeRecord(u8) {
  const len = u8.byteLength;
  const dv = new DataView(u8.buffer, u8.byteOffset, len);
  const headerLength = len >= RECORD_HEADER_MIN && dv.getUint32(0, true) === RECORD_MAGIC ? dv.getUint32(4, true) : 0;
  if (headerLength < RECORD_HEADER_MIN || headerLength > len) { u8.fill(0); return u8; }
  u8.fill(0, headerLength);
  const streamLength = dv.getBigUint64(16, true);
  if (streamLength > 0n && streamLength <= BigInt(len - headerLength)) {
    const stream = u8.subarray(headerLength, headerLength + Number(streamLength));
    if (crc32(stream) === dv.getUint32(32, true)) stream[0] = 1; // a CRC catches any one-byte change
  } else {
    u8[headerLength - 1] ^= 0xff; // the header's CRC32C (its last 4 bytes) no longer matches
  }
  return u8;
}

/** True when the concatenated `pieces` (as recordPieces() gives them) equal `bytes`. */
export function sameBytes(pieces, bytes) {
  return piecesLength(pieces) === bytes.byteLength && sameBytesAt(pieces, 0, bytes);
}

/**
 * True when `bytes` equal the concatenated `pieces` from `offset` on (bytes past their end
 * never do). Synchronous: a live view is looked at once, now.
 */
export function sameBytesAt(pieces, offset, bytes) {
  let skip = offset; let filled = 0;
  for (const p of pieces) {
    if (filled === bytes.byteLength) break;
    if (skip >= p.byteLength) { skip -= p.byteLength; continue; }
    const u8 = pieceBytes(p);
    const n = Math.min(u8.byteLength - skip, bytes.byteLength - filled);
    for (let i = 0; i < n; i += 1) if (u8[skip + i] !== bytes[filled + i]) return false;
    filled += n; skip = 0;
  }
  return filled === bytes.byteLength;
}

/**
 * Checks each record of a checkpoint read into `out` (its records laid out from `start`, in
 * the order of `records` [{key, length}]) against its key; neutralizes the ones that do not
 * match and returns them as [{key, record}] (record: index in `records`). `keyOf`: recordKey,
 * or the same key computed another way (DirectoryStore: node:crypto, without WebCrypto's
 * cost per call).
 */
export async function checkRecordsRead(out, start, records, keyOf = recordKey) {
  const jobs = [];
  let at = start;
  for (const [i, r] of records.entries()) { jobs.push([i, r, at]); at += r.length; }
  const damaged = [];
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(CHECKS_IN_FLIGHT, jobs.length) }, async () => {
    while (next < jobs.length) {
      const [i, r, offset] = jobs[next];
      next += 1;
      const view = out.subarray(offset, offset + r.length);
      if (await keyOf(view) !== r.key) { neutralizeRecord(view); damaged.push({ key: r.key, record: i }); }
    }
  }));
  return damaged.sort((a, b) => a.record - b.record);
}

/**
 * Checks records read by readRecords() (`out[i]` the bytes of `keys[i]`) against their keys,
 * neutralizes the ones that do not match, in place, and returns `out` with `damaged` (their
 * keys, once each). `keyOf` as for checkRecordsRead.
 */
export async function checkRecordList(keys, out, keyOf = recordKey) {
  const damaged = new Set();
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(CHECKS_IN_FLIGHT, keys.length) }, async () => {
    while (next < keys.length) {
      const i = next;
      next += 1;
      if (await keyOf(out[i]) !== keys[i]) { neutralizeRecord(out[i]); damaged.add(keys[i]); }
    }
  }));
  return Object.assign(out, { damaged: [...damaged] });
}

// ---------------------------------------------------------------------------------------------
// Signatures: the checkpoints a store saved itself
// ---------------------------------------------------------------------------------------------
//
// commit() signs the entry it saves: an HMAC-SHA256, under a key of the store, over the
// checkpoint's name, head, record keys and lengths, tail and metadata (records are
// content-addressed: their keys stand for their bytes). The key: an IndexedDB database's own
// non-extractable WebCrypto key (created on first use, shared by every page and worker of the
// origin that opens the database), a key file beside a DirectoryStore, one key per
// MemoryStore. put() — what an import uses — signs only when asked. get() and getEntry() say
// whether an entry carries this store's signature; restore treats every other checkpoint as
// foreign (README, "Safety"). A signature says "saved by code that holds this store's key";
// it says nothing about the contents being harmless, and it does not stand against someone
// who can write the store itself (and so its key).

export const SIGNATURE_VERSION = 1;
const SIGNATURE_ALGORITHM = { name: 'HMAC', hash: 'SHA-256' };

/** JSON with object keys sorted at every level: one text for one metadata value. */
export function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The bytes a signature covers: netstrings (`<length>:<bytes>,`) of a version line, the name,
 * the head, one "key length" line per record, the tail and the canonical metadata.
 */
export function signedBytes(name, entry, meta) {
  const enc = new TextEncoder();
  const fields = [
    enc.encode(`elastic-lite entry signature ${SIGNATURE_VERSION}`), enc.encode(name), toBytes(entry.head),
    enc.encode(entry.records.map((r) => `${r.key} ${r.length}\n`).join('')), toBytes(entry.tail),
    enc.encode(canonicalJson(meta)),
  ];
  const parts = fields.flatMap((f) => [enc.encode(`${f.byteLength}:`), f, enc.encode(',')]);
  const out = new Uint8Array(piecesLength(parts));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.byteLength; }
  return out;
}

/** A new signing key: {key (a non-extractable HMAC CryptoKey), keyId}. */
export async function newSigningKey() {
  const key = await webCrypto().generateKey(SIGNATURE_ALGORITHM, false, ['sign', 'verify']);
  return { key, keyId: hex(globalThis.crypto.getRandomValues(new Uint8Array(8))) };
}

/** {key, keyId} from raw key bytes (a key file), as a non-extractable CryptoKey. */
export async function importSigningKey(raw, keyId) {
  const key = await webCrypto().importKey('raw', toBytes(raw), SIGNATURE_ALGORITHM, false, ['sign', 'verify']);
  return { key, keyId };
}

/** The signature of an entry under `signing` ({key, keyId}): {v, alg, keyId, mac}. */
export async function signEntry(signing, name, entry, meta) {
  const mac = await webCrypto().sign('HMAC', signing.key, signedBytes(name, entry, meta));
  return { v: SIGNATURE_VERSION, alg: 'HMAC-SHA256', keyId: signing.keyId, mac: hex(mac) };
}

/**
 * What an entry's signature `sig` says: {state, keyId}. state: 'valid' (this store's key
 * signed exactly this entry), 'unsigned', 'other-key' (signed elsewhere: another browser,
 * store or key), 'invalid' (this store's key, but the entry changed since).
 */
export async function signatureState(signing, name, entry, meta, sig) {
  if (!sig || typeof sig !== 'object' || typeof sig.mac !== 'string') return { state: 'unsigned', keyId: null };
  const keyId = typeof sig.keyId === 'string' ? sig.keyId : null;
  if (!signing || keyId !== signing.keyId || sig.v !== SIGNATURE_VERSION) return { state: 'other-key', keyId };
  const mac = /^[0-9a-f]{64}$/.test(sig.mac) ? Uint8Array.from(sig.mac.match(/../g), (h) => parseInt(h, 16)) : null;
  const ok = !!mac && await webCrypto().verify('HMAC', signing.key, mac, signedBytes(name, entry, meta));
  return { state: ok ? 'valid' : 'invalid', keyId };
}

// ---------------------------------------------------------------------------------------------
// The signed counter: rollback, concurrent writers, a changed key
// ---------------------------------------------------------------------------------------------
//
// Every commit of a store takes the next GENERATION of the store's counter and writes it into
// the entry's metadata (`meta.generation`, so the entry's signature covers it). The counter,
// {format, version, keyId, generation, names: {name: generation}, previousKeyIds, mac}, is
// signed (HMAC, counterBytes) with the store's key; `names` holds, per checkpoint name, the
// generation of its last commit, delete or expiry. So:
//   - ROLLBACK: an own signed entry older than what the counter says of its name (an old copy
//     put back, a deleted or expired one put back) reads as signature state 'rollback'
//     ({generation, latest}): foreign, like any entry that is not 'valid'. So does an own entry
//     that has a generation while the counter is missing or not signed with this key (removed
//     or replaced to hide one). Not covered: the whole store put back as it was (counter and
//     all), or an entry saved before generations existed put back while the counter is gone.
//   - CONCURRENT WRITERS: a writer that saw generation g of `name` when it started
//     (generationOf(name): 0 when there is none) passes {expect: g} to commit() or put(), or
//     calls expect(name, g) beforehand; if another writer saved `name` meanwhile the commit
//     fails with a StoreError 'conflict' and changes nothing: the loser is told.
//   - A CHANGED KEY: a counter signed by another key than the store's (its key file replaced
//     or deleted) means every entry signed with the old key now reads as foreign: the store
//     says so once (takeNotices()), and those entries' signature carries keyChanged: true.

export const COUNTER_FORMAT = 'elastic-lite store counter';
const COUNTER_VERSION = 1;

function counterBytes(doc) {
  return new TextEncoder().encode(`${COUNTER_FORMAT} ${COUNTER_VERSION}\n${canonicalJson({
    keyId: doc.keyId, generation: doc.generation, names: doc.names, previousKeyIds: doc.previousKeyIds })}`);
}

function unhex(text) {
  return Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
}

/** A counter document signed with `signing` ({key, keyId}). */
export async function signCounter(signing, generation, names, previousKeyIds = []) {
  const doc = { format: COUNTER_FORMAT, version: COUNTER_VERSION, keyId: signing.keyId, generation, names, previousKeyIds };
  return { ...doc, mac: hex(await webCrypto().sign('HMAC', signing.key, counterBytes(doc))) };
}

/**
 * What a stored counter document says under `signing` (null: no key): {present, trusted,
 * generation (the highest seen: a floor, trusted or not), names (only when trusted),
 * oldKeyId (the key it was signed with, when that is not the store's key now),
 * previousKeyIds}.
 */
export async function readCounter(signing, doc) {
  const wellFormed = !!doc && typeof doc === 'object' && doc.format === COUNTER_FORMAT &&
    Number.isSafeInteger(doc.generation) && doc.generation >= 0 && !!doc.names && typeof doc.names === 'object' &&
    typeof doc.keyId === 'string' && typeof doc.mac === 'string' && /^[0-9a-f]{64}$/.test(doc.mac);
  if (!wellFormed) return { present: !!doc, trusted: false, generation: 0, names: {}, oldKeyId: null, previousKeyIds: [] };
  const previous = Array.isArray(doc.previousKeyIds) ? doc.previousKeyIds.filter((k) => typeof k === 'string').slice(-16) : [];
  const trusted = !!signing && doc.keyId === signing.keyId &&
    await webCrypto().verify('HMAC', signing.key, unhex(doc.mac), counterBytes({ ...doc, previousKeyIds: doc.previousKeyIds ?? [] }));
  const oldKeyId = signing && doc.keyId === signing.keyId ? null : doc.keyId;
  return { present: true, trusted, generation: doc.generation, names: trusted ? doc.names : {}, oldKeyId,
    previousKeyIds: oldKeyId ? [...new Set([...previous, oldKeyId])] : previous };
}

/** The generation an entry's metadata carries, 0 when none (saved before generations). */
export function generationOf(meta) {
  return meta && Number.isSafeInteger(meta.generation) && meta.generation > 0 ? meta.generation : 0;
}

/** An entry's signature state ({state, keyId}) with what the counter says of it. */
export function counterVerdict(sig, name, meta, counter) {
  const out = { ...sig };
  const generation = generationOf(meta);
  if (out.state === 'valid') {
    const latest = counter.trusted ? counter.names[name] : undefined;
    if (counter.trusted ? Number.isSafeInteger(latest) && generation < latest : generation > 0) {
      Object.assign(out, { state: 'rollback', generation, latest: counter.trusted ? latest : null });
    }
  } else if (out.state === 'other-key' && out.keyId && counter.previousKeyIds.includes(out.keyId)) {
    out.keyChanged = true;
  }
  return out;
}

/** The 'conflict' error of a commit whose writer expected generation `expected` of `name`. */
export function conflictError(name, expected, found) {
  return storeError('conflict', `Checkpoint "${name}" was saved by another writer while this one was working ` +
    `(it expected ${expected ? `the save numbered ${expected}` : 'no checkpoint of that name'}, the store now holds ` +
    `number ${found}). This save was not kept, so the other one is not silently replaced: save again under another ` +
    'name, or again under this one once you know which state you want.', { expected, found });
}

/**
 * What a store object keeps for its writers and readers: the generations expected by
 * expect(), and the notices a host shows once (takeNotices()).
 */
export class StoreNotes {
  constructor() {
    this.expected = new Map(); // name -> the generation a writer expects
    this.notices = [];
    this.keyNoticed = false;
  }

  expect(name, generation) {
    checkName(name);
    if (!Number.isSafeInteger(generation) || generation < 0) throw new Error(`expect(): a generation is a whole number >= 0, not ${generation}.`);
    this.expected.set(name, generation);
  }

  /** The generation expected for `name` (`given`, else expect()'s), consumed; undefined: none. */
  takeExpected(name, given) {
    const out = given ?? this.expected.get(name);
    this.expected.delete(name);
    return out;
  }

  takeNotices() {
    const out = this.notices;
    this.notices = [];
    return out;
  }

  /** The signature state `sig` of an entry with the counter's verdict; a changed key said once. */
  verdict(where, signing, counter, sig, name, meta) {
    const out = counterVerdict(sig, name, meta, counter);
    const oldKeyId = counter.oldKeyId ?? (out.keyChanged ? out.keyId : null);
    if (oldKeyId && !this.keyNoticed) {
      this.keyNoticed = true;
      this.notices.push(keyChangedNotice(where, oldKeyId, signing?.keyId));
    }
    return out;
  }
}

/** The plain notice that the store's key changed (once per store object). */
export function keyChangedNotice(where, oldKeyId, nowKeyId) {
  return `The signing key of ${where} changed (it was ${oldKeyId}, it is ${nowKeyId ?? 'gone'}): the checkpoints ` +
    'signed with the old key now count as foreign, and restore loads nothing of them unconfirmed. If you replaced ' +
    'or deleted the key yourself, restore each one you trust once with --trust (it is then signed with the new key). ' +
    'If you did not, someone who can write the store or its key file did: check who can.';
}

// ---------------------------------------------------------------------------------------------
// Cutting a checkpoint file into head, records and tail
// ---------------------------------------------------------------------------------------------
//
// A format-2 file is: file header, records (each 64-byte aligned, position independent),
// index, footer (wasm/FORMAT.md). The store keeps the file header (and the padding after it)
// as the entry's head, every record (with the zero padding up to the next record) as one
// content-addressed record, and the index + footer as the tail. Any cut of the bytes
// reassembles them exactly, so nothing here needs to validate the file: a damaged or foreign
// file (or a format-1 file, whose records carry their own index and cannot be shared) is kept
// as a single record. Validation is the core's job, when the checkpoint is read.

const FOOTER_SIZE = 32;
const FOOTER_MAGIC = 0x54464c45; // "ELFT" read little-endian
const INDEX_MAGIC = 0x58494c45;  // "ELIX"
const FORMAT_SHARED_RECORDS = 2; // the first major whose records are position independent
const INDEX_ENTRY_SIZE = 16;     // format 2: u64 offset, u64 length per record

/** {head, records: [Uint8Array], tail} as views of `bytes` (never copies). */
export function splitContainer(bytes) {
  const u8 = toBytes(bytes);
  const cut = formatTwoCut(u8);
  if (!cut) {
    return { head: u8.subarray(0, 0), records: u8.byteLength ? [u8] : [], tail: u8.subarray(0, 0) };
  }
  const { starts, indexOffset } = cut;
  const records = starts.map((s, i) => u8.subarray(s, i + 1 < starts.length ? starts[i + 1] : indexOffset));
  return { head: u8.subarray(0, starts.length ? starts[0] : indexOffset), records, tail: u8.subarray(indexOffset) };
}

// Record start offsets and the index offset of a format-2 file, or null. Only bounds and
// order are checked: enough for the cut to be a partition of the bytes.
function formatTwoCut(u8) {
  const size = u8.byteLength;
  if (size < FOOTER_SIZE + 12) return null;
  const dv = new DataView(u8.buffer, u8.byteOffset, size);
  const f = size - FOOTER_SIZE;
  if (dv.getUint32(f, true) !== FOOTER_MAGIC || dv.getUint16(f + 24, true) !== FORMAT_SHARED_RECORDS) return null;
  const count = dv.getUint32(f + 4, true);
  const indexOffset = Number(dv.getBigUint64(f + 8, true));
  if (!(indexOffset >= 0 && indexOffset + 8 + count * INDEX_ENTRY_SIZE + 4 <= f)) return null;
  if (dv.getUint32(indexOffset, true) !== INDEX_MAGIC || dv.getUint32(indexOffset + 4, true) !== count) return null;
  const starts = [];
  let prevEnd = 0;
  for (let i = 0; i < count; i += 1) {
    const at = indexOffset + 8 + i * INDEX_ENTRY_SIZE;
    const start = Number(dv.getBigUint64(at, true));
    const length = Number(dv.getBigUint64(at + 8, true));
    if (!(start >= prevEnd && (i > 0 || start > 0) && start + length <= indexOffset)) return null;
    starts.push(start);
    prevEnd = start + length;
  }
  return { starts, indexOffset };
}

// ---------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------

/**
 * Checks what commit() is given and returns it normalised: {head, records: [{key, length}],
 * tail, size}. Records may repeat a key (the same bytes twice in one file).
 */
export function checkEntry(entry) {
  if (!entry || typeof entry !== 'object') throw new Error('commit() needs an entry {head, records, tail, meta}.');
  const head = entry.head == null ? new Uint8Array(0) : toBytes(entry.head);
  const tail = entry.tail == null ? new Uint8Array(0) : toBytes(entry.tail);
  if (!Array.isArray(entry.records)) throw new Error('commit(): entry.records must be an array of {key, length}.');
  let size = head.byteLength + tail.byteLength;
  const records = entry.records.map((r, i) => {
    if (!r || !isRecordKey(r.key) || !Number.isSafeInteger(r.length) || r.length < 0) {
      throw new Error(`commit(): record ${i} must be {key: 64 lowercase hex digits, length: bytes}, not ${JSON.stringify(r)}.`);
    }
    size += r.length;
    return { key: r.key, length: r.length };
  });
  return { head, records, tail, size };
}

export function distinctKeys(records) {
  return [...new Set(records.map((r) => r.key))];
}

export function missingRecordError(name, keys, broken = 0) {
  return storeError('missing-record', `Cannot save checkpoint "${name}": ${keys.length} of its records ` +
    `(${keys.slice(0, 2).join(', ')}${keys.length > 2 ? ', ...' : ''}) are not in the store (never written, or ` +
    `freed meanwhile by a delete${broken ? `; ${broken} of them found damaged or partly removed` : ''}). ` +
    'Write them with putRecords() and commit again, or checkpoint again.', { keys });
}

/** `entry` with its records whose key is null given the keys of `prepared`, in order. */
function withKeys(entry, prepared) {
  if (!entry || !Array.isArray(entry.records)) return entry;
  let next = 0;
  const records = entry.records.map((r) => {
    if (!r || r.key != null) return r;
    const p = prepared[next++];
    if (!p) throw new Error('commit(): the entry names more new records (key null) than `records` gives.');
    if (r.length !== p.length) throw new Error(`commit(): new record ${next - 1} is ${p.length} bytes, the entry says ${r.length}.`);
    return { key: p.key, length: r.length };
  });
  if (next !== prepared.length) throw new Error(`commit(): \`records\` gives ${prepared.length} records, the entry names ${next} new ones (key null).`);
  return { ...entry, records };
}

// ---------------------------------------------------------------------------------------------
// Retention
// ---------------------------------------------------------------------------------------------
//
// A policy {keepLast, keepHourly, maxBytes} (each optional) applies, on every commit, to the
// checkpoints of the committed entry's notebook. A checkpoint is kept when it is one of the
// keepLast newest, or the newest of its clock hour (UTC) among the keepHourly most recent
// hours that have checkpoints; with neither set, all are kept. Then, newest first, kept
// checkpoints are counted against maxBytes (bytes of distinct records + heads and tails: what
// they really occupy); the first that would exceed it and every older one are removed. The
// checkpoint just committed is always kept; checkpoints without a notebook never expire, and
// neither do those a person asked for (`meta.keep` true: every checkpoint that was not taken
// automatically after a cell), though they still count against maxBytes.

const HOUR_MS = 3600 * 1000;

export function checkRetention(policy) {
  if (policy == null) return null;
  if (typeof policy !== 'object') throw new Error(`A retention policy is an object {keepLast, keepHourly, maxBytes}, not ${JSON.stringify(policy)}.`);
  const out = {};
  for (const field of ['keepLast', 'keepHourly', 'maxBytes']) {
    const v = policy[field];
    if (v == null) continue;
    if (!(Number.isSafeInteger(v) && v >= 1)) throw new Error(`Retention ${field} must be a whole number >= 1, not ${JSON.stringify(v)}.`);
    out[field] = v;
  }
  const unknown = Object.keys(policy).filter((k) => !['keepLast', 'keepHourly', 'maxBytes'].includes(k));
  if (unknown.length) throw new Error(`Unknown retention setting ${unknown.join(', ')}: use keepLast, keepHourly, maxBytes.`);
  return Object.keys(out).length ? out : null;
}

/**
 * Names to remove under `policy` among `entries` ([{name, createdMs, bytes(): [[key, length]...],
 * fixedBytes, exempt}] of one notebook) once `keep` (the name just committed) is saved. An
 * entry with `exempt` true (its meta.keep) is never among them.
 */
export function expiredByRetention(entries, keep, policy) {
  if (!policy) return [];
  const sorted = [...entries].sort((a, b) => (b.createdMs - a.createdMs) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let kept = sorted;
  if (policy.keepLast != null || policy.keepHourly != null) {
    const chosen = new Set(sorted.slice(0, policy.keepLast ?? 0).map((e) => e.name));
    if (policy.keepHourly != null) {
      const hours = new Set();
      for (const e of sorted) {
        const hour = Math.floor(e.createdMs / HOUR_MS);
        if (hours.has(hour)) continue;
        if (hours.size >= policy.keepHourly) break;
        hours.add(hour);
        chosen.add(e.name);
      }
    }
    chosen.add(keep);
    kept = sorted.filter((e) => chosen.has(e.name));
  }
  if (policy.maxBytes != null) {
    const seen = new Set();
    let used = 0;
    let cutAt = kept.length;
    for (let i = 0; i < kept.length; i += 1) {
      let add = kept[i].fixedBytes;
      for (const [key, length] of kept[i].bytes()) if (!seen.has(key)) add += length;
      if (used + add > policy.maxBytes && kept[i].name !== keep) { cutAt = i; break; }
      used += add;
      for (const [key] of kept[i].bytes()) seen.add(key);
    }
    kept = kept.slice(0, cutAt).concat(kept.slice(cutAt).filter((e) => e.name === keep));
  }
  const keptNames = new Set(kept.map((e) => e.name));
  return sorted.filter((e) => !keptNames.has(e.name) && !e.exempt).map((e) => e.name);
}

// ---------------------------------------------------------------------------------------------
// Writer locks
// ---------------------------------------------------------------------------------------------
//
// One writer per checkpoint name at a time, so two tabs saving one name both succeed one after
// the other (the second waits) or the second is told plainly; never two "saved" with one lost.
// Browsers: the Web Locks API (navigator.locks), shared by every page and worker of the origin,
// released by the browser when a tab dies. Elsewhere (Node, tests): the same queue within this
// JS realm only. DirectoryStore uses lock files instead (directory.mjs).

export const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

const localQueues = new Map(); // lock name -> waiters, the first one holds it

// The part of the Web Locks API used here, for one JS realm.
const realmLocks = {
  request(name, options, callback) {
    return new Promise((resolve, reject) => {
      const queue = localQueues.get(name) ?? [];
      localQueues.set(name, queue);
      const signal = options.signal;
      const waiter = {
        async run() {
          signal?.removeEventListener('abort', onAbort);
          try { resolve(await callback({ name, mode: 'exclusive' })); } catch (err) { reject(err); }
          queue.shift();
          if (queue.length) queue[0].run(); else localQueues.delete(name);
        },
      };
      function onAbort() {
        const at = queue.indexOf(waiter);
        if (at > 0) { queue.splice(at, 1); reject(new DOMException('The lock request was aborted.', 'AbortError')); }
      }
      if (signal?.aborted) { reject(new DOMException('The lock request was aborted.', 'AbortError')); return; }
      signal?.addEventListener('abort', onAbort);
      queue.push(waiter);
      if (queue.length === 1) waiter.run();
    });
  },
};

export function lockManager() {
  const locks = globalThis.navigator && globalThis.navigator.locks;
  return locks && typeof locks.request === 'function' ? locks : realmLocks;
}

/**
 * Holds the exclusive lock `lockName` until release() is called; waits at most timeoutMs for
 * it, then rejects with a 'busy' Error saying `what` is being written elsewhere.
 */
export async function holdLock(lockName, { timeoutMs = DEFAULT_LOCK_TIMEOUT_MS, what, manager = lockManager() } = {}) {
  if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0)) throw new Error(`lock timeout must be >= 0 ms, not ${timeoutMs}.`);
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  await new Promise((granted, refused) => {
    manager.request(lockName, { mode: 'exclusive', signal: abort.signal }, () => {
      clearTimeout(timer);
      granted();
      return held;
    }).catch((err) => {
      clearTimeout(timer);
      refused(err && err.name === 'AbortError'
        ? storeError('busy', `${what} is being saved by another tab, window or process right now; waited ` +
          `${(timeoutMs / 1000).toFixed(timeoutMs < 1000 ? 2 : 0)} s for it to finish. Try again in a moment.`)
        : err);
    });
  });
  let released = false;
  return { release() { if (!released) { released = true; release(); } } };
}

// ---------------------------------------------------------------------------------------------
// The IndexedDB store
// ---------------------------------------------------------------------------------------------
//
// Schema v3 (object stores):
//   "checkpoints"   keyPath "name", index "notebook"
//                   { name, v: 2, notebook?, createdMs, size, meta }   what list() reads
//   "bodies"        keyPath "name", index "keys" (multiEntry)
//                   { name, head, records: [{key, length}], tail, keys: [distinct record keys] }
//   "records"       keyPath "key", index "pinned" (on pinnedMs)
//                   { key, length, chunkSize, chunkCount, pinnedMs, file?, damaged? }
//   "recordChunks"  keyPath ["key", "seq"]  { key, seq, data: Uint8Array }  (chunk seq holds
//                   bytes [seq * chunkSize, ...) of the record)
//   "settings"      keyPath "id"            { id: "retention" | "retention:<notebook>", policy },
//                   the signing key, the signed counter, and { id: "pins", keys: {key: ms} }
//                   (records hasRecords() found, pinned for their writer: see readPins)
//   "chunks"        (schema v1; empty once its checkpoints are converted, see _convertV1)
//
// A record is used while some body names it: the bodies' multiEntry index "keys" says which
// (schema v2 kept a count `refs` in each record row instead, so every new checkpoint rewrote
// the row of every record it shares with others: ~100 row writes for an automatic point that
// wrote one record; v3 writes the body and the checkpoint row, and the rows of the records it
// wrote). A record is written (pinned by its writer: pinnedMs) before the checkpoint that uses
// it is committed; commit() unpins it and writes the checkpoint in ONE transaction, after
// checking that every record it names is there. So an abort, a closed tab or a quota error at
// any point leaves every listed checkpoint whole; what a failed write can leave behind is
// unused records with a pin, given back by the writer (discardRecords) or swept (sweep(), run
// on open: the index "pinned" lists the rows with pinnedMs > 0) once their pin is older than
// orphanGraceMs. A record found already stored by hasRecords() gets its pin in the "pins" row
// (one write per call, not one per record); a record left unused while pinned there gets that
// pin into its row too, so that the sweep finds it. put() writes records and entry in one
// transaction and leaves nothing behind. Deleting a checkpoint (or replacing it, or retention
// removing it) frees each of its records no other body names, unless a writer pinned it.

export const SCHEMA_VERSION = 3;
export const DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024;
export const DEFAULT_ORPHAN_GRACE_MS = 10 * 60 * 1000;
const CHECKPOINTS = 'checkpoints';
const BODIES = 'bodies';
const RECORDS = 'records';
const RECORD_CHUNKS = 'recordChunks';
const SETTINGS = 'settings';
const V1_CHUNKS = 'chunks';
const SIGNING_KEY_ID = 'signing-key'; // the row of SETTINGS holding the database's signing key
const COUNTER_ID = 'counter'; // the row of SETTINGS holding the signed counter: {id, doc}
const COUNTER_RETRIES = 20;
const COUNTER_MOVED = Symbol('the counter moved'); // thrown inside _counted's transaction: start again
const WRITE_STORES = [CHECKPOINTS, BODIES, RECORDS, RECORD_CHUNKS, SETTINGS, V1_CHUNKS];

// One function per schema step: MIGRATIONS[v] upgrades a database at version v to v + 1, in
// the version-change transaction. Steps that need WebCrypto (which cannot run inside that
// transaction) happen right after opening, before the store serves anything (_convertV1).
const MIGRATIONS = [
  // 0 -> 1: the first layout, one row per checkpoint plus its chunks.
  (db) => {
    const meta = db.createObjectStore(CHECKPOINTS, { keyPath: 'name' });
    meta.createIndex('notebook', 'notebook', { unique: false });
    const chunks = db.createObjectStore(V1_CHUNKS, { keyPath: ['name', 'seq'] });
    chunks.createIndex('name', 'name', { unique: false });
  },
  // 1 -> 2: content-addressed records with reference counts.
  (db) => {
    db.createObjectStore(BODIES, { keyPath: 'name' });
    const records = db.createObjectStore(RECORDS, { keyPath: 'key' });
    records.createIndex('refs', 'refs', { unique: false });
    db.createObjectStore(RECORD_CHUNKS, { keyPath: ['key', 'seq'] });
    db.createObjectStore(SETTINGS, { keyPath: 'id' });
  },
  // 2 -> 3: a record is used while a body names it (index "keys"), no count per record row.
  // Every body gets its keys; every record row loses `refs`, and one no checkpoint counted
  // (refs 0: a write that died, a pin not yet expired) keeps at least an expired pin, so that
  // the sweep looks at it. Nothing else changes: every checkpoint keeps its bytes.
  (db, tx) => {
    const bodies = tx.objectStore(BODIES);
    bodies.createIndex('keys', 'keys', { unique: false, multiEntry: true });
    const records = tx.objectStore(RECORDS);
    records.deleteIndex('refs');
    records.createIndex('pinned', 'pinnedMs', { unique: false });
    eachRow(bodies, (body) => ({ ...body, keys: Array.isArray(body.records) ? bodyKeys(body.records) : [] }));
    eachRow(records, (row) => {
      const { refs, ...rest } = row;
      if (!(refs > 0) && !(rest.pinnedMs > 0)) rest.pinnedMs = 1;
      return rest;
    });
  },
];

// Rewrites every row of `store` as fn(row) (inside the version-change transaction).
function eachRow(store, fn) {
  const cursor = store.openCursor();
  cursor.onsuccess = () => {
    const c = cursor.result;
    if (!c) return;
    c.update(fn(c.value));
    c.continue();
  };
}

// The keys a body lists in its index "keys": each record key once (a body naming something
// else than a key has it left out: such a body is corrupted, and get() says so).
function bodyKeys(records) {
  return [...new Set(records.filter((r) => r && isRecordKey(r.key)).map((r) => r.key))];
}

function fmtBytes(n) {
  if (n == null || !Number.isFinite(n)) return 'unknown';
  if (n < 1024) return `${n} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024; let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return `${n} bytes (${v.toFixed(1)} ${units[u]})`;
}

function isQuotaError(err) {
  return !!err && (err.name === 'QuotaExceededError' || err.code === 22 ||
    err.name === 'NS_ERROR_DOM_QUOTA_REACHED');
}

// How a commit is written to disk. A checkpoint a person asked for is flushed before it is
// reported as saved ('strict'). An automatic point after a cell (meta.auto) is 'relaxed': as
// atomic as any commit and at once in the browser's database (a crashed tab or browser keeps
// it), but flushed by the system a moment later, so a power cut in that moment can lose that
// newest point, never an earlier checkpoint. The flush is most of a small point's time, and
// the next cell makes another point anyway.
export function durabilityOf(meta) {
  return meta && meta.auto === true ? 'relaxed' : 'strict';
}

// A request as a promise. Awaiting it inside a transaction is safe: the continuation runs in
// the microtask checkpoint of the success event, while the transaction is still active.
function req(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/**
 * Runs `body(tx)` in one transaction and resolves with its result once the transaction has
 * committed. An exception thrown by body aborts the transaction (nothing it did is kept) and
 * is the rejection; an abort by the browser (quota, crash) rejects with its error.
 * A write is 'strict' (flushed to disk before it is reported done) unless `durability` says
 * 'relaxed': see durabilityOf.
 */
function inTransaction(db, stores, mode, body, durability = 'strict') {
  return new Promise((resolve, reject) => {
    const tx = mode === 'readwrite'
      ? db.transaction(stores, mode, { durability })
      : db.transaction(stores, mode);
    let failure = null; let result;
    tx.oncomplete = () => {
      for (const fn of tx[AFTER_COMMIT] ?? []) fn();
      resolve(result);
    };
    // tx.error first: when the browser aborts (quota, disk), pending requests fail with a mere
    // AbortError that would hide the cause.
    tx.onabort = () => reject(tx.error || failure || new DOMException('transaction aborted', 'AbortError'));
    Promise.resolve().then(() => body(tx)).then((r) => { result = r; }, (err) => {
      failure = err;
      try { tx.abort(); } catch { /* already finished */ }
    });
  });
}

const AFTER_COMMIT = Symbol('elastic-lite after commit');

// Runs `fn()` once transaction `tx` (of inTransaction) has committed; never if it aborts.
function afterCommit(tx, fn) {
  (tx[AFTER_COMMIT] ??= []).push(fn);
}

// Which records are used, inside one readwrite transaction: the rows of the records a write
// names are read once (load), those it names are used (use: unpinned), those of the entries it
// drops are looked at (release): flush() frees each that no body names any more (asked of the
// bodies' index "keys" after the transaction's own writes to the bodies) unless a writer pinned
// it, and writes the rows whose pin changed.
class RecordUse {
  // `size`: the store object's hint of how many record rows there are (see recordRows)
  constructor(tx, graceMs, size = null) {
    this.tx = tx;
    this.size = size;
    this.records = tx.objectStore(RECORDS);
    this.chunks = tx.objectStore(RECORD_CHUNKS);
    this.rows = new Map();
    this.was = new Map(); // key -> pinnedMs as read: a row left as it was is not written again
    this.graceMs = graceMs;
    this.pins = null; // the writers' pins (readPins), read when first needed
    this.used = new Set(); // keys the write names (its entry's records)
    this.released = new Map(); // key -> how many of the entries it drops name it
    this.before = new Map(); // key -> promise of how many bodies named it before this write (countEarly)
    this.gone = new Set(); // keys whose rows say more chunks than are stored (load with chunks)
  }

  // `chunks`: also which of them have lost chunks (this.gone), as recordRows says.
  async load(keys, { chunks = false } = {}) {
    const todo = [...new Set(keys.filter((k) => !this.rows.has(k)))];
    if (todo.length) {
      const { rows, gone } = await recordRows(this.tx, todo, { chunks, size: this.size });
      for (const k of gone) this.gone.add(k);
      for (const k of todo) {
        const row = rows.get(k) ?? null;
        this.rows.set(k, row);
        if (row) this.was.set(k, row.pinnedMs);
      }
    }
    return keys.map((k) => this.rows.get(k));
  }

  // Rows this transaction has put (Map key -> row), as they now are.
  wrote(rows) {
    for (const [k, row] of rows) {
      this.rows.set(k, row);
      this.was.set(k, row.pinnedMs);
    }
  }

  // The records of the entry being written: used, and no longer pinned (the entry holds them).
  async use(keys) {
    for (const row of await this.load(keys)) if (row && row.pinnedMs) row.pinnedMs = 0;
    for (const k of keys) this.used.add(k);
  }

  // The records of an entry being dropped: freed by flush() unless still used or pinned.
  release(keys) {
    for (const k of keys) this.released.set(k, (this.released.get(k) ?? 0) + 1);
  }

  // How many bodies name each of `keys`, asked now, before this transaction writes a body
  // (keys it is likely to release: see _commitIn): flush() then judges those from these counts
  // and the entries it dropped, without asking again after its writes (a round trip less).
  countEarly(keys) {
    const index = this.tx.objectStore(BODIES).index('keys');
    for (const k of keys) {
      if (this.before.has(k)) continue;
      const p = req(index.count(k));
      p.catch(() => {}); // (awaited in flush, or never when the write fails before)
      this.before.set(k, p);
    }
  }

  async loadPins() {
    this.pins ??= await readPins(this.tx, this.graceMs);
    return this.pins;
  }

  // An unused record may still be about to be used: a writer has written or found it (pin: its
  // row's pinnedMs, or its key in the pins row) and will commit soon. It is freed only once
  // that pin is older than the grace time. Needs loadPins() first.
  freeable(row) {
    return !(Date.now() - (row.pinnedMs || 0) < this.graceMs) && !this.pins.keys.has(row.key);
  }

  async flush() {
    await this.loadPins();
    let unpinned = false;
    for (const key of this.used) if (this.pins.keys.delete(key)) unpinned = true;
    if (unpinned) writePins(this.tx, this.pins);
    const candidates = [...this.released.keys()].filter((k) => !this.used.has(k));
    if (candidates.length) {
      const late = candidates.filter((k) => !this.before.has(k));
      const [rows, lateNamed, early] = await Promise.all([this.load(candidates), namedByBodies(this.tx, late),
        Promise.all(candidates.map((k) => this.before.get(k)))]);
      const named = candidates.map((k, i) => (this.before.has(k) ? early[i] - this.released.get(k) > 0 : lateNamed[late.indexOf(k)]));
      candidates.forEach((key, i) => {
        const row = rows[i];
        if (!row || named[i]) return;
        if (this.freeable(row)) {
          freeRecord(this.records, this.chunks, row);
          this.rows.set(key, null);
        } else if (this.pins.keys.has(key)) {
          // unused, kept by a writer's pin in the pins row: into its row too, for the sweep
          row.pinnedMs = Math.max(row.pinnedMs || 0, this.pins.keys.get(key));
        }
      });
    }
    for (const [key, row] of this.rows) {
      if (row && this.was.get(key) !== row.pinnedMs) this.records.put(row);
    }
  }
}

// [true|false] per key: does some body name it (the bodies' index "keys", as this transaction
// left it)? All asked at once.
function namedByBodies(tx, keys) {
  const index = tx.objectStore(BODIES).index('keys');
  return Promise.all(keys.map((k) => req(index.count(k)).then((n) => n > 0)));
}

// The rows of "records" for `keys` (distinct): {rows: Map key -> row (absent: no row)}, and
// with `chunks`, {gone: Set of the keys whose row says more chunks than are stored} (as
// chunksGone judges one row; file rows are not judged here). A point asks for ~100 records:
// while the store holds at most BULK_ROWS_FACTOR times as many rows as asked for, they come
// from ONE getAll (and the chunks' presence from one getAllKeys: keys only, no bytes) instead
// of a request per key (Chromium: each request costs ~0.1 ms of the browser's IndexedDB
// thread, two per key here before); a larger store is read key by key.
const BULK_ROWS_FACTOR = 16;

// `size`: {rows}, how many rows the store held when last seen (a hint kept by the store object:
// with it the store is not counted first, one round trip less; it is updated here).
async function recordRows(tx, keys, { chunks = false, size = null } = {}) {
  const records = tx.objectStore(RECORDS);
  const rows = new Map();
  const gone = new Set();
  const held = keys.length < BULK_PRESENCE ? Infinity : Number.isSafeInteger(size?.rows) ? size.rows : await req(records.count());
  const bulk = held <= BULK_ROWS_FACTOR * keys.length;
  if (!bulk) {
    const got = await Promise.all(keys.map((k) => req(records.get(k))));
    keys.forEach((k, i) => { if (got[i]) rows.set(k, got[i]); });
    if (chunks) {
      const lost = await Promise.all(keys.map((k) => { const row = rows.get(k); return row && !isFileRow(row) ? chunksGone(tx, row) : false; }));
      keys.forEach((k, i) => { if (lost[i]) gone.add(k); });
    }
    return { rows, gone };
  }
  const want = new Set(keys);
  const [all, chunkKeys] = await Promise.all([req(records.getAll()), chunks ? req(tx.objectStore(RECORD_CHUNKS).getAllKeys()) : null]);
  if (size) size.rows = all.length;
  for (const row of all) if (row && want.has(row.key)) rows.set(row.key, row);
  if (chunkKeys) {
    const seqs = new Map(); // key -> chunks stored among the ones its row says (seq 0..n-1)
    for (const [key, seq] of chunkKeys) {
      const row = rows.get(key);
      if (row && Number.isSafeInteger(seq) && seq >= 0 && seq < row.chunkCount) seqs.set(key, (seqs.get(key) ?? 0) + 1);
    }
    for (const [key, row] of rows) {
      const n = row.chunkCount;
      if (!isFileRow(row) && Number.isSafeInteger(n) && n >= 1 && (seqs.get(key) ?? 0) < n) gone.add(key);
    }
  }
  return { rows, gone };
}

// Pins of records found by hasRecords(): ONE row of SETTINGS, {id: "pins", keys: {key: ms}},
// instead of a rewrite of each found record's row (a point finds ~100 records stored and
// writes one or two). A key pinned less than graceMs ago is not freed by a delete, retention or
// sweep (every tab and worker reads the same row); commit() removes the keys it counts.
const PINS_ID = 'pins';

/** {keys: Map key -> ms} of the pins younger than graceMs (expired ones dropped). */
async function readPins(tx, graceMs) {
  const row = await req(tx.objectStore(SETTINGS).get(PINS_ID));
  const now = Date.now();
  const keys = new Map();
  if (row && row.keys && typeof row.keys === 'object') {
    for (const [key, ms] of Object.entries(row.keys)) if (Number.isFinite(ms) && now - ms < graceMs) keys.set(key, ms);
  }
  return { keys };
}

function writePins(tx, pins) {
  const store = tx.objectStore(SETTINGS);
  if (pins.keys.size) store.put({ id: PINS_ID, keys: Object.fromEntries(pins.keys) });
  else store.delete(PINS_ID);
}

function freeRecord(records, chunks, row) {
  records.delete(row.key);
  for (let seq = 0; seq < row.chunkCount; seq += 1) chunks.delete([row.key, seq]);
  if (isFileRow(row)) {
    const tx = records.transaction;
    afterCommit(tx, () => { removeRecordFile(tx.db.name, row.file); });
  }
}

// ---- Large records in files (OPFS) ------------------------------------------------------------
//
// Where the platform offers synchronous access handles (a dedicated worker: the kernel's), a
// record of `fileFrom` bytes or more (1 MiB) is written to a file of the origin private file
// system instead of IndexedDB chunks: straight from the memory it lies in (a live view of
// Python's heap), in the pass that hashes it, without IndexedDB's structured clones. Its row in
// "records" is counted like any other and says `file` (the file's name: random, so a writer
// never writes a file someone else reads) with chunkCount 0. The file is written and flushed
// before its row is (a failure leaves at most a file no row names: sweep() removes it after
// the grace time) and removed once the transaction that frees its row has committed. Reads
// work in pages too (getFile()). A browser evicts or clears an origin's files together with
// its IndexedDB; a file removed alone makes its checkpoints lost, as missing chunks do.
const RECORD_FILES_DIR = 'elastic-lite-records';
export const DEFAULT_FILE_FROM = 1024 * 1024;
const FILE_GONE = Symbol('record file gone');

function isFileRow(row) {
  return !!row && typeof row.file === 'string';
}

// Thrown inside a commit's transaction that met a record file it had not listed (see commit).
const FILES_UNLISTED = Symbol('record files not listed');
// Thrown inside a commit's transaction when retention removes other names than predicted.
const PREDICTION_MISSED = Symbol('retention not as predicted');

function sameNames(a, b) {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

// True when file row `row`'s file is not among `files` (the names listed before the
// transaction; null: where no OPFS exists, so none is judged gone). Throws FILES_UNLISTED when
// they were not listed.
function fileUnlisted(row, files) {
  if (files === undefined) throw FILES_UNLISTED;
  return !!files && !files.has(row.file);
}

/** True where record files can be written: synchronous access handles (dedicated workers). */
export function canWriteRecordFiles() {
  const storage = globalThis.navigator && globalThis.navigator.storage;
  const Handle = globalThis.FileSystemFileHandle;
  return !!storage && typeof storage.getDirectory === 'function' && typeof Handle === 'function' &&
    typeof Handle.prototype.createSyncAccessHandle === 'function';
}

async function recordFilesDir(dbName, create) {
  const root = await globalThis.navigator.storage.getDirectory();
  const top = await root.getDirectoryHandle(RECORD_FILES_DIR, { create });
  return top.getDirectoryHandle(`db-${encodeURIComponent(dbName)}`, { create });
}

function newRecordFileName() {
  const r = new Uint8Array(12);
  globalThis.crypto.getRandomValues(r);
  return `r${hex(r)}`;
}

async function removeRecordFile(dbName, name) {
  try { await (await recordFilesDir(dbName, false)).removeEntry(name); } catch { /* sweep() removes it later */ }
}

function writeAll(handle, bytes, at) {
  for (let done = 0; done < bytes.byteLength;) {
    const n = handle.write(bytes.subarray(done), { at: at + done });
    if (!(n > 0)) throw new Error(`writing a record file stopped after ${done} of ${bytes.byteLength} bytes`);
    done += n;
  }
}

/** The names of database `dbName`'s record files (a Set; empty when it has none), or null where there is no OPFS. */
async function recordFileNames(dbName) {
  const storage = globalThis.navigator && globalThis.navigator.storage;
  if (!storage || typeof storage.getDirectory !== 'function') return null;
  let dir;
  try {
    dir = await recordFilesDir(dbName, false);
  } catch (err) {
    return err && err.name === 'NotFoundError' ? new Set() : null;
  }
  const names = new Set();
  for await (const name of dir.keys()) names.add(name);
  return names;
}

// Fills `targets` ([{at, view}], as readRecordInto checked them) from the file of row `row`;
// resolves to null, FILE_GONE, or what is wrong with the file.
async function readFileInto(dbName, row, targets) {
  const what = `record ${row.key.slice(0, 12)}…`;
  let handle;
  try {
    handle = await (await recordFilesDir(dbName, false)).getFileHandle(row.file);
  } catch (err) {
    if (err && (err.name === 'NotFoundError' || err.name === 'TypeError')) return FILE_GONE;
    throw err;
  }
  const sized = (n) => (n === row.length ? null : `${what}: its file holds ${n} bytes instead of ${row.length}`);
  let h = null;
  if (typeof handle.createSyncAccessHandle === 'function') {
    try { h = await handle.createSyncAccessHandle({ mode: 'read-only' }); } catch { /* held by a writer: read the File */ }
  }
  if (h) {
    try {
      const wrong = sized(h.getSize());
      if (wrong) return wrong;
      for (const t of targets) {
        const u8 = pieceBytes(t.view); // no await until it is filled
        for (let got = 0; got < u8.byteLength;) {
          const n = h.read(u8.subarray(got), { at: t.at + got });
          if (!(n > 0)) return `${what}: its file ended after ${t.at + got} of ${row.length} bytes`;
          got += n;
        }
      }
      return null;
    } finally {
      h.close();
    }
  }
  const file = await handle.getFile();
  const wrong = sized(file.size);
  if (wrong) return wrong;
  for (const t of targets) {
    const data = new Uint8Array(await file.slice(t.at, t.at + t.view.byteLength).arrayBuffer());
    if (data.byteLength !== t.view.byteLength) return `${what}: its file changed while it was read`;
    pieceBytes(t.view).set(data);
  }
  return null;
}

// Fills `targets` from the chunks of row `row` (each chunk read once, copied into the ranges
// it overlaps); resolves to null or what is wrong.
async function readChunksInto(tx, row, targets) {
  const what = `record ${row.key.slice(0, 12)}…`;
  if (!Number.isSafeInteger(row.chunkCount) || !Number.isSafeInteger(row.chunkSize) ||
      row.chunkCount !== Math.ceil(row.length / row.chunkSize)) return `${what} has a malformed row`;
  const size = row.chunkSize;
  const seqs = new Set();
  for (const t of targets) {
    for (let seq = Math.floor(t.at / size); seq * size < t.at + t.view.byteLength; seq += 1) seqs.add(seq);
  }
  const chunks = tx.objectStore(RECORD_CHUNKS);
  for (const seq of [...seqs].sort((a, b) => a - b)) {
    const chunk = await req(chunks.get([row.key, seq]));
    const data = chunk && (chunk.data instanceof Uint8Array || chunk.data instanceof ArrayBuffer) ? toBytes(chunk.data) : null;
    if (!data) return `${what} lost its chunk ${seq} of ${row.chunkCount}`;
    const want = Math.min(size, row.length - seq * size);
    if (data.byteLength !== want) return `${what}: chunk ${seq} holds ${data.byteLength} bytes instead of ${want}`;
    const c0 = seq * size;
    for (const t of targets) {
      const a = Math.max(c0, t.at); const b = Math.min(c0 + want, t.at + t.view.byteLength);
      if (a < b) pieceBytes(t.view).set(data.subarray(a - c0, b - c0), a - t.at);
    }
  }
  return null;
}

// The bytes of the file of row `row` (a new Uint8Array), FILE_GONE, or what is wrong with it.
async function readRecordFile(dbName, row) {
  const out = new Uint8Array(row.length);
  return (await readFileInto(dbName, row, [{ at: 0, view: out }])) ?? out;
}

export class IndexedDBStore {
  /**
   * @param {object} [options]
   * @param {string} [options.dbName] database name (default 'elastic-lite')
   * @param {object} [options.retention] default {keepLast, keepHourly, maxBytes} per notebook
   * @param {number} [options.keepLast] shorthand for retention: {keepLast}
   * @param {IDBFactory} [options.indexedDB] default globalThis.indexedDB (tests pass fake-indexeddb)
   * @param {number} [options.chunkSize] bytes per stored chunk of a record (default 4 MiB)
   * @param {number} [options.lockTimeoutMs] how long a writer waits for another one of the same name
   * @param {number} [options.orphanGraceMs] age after which an unused record of a failed write is swept
   * @param {boolean} [options.files] write records of `fileFrom` bytes and more to OPFS files
   *   (default: where synchronous access handles exist, i.e. in a dedicated worker)
   * @param {number} [options.fileFrom] size from which a record goes to a file (default 1 MiB)
   */
  constructor({ dbName = 'elastic-lite', retention, keepLast, indexedDB = globalThis.indexedDB,
    chunkSize = DEFAULT_CHUNK_SIZE, lockTimeoutMs = DEFAULT_LOCK_TIMEOUT_MS,
    orphanGraceMs = DEFAULT_ORPHAN_GRACE_MS, files = canWriteRecordFiles(), fileFrom = DEFAULT_FILE_FROM } = {}) {
    if (!indexedDB) {
      throw new Error('IndexedDB is not available here; use IndexedDBStore in a browser page or worker ' +
        '(or pass { indexedDB }), or use DirectoryStore/MemoryStore.');
    }
    if (!(Number.isInteger(chunkSize) && chunkSize >= 1)) throw new Error('chunkSize must be a positive integer.');
    this.dbName = dbName;
    this.retention = defaultRetention(retention, keepLast);
    this.chunkSize = chunkSize;
    this.lockTimeoutMs = lockTimeoutMs;
    this.orphanGraceMs = orphanGraceMs;
    this.files = !!files && canWriteRecordFiles();
    this.fileFrom = fileFrom;
    this._idb = indexedDB;
    this._db = null;
    this._signing = null; // {key, keyId} once read or made
    this._notes = new StoreNotes();
    this._lastCounter = null; // {signing, counter}: see _counted
    this._retained = new Map(); // notebook -> {policy, entries} at this object's last commit there: see _predictExpired
    this._size = {}; // {rows}: record rows seen at the last bulk read of a commit (a hint: see recordRows)
    this._deleted = false; // a checkpoint was deleted since takeDeleted(), here or elsewhere
    this._deletes = null; // the BroadcastChannel that says so to this origin's other stores
  }

  // A page deletes checkpoints while its kernel's worker keeps a store object of its own, which
  // then trusts records it remembers for change detection that may be gone (its commit would
  // find one missing and the checkpoint be made twice). Deletes are told over a channel.
  _channel() {
    if (this._deletes === null) {
      const Channel = globalThis.BroadcastChannel;
      this._deletes = typeof Channel === 'function' ? new Channel(`elastic-lite-deletes:${this.dbName}`) : false;
      if (this._deletes) {
        this._deletes.onmessage = () => { this._deleted = true; };
        this._deletes.unref?.(); // (Node: an open channel must not keep the process alive)
      }
    }
    return this._deletes || null;
  }

  /**
   * Whether a checkpoint of this database was deleted since the last call, by this object or by
   * another in this origin (listened for from the first call on): the kernel then asks which of
   * the records it remembers are still stored before its next checkpoint.
   */
  takeDeleted() {
    this._channel();
    const deleted = this._deleted;
    this._deleted = false;
    return deleted;
  }

  // ---- the signed counter (see "The signed counter" above) ----------------------------------
  //
  // Kept in SETTINGS (row "counter": {id, doc}). WebCrypto cannot run inside a transaction,
  // so a commit reads the counter, signs entry and counter outside, and writes both in one
  // transaction only if the counter is still the one it read (else it starts again).

  async _readCounter(signing, db) {
    const row = await inTransaction(db ?? await this._open(), [SETTINGS], 'readonly', (tx) => req(tx.objectStore(SETTINGS).get(COUNTER_ID)));
    return this._counterOf(signing, row ? row.doc : null);
  }

  async _counterOf(signing, doc) {
    const c = await readCounter(signing, doc);
    const floor = Number.isSafeInteger(doc?.generation) && doc.generation > 0 ? doc.generation : 0;
    return { ...c, generation: Math.max(c.generation, floor), stamp: floor };
  }

  async _counterDoc(signing, generation, names, previousKeyIds) {
    return signing ? signCounter(signing, generation, names, previousKeyIds)
      : { format: COUNTER_FORMAT, version: 1, keyId: null, generation, names: {}, previousKeyIds, mac: null };
  }

  // Inside a readwrite transaction: true when the counter is still at `stamp`.
  async _counterUnchanged(tx, stamp) {
    const row = await req(tx.objectStore(SETTINGS).get(COUNTER_ID));
    const now = Number.isSafeInteger(row?.doc?.generation) && row.doc.generation > 0 ? row.doc.generation : 0;
    return now === stamp;
  }

  /**
   * Runs one counted write: `prepare(counter)` (outside any transaction: may sign) returns
   * {generation, names, ...}; then `write(tx, prepared)` runs in one readwrite transaction
   * over `stores` (SETTINGS added) with the counter written beside, if the counter did not
   * move meanwhile; else it starts again. A write that returns false changed nothing: the
   * counter is left as it was.
   */
  async _counted(stores, signing, prepare, write, durability = 'strict') {
    const db = await this._open();
    // The counter this object wrote last, instead of a transaction to read it back: the write
    // below checks it is still the stored one (else it starts again from the stored one).
    let known = this._lastCounter && this._lastCounter.signing === signing ? this._lastCounter.counter : null;
    this._lastCounter = null;
    for (let attempt = 0; attempt < COUNTER_RETRIES; attempt += 1) {
      const counter = known ?? await this._readCounter(signing, db);
      known = null;
      const prepared = await prepare(counter);
      // the entry's signature (a promise, see _prepareCommit) and the counter's, side by side
      const [doc, sig] = await Promise.all([
        this._counterDoc(signing, prepared.generation, prepared.names, counter.previousKeyIds), prepared.sig]);
      if (sig !== undefined) prepared.sig = sig;
      const done = await inTransaction(db, [...new Set([...stores, SETTINGS])], 'readwrite', async (tx) => {
        // the counter looked at beside the write's first reads, not before them: a write made
        // while it had moved is undone (the transaction aborted), then started again
        const unchanged = this._counterUnchanged(tx, counter.stamp);
        let result;
        try {
          result = await write(tx, prepared);
        } catch (err) {
          if (!(await unchanged.catch(() => true))) throw COUNTER_MOVED;
          throw err;
        }
        if (!(await unchanged)) throw COUNTER_MOVED;
        if (result !== false) tx.objectStore(SETTINGS).put({ id: COUNTER_ID, doc });
        return { result };
      }, durability).catch((err) => { if (err === COUNTER_MOVED) return { retry: true }; throw err; });
      if (!done.retry) {
        if (done.result !== false) this._lastCounter = { signing, counter: await this._counterOf(signing, doc) };
        return done.result;
      }
    }
    throw storeError('busy', `The checkpoint store (IndexedDB database "${this.dbName}") is being written by other tabs ` +
      `or workers without pause; gave up after ${COUNTER_RETRIES} tries. Try again in a moment.`);
  }

  /** The generation of checkpoint `name` now (0: none, or saved before generations). */
  async generation(name) {
    checkName(name);
    const db = await this._open();
    const row = await inTransaction(db, [CHECKPOINTS], 'readonly', (tx) => req(tx.objectStore(CHECKPOINTS).get(name)));
    return generationOf(row?.meta);
  }

  /** The next commit of `name` (by this object) fails with 'conflict' unless `name` is still at `generation`. */
  expect(name, generation) { this._notes.expect(name, generation); }

  /** Plain notices for a person, each given once (a changed signing key). */
  takeNotices() { return this._notes.takeNotices(); }

  // Inside the commit's transaction: the conflict check of a writer that expects a generation.
  async _checkExpected(tx, name, expected) {
    if (expected === undefined) return;
    const row = await req(tx.objectStore(CHECKPOINTS).get(name));
    const found = generationOf(row?.meta);
    if (found !== expected) throw conflictError(name, expected, found);
  }

  /**
   * The database's signing key (a non-extractable CryptoKey kept in IndexedDB, so every page
   * and worker of the origin signs with the same one), made on first use when `create`;
   * null when there is none yet.
   */
  async _signingKey(create) {
    if (this._signing) return this._signing;
    const db = await this._open();
    const read = () => inTransaction(db, [SETTINGS], 'readonly', (tx) => req(tx.objectStore(SETTINGS).get(SIGNING_KEY_ID)));
    let row = await read();
    if (!row && create) {
      const made = await newSigningKey();
      try {
        await inTransaction(db, [SETTINGS], 'readwrite', (tx) =>
          req(tx.objectStore(SETTINGS).add({ id: SIGNING_KEY_ID, key: made.key, keyId: made.keyId, createdMs: Date.now() })));
      } catch (err) {
        if (!err || err.name !== 'ConstraintError') {
          throw storeError('failed', `Cannot keep a signing key in IndexedDB database "${this.dbName}" (${err && (err.message || err.name)}).`);
        }
        // another page or worker made it first: use theirs
      }
      row = await read();
    }
    if (!row || !row.key || typeof row.keyId !== 'string') return null;
    this._signing = { key: row.key, keyId: row.keyId };
    return this._signing;
  }

  async _signatureOf(name, body, meta, sig) {
    const signing = await this._signingKey(false);
    const counter = await this._readCounter(signing);
    return this._notes.verdict(`IndexedDB database "${this.dbName}"`, signing, counter,
      await signatureState(signing, name, body, meta, sig), name, meta);
  }

  get keepLast() { return this.retention?.keepLast ?? null; }

  /** putRecords takes live views (see recordPieces). */
  get livePieces() { return true; }

  /** Opens (creating, upgrading and converting v1 checkpoints) the database once. */
  _open() {
    if (!this._db) {
      this._db = this._connect().then(async (db) => {
        await this._convertV1(db);
        await this._sweepIn(db).catch(() => {}); // best effort: a failed sweep loses nothing
        this._sweepFiles(db).catch(() => {}); // files of writes that died half-way; not waited for
        return db;
      });
      this._db.catch(() => { this._db = null; });
    }
    return this._db;
  }

  _connect() {
    return new Promise((resolve, reject) => {
      let request;
      try {
        request = this._idb.open(this.dbName, SCHEMA_VERSION);
      } catch (err) {
        reject(new Error(`Cannot open IndexedDB database "${this.dbName}": ${err.message}`));
        return;
      }
      request.onupgradeneeded = (event) => {
        for (let v = event.oldVersion; v < SCHEMA_VERSION; v += 1) MIGRATIONS[v](request.result, request.transaction);
      };
      request.onsuccess = () => {
        const db = request.result;
        // Another tab running a newer elastic-lite wants to upgrade: step aside instead of
        // blocking it; the next call here reopens (and fails clearly if the schema is newer).
        db.onversionchange = () => { db.close(); this._db = null; };
        resolve(db);
      };
      request.onerror = () => {
        const err = request.error;
        if (err && err.name === 'VersionError') {
          reject(new Error(`The IndexedDB database "${this.dbName}" was written by a newer elastic-lite ` +
            `(its schema is newer than v${SCHEMA_VERSION}); reload the page to use the newer version.`));
        } else {
          reject(new Error(`Cannot open IndexedDB database "${this.dbName}": ${err ? err.message || err.name : 'unknown error'}`));
        }
      };
      request.onblocked = () => {
        // Only happens while an old connection that ignores versionchange is open elsewhere.
        console.warn(`elastic-lite: waiting for other tabs to close database "${this.dbName}" to upgrade it`);
      };
    });
  }

  // ---- writing ------------------------------------------------------------------------------

  /** Holds the writer lock of checkpoint `name` (every tab and worker of this origin). */
  lock(name, { timeoutMs = this.lockTimeoutMs } = {}) {
    checkName(name);
    return holdLock(`elastic-lite:${this.dbName}:${name}`, { timeoutMs, what: `Checkpoint "${name}"` });
  }

  /**
   * Stores records (each a Uint8Array, or an array of Uint8Arrays that concatenate to it) and
   * returns their keys. Records already stored are not written again. The bytes must not change
   * until the promise settles; they are not used after it.
   */
  async putRecords(records) {
    let prepared = null;
    try {
      prepared = await this._prepare(records);
      const db = await this._open();
      await inTransaction(db, [RECORDS, RECORD_CHUNKS], 'readwrite', (tx) => this._writeRecords(tx, prepared));
    } catch (err) {
      this._dropFiles(prepared);
      // (a record file refused in _prepare: the records' own length, not 0)
      const needed = prepared ? piecesTotal(prepared) : (Array.isArray(records) ? records : []).reduce((n, r) => n + piecesLength(recordPieces(r)), 0);
      throw await this._writeFailure('Saving records', needed, err);
    }
    return prepared.map((r) => r.key);
  }

  /**
   * prepareRecords(records), and each record of `fileFrom` bytes or more written to a new
   * record file in the same pass as its key (its `file`), where this store writes files.
   */
  async _prepare(records) {
    // (a batch of small records, as after most cells, does not open the files' folder)
    if (!this.files || !Array.isArray(records) || !records.some((r) => piecesLength(recordPieces(r)) >= this.fileFrom)) {
      return prepareRecords(records);
    }
    const dir = await recordFilesDir(this.dbName, true).catch(() => null);
    if (!dir) return prepareRecords(records);
    const staged = [];
    try {
      return await Promise.all(records.map(recordPieces).map(async (pieces) => {
        const length = piecesLength(pieces);
        if (length < this.fileFrom) return { key: await recordKey(pieces), length, pieces };
        const file = newRecordFileName();
        staged.push(file);
        let handle = null;
        try {
          handle = await (await dir.getFileHandle(file, { create: true })).createSyncAccessHandle();
        } catch (err) {
          if (isQuotaError(err)) throw err;
          return { key: await recordKey(pieces), length, pieces }; // no file here: IndexedDB chunks
        }
        try {
          const key = await recordKey(pieces, (leaf, at) => writeAll(handle, leaf, at));
          handle.flush();
          return { key, length, pieces, file };
        } finally {
          handle.close();
        }
      }));
    } catch (err) {
      for (const file of staged) removeRecordFile(this.dbName, file);
      throw err;
    }
  }

  // The files of `prepared` records whose write failed (none of their rows was written).
  _dropFiles(prepared) {
    for (const r of prepared ?? []) if (r.file) removeRecordFile(this.dbName, r.file);
  }

  /** [true|false] per key: is that record stored? Found records are pinned like putRecords'. */
  async hasRecords(keys) {
    const list = [...keys];
    list.forEach((k) => { if (!isRecordKey(k)) throw new Error(`Not a record key: ${JSON.stringify(k)}.`); });
    const db = await this._open();
    const files = new Map(); // index -> file name: looked for after the transaction
    const found = await inTransaction(db, [RECORDS, RECORD_CHUNKS, SETTINGS], 'readwrite', async (tx) => {
      const [stored, pins] = await Promise.all([recordRows(tx, [...new Set(list)], { chunks: true }), readPins(tx, this.orphanGraceMs)]);
      const rows = list.map((k) => stored.rows.get(k));
      // a row whose chunks were removed behind the store's back is not stored: written again
      const gone = rows.map((row, i) => {
        if (!row || row.damaged) return true;
        if (isFileRow(row)) { files.set(i, row.file); return false; }
        return stored.gone.has(row.key);
      });
      // pinned in the one pins row, not by a rewrite of each found row
      const pinnedMs = Date.now();
      rows.forEach((row, i) => { if (!gone[i]) pins.keys.set(row.key, pinnedMs); });
      if (gone.some((g) => !g)) writePins(tx, pins);
      return gone.map((g) => !g);
    });
    // so is one whose file is gone (its pin is harmless: the write replaces the row)
    if (files.size) {
      const names = await recordFileNames(this.dbName).catch(() => null);
      for (const [i, file] of files) if (!(names && names.has(file))) found[i] = false;
    }
    return found;
  }

  /**
   * Makes `entry` ({head, records: [{key, length}], tail, meta}) the checkpoint `name`, in one
   * transaction: checks every record is stored and whole (a row, all its chunks or its file,
   * not marked damaged), counts them, replaces (and uncounts) the previous checkpoint of that
   * name, applies retention. Does not take the writer lock: hold lock(name) around the whole
   * write (put() does).
   * `records` (as putRecords takes them): records written in the same transaction, so that a
   * point is one transaction; the entry's records whose key is null are these, in order.
   * Resolves to their keys ([] without `records`).
   */
  async commit(name, entry, { retention, sign = true, expect, records } = {}) {
    checkName(name);
    let prepared = null;
    if (records != null) {
      try {
        prepared = await this._prepare(records);
      } catch (err) {
        throw await this._writeFailure('Saving records', Array.isArray(records) ? records.reduce((n, r) => n + piecesLength(recordPieces(r)), 0) : 0, err);
      }
    }
    let e;
    try {
      e = checkEntry(prepared ? withKeys(entry, prepared) : entry);
    } catch (err) {
      this._dropFiles(prepared);
      throw err;
    }
    const meta = plainMeta(entry.meta, e.size);
    const expected = this._notes.takeExpected(name, expect);
    try {
      const signing = await this._signingKey(sign);
      const written = new Set((prepared ?? []).map((r) => r.key));
      // record files of the records it names cannot be looked for inside the transaction: they
      // are listed before it when some may be files (and again if one is met unlisted)
      let files = e.records.some((r) => !written.has(r.key) && r.length >= this.fileFrom) ? await recordFileNames(this.dbName).catch(() => null) : undefined;
      let predict = true;
      for (let attempt = 0; ; attempt += 1) {
        const holder = {};
        try {
          const done = await this._counted(WRITE_STORES, signing, (counter) => this._prepareCommit(name, e, meta, counter, signing, sign,
            predict ? this._predictExpired(name, e, meta, retention) : null),
          async (tx, p) => {
            // the conflict check's read and the new records' rows are read beside the commit's
            // own reads (one round trip): see _commitIn
            const expecting = this._checkExpected(tx, name, expected);
            expecting.catch(() => {}); // (awaited in _commitIn, before anything is written)
            const expired = await this._commitIn(tx, name, e, p.meta, retention, p.sig, { files, written, holder, prepared, expecting, predicted: p.predicted });
            if (p.predicted && !sameNames(p.predicted, expired)) throw PREDICTION_MISSED;
            return { expired, counted: !!p.predicted };
          }, durabilityOf(meta));
          if (holder.retained) this._retained.set(meta.notebook, holder.retained);
          if (!done.counted) await this._counterRemoved(done.expired).catch(() => {}); // best effort: the commit stands
          break;
        } catch (err) {
          this._retained.delete(meta.notebook);
          if (attempt > 1 || (err !== FILES_UNLISTED && err !== PREDICTION_MISSED)) {
            throw err === FILES_UNLISTED || err === PREDICTION_MISSED ? new Error('the store changed during the commit') : err;
          }
          if (err === FILES_UNLISTED) files = await recordFileNames(this.dbName).catch(() => null);
          else predict = false;
        }
      }
    } catch (err) {
      this._dropFiles(prepared);
      throw await this._writeFailure(`Saving checkpoint "${name}"`, e.size, err, name);
    }
    return (prepared ?? []).map((r) => r.key);
  }

  /** commit() checks the records an entry names are whole: a writer may name records it remembers without hasRecords(). */
  get checksAtCommit() { return true; }

  /**
   * The v1 call: saves a whole checkpoint file under `name` (cut into records, see above),
   * unsigned unless `sign` (an import is foreign until a person vouches for it).
   */
  async put(name, bytes, meta = {}, { sign = false, expect } = {}) {
    checkName(name);
    this._retained.clear();
    const parts = splitContainer(bytes);
    const lock = await this.lock(name);
    let prepared = [];
    const expected = this._notes.takeExpected(name, expect);
    try {
      prepared = await this._prepare(parts.records);
      const entry = checkEntry({ head: parts.head, tail: parts.tail,
        records: prepared.map((r) => ({ key: r.key, length: r.length })) });
      const m = plainMeta(meta, entry.size);
      const signing = await this._signingKey(sign);
      // Records and entry in ONE transaction: a failure anywhere leaves nothing behind.
      await this._counted(WRITE_STORES, signing, (counter) => this._prepareCommit(name, entry, m, counter, signing, sign),
        async (tx, p) => {
          await this._checkExpected(tx, name, expected);
          await this._writeRecords(tx, prepared);
          return this._commitIn(tx, name, entry, p.meta, undefined, p.sig);
        }).then((expired) => this._counterRemoved(expired).catch(() => {})); // best effort: the commit stands
    } catch (err) {
      this._dropFiles(prepared);
      throw await this._writeFailure(`Saving checkpoint "${name}"`, toBytes(bytes).byteLength, err, name);
    } finally {
      lock.release();
    }
  }

  // Writes the `prepared` records (pinned at `pinnedMs`); returns Map key -> the row put.
  // `known`: Map key -> their rows as read already in this transaction (null: none).
  async _writeRecords(tx, prepared, { known = null, pinnedMs = Date.now() } = {}) {
    const store = tx.objectStore(RECORDS);
    const chunks = tx.objectStore(RECORD_CHUNKS);
    const rows = known ? prepared.map((r) => known.get(r.key) ?? undefined) : await Promise.all(prepared.map((r) => req(store.get(r.key))));
    // A stored record is reused only once its chunks are found to hold exactly these bytes.
    const same = await Promise.all(prepared.map((r, i) => {
      const row = rows[i];
      return row && row.length === r.length && !row.damaged ? storedEquals(chunks, row, r.pieces) : false;
    }));
    const writing = new Map();
    const put = (row) => { store.put(row); writing.set(row.key, row); };
    const unused = (file) => { if (file) afterCommit(tx, () => { removeRecordFile(this.dbName, file); }); };
    prepared.forEach((r, i) => {
      const row = rows[i];
      if (writing.has(r.key)) { unused(r.file); return; }
      if (same[i]) {
        put({ ...row, pinnedMs }); // keeps it from a concurrent delete or sweep until commit
        unused(r.file);
        return;
      }
      // A record found damaged (verifyRecords, a read), or whose stored bytes or length differ
      // from these (a stored file is never compared: it is replaced): these are its true bytes,
      // rewrite it whole (every checkpoint using it is repaired).
      if (row) for (let seq = 0; seq < row.chunkCount; seq += 1) chunks.delete([r.key, seq]);
      if (isFileRow(row) && row.file !== r.file) unused(row.file);
      if (r.file) {
        put({ key: r.key, length: r.length, file: r.file, chunkSize: this.chunkSize, chunkCount: 0, pinnedMs });
        return;
      }
      let seq = 0;
      for (const data of slices(r.pieces, this.chunkSize)) {
        chunks.put({ key: r.key, seq, data: ownCopy(data) });
        seq += 1;
      }
      put({ key: r.key, length: r.length, chunkSize: this.chunkSize, chunkCount: seq, pinnedMs });
    });
    return writing;
  }

  // The next generation into the metadata, and the entry signed with it (outside transactions;
  // `sig` a promise, which _counted awaits beside the counter's signature). `predicted`: the
  // names retention is expected to remove (_predictExpired), counted as removed at the same
  // generation, so that the commit's one transaction also writes their removal into the
  // counter (the commit checks the prediction; null: counted after it, _counterRemoved).
  async _prepareCommit(name, entry, meta, counter, signing, sign, predicted = null) {
    const generation = counter.generation + 1;
    const m = { ...meta, generation };
    const names = { ...counter.names, [name]: generation };
    for (const old of predicted ?? []) names[old] = generation;
    return { meta: m, generation, names, predicted,
      sig: sign ? signEntry(signing, name, entry, m) : null };
  }

  // The names retention will remove when checkpoint `name` (entry `e`, metadata `meta`) is
  // committed, as this store object saw its notebook at its last commit there (null: not seen,
  // or another policy asked for). A point after a cell removes the oldest point of its notebook
  // once it has its keepLast: predicted, that removal is counted in the commit's transaction
  // instead of a second one. The commit checks the prediction against what it finds.
  _predictExpired(name, e, meta, retentionOverride) {
    const seen = meta.notebook != null ? this._retained.get(meta.notebook) : null;
    if (!seen) return null;
    const policy = retentionOverride !== undefined ? checkRetention(retentionOverride) : seen.policy;
    if (canonicalJson(policy) !== canonicalJson(seen.policy)) return null;
    const bytes = policy?.maxBytes != null;
    const entries = seen.entries.filter((x) => x.name !== name).concat([{ name, createdMs: meta.createdMs ?? 0,
      fixedBytes: bytes ? e.head.byteLength + e.tail.byteLength : e.size, exempt: meta.keep === true,
      records: bytes ? e.records.map((r) => [r.key, r.length]) : [] }]);
    return expiredByRetention(entries.map((x) => ({ ...x, bytes: () => x.records })), name, policy);
  }

  // Returns the names retention removed.
  // `check` (commit(): records named, not just written): {files: the record files listed
  // before the transaction, or null; written: Set of keys written in this transaction}: a
  // record named whose row is damaged, whose chunks or file are gone is missing too.
  async _commitIn(tx, name, entry, meta, retentionOverride, sig = null, check = null) {
    const expired = [];
    const rows = tx.objectStore(CHECKPOINTS);
    const bodies = tx.objectStore(BODIES);
    const counts = new RecordUse(tx, this.orphanGraceMs, this._size);
    const keys = distinctKeys(entry.records);
    // what the commit reads, asked for at once (each awaited read is a round trip)
    const policyOf = meta.notebook != null && retentionOverride === undefined ? this._retentionIn(tx, meta.notebook) : null;
    // the notebook's other checkpoints (and their bodies, for a byte budget) for retention,
    // read now: the entry's own row and body are added in memory (see _expiredIn)
    // The bodies of the ones this store object saw there at its last commit (_retained, kept
    // when the policy has a byte budget) are asked for at once, beside the list: in the usual
    // case (points of one kernel) no second round trip for them.
    const early = new Map();
    for (const x of (meta.notebook != null && this._retained.get(meta.notebook)?.entries) || []) {
      if (x.name !== name && x.records?.length) early.set(x.name, req(bodies.get(x.name)));
    }
    for (const p of early.values()) p.catch(() => {});
    const notebookOf = meta.notebook == null ? null : Promise.all([
      retentionOverride !== undefined ? checkRetention(retentionOverride) : policyOf,
      req(rows.index('notebook').getAll(meta.notebook)),
    ]).then(async ([policy, list]) => {
      const others = list.filter((r) => r.name !== name);
      const read = policy?.maxBytes != null
        ? await Promise.all(others.map((r) => (r.v === 2 ? early.get(r.name) ?? req(bodies.get(r.name)) : null))) : null;
      return { policy, others, bodies: read };
    });
    policyOf?.catch(() => {}); notebookOf?.catch(() => {}); // (awaited below; a refused commit aborts before)
    // the records a predicted removal (see _predictExpired) will release, unless this entry
    // names them too: their rows and counts read in this same round
    const likely = this._likelyReleased(meta.notebook, check?.predicted, keys);
    counts.countEarly(likely);
    const [read, previous] = await Promise.all([counts.load([...keys, ...likely], { chunks: !!check }), req(rows.get(name)), counts.loadPins()]);
    let found = read.slice(0, keys.length);
    if (check?.expecting) await check.expecting;
    if (check?.prepared?.length) {
      // the records this commit writes (their rows as read above, before the write): written
      // unpinned, since this transaction also makes the entry that uses them
      counts.wrote(await this._writeRecords(tx, check.prepared, { known: counts.rows, pinnedMs: 0 }));
      found = keys.map((k) => counts.rows.get(k));
    }
    const missing = keys.filter((k, i) => !found[i]);
    if (check) {
      const broken = keys.filter((k, i) => found[i] && !check.written.has(k) && (found[i].damaged || counts.gone.has(k) ||
        (isFileRow(found[i]) && fileUnlisted(found[i], check.files))));
      missing.push(...broken);
      if (missing.length) throw missingRecordError(name, missing, broken.length);
    }
    if (missing.length) throw missingRecordError(name, missing);
    const lengths = new Map(entry.records.map((r) => [r.key, r.length]));
    const wrong = keys.filter((k, i) => found[i].length !== lengths.get(k));
    if (wrong.length) throw new Error(`Cannot save checkpoint "${name}": record ${wrong[0]} is stored with another length than the entry says.`);
    // (a record shared with the replaced entry or one retention removes stays: it is used)
    await counts.use(keys);
    await this._dropEntry(tx, counts, name, previous ?? null);
    const row = { name, v: 2, createdMs: meta.createdMs, size: entry.size, meta };
    if (meta.notebook != null) row.notebook = meta.notebook; // null is not a valid index key
    if (sig) row.sig = sig;
    rows.put(row);
    bodies.put({ name, head: ownCopy(entry.head), records: entry.records, tail: ownCopy(entry.tail), keys });
    if (meta.notebook != null) {
      const nb = await notebookOf;
      const body = { name, head: entry.head, records: entry.records, tail: entry.tail };
      const seen = new Map(); // name -> [row, body as read]
      const expiring = this._expiredIn(nb.policy, [...nb.others, row], nb.bodies && [...nb.bodies, body], name, check?.holder, seen);
      for (const old of expiring) {
        await this._dropEntry(tx, counts, old, ...seen.get(old));
        expired.push(old);
      }
    }
    await counts.flush();
    return expired;
  }

  // The record keys of the checkpoints `predicted` to expire in `notebook` that `keys` does not
  // hold, as this store object saw them at its last commit there (_retained).
  _likelyReleased(notebook, predicted, keys) {
    const seen = notebook != null && predicted?.length ? this._retained.get(notebook) : null;
    if (!seen) return [];
    const holds = new Set(keys);
    const out = new Set();
    for (const x of seen.entries) {
      if (!predicted.includes(x.name)) continue;
      for (const [k] of x.records ?? []) if (!holds.has(k)) out.add(k);
    }
    return [...out];
  }

  // Counts removals (delete, expiry) in the counter: an entry put back after it is a rollback.
  async _counterRemoved(names) {
    const signing = await this._signingKey(false);
    if (!names.length || !signing) return;
    await this._counted([], signing, (counter) => {
      const generation = counter.generation + 1;
      return { generation, names: { ...counter.names, ...Object.fromEntries(names.map((n) => [n, generation])) } };
    }, () => {});
  }

  // Removes checkpoint `name` (either schema) and uncounts its records; true if it existed.
  // `known`: its row, read already (null: none); `knownBody`: its body, read already.
  async _dropEntry(tx, counts, name, known, knownBody) {
    const rows = tx.objectStore(CHECKPOINTS);
    const row = known !== undefined ? known : await req(rows.get(name));
    if (!row) return false;
    rows.delete(name);
    if (row.v === 2) {
      const body = knownBody !== undefined ? knownBody : await req(tx.objectStore(BODIES).get(name));
      tx.objectStore(BODIES).delete(name);
      if (body && Array.isArray(body.records)) counts.release(bodyKeys(body.records));
    } else {
      deleteV1Chunks(tx.objectStore(V1_CHUNKS), name);
    }
    return true;
  }

  // The notebook's own setting, else the database's default, else the constructor's.
  async _retentionIn(tx, notebook) {
    const settings = tx.objectStore(SETTINGS);
    const [own, all] = await Promise.all([req(settings.get(retentionId(notebook))), req(settings.get(retentionId(null)))]);
    const row = own ?? all;
    return row ? checkRetention(row.policy) : this.retention;
  }

  // The names `policy` removes among a notebook's checkpoint rows `rows` (with their `bodies`,
  // read when the policy has a byte budget, else null) once `keep` is committed. `holder`: gets
  // {policy, entries} as they are once the expired ones are gone (see _predictExpired);
  // `seen`: gets name -> [row, body as read (undefined: not read)] of each.
  _expiredIn(policy, rows, bodies, keep, holder = null, seen = null) {
    if (!policy) {
      if (holder) holder.retained = { policy, entries: [] };
      return [];
    }
    bodies ??= [];
    if (seen) rows.forEach((r, i) => seen.set(r.name, [r, bodies.length ? bodies[i] : undefined]));
    const entries = rows.map((r, i) => ({
      name: r.name,
      createdMs: r.createdMs ?? r.meta?.createdMs ?? 0,
      fixedBytes: bodies[i] ? bodies[i].head.byteLength + bodies[i].tail.byteLength : r.size,
      exempt: r.meta?.keep === true,
      bytes: () => (bodies[i] ? bodies[i].records.map((x) => [x.key, x.length]) : []),
    }));
    const expired = expiredByRetention(entries, keep, policy);
    if (holder) {
      const gone = new Set(expired);
      holder.retained = { policy, entries: entries.filter((x) => !gone.has(x.name)).map(({ bytes, ...x }) => ({ ...x, records: bytes() })) };
    }
    return expired;
  }

  async _writeFailure(what, needed, err, name) {
    if (err && typeof err.code === 'string') return err; // one of ours, already says what to do
    if (isQuotaError(err)) return quotaError(name, needed, err);
    return storeError('failed', `${what} to IndexedDB failed (${err && (err.message || err.name)}); ` +
      (name ? 'the previous checkpoint of that name, if any, is unchanged.' : 'no checkpoint was changed.'), { cause: err });
  }

  // ---- reading ------------------------------------------------------------------------------

  async get(name) {
    checkName(name);
    const db = await this._open();
    // The signature is checked after the transaction (WebCrypto would end it), on what it read.
    const got = await inTransaction(db, [CHECKPOINTS, BODIES, RECORDS, RECORD_CHUNKS, V1_CHUNKS], 'readonly', async (tx) => {
      const row = await req(tx.objectStore(CHECKPOINTS).get(name));
      if (row === undefined) return null;
      const v1 = await readV1(tx, name, row);
      if (v1) return { bytes: v1.bytes, meta: { ...v1.row.meta, size: v1.row.size }, row, body: null };
      const body = row && row.v === 2 ? await req(tx.objectStore(BODIES).get(name)) : null;
      const problem = entryProblem(row, body);
      if (!problem || body === undefined) await this._checkLost(tx, row);
      if (problem) throw this._corrupted(name, problem);
      const keys = distinctKeys(body.records);
      const recs = await Promise.all(keys.map((k) => req(tx.objectStore(RECORDS).get(k))));
      const byKey = new Map(keys.map((k, i) => [k, recs[i]]));
      const out = new Uint8Array(row.size);
      out.set(body.head, 0);
      let at = body.head.byteLength;
      const files = []; // records in files: read after the transaction
      const reads = body.records.map((r) => {
        const rec = byKey.get(r.key);
        const p = isFileRow(rec) && rec.length === r.length ? (files.push({ row: rec, at }), null) : readRecordInto(tx, rec, r, out, at);
        at += r.length;
        return p;
      });
      const problems = (await Promise.all(reads)).filter(Boolean);
      if (problems.length) throw this._corrupted(name, problems[0]);
      out.set(body.tail, at);
      return { bytes: out, meta: { ...row.meta, size: row.size }, row, body, files };
    });
    if (!got) return null;
    const { row, body, files, ...out } = got;
    for (const f of files ?? []) {
      const data = await readRecordFile(this.dbName, f.row);
      if (data === FILE_GONE) {
        const names = await recordFileNames(this.dbName).catch(() => null);
        const missing = new Set(files.filter((x) => !(names && names.has(x.row.file))).map((x) => x.row.key));
        throw lostError(name, { missing: Math.max(1, missing.size), records: distinctKeys(body.records).length }, this._where());
      }
      if (typeof data === 'string') throw this._corrupted(name, data);
      out.bytes.set(data, f.at);
    }
    // After the transaction (WebCrypto would end it): every record against its key.
    out.damaged = body ? await checkRecordsRead(out.bytes, body.head.byteLength, body.records) : [];
    if (out.damaged.length) await this._markDamaged(out.damaged.map((d) => d.key)).catch(() => {});
    out.signature = body ? await this._signatureOf(name, body, row.meta, row.sig) : { state: 'unsigned', keyId: null };
    return out;
  }

  /**
   * The entry of checkpoint `name` without its records' bytes: {name, head, records, tail, meta,
   * size}. A checkpoint not yet converted from schema v1 has no records: it is all tail.
   */
  async getEntry(name) {
    checkName(name);
    const db = await this._open();
    const got = await inTransaction(db, [CHECKPOINTS, BODIES, V1_CHUNKS], 'readonly', async (tx) => {
      const row = await req(tx.objectStore(CHECKPOINTS).get(name));
      if (row === undefined) return null;
      const v1 = await readV1(tx, name, row);
      if (v1) return { name, head: new Uint8Array(0), records: [], tail: v1.bytes, meta: { ...row.meta, size: row.size }, size: row.size, sig: null };
      const body = row && row.v === 2 ? await req(tx.objectStore(BODIES).get(name)) : null;
      const problem = entryProblem(row, body);
      if (body === undefined) await this._checkLost(tx, row); // records are checked as they are read
      if (problem) throw this._corrupted(name, problem);
      return { name, head: body.head, records: body.records, tail: body.tail, meta: { ...row.meta, size: row.size }, size: row.size, sig: row.sig, signed: row.meta };
    });
    if (!got) return null;
    const { sig, signed, ...entry } = got;
    entry.signature = signed ? await this._signatureOf(name, entry, signed, sig) : { state: 'unsigned', keyId: null };
    return entry;
  }

  /**
   * Signs the entry of `name` as this store's own (a foreign checkpoint a person looked at and
   * confirmed); false when there is no such checkpoint (or it changed meanwhile).
   */
  async sign(name) {
    checkName(name);
    const lock = await this.lock(name);
    try {
      const db = await this._open();
      const read = (tx) => Promise.all([req(tx.objectStore(CHECKPOINTS).get(name)), req(tx.objectStore(BODIES).get(name))]);
      const [row, body] = await inTransaction(db, [CHECKPOINTS, BODIES], 'readonly', read);
      if (!row || row.v !== 2 || entryProblem(row, body)) return false;
      const signing = await this._signingKey(true);
      // adopted: a new generation, so that what the counter said of the name holds again
      return await this._counted([CHECKPOINTS, BODIES], signing, async (counter) => {
        const generation = counter.generation + 1;
        const meta = { ...row.meta, generation };
        return { generation, names: { ...counter.names, [name]: generation }, meta, sig: await signEntry(signing, name, body, meta) };
      }, async (tx, p) => {
        const [now, nowBody] = await read(tx);
        // the lock keeps writers out; retention of another checkpoint may still have removed it
        if (!now || !nowBody || canonicalJson([now.meta, nowBody.records]) !== canonicalJson([row.meta, body.records])) return false;
        tx.objectStore(CHECKPOINTS).put({ ...now, meta: p.meta, sig: p.sig });
        return true;
      });
    } finally {
      lock.release();
    }
  }

  /**
   * The bytes of each record, in order (a record stored in one chunk is returned as stored),
   * each checked against its key: one that does not match comes back neutralized and its key
   * in the array's `damaged` (see "Checking what is read").
   */
  async readRecords(keys) {
    const list = [...keys];
    const out = await checkRecordList(list, await this._readRecordsRaw(list));
    if (out.damaged.length) await this._markDamaged(out.damaged).catch(() => {});
    return out;
  }

  /**
   * Large records without an extra copy: the bytes of each record as the chunks it is stored
   * in (an array of Uint8Arrays each, never joined into one array), each record checked against
   * its key over its chunks; `damaged`: the keys that do not match (marked, as readRecords
   * does; their chunks are left as read). A reader that copies records out a range at a time
   * (the kernel's streamed restore) holds one copy of a record in JS instead of two.
   */
  async readRecordChunks(keys) {
    const list = [...keys];
    const out = await this._readRows(list, async (tx, row) => {
      const chunks = await readRecordChunkList(tx, row);
      // a chunk gone (evicted, cleared) in the words of readRecords(), not as damage
      if (typeof chunks === 'string' && await recordGone(tx, row.key)) throw recordsGone([row.key], { chunksGone: true });
      if (typeof chunks === 'string') throw this._damaged(row.key, chunks);
      return chunks;
    }, (bytes) => [bytes]);
    const damaged = [];
    for (const [i, chunks] of out.entries()) if (await recordKey(chunks) !== list[i]) damaged.push(list[i]);
    if (damaged.length) await this._markDamaged(damaged).catch(() => {});
    return Object.assign(out, { damaged: [...new Set(damaged)] });
  }

  /**
   * Reads ranges of record `key` straight into the memory that keeps them: `targets` is
   * [{at, view}], `view` a Uint8Array or a live view (see recordPieces) of `view.byteLength`
   * bytes to fill from byte `at` of the record. A record in a file is read into them with no
   * copy in between (a worker's access handle); one in chunks is copied from each chunk. With
   * `check` (the default) the targets must cover the record in order, and the bytes are then
   * checked against the key: false when they do not match (the record is marked damaged, as
   * readRecords does; the targets hold what was read). A record gone is 'missing-record' (as
   * in readRecordChunks), a malformed one 'corrupted'. The kernel's streamed restore reads
   * large records this way: each out-of-band buffer is read straight into its final memory.
   */
  async readRecordInto(key, targets, { check = true } = {}) {
    if (!isRecordKey(key)) throw new Error(`Not a record key: ${JSON.stringify(key)}.`);
    const list = [...targets].map((t) => ({ at: t.at, view: isLiveView(t.view) ? t.view : toBytes(t.view) }));
    const db = await this._open();
    const row = await inTransaction(db, [RECORDS], 'readonly', (tx) => req(tx.objectStore(RECORDS).get(key)));
    if (!row) throw recordsGone([key]);
    let end = 0;
    for (const t of list) {
      if (!Number.isSafeInteger(t.at) || t.at < 0 || t.at + t.view.byteLength > row.length) {
        throw new Error(`readRecordInto: a range [${t.at}, +${t.view.byteLength}) lies outside record ${key} (${row.length} bytes).`);
      }
      if (check && t.at !== end) throw new Error('readRecordInto: to be checked, the ranges must cover the record in order.');
      end = t.at + t.view.byteLength;
    }
    if (check && end !== row.length) throw new Error('readRecordInto: to be checked, the ranges must cover the record in order.');
    const problem = isFileRow(row) ? await readFileInto(this.dbName, row, list)
      : await inTransaction(db, [RECORDS, RECORD_CHUNKS], 'readonly', async (tx) => {
        const wrong = await readChunksInto(tx, row, list);
        if (wrong && await recordGone(tx, key)) return FILE_GONE;
        return wrong;
      });
    if (problem === FILE_GONE) throw recordsGone([key], { chunksGone: true });
    if (problem) throw this._damaged(key, problem);
    if (!check) return true;
    const ok = await recordKey(list.map((t) => t.view)) === key;
    if (!ok) await this._markDamaged([key]).catch(() => {});
    return ok;
  }

  // Marks records found damaged: hasRecords() then says they are not stored, and the next
  // putRecords() of their true bytes rewrites them.
  async _markDamaged(keys) {
    const db = await this._open();
    await inTransaction(db, [RECORDS], 'readwrite', async (tx) => {
      const store = tx.objectStore(RECORDS);
      for (const row of await Promise.all(keys.map((k) => req(store.get(k))))) if (row) store.put({ ...row, damaged: true });
    });
  }

  _readRecordsRaw(list) {
    return this._readRows(list, async (tx, row) => {
      if (row.chunkCount === 1) {
        const chunk = await req(tx.objectStore(RECORD_CHUNKS).get([row.key, 0]));
        if (chunk && toBytes(chunk.data).byteLength === row.length) return toBytes(chunk.data);
      }
      const out = new Uint8Array(row.length);
      const problem = await readRecordInto(tx, row, row, out, 0);
      if (problem && await recordGone(tx, row.key)) throw recordsGone([row.key], { chunksGone: true });
      if (problem) throw this._damaged(row.key, problem);
      return out;
    });
  }

  // Each record of `list` as `inChunks(tx, row)` reads it from its chunks in one transaction, or
  // as `ofFile(bytes)` of its file (read after the transaction); a key with no row is gone.
  async _readRows(list, inChunks, ofFile = (bytes) => bytes) {
    const db = await this._open();
    const out = await inTransaction(db, [RECORDS, RECORD_CHUNKS], 'readonly', async (tx) => {
      const rows = await Promise.all(list.map((k) => req(tx.objectStore(RECORDS).get(k))));
      const missing = list.filter((k, i) => !rows[i]);
      if (missing.length) throw recordsGone(missing);
      return Promise.all(rows.map((row) => (isFileRow(row) ? row : inChunks(tx, row))));
    });
    for (const [i, x] of out.entries()) if (isFileRow(x)) out[i] = ofFile(await this._readFile(x));
    return out;
  }

  // The bytes of record file row `row`, or the error of a record gone or damaged.
  async _readFile(row) {
    const data = await readRecordFile(this.dbName, row);
    if (data === FILE_GONE) throw recordsGone([row.key], { chunksGone: true });
    if (typeof data === 'string') throw this._damaged(row.key, data);
    return data;
  }

  _damaged(key, problem) {
    return storeError('corrupted', `Record ${key} in IndexedDB database "${this.dbName}" is damaged: ${problem}.`);
  }

  /**
   * The checkpoints (of `notebook`), newest first: [{name, meta}]. One whose records are gone
   * (see "Lost checkpoints") carries `lost: {missing, records}` as well.
   */
  async list({ notebook } = {}) {
    const db = await this._open();
    const listed = (files) => inTransaction(db, [CHECKPOINTS, BODIES, RECORDS, RECORD_CHUNKS], 'readonly', async (tx) => {
      const store = tx.objectStore(CHECKPOINTS);
      const all = await req(notebook == null ? store.getAll() : store.index('notebook').getAll(notebook));
      const losses = await entriesLoss(tx, all, files);
      return all.map((r, i) => ({ ...r, lost: losses[i] }));
    });
    // Record files cannot be looked at inside the transaction: the ones its rows named are
    // looked for after it, and only if some are gone (still named by their rows) is it read again.
    const seen = new Map();
    let rows = await listed({ seen });
    const gone = await this._filesGone(db, seen);
    if (gone.size) rows = await listed({ gone });
    return rows.filter((r) => r && typeof r.name === 'string')
      .map((r) => ({ name: r.name, meta: { ...(r.meta || {}), size: r.size }, ...(r.lost ? { lost: r.lost } : {}) }))
      .sort(byNewest);
  }

  // The keys of `seen` (key -> file name, read from their rows) whose file is gone while their
  // row still names it.
  async _filesGone(db, seen) {
    if (!seen.size) return new Set();
    const names = await recordFileNames(this.dbName).catch(() => null);
    const missing = [...seen].filter(([, file]) => !(names && names.has(file)));
    if (!missing.length) return new Set();
    const rows = await inTransaction(db, [RECORDS], 'readonly', (tx) => Promise.all(missing.map(([key]) => req(tx.objectStore(RECORDS).get(key)))));
    return new Set(missing.filter(([, file], i) => rows[i] && rows[i].file === file).map(([key]) => key));
  }

  // Inside a read: the 'lost' error when the data of checkpoint row `row` is gone.
  async _checkLost(tx, row) {
    const loss = await entryLoss(tx, row);
    if (loss) throw lostError(row.name, loss, this._where());
  }

  _where() {
    return `this browser's storage (IndexedDB database "${this.dbName}")`;
  }

  /**
   * {persistent, used, quota} of the browser storage this store lives in (the origin's: the
   * browser may evict it whole unless it is persistent), each null when the browser does not
   * say; null where there is no navigator.storage (Node). persisted() and estimate() exist in
   * workers too; persist() only in a page (js/shared/storage-status.mjs asks for it).
   */
  async storageStatus() {
    const storage = globalThis.navigator && globalThis.navigator.storage;
    if (!storage) return null;
    const call = async (fn) => { try { return typeof storage[fn] === 'function' ? await storage[fn]() : null; } catch { return null; } };
    const [persisted, est] = await Promise.all([call('persisted'), call('estimate')]);
    const num = (v) => (Number.isFinite(v) ? v : null);
    return { persistent: typeof persisted === 'boolean' ? persisted : null, used: num(est?.usage), quota: num(est?.quota) };
  }

  async delete(name) {
    checkName(name);
    this._retained.clear(); // (what _predictExpired saw)
    const db = await this._open();
    const drop = async (tx) => {
      const counts = new RecordUse(tx, this.orphanGraceMs);
      const existed = await this._dropEntry(tx, counts, name);
      await counts.flush();
      return existed;
    };
    let existed;
    try {
      const signing = await this._signingKey(false);
      // counted in the same transaction: a deleted entry put back later is a rollback
      existed = signing
        ? await this._counted(WRITE_STORES, signing, (counter) => {
          const generation = counter.generation + 1;
          return { generation, names: { ...counter.names, [name]: generation } };
        }, drop)
        : await inTransaction(db, WRITE_STORES, 'readwrite', drop);
    } catch (err) {
      throw storeError('failed', `Deleting checkpoint "${name}" failed (${err.message || err.name}); it is still stored, unchanged.`, { cause: err });
    }
    if (existed) {
      this._deleted = true;
      this._channel()?.postMessage('deleted');
    }
    return existed;
  }

  // ---- retention settings, housekeeping -----------------------------------------------------

  /**
   * Retention for the checkpoints of `notebook` (null: of every notebook without its own),
   * kept in the database so every tab and kernel of the origin applies it; policy null removes it.
   */
  async setRetention(notebook, policy) {
    const p = checkRetention(policy);
    this._retained.clear();
    const db = await this._open();
    await inTransaction(db, [SETTINGS], 'readwrite', (tx) => {
      if (p) tx.objectStore(SETTINGS).put({ id: retentionId(notebook), policy: p });
      else tx.objectStore(SETTINGS).delete(retentionId(notebook));
    });
  }

  /** The policy that applies to `notebook` (null: the default). */
  async getRetention(notebook) {
    const db = await this._open();
    return inTransaction(db, [SETTINGS], 'readonly', async (tx) => {
      if (notebook != null) return this._retentionIn(tx, notebook);
      const row = await req(tx.objectStore(SETTINGS).get(retentionId(null)));
      return row ? checkRetention(row.policy) : this.retention;
    });
  }

  /** Frees records no checkpoint counts whose writer's pin is older than orphanGraceMs. */
  async sweep() {
    const db = await this._open();
    const freed = await this._sweepIn(db);
    await this._sweepFiles(db).catch(() => {});
    return freed;
  }

  // Removes record files no row names that are older than the grace time (a write that failed
  // half-way, a removal that did not happen); younger ones may be a writer's, not yet committed.
  async _sweepFiles(db) {
    const names = await recordFileNames(this.dbName);
    if (!names || !names.size) return 0;
    const named = await inTransaction(db, [RECORDS], 'readonly', async (tx) =>
      new Set((await req(tx.objectStore(RECORDS).getAll())).filter(isFileRow).map((r) => r.file)));
    const dir = await recordFilesDir(this.dbName, false);
    let removed = 0;
    for (const name of names) {
      if (named.has(name)) continue;
      try {
        const file = await (await dir.getFileHandle(name)).getFile();
        if (Date.now() - file.lastModified < this.orphanGraceMs) continue;
        await dir.removeEntry(name);
        removed += 1;
      } catch { /* in use or gone meanwhile */ }
    }
    return removed;
  }

  _sweepIn(db) {
    return inTransaction(db, [RECORDS, RECORD_CHUNKS, BODIES, SETTINGS], 'readwrite', async (tx) => {
      const counts = new RecordUse(tx, this.orphanGraceMs);
      // the rows with a pin (written or left unused by a writer), whose pin has expired
      const Range = globalThis.IDBKeyRange; // absent where a factory is passed in (fake-indexeddb)
      const index = counts.records.index('pinned');
      const [pinned] = await Promise.all([req(Range ? index.getAll(Range.lowerBound(0, true)) : index.getAll()), counts.loadPins()]);
      const due = pinned.filter((row) => row.pinnedMs > 0 && counts.freeable(row));
      const named = await namedByBodies(tx, due.map((row) => row.key));
      let freed = 0;
      due.forEach((row, i) => {
        if (named[i]) counts.records.put({ ...row, pinnedMs: 0 }); // used: its pin is over
        else { freeRecord(counts.records, counts.chunks, row); freed += 1; }
      });
      return freed;
    });
  }

  /**
   * Reads each record back and checks it against its key: {checked, damaged: [key...]}. A
   * damaged record (its bytes changed inside the browser's storage) is shared by every
   * checkpoint naming it; it is marked so that hasRecords() says it is not stored and the next
   * putRecords() of its true bytes rewrites it, which repairs all of them.
   */
  async verifyRecords(keys) {
    const list = [...new Set(keys)];
    const damaged = [];
    for (const key of list) {
      if (!isRecordKey(key)) throw new Error(`Not a record key: ${JSON.stringify(key)}.`);
      const bytes = await this._readRecordsRaw([key]).then(([b]) => b, (err) => (err.code === 'missing-record' && !err.chunksGone ? null : undefined));
      if (bytes === null) continue; // not stored: nothing to check
      if (bytes === undefined || await recordKey(bytes) !== key) damaged.push(key);
    }
    if (damaged.length) await this._markDamaged(damaged);
    return { checked: list.length, damaged };
  }

  /**
   * Frees those of `keys` that no checkpoint counts, pinned or not: a writer that gives up after
   * putRecords() gives its space back at once instead of waiting for the sweep.
   */
  async discardRecords(keys) {
    const list = [...keys];
    const db = await this._open();
    return inTransaction(db, [RECORDS, RECORD_CHUNKS, BODIES], 'readwrite', async (tx) => {
      const counts = new RecordUse(tx, this.orphanGraceMs);
      const keysOf = distinctKeys(list.map((key) => ({ key })));
      const [found, named] = await Promise.all([counts.load(keysOf), namedByBodies(tx, keysOf)]);
      const rows = found.filter((r, i) => r && !named[i]);
      for (const row of rows) freeRecord(counts.records, counts.chunks, row);
      return rows.length;
    });
  }

  /** {checkpoints, records, recordBytes}: how much the store really holds (records once each). */
  async stats() {
    const db = await this._open();
    return inTransaction(db, [CHECKPOINTS, RECORDS], 'readonly', async (tx) => {
      const [checkpoints, rows] = await Promise.all([req(tx.objectStore(CHECKPOINTS).count()),
        req(tx.objectStore(RECORDS).getAll())]);
      return { checkpoints, records: rows.length, recordBytes: rows.reduce((n, r) => n + r.length, 0) };
    });
  }

  async close() {
    this._deletes?.close();
    this._deletes = null;
    const pending = this._db;
    this._db = null;
    if (pending) (await pending.catch(() => null))?.close();
  }

  _corrupted(name, problem) {
    return storeError('corrupted', `Checkpoint "${name}" in IndexedDB database "${this.dbName}" is corrupted: ${problem}. ` +
      `Delete it (elastic-lite rm "${name}", or Delete in the checkpoints panel) and checkpoint again.`);
  }

  // ---- schema v1 checkpoints ----------------------------------------------------------------

  // Rewrites every checkpoint saved by schema v1 (one row + chunks of the whole file) as an
  // entry with records, one checkpoint per transaction: a crash part-way leaves each one
  // either converted or as it was, and the next open carries on. The bytes are not changed.
  // One that cannot be converted now (damaged, or no room for the copy) stays as it is: get()
  // and delete() still handle it.
  async _convertV1(db) {
    const names = await inTransaction(db, [CHECKPOINTS], 'readonly', async (tx) =>
      (await req(tx.objectStore(CHECKPOINTS).getAll())).filter((r) => r && r.v !== 2).map((r) => r.name));
    for (const name of names) {
      try {
        const old = await inTransaction(db, [CHECKPOINTS, V1_CHUNKS], 'readonly', (tx) => readV1(tx, name));
        if (!old) continue; // converted or deleted by another tab meanwhile, or damaged
        const parts = splitContainer(old.bytes);
        const prepared = await prepareRecords(parts.records);
        const entry = checkEntry({ head: parts.head, tail: parts.tail, records: prepared.map((r) => ({ key: r.key, length: r.length })) });
        await inTransaction(db, WRITE_STORES, 'readwrite', async (tx) => {
          const now = await req(tx.objectStore(CHECKPOINTS).get(name));
          if (!now || now.v === 2 || now.createdMs !== old.row.createdMs || now.size !== old.row.size) return;
          await this._writeRecords(tx, prepared);
          // Retention is not applied: converting must not delete anything.
          await this._commitIn(tx, name, entry, { ...old.row.meta, size: entry.size }, null);
        });
      } catch { /* left as a v1 checkpoint; the next open tries again */ }
    }
  }
}

// ---- helpers of IndexedDBStore ----------------------------------------------------------------

function defaultRetention(retention, keepLast) {
  if (retention != null && keepLast != null) throw new Error('Pass either retention or keepLast, not both.');
  if (keepLast != null && !(Number.isInteger(keepLast) && keepLast >= 1)) {
    throw new Error(`keepLast must be a whole number >= 1, not ${keepLast}.`);
  }
  return checkRetention(keepLast != null ? { keepLast } : retention);
}

export { defaultRetention };

function retentionId(notebook) {
  return notebook == null ? 'retention' : `retention:${notebook}`;
}

// Structured clone stores a view's WHOLE underlying buffer (for a view into Pyodide's heap,
// the whole wasm memory): store a view as is only when it covers its buffer.
function ownCopy(view) {
  const u8 = toBytes(view);
  return u8.byteOffset === 0 && u8.byteLength === u8.buffer.byteLength ? u8 : u8.slice();
}

/** [{key, length, pieces}] for records given as recordPieces() takes them. */
export async function prepareRecords(records) {
  if (!Array.isArray(records)) throw new Error('putRecords() takes an array of records (each a Uint8Array or an array of Uint8Arrays).');
  const pieces = records.map(recordPieces);
  const keys = await Promise.all(pieces.map((p) => recordKey(p)));
  return pieces.map((p, i) => ({ key: keys[i], length: piecesLength(p), pieces: p }));
}

function piecesTotal(prepared) {
  return prepared.reduce((n, r) => n + r.length, 0);
}

function entryProblem(row, body) {
  if (row && typeof row === 'object' && row.v !== 2 && Number.isSafeInteger(row.chunkCount)) {
    return 'it was saved by an older elastic-lite and some of its data is missing, so it could not be converted';
  }
  if (!row || typeof row !== 'object' || row.v !== 2 || !Number.isSafeInteger(row.size) || row.size < 0 ||
      !row.meta || typeof row.meta !== 'object') return 'its metadata record is malformed';
  if (!body || !(body.head instanceof Uint8Array) || !(body.tail instanceof Uint8Array) || !Array.isArray(body.records)) {
    return 'its list of records is missing or malformed';
  }
  const total = body.head.byteLength + body.tail.byteLength + body.records.reduce((n, r) => n + (r && r.length), 0);
  if (total !== row.size) return `its parts add up to ${total} bytes, the metadata says ${row.size}`;
  return null;
}

// Copies the chunks of `record` ({key, length} as the entry names it; `row` is its row in
// "records") into out[at...]; resolves to a description of what is wrong, or null.
async function readRecordInto(tx, row, record, out, at) {
  const what = `record ${record.key.slice(0, 12)}…`;
  if (!row) return `${what} is missing`;
  if (row.length !== record.length || !Number.isSafeInteger(row.chunkCount) || !Number.isSafeInteger(row.chunkSize) ||
      row.chunkCount !== Math.ceil(row.length / row.chunkSize)) return `${what} has a malformed row`;
  const chunks = tx.objectStore(RECORD_CHUNKS);
  const problems = await Promise.all(Array.from({ length: row.chunkCount }, async (_, seq) => {
    const chunk = await req(chunks.get([row.key, seq]));
    const data = chunk && (chunk.data instanceof Uint8Array || chunk.data instanceof ArrayBuffer) ? toBytes(chunk.data) : null;
    if (!data) return `${what} lost its chunk ${seq} of ${row.chunkCount}`;
    const want = Math.min(row.chunkSize, row.length - seq * row.chunkSize);
    if (data.byteLength !== want) return `${what}: chunk ${seq} holds ${data.byteLength} bytes instead of ${want}`;
    out.set(data, at + seq * row.chunkSize);
    return null;
  }));
  return problems.find(Boolean) ?? null;
}

// ---- Lost checkpoints --------------------------------------------------------------------------
//
// A browser evicts an origin's storage whole (storage pressure; Safari after days without a
// visit), and a person can clear it ("clear site data") or part of it (an object store emptied
// from the developer tools or by an extension): an entry can then still be listed while the
// records it names are gone. Such a checkpoint is LOST, not damaged: nothing of it can be read
// back, and the words say so (removed by the browser or cleared). Only presence is checked
// here (rows and chunk counts, never bytes), so every list() can afford it.

/**
 * {missing, records} for checkpoint row `row` when its data is gone (`missing` of its
 * `records` distinct records have no row or lack chunks; both null when its list of records
 * itself is gone), else null. A row that is not a well-formed v2 entry is not judged here
 * (get() reports it as corrupted).
 */
async function entryLoss(tx, row) {
  return (await entriesLoss(tx, [row]))[0];
}

function fileGone(row, files) {
  if (files && files.seen) files.seen.set(row.key, row.file);
  return !!(files && files.gone && files.gone.has(row.key));
}

const BULK_PRESENCE = 16; // distinct records from which two reads of all keys beat one count each (Chromium)

/** entryLoss() of each of `rows`, each distinct record looked at once. */
async function entriesLoss(tx, rows, files = null) {
  const judged = (row) => row && row.v === 2 && typeof row.name === 'string';
  const store = tx.objectStore(BODIES);
  const bulk = rows.length >= BULK_PRESENCE ? new Map((await req(store.getAll())).map((b) => [b.name, b])) : null;
  const bodies = await Promise.all(rows.map((row) => (!judged(row) ? null : bulk ? bulk.get(row.name) : req(store.get(row.name)))));
  const keysOf = bodies.map((body) => (body && Array.isArray(body.records)
    ? distinctKeys(body.records.filter((r) => r && typeof r.key === 'string')) : []));
  const all = [...new Set(keysOf.flat())];
  const gone = new Set();
  if (all.length >= BULK_PRESENCE) {
    // rows and chunk keys of the whole store in two reads (keys only: no bytes)
    const [recordRows, chunkKeys] = await Promise.all([req(tx.objectStore(RECORDS).getAll()),
      req(tx.objectStore(RECORD_CHUNKS).getAllKeys())]);
    const chunks = new Map();
    for (const [key] of chunkKeys) chunks.set(key, (chunks.get(key) ?? 0) + 1);
    const byKey = new Map(recordRows.map((r) => [r.key, r]));
    for (const key of all) {
      const row = byKey.get(key);
      if (isFileRow(row)) { if (fileGone(row, files)) gone.add(key); continue; }
      if (!row || (Number.isSafeInteger(row.chunkCount) && row.chunkCount >= 1 && (chunks.get(key) ?? 0) < row.chunkCount)) gone.add(key);
    }
  } else {
    const found = await Promise.all(all.map((key) => recordGone(tx, key, files)));
    all.forEach((key, i) => { if (found[i]) gone.add(key); });
  }
  return rows.map((row, i) => {
    if (!judged(row)) return null;
    if (bodies[i] === undefined) return { missing: null, records: null };
    const missing = keysOf[i].filter((k) => gone.has(k)).length;
    return missing ? { missing, records: keysOf[i].length } : null;
  });
}

// True when record `key` has no row, or fewer chunks than its row says (a row that does not
// say how many is not judged).
// A file row is judged by `files` ({gone: Set of keys, seen: Map key -> file name to fill}):
// its file cannot be looked at inside a transaction.
async function recordGone(tx, key, files = null) {
  const row = await req(tx.objectStore(RECORDS).get(key));
  if (!row) return true;
  if (isFileRow(row)) return fileGone(row, files);
  return chunksGone(tx, row);
}

// True when chunk row `row` (of "records") has fewer chunks than it says.
async function chunksGone(tx, row) {
  const key = row.key;
  const n = row.chunkCount;
  if (!Number.isSafeInteger(n) || n < 1) return false;
  const chunks = tx.objectStore(RECORD_CHUNKS);
  const Range = globalThis.IDBKeyRange; // absent where a factory is passed in (fake-indexeddb)
  if (Range) return (await req(chunks.count(Range.bound([key, 0], [key, n - 1])))) < n;
  const found = await Promise.all(Array.from({ length: n }, (_, seq) => req(chunks.count([key, seq]))));
  return found.some((c) => c === 0);
}

/** The 'missing-record' error of readRecords() for `keys` gone (rows or chunks). */
function recordsGone(keys, extra = {}) {
  return storeError('missing-record', `${keys.length} record(s) are not in the store: ${keys.slice(0, 2).join(', ')} ` +
    '(removed by the browser or cleared, or deleted meanwhile).', { keys, ...extra });
}

/** The 'lost' error of checkpoint `name` whose data is gone (`loss` as entryLoss gives it). */
export function lostError(name, loss, where) {
  const what = loss && loss.records ? `${loss.missing} of its ${loss.records} records are` : 'its data is';
  return storeError('lost', `Checkpoint "${name}" is lost: ${what} no longer in ${where}; ${loss && loss.records ? 'they were' : 'it was'} removed ` +
    'by the browser or cleared (the browser may evict site data when storage runs low, Safari after days ' +
    'without a visit, or the site\'s data was cleared). Only its listing was left. Delete it (Delete in the ' +
    'checkpoints panel, or await elastic_lite.delete_checkpoint(name) in the kernel), and keep copies outside the browser: Export, or a folder store.',
  { loss });
}

// The chunks of stored record `row` as they are stored, in order (their lengths checked), or
// a description of what is wrong.
async function readRecordChunkList(tx, row) {
  const what = `record ${row.key.slice(0, 12)}…`;
  if (!Number.isSafeInteger(row.chunkCount) || !Number.isSafeInteger(row.chunkSize) ||
      row.chunkCount !== Math.ceil(row.length / row.chunkSize)) return `${what} has a malformed row`;
  const chunks = tx.objectStore(RECORD_CHUNKS);
  const got = await Promise.all(Array.from({ length: row.chunkCount }, (_, seq) => req(chunks.get([row.key, seq]))));
  const out = [];
  for (const [seq, chunk] of got.entries()) {
    const data = chunk && (chunk.data instanceof Uint8Array || chunk.data instanceof ArrayBuffer) ? toBytes(chunk.data) : null;
    if (!data) return `${what} lost its chunk ${seq} of ${row.chunkCount}`;
    const want = Math.min(row.chunkSize, row.length - seq * row.chunkSize);
    if (data.byteLength !== want) return `${what}: chunk ${seq} holds ${data.byteLength} bytes instead of ${want}`;
    out.push(data);
  }
  return out;
}

// True when the chunks of stored record `row` hold exactly the bytes of `pieces` (compared
// chunk by chunk as each arrives; nothing is assembled).
async function storedEquals(chunks, row, pieces) {
  if (!Number.isSafeInteger(row.chunkCount) || !Number.isSafeInteger(row.chunkSize) ||
      row.chunkCount !== Math.ceil(row.length / row.chunkSize)) return false;
  const got = await Promise.all(Array.from({ length: row.chunkCount }, (_, seq) => req(chunks.get([row.key, seq]))));
  return got.every((chunk, seq) => {
    const data = chunk && (chunk.data instanceof Uint8Array || chunk.data instanceof ArrayBuffer) ? toBytes(chunk.data) : null;
    const want = Math.min(row.chunkSize, row.length - seq * row.chunkSize);
    return !!data && data.byteLength === want && sameBytesAt(pieces, seq * row.chunkSize, data);
  });
}

// A schema-v1 checkpoint: its row and its bytes, or null if it is gone, converted or damaged
// (a damaged one stays as it is and get() reports it).
async function readV1(tx, name, known) {
  const row = known ?? await req(tx.objectStore(CHECKPOINTS).get(name));
  if (!row || row.v === 2 || !Number.isSafeInteger(row.size) || !Number.isSafeInteger(row.chunkCount) ||
      !row.meta || typeof row.meta !== 'object') return null;
  const chunks = await req(tx.objectStore(V1_CHUNKS).index('name').getAll(name));
  chunks.sort((a, b) => a.seq - b.seq);
  if (chunks.length !== row.chunkCount) return null;
  const bytes = new Uint8Array(row.size);
  let at = 0;
  for (const c of chunks) {
    const u8 = toBytes(c.data);
    if (at + u8.byteLength > row.size) return null;
    bytes.set(u8, at); at += u8.byteLength;
  }
  return at === row.size ? { row, bytes } : null;
}

function deleteV1Chunks(chunkStore, name) {
  const cur = chunkStore.index('name').openKeyCursor(name);
  cur.onsuccess = () => {
    const c = cur.result;
    if (c) { chunkStore.delete(c.primaryKey); c.continue(); }
  };
}

async function quotaError(name, needed, cause) {
  let free = null; let quota = null;
  try {
    const storage = globalThis.navigator && globalThis.navigator.storage;
    if (storage && typeof storage.estimate === 'function') {
      const est = await storage.estimate();
      if (Number.isFinite(est.quota) && Number.isFinite(est.usage)) {
        quota = est.quota; free = Math.max(0, est.quota - est.usage);
      }
    }
  } catch { /* the estimate is best effort */ }
  // The estimate is the browser's guess and can contradict the refusal (Chromium reports its
  // disk-wide figure even when the site's own limit is far lower): say so instead of
  // claiming gigabytes are free while the write just failed.
  const freeText = free == null ? 'free space unknown (navigator.storage.estimate() is not available)'
    : free >= needed
      ? `the browser estimates about ${fmtBytes(free)} free of a ${fmtBytes(quota)} quota, but refused ` +
        'the write: its real limit for this site is lower'
      : `the browser estimates about ${fmtBytes(free)} free of a ${fmtBytes(quota)} quota`;
  const what = name ? `checkpoint "${name}"` : 'checkpoint records';
  const err = new Error(`Not enough browser storage to save ${what}: it needs ${fmtBytes(needed)}, ` +
    `${freeText}. Delete old checkpoints (elastic-lite rm NAME, or Delete in the checkpoints panel) ` +
    'and try again, or save checkpoints to a folder on disk instead ("Save checkpoints to a folder…" in the ' +
    `checkpoints panel), which the browser's quota does not limit.${name ? ` The previous checkpoint "${name}", if any, is unchanged.` : ''}`);
  err.name = 'QuotaExceededError';
  err.code = 'quota';
  err.needed = needed;
  err.free = free;
  err.cause = cause;
  return err;
}
