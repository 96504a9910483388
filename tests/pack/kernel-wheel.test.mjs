// The kernel wheel dist/elastic_lite-<version>-py3-none-any.whl, installed the ways a user
// installs it, each in a fresh temporary folder: with micropip into a fresh Pyodide (what
// piplite does in a JupyterLite kernel), and with pip into a fresh virtual environment of the
// host's CPython, offline (cloudpickle and dill from the wheels set-up downloaded), where it
// uses the native C core when one is given and says clearly what is missing when not.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT, VERSION, distFile, run, tempDir } from './helpers.mjs';

const WHEEL = distFile('elastic_lite-', '.whl');
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
  const venv = path.join(dir, 'venv');
  run('python3', ['-m', 'venv', venv]);
  const python = path.join(venv, 'bin', 'python');
  // only these wheels: no index, no pip configuration of this machine
  const env = { ...process.env, PIP_CONFIG_FILE: '/dev/null', PIP_FIND_LINKS: '', PIP_NO_INDEX: '1' };
  run(python, ['-m', 'pip', 'install', '--quiet', '--no-index', '--find-links', WHEELS, WHEEL], { cwd: dir, env });
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
