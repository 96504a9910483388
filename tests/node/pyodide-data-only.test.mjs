// Data-only restores in a real Pyodide (issue 19, findings 3, 4 and 8): a foreign file whose
// manifest binds json -> pickle, np -> os and re -> subprocess binds none of them (and a
// module under its own name or a well-known alias still binds); the exact stream that made
// numpy build an object array over bytes the file chose (a SIGSEGV in host CPython) is refused
// before numpy is called; a tiny file asking for deque(range(2**62), 0) is refused at once.
// numpy has no Pyodide wheel here: a stand-in `numpy` module records whether its ndarray was
// ever asked for an object array over a buffer, which is the call that crashed.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const CORPUS = fileURLToPath(new URL('../py/hostile_corpus.py', import.meta.url));

let pyodide;

before(async () => {
  pyodide = await freshPyodide();
  pyodide.FS.writeFile('/home/pyodide/hostile_corpus.py', await fs.readFile(CORPUS, 'utf8'));
  await py(pyodide, String.raw`
import builtins, sys, types
np = types.ModuleType("numpy")
class dtype:
    def __init__(self, spec, align=False, copy=False):
        self.char = spec.char if isinstance(spec, dtype) else str(spec)[:1]
        self.kind = self.char
        self.hasobject = self.char == "O"
        self.subdtype = None
        self.fields = None
        self.itemsize = 8
class ndarray:
    def __init__(self, shape, dtype=None, buffer=None, offset=0, strides=None, order=None):
        if buffer is not None and getattr(dtype, "hasobject", False):
            builtins._el_pointer_array = True  # where real numpy made pointers of the bytes
        self.shape = shape
for cls in (dtype, ndarray):
    cls.__module__ = "numpy"
np.dtype, np.ndarray = dtype, ndarray
sys.modules["numpy"] = np

import json as _json, elastic_lite as el, hostile_corpus as corpus
def data_only(data):
    builtins._el_pointer_array = False
    ns = {"__name__": "__main__"}
    rep = el.load_snapshot(data, ns, data_only=True, foreign=True)
    return _json.dumps({"restored": rep.restored, "codes": [f["code"] for f in rep.failed],
                        "messages": [f["message"] for f in rep.failed],
                        "modules": rep.modules, "bound": sorted(k for k in ns if k != "__builtins__"),
                        "pointer_array": builtins._el_pointer_array, "table": rep.table()})
`);
});

async function dataOnly(expr) {
  return JSON.parse(await py(pyodide, `data_only(${expr})`));
}

test('data-only binds no module under another name, and says what it refused', async () => {
  const r = await dataOnly(`corpus.container([(["x"], corpus.record(b"K\\x01", 4))], [
    {"name": "json", "module": "pickle", "attr": None},
    {"name": "np", "module": "os", "attr": None},
    {"name": "re", "module": "subprocess", "attr": None},
    {"name": "collections", "module": "collections", "attr": None},
    {"name": "pd", "module": "pandas", "attr": None}])`);
  assert.deepEqual(r.restored, ['kept', 'x']);
  assert.ok(!r.bound.includes('json') && !r.bound.includes('np') && !r.bound.includes('re'), r.bound.join());
  assert.ok(r.bound.includes("collections"), 'a module under its own name binds');
  const refused = Object.fromEntries(r.modules.map((m) => [m.name, m]));
  for (const [name, module] of [['json', 'pickle'], ['np', 'os'], ['re', 'subprocess']]) {
    assert.equal(refused[name].ok, false);
    assert.match(refused[name].error, new RegExp(`it would bind ${name} to ${module} .*not the name of ${module}`));
  }
  // pd -> pandas is a well-known alias: not refused as a name (pandas is simply not installed)
  assert.doesNotMatch(refused.pd.error ?? '', /not the name/);
  assert.match(r.table, /imports: collections/);
});

test('the stream that built an object array over file bytes is refused before numpy runs', async () => {
  const r = await dataOnly(String.raw`corpus.container([(["arr"],
    b"\x80\x04cnumpy\nndarray\n((J\x01\x00\x00\x00tcnumpy\ndtype\nX\x01\x00\x00\x00O\x85R"
    b"cbuiltins\nbytearray\nC\x08AAAAAAAA\x85RtR\x85.")])`);
  assert.equal(r.pointer_array, false, 'the stand-in ndarray was asked for pointers');
  assert.deepEqual(r.restored, ['kept']);
  assert.deepEqual(r.codes, ['not-data']);
  assert.match(r.messages[0], /numpy\.ndarray: an array of dtype .* over bytes of the file: its values would be pointers/);
  // the same stand-in array over plain bytes loads (the check is the dtype, not the class)
  const ok = await dataOnly(String.raw`corpus.container([(["arr"],
    b"\x80\x04cnumpy\nndarray\n((J\x01\x00\x00\x00tcnumpy\ndtype\nX\x01\x00\x00\x00f\x85R"
    b"cbuiltins\nbytearray\nC\x08AAAAAAAA\x85RtR\x85.")])`);
  assert.deepEqual(ok.restored, ['kept', 'arr']);
});

test('a tiny file asking for deque(range(2**62), 0) is refused at once', async () => {
  const r = await dataOnly(String.raw`corpus.container([(["d"],
    corpus.record(corpus.call(corpus.global_("collections", "deque"),
      corpus.call(corpus.global_("builtins", "range"), b"\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40"),
      b"K\x00"), 2))])`);
  assert.deepEqual(r.restored, ['kept']);
  assert.deepEqual(r.codes, ['not-data']);
  assert.match(r.messages[0], /collections\.deque of about 4611686018427387904 items/);
});
