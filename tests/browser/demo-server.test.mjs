// The demo's static server: serves the allow-listed repository folders with the right MIME
// types, nothing else (no traversal, no other files of the repository), and says clearly when
// its port is taken. Real server, real sockets, real files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestServer } from './helpers/server.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let srv;

before(async () => { srv = await startTestServer(); });
after(async () => { await srv?.close(); });

// Raw GET without URL normalisation (fetch would collapse "/../" before sending it).
function rawGet(port, rawPath, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: rawPath, method }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('/ redirects to the demo page, which is served as HTML', async () => {
  const root = await rawGet(srv.port, '/');
  assert.equal(root.status, 302);
  assert.equal(root.headers.location, '/demo/');
  const page = await rawGet(srv.port, '/demo/');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'], /^text\/html/);
  assert.match(page.body.toString(), /Elastic Lite/);
  const noSlash = await rawGet(srv.port, '/demo');
  assert.equal(noSlash.status, 301);
  assert.equal(noSlash.headers.location, '/demo/');
});

test('MIME types: .mjs as JavaScript, .wasm as application/wasm, .json, .zip, .whl', async () => {
  const cases = [
    ['/demo/app.mjs', /^text\/javascript/],
    ['/demo/worker.mjs', /^text\/javascript/],
    ['/node_modules/pyodide/pyodide.mjs', /^text\/javascript/],
    ['/node_modules/pyodide/pyodide.asm.wasm', /^application\/wasm$/],
    ['/node_modules/pyodide/pyodide-lock.json', /^application\/json/],
    ['/node_modules/pyodide/python_stdlib.zip', /^application\/zip$/],
    ['/demo/style.css', /^text\/css/],
  ];
  const wheel = fs.readdirSync(path.join(REPO, 'build', 'wheels')).find((f) => f.endsWith('.whl'));
  if (wheel) cases.push([`/build/wheels/${wheel}`, /^application\/zip$/]);
  if (fs.existsSync(path.join(REPO, 'build', 'wasm', 'elastic_lite.wasm'))) {
    cases.push(['/build/wasm/elastic_lite.wasm', /^application\/wasm$/]);
  }
  for (const [p, type] of cases) {
    const res = await rawGet(srv.port, p, 'HEAD');
    assert.equal(res.status, 200, p);
    assert.match(res.headers['content-type'], type, p);
    assert.equal(res.headers['x-content-type-options'], 'nosniff', p);
  }
});

test('serves the same bytes as the file on disk', async () => {
  const res = await rawGet(srv.port, '/node_modules/pyodide/pyodide-lock.json');
  assert.deepEqual(res.body, fs.readFileSync(path.join(REPO, 'node_modules/pyodide/pyodide-lock.json')));
});

test('nothing outside the allow-list: no traversal, no other repository files', async () => {
  const refused = [
    '/package.json',
    '/.git/config',
    '/versions.env',
    '/node_modules/playwright-core/package.json',
    '/demo/../package.json',
    '/demo/%2e%2e/package.json',
    '/demo/%2E%2E/%2E%2E/etc/passwd',
    '/js/..%2fpackage.json',
    '/demo/..%5cpackage.json',
    '/build/wheels/../../package.json',
    '/demo/%00index.html',
    '/demo/%E0%A4%A', // malformed escape
    '/build/native/',
  ];
  for (const p of refused) {
    const res = await rawGet(srv.port, p);
    assert.equal(res.status, 404, `${p} must not be served (got ${res.status})`);
    assert.ok(!res.body.toString().includes('"name": "elastic-lite"'), p);
  }
  const post = await rawGet(srv.port, '/demo/', 'POST');
  assert.equal(post.status, 405);
});

test('--root serves one folder whole (for a built site in other browser tests)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'el-root-'));
  fs.writeFileSync(path.join(dir, 'index.html'), '<p>hello</p>');
  fs.mkdirSync(path.join(dir, 'lab'));
  fs.writeFileSync(path.join(dir, 'lab', 'x.json'), '{}');
  const s = await startTestServer({ root: dir });
  try {
    assert.equal((await rawGet(s.port, '/')).body.toString(), '<p>hello</p>');
    assert.match((await rawGet(s.port, '/lab/x.json')).headers['content-type'], /^application\/json/);
    assert.equal((await rawGet(s.port, '/../' + path.basename(dir) + '/index.html')).status, 404);
  } finally {
    await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function runServerCli(args, env = {}) {
  const child = spawn(process.execPath, [path.join(REPO, 'demo', 'server.mjs'), ...args], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

test('the CLI prints its URL, honours --port and PORT', async () => {
  for (const [args, env] of [[['--port', 'P']], [[], { PORT: 'P' }]]) {
    const port = await freePort();
    const run = runServerCli(args.map((a) => (a === 'P' ? String(port) : a)),
      env ? { PORT: String(port) } : {});
    try {
      const deadline = Date.now() + 10_000;
      while (!run.output().includes('http://') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.match(run.output(), new RegExp(`http://127\\.0\\.0\\.1:${port}/demo/`));
      assert.equal((await rawGet(port, '/demo/')).status, 200);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  }
});

test('a busy port is reported in words, with the way out', async () => {
  const run = runServerCli(['--port', String(srv.port)]);
  const code = await run.exited;
  assert.equal(code, 1);
  assert.match(run.output(), new RegExp(`port ${srv.port} .*already in use`));
  assert.match(run.output(), /--port/);
  assert.doesNotMatch(run.output(), /at .*\(node:/); // no stack trace
});

test('a bad --port value is refused clearly', async () => {
  const run = runServerCli(['--port', 'eighty']);
  assert.equal(await run.exited, 2);
  assert.match(run.output(), /port must be a number/);
});
