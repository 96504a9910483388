// The behaviour every store must share (docs/INTERFACES.md, "Stores"). Each store's test file
// calls storeContract() with a factory that makes a fresh, empty store.
import { test } from 'node:test';
import assert from 'node:assert/strict';

/** Deterministic bytes of a given size, different per seed. */
export function payload(size, seed = 1) {
  const out = new Uint8Array(size);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < size; i += 1) { x = (x * 1103515245 + 12345) >>> 0; out[i] = x >>> 24; }
  return out;
}

export function storeContract(label, makeStore) {
  test(`${label}: round trip keeps bytes and metadata`, async () => {
    const store = await makeStore();
    const bytes = payload(10_000, 7);
    await store.put('first', bytes, { notebook: 'a.ipynb', createdMs: 1000, variables: 2, names: ['x', 'y'], skipped: [] });
    const got = await store.get('first');
    assert.deepEqual(got.bytes, bytes);
    assert.equal(got.meta.notebook, 'a.ipynb');
    assert.equal(got.meta.createdMs, 1000);
    assert.equal(got.meta.size, 10_000);
    assert.deepEqual(got.meta.names, ['x', 'y']);
    assert.equal(await store.get('missing'), null);
    await store.close();
  });

  test(`${label}: empty payload and odd names round trip`, async () => {
    const store = await makeStore();
    await store.put('empty', new Uint8Array(0), {});
    assert.equal((await store.get('empty')).bytes.byteLength, 0);
    const odd = '../ëtc/passwd %2F .hidden';
    await store.put(odd, payload(5, 3), {});
    assert.deepEqual((await store.get(odd)).bytes, payload(5, 3));
    assert.ok((await store.list()).some((e) => e.name === odd));
    await store.close();
  });

  test(`${label}: put copies the caller's bytes`, async () => {
    const store = await makeStore();
    const bytes = payload(100, 1);
    await store.put('c', bytes, {});
    bytes[0] ^= 0xff;
    assert.deepEqual((await store.get('c')).bytes, payload(100, 1));
    await store.close();
  });

  test(`${label}: overwrite replaces bytes and metadata`, async () => {
    const store = await makeStore();
    await store.put('n', payload(9000, 1), { notebook: 'a', createdMs: 1 });
    await store.put('n', payload(300, 2), { notebook: 'b', createdMs: 2 });
    const got = await store.get('n');
    assert.deepEqual(got.bytes, payload(300, 2));
    assert.equal(got.meta.notebook, 'b');
    assert.equal((await store.list()).length, 1);
    await store.close();
  });

  test(`${label}: list is newest first and filters by notebook`, async () => {
    const store = await makeStore();
    await store.put('old', payload(10, 1), { notebook: 'a', createdMs: 100 });
    await store.put('new', payload(10, 2), { notebook: 'a', createdMs: 300 });
    await store.put('mid', payload(10, 3), { notebook: 'b', createdMs: 200 });
    await store.put('none', payload(10, 4), { createdMs: 50 });
    assert.deepEqual((await store.list()).map((e) => e.name), ['new', 'mid', 'old', 'none']);
    assert.deepEqual((await store.list({ notebook: 'a' })).map((e) => e.name), ['new', 'old']);
    assert.deepEqual((await store.list({ notebook: 'zzz' })), []);
    const [first] = await store.list();
    assert.equal(first.meta.size, 10);
    assert.equal(first.meta.createdMs, 300);
    await store.close();
  });

  test(`${label}: delete says whether the checkpoint existed`, async () => {
    const store = await makeStore();
    await store.put('d', payload(50, 1), {});
    assert.equal(await store.delete('d'), true);
    assert.equal(await store.get('d'), null);
    assert.equal(await store.delete('d'), false);
    assert.deepEqual(await store.list(), []);
    await store.close();
  });

  test(`${label}: retention keeps the last N per notebook`, async () => {
    const store = await makeStore({ keepLast: 2 });
    for (let i = 1; i <= 4; i += 1) await store.put(`a${i}`, payload(10, i), { notebook: 'a', createdMs: i });
    await store.put('b1', payload(10, 9), { notebook: 'b', createdMs: 0 });
    await store.put('manual', payload(10, 9), { createdMs: -1 }); // no notebook: never expired
    await store.put('manual2', payload(10, 9), { createdMs: -2 });
    await store.put('manual3', payload(10, 9), { createdMs: -3 });
    assert.deepEqual((await store.list()).map((e) => e.name), ['a4', 'a3', 'b1', 'manual', 'manual2', 'manual3']);
    assert.equal(await store.get('a1'), null);
    // Overwriting an existing name counts once, not twice.
    await store.put('a3', payload(10, 5), { notebook: 'a', createdMs: 10 });
    assert.deepEqual((await store.list({ notebook: 'a' })).map((e) => e.name), ['a3', 'a4']);
    await store.close();
  });

  test(`${label}: invalid names get a clear error`, async () => {
    const store = await makeStore();
    for (const bad of ['', 'a\u0000b', 'line\nbreak', 'x'.repeat(201), 42, null]) {
      await assert.rejects(store.put(bad, payload(1), {}), /Invalid checkpoint name/);
      await assert.rejects(store.get(bad), /Invalid checkpoint name/);
    }
    await store.close();
  });
}
