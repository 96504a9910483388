#!/usr/bin/env node
// Static file server for the demo page (and for browser tests that need one).
//
// Why our own server: the page must work with the network off, so Pyodide, the wheels and the
// .wasm all come from this repository (what `npm run build` prepared), and nothing else may be
// reachable through it. By default it serves only an allow-list of folders of the repository;
// `--root DIR` serves one other folder whole (e.g. a built JupyterLite site in a test).
//
//   node demo/server.mjs [--port N] [--host H] [--root DIR]     (PORT env var works too)
//
// Importable: `startServer({ port, host, root, mounts })` resolves to { server, url, port, close }.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// URL prefix → folder. Only these parts of the repository are ever served: the page, the JS
// modules it imports, the WebAssembly core, the wheels Pyodide installs, and Pyodide itself.
export const DEMO_MOUNTS = Object.freeze({
  '/demo/': path.join(REPO, 'demo'),
  '/js/': path.join(REPO, 'js'),
  '/build/wasm/': path.join(REPO, 'build', 'wasm'),
  '/build/wheels/': path.join(REPO, 'build', 'wheels'),
  '/node_modules/pyodide/': path.join(REPO, 'node_modules', 'pyodide'),
});

// Browsers refuse module scripts without a JavaScript type and compile .wasm by streaming only
// with application/wasm; the rest is for downloads and readability.
export const MIME = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.whl': 'application/zip',
  '.zip': 'application/zip',
  '.tar': 'application/x-tar',
  '.py': 'text/x-python; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.ipynb': 'application/json; charset=utf-8',
  '.elc': 'application/octet-stream',
});

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(body);
}

// Maps a request path to a file inside one of the mounts, or null. The decoded path is
// resolved and must stay inside the mount's folder: "..", encoded "%2e%2e", backslashes and
// NUL bytes cannot escape it.
export function resolveRequest(urlPath, mounts) {
  let decoded;
  try { decoded = decodeURIComponent(urlPath); } catch { return null; }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  // Longest prefix first, so a mount of "/" does not shadow the specific ones.
  const prefixes = Object.keys(mounts).sort((a, b) => b.length - a.length);
  for (const prefix of prefixes) {
    if (!decoded.startsWith(prefix)) continue;
    const base = path.resolve(mounts[prefix]);
    const target = path.resolve(base, '.' + path.posix.sep + decoded.slice(prefix.length));
    if (target !== base && !target.startsWith(base + path.sep)) return null;
    return target;
  }
  return null;
}

function handler(mounts, indexRedirect) {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, 'Only GET and HEAD are served.\n', { Allow: 'GET, HEAD' });
    }
    const urlPath = new URL(req.url, 'http://localhost').pathname;
    if (urlPath === '/' && indexRedirect) {
      res.writeHead(302, { Location: indexRedirect });
      return res.end();
    }
    if (Object.hasOwn(mounts, urlPath + '/')) {
      // "/demo" → "/demo/": relative URLs in the page resolve against the folder.
      res.writeHead(301, { Location: urlPath + '/' });
      return res.end();
    }
    let file = resolveRequest(urlPath, mounts);
    if (!file) return send(res, 404, 'Not found.\n');
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) {
        // A folder URL without its trailing slash would break relative imports in the page.
        if (!urlPath.endsWith('/')) {
          res.writeHead(301, { Location: urlPath + '/' });
          return res.end();
        }
        file = path.join(file, 'index.html');
        return fs.stat(file, (err2, st2) => serveFile(req, res, file, err2 ? null : st2));
      }
      serveFile(req, res, file, err ? null : st);
    });
  };
}

function serveFile(req, res, file, st) {
  if (!st || !st.isFile()) return send(res, 404, 'Not found.\n');
  const type = MIME[path.extname(file).toLowerCase()] || 'application/octet-stream';
  // A validator, so that a revalidation of an unchanged file is a 304: the browser then keeps
  // its cached copy and what it compiled from it (V8's code caches of scripts and .wasm).
  const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs * 1000).toString(16)}"`;
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, { ETag: etag, 'Cache-Control': 'no-cache' });
    return res.end();
  }
  res.writeHead(200, {
    'Content-Type': type,
    'Content-Length': st.size,
    ETag: etag,
    // The demo is rebuilt while people work on it: always revalidate, never serve stale JS.
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
  });
  if (req.method === 'HEAD') return res.end();
  fs.createReadStream(file).on('error', () => res.destroy()).pipe(res);
}

export function startServer({ port = 8000, host = '127.0.0.1', root = null, mounts = null } = {}) {
  const table = mounts ?? (root ? { '/': path.resolve(root) } : DEMO_MOUNTS);
  const indexRedirect = mounts || root ? null : '/demo/';
  const server = http.createServer(handler(table, indexRedirect));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const actual = server.address().port;
      const url = `http://${host}:${actual}/`;
      resolve({
        server, port: actual, url,
        close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
      });
    });
  });
}

function parseArgs(argv) {
  const opts = { port: process.env.PORT ? Number(process.env.PORT) : 8000, host: '127.0.0.1', root: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v === undefined) throw new Error(`${a.split('=')[0]} needs a value`);
      return v;
    };
    if (a === '--port' || a.startsWith('--port=')) opts.port = Number(value());
    else if (a === '--host' || a.startsWith('--host=')) opts.host = value();
    else if (a === '--root' || a.startsWith('--root=')) opts.root = value();
    else if (a === '-h' || a === '--help') opts.help = true;
    else throw new Error(`unknown option ${a} (try --help)`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    throw new Error(`the port must be a number from 0 to 65535 (got ${JSON.stringify(String(opts.port))})`);
  }
  return opts;
}

async function main() {
  let opts;
  try { opts = parseArgs(process.argv.slice(2)); } catch (e) {
    console.error(`demo server: ${e.message}`);
    process.exit(2);
  }
  if (opts.help) {
    console.log('Usage: node demo/server.mjs [--port N] [--host 127.0.0.1] [--root DIR]\n' +
      'Serves the Elastic Lite demo page (or DIR) offline. PORT=N works too; default 8000.');
    return;
  }
  if (!opts.root && !fs.existsSync(path.join(REPO, 'build', 'wasm', 'elastic_lite.wasm'))) {
    console.warn('demo server: build/wasm/elastic_lite.wasm is missing; run `npm run build` first ' +
      '(the page will load but cannot checkpoint).');
  }
  try {
    const { url } = await startServer(opts);
    console.log(`Elastic Lite demo: ${opts.root ? url : url + 'demo/'}`);
    console.log('(serving local files only; Ctrl+C to stop)');
  } catch (e) {
    if (e.code === 'EADDRINUSE') {
      console.error(`demo server: port ${opts.port} on ${opts.host} is already in use. ` +
        `Stop the other server or pick another port: npm start -- --port 8080 (or PORT=8080 npm start).`);
    } else if (e.code === 'EACCES') {
      console.error(`demo server: not allowed to listen on port ${opts.port}; choose a port above 1024 with --port.`);
    } else {
      console.error(`demo server: cannot listen on ${opts.host}:${opts.port}: ${e.message}`);
    }
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main();
}
