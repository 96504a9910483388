// Strings above 2 GiB of the Pyodide heap, crossing from Python to JS. Pyodide 314 hands an
// ASCII str of 64 characters or more to JS by decoding the heap at the str's address taken as
// a SIGNED 32-bit number: above 2 GiB it arrives as other characters (NULs), as an argument,
// inside a dict given to to_js, or as a return value (shorter or non-ASCII strs, and strings
// from JS into Python, cross whole). Names, record keys, metadata and options for the JS store,
// the host's report for JS hosts and its progress events, all cross through _jsbytes.call /
// bytes instead. Cheap: the heap is pushed past 2 GiB by one malloc whose pages are never
// touched (about 200 MiB resident), and the strs are made until one lies above the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../../js/store/memory.mjs';
import { callHost } from '../../js/shared/host.mjs';
import { freshPyodide, py, pyJson } from './helpers/pyodide.mjs';

const HIGH = String.raw`
import ctypes, json
_libc = ctypes.CDLL(None)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
_filler = _libc.malloc(2200 << 20)  # the heap past 2 GiB; its pages are never written
assert _filler, "could not grow the heap past 2 GiB"

def high(make):
    """A str from make(i) that lies above 2 GiB (CPython's id is the address)."""
    held = []  # kept until one lands high, so that each try is a new allocation
    for i in range(1 << 20):
        s = make(i)
        if id(s) >= 1 << 31:
            return s
        held.append(s)
    raise AssertionError("no str landed above 2 GiB")

def high_copy(s):
    return high(lambda i: s[:1] + s[1:])
`;

// Every string a JS store method receives, anywhere in its arguments.
function recording(base) {
  const seen = [];
  const walk = (v) => {
    if (typeof v === 'string') seen.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer)) Object.values(v).forEach(walk);
  };
  const extra = {
    // what the streamed restore calls (js/store/indexeddb.mjs has it; MemoryStore does not)
    async readRecordInto(key, targets) {
      const [rec] = await base.readRecords([key]);
      for (const t of targets) {
        const view = t.view.view();
        view.set(rec.subarray(t.at, t.at + view.length));
      }
      return true;
    },
  };
  const store = new Proxy(base, {
    get(target, k) {
      const v = k in extra ? extra[k] : target[k];
      return typeof v === 'function' ? (...args) => { args.forEach(walk); return v.apply(target, args); } : v;
    },
  });
  return { seen, store };
}

const noNul = (strings) => strings.filter((s) => s.includes('\0'));

test('strs above 2 GiB of the Pyodide heap reach JS whole', async (t) => {
  const pyodide = await freshPyodide();
  await py(pyodide, HIGH);

  await t.test("Pyodide's own conversion garbles such a str (why the crossings below exist)", async () => {
    const echo = await pyJson(pyodide, `(lambda s: [id(s) >= 1 << 31, __import__("pyodide").code.run_js("(s) => s")(s) == s])(high(lambda i: "a" * 80 + str(i)))`);
    assert.deepEqual(echo, [true, false],
      'a 80-character ASCII str above 2 GiB crossed whole: Pyodide may have fixed it; _jsbytes.call may then be dropped');
  });

  await t.test('JsStore: names, keys, metadata and options reach the JS store whole', async () => {
    const { seen, store } = recording(new MemoryStore());
    pyodide.globals.set('js_store', store);
    await py(pyodide, `
async def crossings():
    from elastic_lite.store.stores import JsStore
    from elastic_lite.load import streamed
    s = JsStore(js_store)
    name = high(lambda i: "checkpoint-" + "n" * 60 + f"-{i}")
    other = high(lambda i: "other-" + "o" * 60 + f"-{i}")
    notebook = high(lambda i: "notebooks/" + "b" * 60 + f"/{i}.ipynb")
    label = high(lambda i: "label " + "l" * 70 + f" {i}")
    lock = await s.lock(name, timeout=5)
    await lock.release()
    data = [b"x" * 100, b"y" * 200]
    keys = [high_copy(k) for k in await s.put_records(data)]
    have = await s.has_records(keys)
    meta = {"notebook": notebook, "label": label, "names": [label]}
    await s.commit(name, {"records": [{"key": k, "length": len(d)} for k, d in zip(keys, data)],
                          "head": b"H", "tail": b"T", "meta": meta})
    await s.put(other, b"whole file", meta)
    signed = await s.sign(other)
    entry = await s.get_entry(name)
    got = await s.get(other)
    read = [bytes(r) for r in await s.read_records(keys)]
    read_js, _ = await s.read_records_js(keys)
    into = bytearray(100)
    whole = await streamed._read_into(s, keys[0], [(0, into)], True)
    listed = await s.list(notebook)
    verified = await s.verify_records(keys)
    await s.set_retention(notebook, {"keepLast": 3})
    retention = await s.get_retention(notebook)
    deleted = await s.delete(other)
    return {"names": [name, other, notebook, label], "keys": keys, "have": have,
            "entry": [r["key"] for r in entry["records"]] == keys and entry["meta"]["label"] == label,
            "get": got is not None and got["meta"]["notebook"] == notebook, "signed": signed,
            "read": read == data, "read_js": len(read_js) == 2, "into": bytes(into) == data[0] and whole,
            "listed": sorted(e["name"] for e in listed) == sorted([name, other]),
            "verified": verified is not None, "retention": retention, "deleted": deleted}
out = await crossings()`);
    const out = await pyJson(pyodide, 'out');
    assert.deepEqual(noNul(seen), [], 'a string reached the store garbled');
    for (const s of [...out.names, ...out.keys]) assert.ok(seen.includes(s), `the store never received ${s}`);
    assert.deepEqual(out.have, [true, true]);
    assert.deepEqual([out.entry, out.get, out.signed, out.read, out.read_js, out.into, out.listed, out.verified, out.deleted],
      [true, true, true, true, true, true, true, true, true]);
    assert.equal(out.retention?.keepLast, 3, JSON.stringify(out.retention));
  });

  await t.test("host.call: the report and the progress events reach a JS host whole", async () => {
    // every JSON text the host makes lies above 2 GiB (its json.dumps made to copy it there)
    await py(pyodide, `
import elastic_lite as el, elastic_lite.host as _host
el.set_store(None)
class _HighJson:
    loads = staticmethod(json.loads)
    @staticmethod
    def dumps(*a, **k):
        return high_copy(json.dumps(*a, **k))
_host.json = _HighJson
x = list(range(10))`);
    const events = [];
    const report = await callHost(pyodide, 'checkpoint', { name: 'c'.repeat(70), names: ['x'] },
      { progress: (e) => events.push(e) });
    assert.equal(report.ok, true, JSON.stringify(report.problems));
    assert.equal(report.name, 'c'.repeat(70));
    assert.ok(events.length > 0 && events.every((e) => typeof e === 'object'), JSON.stringify(events));
    await py(pyodide, '_host.json = json');
  });
});
