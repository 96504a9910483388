// The npm package, as a user gets it: dist/elastic-lite-<version>.tgz installed with npm,
// offline, into an empty temporary folder. There, `npx elastic-lite run / restore / inspect`
// work while reading no file of the checkout (every file the processes open is traced with
// strace), `import ... from 'elastic-lite'` works in Node (the core, the stores, Pyodide with
// the kernel wheel from the package), its TypeScript declarations type-check a consumer, and a
// webpack bundle of it runs in Chromium (the .wasm emitted as an asset).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, VERSION, archiveNames, distFile, run } from './helpers.mjs';

const TGZ = distFile('elastic-lite-', '.tgz');
let dir; // the consumer project, shared by the tests of this file, removed at the end

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'elastic-lite-npm-'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // --offline: from npm's cache only (set-up put the package's dependencies there)
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', TGZ], { cwd: dir });
  fs.copyFileSync(path.join(ROOT, 'tests/notebooks/basic.ipynb'), path.join(dir, 'basic.ipynb'));
});

after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('the tarball holds the package, of this version, and none of the checkout\'s sources', () => {
  const names = archiveNames(TGZ).map((n) => n.replace(/^package\//, ''));
  for (const needed of ['package.json', 'README.md', 'js/index.mjs', 'js/core.mjs', 'js/pyodide-glue.mjs',
    'js/store/indexeddb.mjs', 'js/store/memory.mjs', 'js/store/directory.mjs', 'js/cli/elastic-lite.mjs',
    'build/wasm/elastic_lite.wasm', 'build/wheels/wheels.json', `build/wheels/elastic_lite-${VERSION}-py3-none-any.whl`,
    'types/index.d.mts', 'types/core.d.mts']) {
    assert.ok(names.includes(needed), `the package lacks ${needed}`);
  }
  const wheels = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules/elastic-lite/build/wheels/wheels.json'), 'utf8')).wheels;
  for (const w of wheels) assert.ok(names.includes(`build/wheels/${w}`), `wheels.json names ${w}, which is not in the package`);
  const stray = names.filter((n) => /^(wasm|tests|demo|benchmarks|scripts|lite|docs)\/|^js\/extension\/|\.c$|CMakeLists/.test(n));
  assert.deepEqual(stray, []);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules/elastic-lite/package.json'), 'utf8'));
  assert.equal(pkg.version, VERSION);
  assert.equal(pkg.private, undefined, 'the published package must not be private');
  assert.equal(pkg.bin['elastic-lite'], 'js/cli/elastic-lite.mjs');
  assert.equal(pkg.exports['.'].default, './js/index.mjs');
});

/** Runs `npx elastic-lite ARGS` in the consumer folder under strace; returns stdout and the
 * real path of every file the processes opened. */
function npxTraced(args) {
  const log = path.join(dir, `strace-${process.hrtime.bigint()}.log`);
  const r = run('strace', ['-f', '-qq', '-y', '-s', '4096', '-e', 'trace=%file,%desc', '-e', 'signal=none', '-o', log,
    'npx', '--no-install', 'elastic-lite', ...args], { cwd: dir });
  const opened = new Set([...fs.readFileSync(log, 'utf8').matchAll(/= \d+<([^>]*)>/g)].map((m) => m[1]));
  fs.rmSync(log);
  return { stdout: r.stdout, opened: [...opened] };
}

test('npx elastic-lite run / restore / inspect work and read no file of the checkout', { timeout: 300_000 }, () => {
  const checkout = (files) => files.filter((f) => f === ROOT || f.startsWith(`${ROOT}/`));
  const ran = npxTraced(['run', 'basic.ipynb', '--name', 'demo']);
  assert.match(ran.stdout, /demo/);
  assert.deepEqual(checkout(ran.opened), [], 'run opened files of the checkout');
  assert.ok(ran.opened.some((f) => f.startsWith(path.join(dir, 'node_modules/elastic-lite/build/wheels/'))),
    'run installed the wheels from the package');
  assert.ok(ran.opened.some((f) => f.startsWith(path.join(dir, 'node_modules/pyodide/'))), 'run used the package\'s Pyodide');

  const restored = npxTraced(['restore', 'demo', '-c', 'print(f(2), p.norm(), total)']);
  assert.match(restored.stdout, /^20 5\.0 6$/m);
  assert.deepEqual(checkout(restored.opened), [], 'restore opened files of the checkout');

  const inspected = npxTraced(['inspect', 'demo']);
  assert.match(inspected.stdout, /cloudpickle/);
  assert.match(inspected.stdout, /dill/);
  assert.deepEqual(checkout(inspected.opened), [], 'inspect opened files of the checkout');

  const version = run('npx', ['--no-install', 'elastic-lite', '--version'], { cwd: dir }).stdout.trim();
  assert.equal(version, `elastic-lite ${VERSION}`);
});

test('import from "elastic-lite" in Node: the core, the stores, Pyodide with the package\'s kernel wheel', { timeout: 120_000 }, () => {
  fs.writeFileSync(path.join(dir, 'node-api.mjs'), `
import { loadCore, createPyodide, MemoryStore } from 'elastic-lite';
import { DirectoryStore } from 'elastic-lite/store/directory';
const core = await loadCore();
const w = core.newWriter({ producer: 'consumer', python: '3.14', createdMs: 1 });
w.beginRecord(['x']); w.append(new Uint8Array([0x80, 5, 0x4b, 7, 0x2e])); w.endRecord('pickle');
const bytes = w.finish(); w.free();
const report = core.inspect(bytes, { validate: true });
const store = new DirectoryStore('ckpt');
await store.put('a', bytes, {});
const memory = new MemoryStore({ keepLast: 2 });
await memory.put('b', (await store.get('a')).bytes, {});
const pyodide = await createPyodide({ stdout: () => {}, stderr: () => {} });
const py = await pyodide.runPythonAsync(\`
import elastic_lite
snap = elastic_lite.snapshot(namespace={"x": [1, {"k": 2}]}, names=["x"])
ns = {}
elastic_lite.load_snapshot(snap.data, namespace=ns)
[elastic_lite.__version__, repr(ns["x"])]
\`);
console.log(JSON.stringify({ version: core.version, ok: report.ok, names: report.records.map((r) => r.names),
  listed: (await memory.list()).map((e) => e.name), python: py.toJs() }));
`);
  const out = JSON.parse(run('node', ['node-api.mjs'], { cwd: dir }).stdout.trim().split('\n').pop());
  assert.deepEqual(out, { version: VERSION, ok: true, names: [['x']], listed: ['b'], python: [VERSION, "[1, {'k': 2}]"] });
});

test('TypeScript: a consumer type-checks against the package\'s declarations (strict)', { timeout: 120_000 }, () => {
  fs.writeFileSync(path.join(dir, 'consumer.mts'), `
import { loadCore, createPyodide, installElasticLite, MemoryStore, IndexedDBStore, CoreError } from 'elastic-lite';
import { DirectoryStore } from 'elastic-lite/store/directory';
export async function main(): Promise<string> {
  const core = await loadCore('node_modules/elastic-lite/build/wasm/elastic_lite.wasm');
  const alsoFromBytes = await loadCore(new Uint8Array(0));
  const memory = new MemoryStore({ keepLast: 3 });
  const idb = new IndexedDBStore({ dbName: 'x', keepLast: 2 });
  const dirs = new DirectoryStore('ckpt', { keepLast: 1 });
  const pyodide = await createPyodide({ stdout: (line: string) => console.log(line) });
  await installElasticLite(pyodide, { wheelsUrl: '/wheels/', store: memory });
  const err: Error = new CoreError('x');
  void [alsoFromBytes, idb, dirs, err];
  return core.version;
}
`);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: true, types: [] },
    files: ['consumer.mts'],
  }));
  run(path.join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: dir });
});

test('a webpack bundle for the browser runs in Chromium, the .wasm emitted as an asset', { timeout: 180_000 }, async () => {
  fs.mkdirSync(path.join(dir, 'web'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'web/entry.mjs'), `
import { loadCore, MemoryStore, IndexedDBStore } from 'elastic-lite';
const core = await loadCore();
const w = core.newWriter({ producer: 'bundle', python: '3.14', createdMs: 1 });
w.beginRecord(['x']); w.append(new Uint8Array([0x80, 5, 0x4b, 7, 0x2e])); w.endRecord('pickle');
const bytes = w.finish(); w.free();
const store = new IndexedDBStore({ dbName: 'bundle-test' });
await store.put('a', bytes, {});
const back = await store.get('a');
const memory = new MemoryStore();
await memory.put('b', back.bytes, {});
window.result = { version: core.version, ok: core.inspect(back.bytes, { validate: true }).ok, listed: (await memory.list()).map((e) => e.name) };
`);
  fs.writeFileSync(path.join(dir, 'web/index.html'), '<!doctype html><script src="bundle.js"></script>');
  const { default: webpack } = await import(path.join(ROOT, 'node_modules/webpack/lib/index.js'));
  const stats = await new Promise((resolve, reject) => webpack({
    mode: 'production', target: 'web', context: dir, entry: './web/entry.mjs',
    output: { path: path.join(dir, 'web'), filename: 'bundle.js', publicPath: 'auto' },
    experiments: { topLevelAwait: true },
  }).run((err, s) => (err ? reject(err) : resolve(s))));
  assert.ok(!stats.hasErrors(), stats.toString({ all: false, errors: true }));
  assert.ok(fs.readdirSync(path.join(dir, 'web')).some((f) => f.endsWith('.wasm')), 'the bundle emitted the .wasm');

  const { startTestServer } = await import('../browser/helpers/server.mjs');
  const { launchChromium } = await import('../browser/helpers/chromium.mjs');
  const server = await startTestServer({ root: path.join(dir, 'web') });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}index.html`);
    const result = await page.waitForFunction(() => window.result, null, { timeout: 60_000 }).then((h) => h.jsonValue());
    assert.deepEqual(result, { version: VERSION, ok: true, listed: ['b'] });
    browser.assertOffline();
  } finally {
    await browser.close();
    await server.close();
  }
});
