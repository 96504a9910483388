// The rules Elastic Lite implements in JS and in Python, checked against the golden vectors of
// tests/vectors/*.json, which tests/py/test_golden_vectors.py checks the Python side against
// too: a change to one language's copy without the other turns one of the two red. No Python,
// no C core needed here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { recordKey, splitContainer, expiredByRetention, signedBytes, canonicalJson } from '../../js/store/indexeddb.mjs';
import { DEFAULT_NAME, bindingText, notFound, pointLabel, restoreChoice, shownText } from '../../js/shared/report.mjs';
import { EMPTY } from '../../js/cli/integrity.mjs';

const vectors = (name) => JSON.parse(fs.readFileSync(new URL(`../vectors/${name}`, import.meta.url), 'utf8'));
const fromHex = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
const toHex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('hex');

function pieceBytes(piece) {
  if ('hex' in piece) return fromHex(piece.hex);
  const out = new Uint8Array(piece.counter);
  for (let i = 0; i < out.length; i += 1) out[i] = (piece.start + i) % 251;
  return out;
}

test('record keys: SHA-256 over 4 MiB leaves, whole or in pieces', async () => {
  for (const c of vectors('record-keys.json').cases) {
    const pieces = c.pieces.map(pieceBytes);
    assert.equal(await recordKey(pieces), c.key, JSON.stringify(c.pieces));
    const whole = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
    pieces.reduce((at, p) => { whole.set(p, at); return at + p.byteLength; }, 0);
    assert.equal(await recordKey(whole), c.key);
  }
});

test('container splitting: cut at the index of a format-2 file, anything else one record', () => {
  for (const c of vectors('container-split.json').cases) {
    const data = fromHex(c.hex);
    const { head, records, tail } = splitContainer(data);
    assert.deepEqual([head.byteLength, records.map((r) => r.byteLength), tail.byteLength], [c.head, c.records, c.tail], c.why);
    assert.equal([head, ...records, tail].map(toHex).join(''), c.hex, `${c.why}: the pieces reassemble the file`);
  }
});

test('retention: what a policy removes', () => {
  for (const c of vectors('retention.json').cases) {
    const entries = c.entries.map((e) => ({ ...e, bytes: () => e.records }));
    assert.deepEqual(expiredByRetention(entries, c.keep, c.policy), c.expired, c.why);
  }
});

test('signed bytes and canonical JSON', () => {
  const { cases, canonical } = vectors('signed-bytes.json');
  for (const c of cases) {
    assert.equal(canonicalJson(c.meta), c.canonical, c.name);
    const entry = { head: fromHex(c.head), records: c.records, tail: fromHex(c.tail) };
    assert.equal(toHex(signedBytes(c.name, entry, c.meta)), c.signed, c.name);
  }
  for (const c of canonical) assert.equal(canonicalJson(c.value), c.text, JSON.stringify(c.value));
});

test('restore choice: the kernel\'s own points (by name) and empty ones passed over', () => {
  for (const c of vectors('restore-choice.json').cases) assert.equal(restoreChoice(c.entries, c.own)?.name ?? null, c.choice, c.why);
});

test('point labels', () => {
  for (const c of vectors('point-labels.json').cases) assert.equal(pointLabel(c.meta), c.label, JSON.stringify(c.meta));
});

test('text from a file, shown escaped', () => {
  for (const c of vectors('escape-text.json').vectors) assert.equal(shownText(c.input), c.shown, JSON.stringify(c.input));
});

test('a manifest module binding, shown as what it binds', () => {
  for (const c of vectors('binding-text.json').vectors) assert.equal(bindingText(c.binding), c.shown, JSON.stringify(c.binding));
});

test('host words: the default checkpoint name, a name the store does not hold (quoted as JSON)', () => {
  const words = vectors('host-words.json');
  assert.equal(DEFAULT_NAME, words.default_name);
  assert.equal(EMPTY, words.empty, 'verify says of 0 bytes what inspect says');
  for (const c of words.not_found) assert.deepEqual(notFound(c.name), { kind: 'failed', names: [], record: null, message: c.message, code: 'not-found', calls: [], offset: null });
});
