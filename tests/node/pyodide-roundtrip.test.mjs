// A notebook session in one Pyodide interpreter, checkpointed to bytes, restored in NEW
// interpreters: every builtin kind, aliasing, notebook functions/classes (one object after
// restore, live globals), dataclasses, enums, partial, regexes, module bindings; the dill path
// for real (cloudpickle fails part-way, the sink rewinds, dill writes the group); generator and
// frame skipped with reasons; a corrupted record reported by name while the others restore.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPyodide, py, pyBytes, pyJson } from './helpers/pyodide.mjs';

const NOTEBOOK = String.raw`
import dataclasses, enum, functools, re, sys, threading
import json as jsn
from math import sqrt
from os.path import join as pjoin
import js as jsmod  # a JsProxy in sys.modules, not a ModuleType: still a module binding

i = 42; big = 2 ** 100; fl = 3.5; cx = 1 + 2j; s = "héllo"; bt = b"\x00\x01"
ba = bytearray(b"ab"); lst = [1, [2, 3]]; tup = (1, (2,)); dct = {"a": 1, "n": {"b": [1]}}
st = {1, 2}; fs = frozenset({3}); nothing = None
rec = []; rec.append(rec)
x = [1, 2]; y = {"k": x}; z = x; pair = (x, x)

scale = 10
def f(a):
    return a * scale
lam = lambda v: v + 1
def make_counter():
    n = 0
    def bump():
        nonlocal n
        n += 1
        return n
    return bump
counter = make_counter(); counter(); counter()

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm2(self):
        return self.x ** 2 + self.y ** 2
class Point3(Point):
    def __init__(self, x, y, z):
        super().__init__(x, y); self.z = z
p1 = Point(1, 2); p2 = Point(3, 4); p3 = Point3(1, 1, 1)
holder = {"f": f, "cls": Point, "lam": lam}

@dataclasses.dataclass
class DC:
    a: int
    b: list = dataclasses.field(default_factory=list)
dc = DC(1, [2])
class Color(enum.Enum):
    RED = 1
    BLUE = 2
col = Color.BLUE
part = functools.partial(f, 3)
rx = re.compile(r"(\d+)-(\w+)", re.I)
victim = list(range(1000))
def annotated(p: Point, n: int = 1) -> Point:
    return p
def later_ref(q: NotDefinedYet) -> None:  # 3.14: annotations are lazy, this one fails
    return q

@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(30)
memo = {"fib": fib}

bad = {"blob": b"x" * 300000, "fn": lambda q: q * 2, "lock": threading.Lock()}
sync = {"rlock": threading.RLock(), "cond": threading.Condition()}  # dill: RLock inside
gen = (k for k in range(3))
fr = sys._getframe()
`;

const CHECKS = String.raw`
assert (i, big, fl, cx, s, bt) == (42, 2 ** 100, 3.5, 1 + 2j, "héllo", b"\x00\x01")
assert ba == bytearray(b"ab") and type(ba) is bytearray
assert lst == [1, [2, 3]] and tup == (1, (2,)) and dct == {"a": 1, "n": {"b": [1]}}
assert st == {1, 2} and fs == frozenset({3}) and nothing is None
assert rec[0] is rec
assert y["k"] is x and z is x and pair[0] is x and pair[1] is x
x.append(3); assert y["k"] == [1, 2, 3]

assert f(2) == 20
scale = 100
assert f(2) == 200, "restored functions must see the live namespace"
assert f.__globals__ is globals()
assert lam(1) == 2 and counter() == 3 and counter() == 4

assert isinstance(p1, Point) and isinstance(p2, Point) and isinstance(p3, Point)
assert isinstance(p3, Point3) and p2.norm2() == 25 and p3.z == 1
assert holder["f"] is f and holder["cls"] is Point and holder["lam"] is lam
assert type(p1) is Point and Point3.__mro__[1] is Point

assert dc == DC(1, [2]) and isinstance(dc, DC) and DC(2).b == []
assert col is Color.BLUE and Color(1) is Color.RED
assert part() == 300 and part.func is f
assert rx.match("12-ab").groups() == ("12", "ab") and rx.flags & re.I
assert len(victim) == 1000
assert fib(40) == 102334155 and memo["fib"] is fib and fib.__wrapped__.__globals__ is globals()
assert annotated.__annotations__ == {"p": Point, "n": int, "return": Point}
assert annotated(p1) is p1 and later_ref(5) == 5

assert bad["blob"] == b"x" * 300000 and bad["fn"](4) == 8
assert bad["lock"].acquire() and not bad["lock"].acquire(blocking=False)
bad["lock"].release()
# dill alone restores a free RLock as owned by a dead thread: this acquire would never return.
assert sync["rlock"].acquire(blocking=False) and sync["cond"].acquire(blocking=False)

assert jsn.loads("[1]") == [1] and sqrt(16) == 4 and pjoin("a", "b") == "a/b"
import re as _re_check, dataclasses as _dc_check
assert re is _re_check and dataclasses is _dc_check
assert "gen" not in globals() and "fr" not in globals()
import js as _js_check
assert jsmod is _js_check
`;

test('checkpoint in one interpreter, restore in fresh ones', async (t) => {
  const A = await freshPyodide();
  await py(A, NOTEBOOK);
  const data = await pyBytes(A, String.raw`
import elastic_lite as _el
_before = {k: id(v) for k, v in globals().items()}
_snap = _el.snapshot()
_after = {k: id(v) for k, v in globals().items() if k not in ("_before", "_snap")}
assert _after == {k: v for k, v in _before.items() if k != "_before"}, "snapshot changed the namespace"
_snap.data
`);
  const snap = await pyJson(A, '_snap.to_dict()');
  const info = await pyJson(A, '_el.load.loader.inspect(_snap.data)');
  const table = await py(A, '_snap.table()');
  A.out.push(table);

  await t.test('report: the dill path really rewound a partial cloudpickle stream', () => {
    const badGroup = snap.groups.find((g) => g.names.includes('bad'));
    assert.equal(badGroup.serializer, 'dill');
    assert.match(badGroup.fallback, /cloudpickle: .*lock/);
    // cloudpickle flushes 64 KiB frames to the sink: the 300 kB blob was written, then rewound.
    assert.ok(badGroup.rewound_bytes > 65536, `rewound only ${badGroup.rewound_bytes} bytes`);
    assert.equal(badGroup.names.length, 1, 'the failing variable stays in a small group');
    const syncGroup = snap.groups.find((g) => g.names.includes('sync'));
    assert.equal(syncGroup.serializer, 'dill');
    // the others: cloudpickle, or the plain pickler for plain data (one record: the pool)
    for (const g of snap.groups.filter((g) => g !== badGroup && g !== syncGroup)) {
      assert.ok(['cloudpickle', 'pickle'].includes(g.serializer), `${g.names.join()}: ${g.serializer}`);
      assert.equal(g.fallback, null, g.names.join());
    }
    assert.ok(snap.groups.some((g) => g.serializer === 'pickle' && g.names.includes('victim') && g.names.length >= 8),
      'the small plain-data groups share one record');
  });

  await t.test('container: validates, one record per group plus the manifest, no leftovers', () => {
    assert.equal(info.ok, true, JSON.stringify(info.error));
    assert.equal(info.records.length, snap.groups.length + 1);
    assert.deepEqual(info.records.at(-1).names, ['__elastic_lite_manifest__']);
    const rec = info.records.find((r) => r.names.includes('bad'));
    const group = snap.groups.find((g) => g.names.includes('bad'));
    assert.equal(rec.serializer, 'dill');
    assert.equal(rec.length, group.bytes, 'the record holds exactly the dill stream');
    assert.equal(data.length, info.size);
    for (const r of info.records) assert.equal(r.ok, true, `${r.names}: ${JSON.stringify(r.error)}`);
    const total = info.records.reduce((n, r) => n + r.length, 0);
    const written = snap.groups.reduce((n, g) => n + g.bytes, 0);
    assert.equal(total - info.records.at(-1).length, written, 'payload bytes = what the report says was kept');
  });

  await t.test('skipped: generator and frame with reasons, nothing else', () => {
    const skipped = Object.fromEntries(snap.skipped.map((s) => [s.name, s]));
    assert.deepEqual(Object.keys(skipped).sort(), ['fr', 'gen']);
    assert.equal(skipped.gen.type, 'generator');
    assert.match(skipped.gen.reason, /generator/);
    assert.equal(skipped.fr.type, 'frame');
    assert.match(skipped.fr.reason, /frame/);
    assert.match(table, /gen\s+generator\s+TypeError/);
  });

  await t.test('module bindings are recorded, not pickled', () => {
    const mods = Object.fromEntries(snap.modules.map((m) => [m.name, m]));
    assert.deepEqual(mods.jsn, { name: 'jsn', module: 'json', attr: null });
    assert.deepEqual(mods.sqrt, { name: 'sqrt', module: 'math', attr: 'sqrt' });
    assert.equal(mods.pjoin.attr, 'join');
    assert.deepEqual(mods.jsmod, { name: 'jsmod', module: 'js', attr: null });
    assert.ok(!snap.groups.some((g) => g.names.includes('jsn')));
  });

  await t.test('restore in a new interpreter: equal, identical where identity matters', async () => {
    const B = await freshPyodide();
    B.globals.set('_data', data);
    const rep = await pyJson(B, `(__import__("elastic_lite").load_snapshot(_data.to_py(), trust=True)).to_dict()`);
    assert.deepEqual(rep.failed, []);
    assert.ok(rep.modules.every((m) => m.ok), JSON.stringify(rep.modules));
    assert.deepEqual(rep.skipped.map((s) => s.name).sort(), ['fr', 'gen']);
    await py(B, CHECKS);
  });

  await t.test('a corrupted record is reported by name, the others restore', async () => {
    // victim's record is the pool of small plain data: all of its names fail together
    const rec = info.records.find((r) => r.names.includes('victim'));
    const bad = data.slice();
    bad[rec.payload_offset + Math.floor(rec.length / 2)] ^= 0x5a;
    const C = await freshPyodide();
    C.globals.set('_data', bad);
    // The JS Uint8Array itself (a JsProxy) is accepted too. Bytes another interpreter made
    // are foreign: the person says they are theirs (trust=True); damage still stays damage.
    const rep = await pyJson(C, `__import__("elastic_lite").load_snapshot(_data, trust=True).to_dict()`);
    assert.deepEqual(rep.failed.map((f) => f.names), [rec.names]);
    assert.equal(rep.failed[0].kind, 'damaged');
    assert.match(rep.failed[0].reason, /checksum mismatch/); // the core's words
    const expected = snap.groups.flatMap((g) => g.names).filter((n) => !rec.names.includes(n));
    assert.deepEqual(rep.restored.sort(), expected.sort());
    assert.ok(expected.length > 3, 'records of their own restore');
    assert.deepEqual(await pyJson(C, `[n for n in ${JSON.stringify(rec.names)} if n in globals()]`), []);
  });
});
