#!/usr/bin/env node
// Writes dist/elastic-lite-<version>.tgz, the npm package (run by scripts/pack.sh after the
// build). It is staged in build/npm/package/ and packed there with `npm pack`:
//
//   package.json        the root's name, version, description, license, engines and runtime
//                       dependencies, plus `bin`, `exports` and `types` for the package
//   js/                 the runtime modules: index.mjs (main entry), core.mjs, pyodide-glue.mjs,
//                       store/, cli/, and every other module of js/ except the extension
//   build/wasm/         elastic_lite.wasm          } built files, at the same paths as in a
//   build/wheels/       the wheels + wheels.json   } checkout, so every module finds them
//   py/elastic_lite/denylist.json                  } relative to itself in both places
//   types/              TypeScript declarations, emitted by tsc from the modules' JSDoc
//   README.md
//
// The package reads nothing outside itself (tests/pack installs it in an empty folder and runs
// the CLI there with Node's permission model allowing reads of that folder only).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAGE = path.join(ROOT, 'build', 'npm', 'package');
const DIST = path.join(ROOT, 'dist');
const root = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

// The module entries of `exports` (subpath -> module under js/); types come from types/.
const ENTRIES = {
  '.': 'index.mjs',
  './core': 'core.mjs',
  './pyodide': 'pyodide-glue.mjs',
  './store/memory': 'store/memory.mjs',
  './store/indexeddb': 'store/indexeddb.mjs',
  './store/directory': 'store/directory.mjs',
};

function fail(message) {
  console.error(`[pack:npm] ${message}`);
  process.exit(1);
}

function copy(rel, from = ROOT) {
  const src = path.join(from, rel);
  if (!fs.existsSync(src)) fail(`${rel} is missing: run npm run build`);
  fs.mkdirSync(path.dirname(path.join(STAGE, rel)), { recursive: true });
  fs.cpSync(src, path.join(STAGE, rel), { recursive: true });
}

/** Every file under js/ that runs at run time: not the extension (a package of its own). */
function runtimeModules() {
  return fs.readdirSync(path.join(ROOT, 'js'), { recursive: true })
    .map((rel) => path.join('js', rel))
    .filter((rel) => !rel.startsWith(path.join('js', 'extension')))
    .filter((rel) => fs.statSync(path.join(ROOT, rel)).isFile())
    .filter((rel) => /\.(mjs|py|json)$/.test(rel));
}

function packageJson() {
  const types = (module) => `./types/${module.replace(/\.mjs$/, '.d.mts')}`;
  return {
    name: root.name,
    version: root.version,
    description: root.description,
    license: root.license,
    type: 'module',
    bin: root.bin,
    main: './js/index.mjs',
    types: types('index.mjs'),
    exports: {
      ...Object.fromEntries(Object.entries(ENTRIES).map(([sub, module]) =>
        [sub, { types: types(module), default: `./js/${module}` }])),
      './elastic_lite.wasm': './build/wasm/elastic_lite.wasm',
      './wheels/*': './build/wheels/*',
      './package.json': './package.json',
    },
    engines: root.engines,
    dependencies: root.dependencies,
  };
}

/** TypeScript declarations of the entries (and what they import), from the JSDoc. */
function declarations() {
  const tsconfig = {
    compilerOptions: {
      allowJs: true, declaration: true, emitDeclarationOnly: true, skipLibCheck: true,
      module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: [],
      rootDir: path.join(STAGE, 'js'), outDir: path.join(STAGE, 'types'),
    },
    files: Object.values(ENTRIES).map((module) => path.join(STAGE, 'js', module)),
  };
  const config = path.join(STAGE, '..', 'tsconfig.json');
  fs.writeFileSync(config, JSON.stringify(tsconfig, null, 2));
  try {
    execFileSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', config], { stdio: 'inherit' });
  } catch {
    fail('tsc could not emit the TypeScript declarations (see above): fix the JSDoc it names');
  }
}

fs.rmSync(path.dirname(STAGE), { recursive: true, force: true });
fs.mkdirSync(STAGE, { recursive: true });
for (const rel of runtimeModules()) copy(rel);
const wheels = JSON.parse(fs.readFileSync(path.join(ROOT, 'build', 'wheels', 'wheels.json'), 'utf8'));
if (wheels.elastic_lite !== `elastic_lite-${root.version}-py3-none-any.whl`) {
  fail(`build/wheels/wheels.json names ${wheels.elastic_lite}, not version ${root.version}: run npm run build`);
}
for (const file of ['wheels.json', ...wheels.wheels]) copy(path.join('build', 'wheels', file));
copy(path.join('build', 'wasm', 'elastic_lite.wasm'));
copy(path.join('py', 'elastic_lite', 'denylist.json'));
copy('README.md');
fs.writeFileSync(path.join(STAGE, 'package.json'), `${JSON.stringify(packageJson(), null, 2)}\n`);
declarations();

fs.mkdirSync(DIST, { recursive: true });
for (const old of fs.readdirSync(DIST).filter((f) => /^elastic-lite-.*\.tgz$/.test(f))) fs.rmSync(path.join(DIST, old));
const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', DIST], { cwd: STAGE, encoding: 'utf8' });
console.error(`[pack:npm] dist/${out.trim().split('\n').pop()}`);
