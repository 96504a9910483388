// Real-runtime counterpart of tests/py/test_numpy.py and test_slots.py: numpy has no Pyodide
// wheel here, so a pure-Python stand-in does what numpy does at protocol 5 (its
// __reduce_ex__(5) hands pickle PickleBuffers over large buffers), and notebook classes with
// __slots__ / namedtuples are checkpointed in one Pyodide and restored in a NEW one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyBytes, pyJson } from './helpers/pyodide.mjs';

const FIXTURE_1_0 = fileURLToPath(new URL('../../wasm/tests/fixtures/format-1.0/pyodide-3.14.elc', import.meta.url));

const NOTEBOOK = String.raw`
import collections, dataclasses, pickle, typing, zlib
from typing import *

def _tensor_from(buf, shape):
    t = Tensor.__new__(Tensor)
    # in the stream: a bytearray; out of band: the restored container's writable memory
    t.data = buf if isinstance(buf, bytearray) else memoryview(buf).cast("B")
    t.shape = shape
    return t

class Tensor:
    """Like a numpy array at protocol 5: the payload travels as a PickleBuffer."""
    def __init__(self, nbytes, seed):
        self.data = bytearray((i * seed) & 0xFF for i in range(nbytes))
        self.shape = (nbytes,)
    def __reduce_ex__(self, protocol):
        if protocol >= 5:
            return (_tensor_from, (pickle.PickleBuffer(self.data), self.shape))
        return (_tensor_from, (bytes(self.data), self.shape))
    def crc(self):
        return zlib.crc32(self.data)
    def writable(self):
        return not memoryview(self.data).readonly

big = Tensor(3 * 1024 * 1024 + 17, 7)
mid = Tensor(100_000, 3)
tiny = Tensor(10, 5)
tensors = {"big": big, "again": big}

class P:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x, self.y = x, y
class Secret:
    __slots__ = ("__key",)
    def __init__(self):
        self.__key = 42
    def key(self):
        return self.__key
Stmt = collections.namedtuple("Stmt", "kind text")
class Typed(typing.NamedTuple):
    x: int
    y: str = "d"
@dataclasses.dataclass(slots=True)
class Cell:
    n: int
p = P(1, 2); s = Secret(); stmts = [Stmt("assign", "x = 1")]; t = Typed(3); cell = Cell(4)

def layout(cls):
    return [cls.__dictoffset__, cls.__weakrefoffset__, cls.__basicsize__]
def layouts():
    return {c.__name__: layout(c) for c in (P, Secret, Stmt, Typed, Cell)}
`;

test('PickleBuffer payloads and slotted classes: checkpoint in one Pyodide, restore in a new one', async (t) => {
  const A = await freshPyodide();
  await py(A, NOTEBOOK);
  const data = await pyBytes(A, 'import elastic_lite as _el\n_snap = _el.snapshot()\n_snap.data');
  const snap = await pyJson(A, '_snap.to_dict()');
  const before = await pyJson(A, '{"crc": [big.crc(), mid.crc(), tiny.crc()], "layouts": layouts()}');

  await t.test('the PickleBuffer groups are cloudpickle, not dill, and hold the bytes', async () => {
    const info = await pyJson(A, '_el.load.loader.inspect(_snap.data)');
    const rec = (name) => info.records.find((r) => r.names.includes(name));
    assert.deepEqual(rec('big').buffers.map((b) => b.length), [3 * 1024 * 1024 + 17], 'out of band');
    assert.deepEqual(rec('mid').buffers.map((b) => b.length), [100000]);
    assert.deepEqual(rec('tiny').buffers, [], 'a small buffer stays in the stream');
    assert.ok(info.records.every((r) => r.buffers.every((b) => b.offset % 64 === 0)));
    assert.equal(info.records.at(-1).kind, 'manifest');
    const group = snap.groups.find((g) => g.names.includes('big'));
    assert.deepEqual(group.names.sort(), ['big', 'tensors']);
    assert.equal(group.serializer, 'cloudpickle', 'a notebook class: cloudpickle');
    for (const g of snap.groups) { // the others: cloudpickle, or the plain pickler (no reducer needed)
      assert.ok(['cloudpickle', 'pickle'].includes(g.serializer), `${g.names}: ${g.serializer} ${g.fallback}`);
      assert.equal(g.fallback, null, `${g.names}`);
    }
    assert.ok(group.bytes > 3 * 1024 * 1024, `only ${group.bytes} bytes`);
  });

  await t.test('from typing import * is re-imported by name, not saved', () => {
    const mods = Object.fromEntries(snap.modules.map((m) => [m.name, m]));
    assert.deepEqual(mods.List, { name: 'List', module: 'typing', attr: 'List' });
    assert.deepEqual(mods.Optional, { name: 'Optional', module: 'typing', attr: 'Optional' });
    const saved = snap.groups.flatMap((g) => g.names);
    assert.ok(!saved.includes('List') && !saved.includes('Any'), saved.join());
  });

  await t.test('a new interpreter restores the bytes, the aliasing and the slots', async () => {
    const B = await freshPyodide();
    B.globals.set('_data', data);
    const rep = await pyJson(B, '__import__("elastic_lite").load_snapshot(_data.to_py(), trust=True).to_dict()');
    assert.deepEqual(rep.failed, []);
    assert.deepEqual(rep.warnings, []);
    const after = await pyJson(B, '{"crc": [big.crc(), mid.crc(), tiny.crc()], "layouts": layouts()}');
    assert.deepEqual(after, before);
    await py(B, String.raw`
assert tensors["big"] is big and tensors["again"] is big and len(big.data) == 3 * 1024 * 1024 + 17
assert big.writable() and mid.writable() and type(big.data) is memoryview and type(tiny.data) is bytearray
big.data[0] = 255
assert tensors["again"].data[0] == 255
for obj in (p, s, stmts[0], t, cell):
    assert not hasattr(obj, "__dict__"), type(obj).__name__
try:
    p.z = 1
except AttributeError:
    pass
else:
    raise AssertionError("a slotted instance took a new attribute")
assert (p.x, p.y, s.key(), stmts[0].text, t.y, cell.n) == (1, 2, 42, "x = 1", "d", 4)
assert List[int] == typing.List[int] and Optional is typing.Optional
`);
  });
});

test('a format 1.0 checkpoint (written before 2.0 existed) restores in a fresh Pyodide', async () => {
  const B = await freshPyodide();
  B.globals.set('_data', new Uint8Array(readFileSync(FIXTURE_1_0)));
  const rep = await pyJson(B, '__import__("elastic_lite").load_snapshot(_data.to_py(), trust=True).to_dict()');
  assert.equal(rep.ok, true, JSON.stringify(rep.failed));
  assert.deepEqual(rep.skipped.map((s) => s.name), ['gen']);
  await py(B, String.raw`
assert triple(2) == 6 and p.norm2() == 25 and isinstance(p, Point)
assert alias["list"] is shared and shared == [1, 2, 3] and lock.acquire(False)
scale = 10
assert triple(2) == 20
`);
});
