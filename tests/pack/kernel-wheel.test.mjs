// The kernel packages of dist/, installed the ways a user installs them, each in a fresh
// temporary folder away from the checkout, offline (cloudpickle and dill from the wheels set-up
// downloaded):
// - the Pyodide wheel elastic_lite-<version>-py3-none-any.whl with micropip into a fresh Pyodide
//   (what piplite does in a JupyterLite kernel); with pip into host CPython it uses the native
//   core only when one is named, and says clearly what is missing when not;
// - the host CPython wheel elastic_lite-<version>-py3-none-manylinux_2_17_x86_64.whl with pip
//   into a fresh venv: it works with no environment variable (the core is inside it);
// - the sdist elastic_lite-<version>.tar.gz: built into a wheel away from the checkout (the
//   core compiled from its C sources by the system compiler), installed and used the same way.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT, VERSION, VENV_PYTHON, archiveNames, archiveText, distFile, freshVenv, run, tempDir } from './helpers.mjs';

const WHEEL = distFile('elastic_lite-', '-any.whl');
const NATIVE_WHEEL = distFile('elastic_lite-', '_x86_64.whl');
const SDIST = distFile('elastic_lite-', '.tar.gz');
const WHEELS = path.join(ROOT, 'build', 'wheels'); // cloudpickle, dill (set-up)
const wheelOf = (dir, dist) => {
  const found = fs.readdirSync(dir).filter((f) => f.startsWith(`${dist}-`) && f.endsWith('.whl'));
  assert.equal(found.length, 1, `one ${dist} wheel in ${dir}: ${found}`);
  return path.join(dir, found[0]);
};

// The round trip both interpreters run: a notebook function, a class instance and aliasing,
// through snapshot() and load_snapshot() into a fresh namespace.
const ROUND_TRIP = `
import elastic_lite
ns = {"__name__": "__main__"}
exec("""
def f(x):
    return x * scale
class P:
    def __init__(self, v): self.v = v
scale = 10
shared = [1, 2]
p = P(shared)
both = {"s": shared}
""", ns)
snap = elastic_lite.snapshot(namespace=ns)
fresh = {"__name__": "__main__"}
report = elastic_lite.load_snapshot(snap.data, namespace=fresh)
result = [elastic_lite.__version__, report.ok, fresh["f"](2), fresh["p"].v is fresh["both"]["s"]]
`;

test('micropip installs the wheel into a fresh Pyodide, offline; the package runs on its .wasm', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  for (const whl of [WHEEL, wheelOf(WHEELS, 'cloudpickle'), wheelOf(WHEELS, 'dill'), wheelOf(path.join(ROOT, 'build', 'lite-wheels'), 'micropip')]) {
    fs.copyFileSync(whl, path.join(dir, path.basename(whl)));
  }
  const { loadPyodide } = await import('pyodide');
  const pyodide = await loadPyodide({ stdout: () => {}, stderr: () => {} });
  const fetched = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (url, ...rest) => { fetched.push(String(url)); return realFetch(url, ...rest); };
  try {
    await pyodide.loadPackage(path.join(dir, path.basename(wheelOf(dir, 'micropip'))));
    for (const f of fs.readdirSync(dir)) pyodide.FS.writeFile(`/tmp/${f}`, fs.readFileSync(path.join(dir, f)));
    // requirements first, so resolving elastic_lite's finds them installed and asks no index
    await pyodide.runPythonAsync(`
import micropip
await micropip.install(["emfs:/tmp/${path.basename(wheelOf(dir, 'cloudpickle'))}", "emfs:/tmp/${path.basename(wheelOf(dir, 'dill'))}"])
await micropip.install("emfs:/tmp/${path.basename(WHEEL)}")
`);
    await pyodide.runPythonAsync(ROUND_TRIP);
    assert.deepEqual(pyodide.globals.get('result').toJs(), [VERSION, true, 20, true]);
  } finally {
    globalThis.fetch = realFetch;
  }
  assert.deepEqual(fetched.filter((u) => !u.startsWith('file:') && !u.startsWith('/')), [], 'nothing was fetched');
});

test('pip installs the wheel into a fresh CPython venv, offline; it uses the native core when given, and says what is missing when not', { timeout: 180_000 }, (t) => {
  const dir = tempDir(t);
  // only these wheels: no index, no pip configuration of this machine
  const fresh = freshVenv(path.join(dir, 'venv'));
  const { python, env } = fresh;
  fresh.pip('--find-links', WHEELS, WHEEL);
  const script = path.join(dir, 'round_trip.py');
  fs.writeFileSync(script, `${ROUND_TRIP}\nimport json; print(json.dumps(result))\n`);

  const native = path.join(ROOT, 'build', 'native', 'libelastic_lite.so');
  const withCore = run(python, [script], { cwd: dir, env: { ...env, ELASTIC_LITE_NATIVE_LIB: native } });
  assert.deepEqual(JSON.parse(withCore.stdout.trim().split('\n').pop()), [VERSION, true, 20, true]);

  const { ELASTIC_LITE_NATIVE_LIB: _, ...noCoreEnv } = env;
  const without = run(python, [script], { cwd: dir, env: noCoreEnv, allowFail: true });
  assert.notEqual(without.status, 0);
  assert.match(without.stderr, /native core .* is missing/);
  assert.match(without.stderr, /ELASTIC_LITE_NATIVE_LIB/);
});

// A fresh venv in `dir` with `wheel` (and its pins) installed offline; runs ROUND_TRIP there with
// no environment variable of this project and away from the checkout: the parsed result and
// where the package found its core.
function installAndRoundTrip(dir, wheel) {
  const venv = path.join(dir, 'venv');
  const fresh = freshVenv(venv);
  const { python, env } = fresh;
  fresh.pip('--find-links', WHEELS, wheel);
  const script = path.join(dir, 'round_trip.py');
  fs.writeFileSync(script, `${ROUND_TRIP}\nimport json; from elastic_lite import _core\n` +
    'print(json.dumps([result, _core._native_path()]))\n');
  const out = run(python, [script], { cwd: dir, env });
  const [result, core] = JSON.parse(out.stdout.trim().split('\n').pop());
  return { result, core, venv };
}

test('the host CPython wheel is manylinux_2_17_x86_64 (its library proven to need nothing newer) and works after pip install with no environment variable', { timeout: 180_000 }, (t) => {
  assert.equal(path.basename(NATIVE_WHEEL), `elastic_lite-${VERSION}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl`);
  const tags = archiveText(NATIVE_WHEEL, `elastic_lite-${VERSION}.dist-info/WHEEL`);
  assert.match(tags, /^Root-Is-Purelib: false$/m);
  assert.match(tags, /^Tag: py3-none-manylinux_2_17_x86_64$/m);
  const names = archiveNames(NATIVE_WHEEL);
  assert.ok(names.includes('elastic_lite/libelastic_lite.so'), 'the wheel carries the native core');
  assert.ok(!names.includes('elastic_lite/elastic_lite.wasm'), 'the .wasm is the Pyodide wheel\'s');
  // What the manylinux_2_17 tag promises, checked on the library itself (as auditwheel would).
  const dir = tempDir(t);
  run('python3', ['-c', 'import sys,zipfile; open(sys.argv[2],"wb").write(zipfile.ZipFile(sys.argv[1]).read("elastic_lite/libelastic_lite.so"))',
    NATIVE_WHEEL, path.join(dir, 'lib.so')]);
  const elf = run('objdump', ['-p', '-T', path.join(dir, 'lib.so')]).stdout;
  assert.deepEqual([...elf.matchAll(/^\s*NEEDED\s+(\S+)/gm)].map((m) => m[1]), ['libc.so.6']);
  const glibc = [...elf.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  assert.ok(glibc.length > 0 && glibc.every(([a, b]) => a < 2 || (a === 2 && b <= 17)), `GLIBC versions ${JSON.stringify(glibc)}`);

  const { result, core, venv } = installAndRoundTrip(dir, NATIVE_WHEEL);
  assert.deepEqual(result, [VERSION, true, 20, true]);
  assert.ok(core.startsWith(venv), `the core comes from the installed package: ${core}`);
});

test('the sdist builds a wheel away from the checkout, compiling the core with the system compiler; it works after pip install', { timeout: 300_000 }, (t) => {
  const dir = tempDir(t);
  const sdist = path.join(dir, path.basename(SDIST));
  fs.copyFileSync(SDIST, sdist);
  const names = run('tar', ['tzf', sdist]).stdout.trim().split('\n');
  assert.ok(names.includes(`elastic_lite-${VERSION}/_sdist/wasm/src/writer.c`), 'the sdist carries the C sources');
  // the backend (hatchling) from the project's venv, offline; nothing of the checkout reachable
  const wheels = path.join(dir, 'wheels');
  run(VENV_PYTHON, ['-m', 'pip', 'wheel', '--quiet', '--no-build-isolation', '--no-deps', '--no-index', '--wheel-dir', wheels, sdist],
    { cwd: dir, env: { ...process.env, PIP_CONFIG_FILE: '/dev/null', CC: 'cc' } });
  const built = fs.readdirSync(wheels);
  assert.deepEqual(built, [`elastic_lite-${VERSION}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl`]);
  const { result, core, venv } = installAndRoundTrip(dir, path.join(wheels, built[0]));
  assert.deepEqual(result, [VERSION, true, 20, true]);
  assert.ok(core.startsWith(venv), `the core comes from the installed package: ${core}`);
});
