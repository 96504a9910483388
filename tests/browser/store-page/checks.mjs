// Page-side helpers of tests/browser/store-*.test.mjs: bytes to store, a file with the layout
// of checkpoint format 2, and the checks that must hold in the real IndexedDB after a failure.

/** Deterministic bytes (the same generator as tests/node/store-contract.mjs). */
export function payload(size, seed = 1) {
  const out = new Uint8Array(size);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < size; i += 1) { x = (x * 1103515245 + 12345) >>> 0; out[i] = x >>> 24; }
  return out;
}

/** Incompressible bytes (IndexedDB compresses values: only these really fill a quota). */
export function noise(size) {
  const out = new Uint8Array(size);
  for (let at = 0; at < size; at += 65536) crypto.getRandomValues(out.subarray(at, Math.min(size, at + 65536)));
  return out;
}

/** A file with the layout of format 2 around `records` (what the stores cut by; no CRCs). */
export function formatTwo(records, seed = 0) {
  const pad = (n) => Math.ceil(n / 64) * 64;
  const bodies = records.map((r) => { const b = new Uint8Array(pad(r.byteLength)); b.set(r); return b; });
  let at = 64;
  const starts = bodies.map((b) => { const s = at; at += b.byteLength; return s; });
  const size = at + 8 + 16 * bodies.length + 4 + 32;
  const out = new Uint8Array(size);
  out.set([0x89, 0x45, 0x4c, 0x43, 0x4b, 0x50, 0x54, 0x0a, 2, 0, 0, 0]);
  out[40] = seed;
  bodies.forEach((b, i) => out.set(b, starts[i]));
  const dv = new DataView(out.buffer);
  out.set([0x45, 0x4c, 0x49, 0x58], at);
  dv.setUint32(at + 4, bodies.length, true);
  bodies.forEach((b, i) => {
    dv.setBigUint64(at + 8 + 16 * i, BigInt(starts[i]), true);
    dv.setBigUint64(at + 16 + 16 * i, BigInt(b.byteLength), true);
  });
  const f = size - 32;
  out.set([0x45, 0x4c, 0x46, 0x54], f);
  dv.setUint32(f + 4, bodies.length, true);
  dv.setBigUint64(f + 8, BigInt(at), true);
  dv.setBigUint64(f + 16, BigInt(size), true);
  dv.setUint16(f + 24, 2, true);
  return out;
}

export function sameBytes(a, b) {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The record rows no body names (schema v3: what the sweep may free once unpinned). */
export function unusedRows(d) {
  const named = new Set(d.bodies.flatMap((b) => b.records.map((r) => r.key)));
  return d.records.filter((r) => !named.has(r.key));
}

/** Every row of every object store of database `dbName`, read behind the store's back. */
export async function rawDump(dbName) {
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open(dbName);
    r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error);
  });
  try {
    const names = [...db.objectStoreNames];
    const tx = db.transaction(names);
    const out = {};
    await Promise.all(names.map((n) => new Promise((resolve) => {
      const r = tx.objectStore(n).getAll();
      r.onsuccess = () => { out[n] = r.result; resolve(); };
    })));
    return out;
  } finally { db.close(); }
}

/**
 * Problems (strings) with what a store holds: a listed checkpoint that does not read back as
 * one of `versions[name]`, a body not listing its record keys, a record used but not stored or
 * unused but not pinned (schema v3), missing a chunk, or a chunk without its record. [] when all
 * is well.
 */
export async function problems(store, versions) {
  const out = [];
  for (const { name } of await store.list()) {
    try {
      const got = await store.get(name);
      if (!(versions[name] ?? []).some((v) => sameBytes(v, got.bytes))) out.push(`"${name}" holds bytes of none of its versions`);
    } catch (err) { out.push(`"${name}" cannot be read: ${err.message}`); }
  }
  const d = await rawDump(store.dbName);
  const named = new Set();
  for (const row of d.checkpoints) {
    if (row.v !== 2) continue;
    const body = d.bodies.find((b) => b.name === row.name);
    if (!body) { out.push(`"${row.name}" has no body`); continue; }
    const keys = [...new Set(body.records.map((r) => r.key))];
    if (!Array.isArray(body.keys) || [...body.keys].sort().join() !== keys.sort().join()) out.push(`the body of "${row.name}" does not list its record keys`);
    for (const k of keys) named.add(k);
  }
  const rows = new Map(d.records.map((r) => [r.key, r]));
  const pins = d.settings.find((s) => s.id === 'pins')?.keys ?? {};
  for (const k of named) if (!rows.has(k)) out.push(`record ${k.slice(0, 8)} is used but not stored`);
  for (const r of d.records) {
    if (r.refs !== undefined) out.push(`record ${r.key.slice(0, 8)} keeps a count (schema v2)`);
    if (!named.has(r.key) && !(r.pinnedMs > 0) && !(r.key in pins)) out.push(`record ${r.key.slice(0, 8)} is unused and not pinned: no sweep would free it`);
    const seqs = d.recordChunks.filter((c) => c.key === r.key).map((c) => c.seq).sort((a, b) => a - b);
    if (seqs.join() !== [...Array(r.chunkCount).keys()].join()) out.push(`record ${r.key.slice(0, 8)} lacks chunks`);
  }
  if (d.recordChunks.some((c) => !rows.has(c.key))) out.push('a chunk without its record');
  return out;
}
