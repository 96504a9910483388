// `node tests/node/helpers/pyodide-snapshot.mjs FILE`: writes a memory snapshot of a Pyodide
// interpreter just started (no user code run, nothing installed) to FILE. scripts/test.sh makes
// one per run and points ELASTIC_LITE_PYODIDE_SNAPSHOT at it, so that every Pyodide the Node
// tests and the CLI they run start (js/pyodide-glue.mjs createPyodide) is restored from it
// instead of initialising Python again: the same fresh interpreter at about a tenth of the CPU.
// The standard-library modules that installing elastic_lite imports (pickle, hashlib, ctypes,
// ...: asked of a plain interpreter that installs it, each run) are imported in it already, as
// Pyodide imports its own at start: once elastic_lite is installed, sys.modules is the same as
// in a plain start (tests/node/pyodide-snapshot.test.mjs), and each start skips their imports.
// Beside it, FILE.pycache: the bytecode of the installed wheels (cloudpickle, dill, elastic_lite),
// compiled once here; createPyodide reads it through sys.pycache_prefix, each file checked
// against its source by hash (a source that differs is compiled again, as without it).
// Pyodide's snapshot API is experimental (_makeSnapshot / makeMemorySnapshot / _loadSnapshot);
// when it fails, nothing is written and the tests start Pyodide the plain way.
import { writeFileSync, renameSync, rmSync, mkdirSync } from 'node:fs';
import { installElasticLite, WHEELS } from '../../../js/pyodide-glue.mjs';

const out = process.argv[2];
if (!out) {
  console.error('usage: node tests/node/helpers/pyodide-snapshot.mjs FILE');
  process.exit(2);
}
const started = Date.now();
const { loadPyodide } = await import('pyodide');

const modules = (pyodide) => {
  const sys = pyodide.pyimport('sys');
  const names = [...sys.modules.keys()];
  sys.destroy();
  return names;
};

// What installing elastic_lite imports from the standard library, in a plain interpreter.
const plain = await loadPyodide();
const before = new Set(modules(plain));
(await installElasticLite(plain)).destroy();
const ours = new RegExp(`^(${WHEELS.join('|')})(\\.|$)`);
const stdlib = modules(plain).filter((m) => !before.has(m) && !ours.test(m));

// The wheels' bytecode, hash-checked (their files are unpacked anew, with new times, in every
// interpreter), into FILE.pycache (made aside, then renamed).
const pycache = `${out}.pycache`;
rmSync(`${pycache}.part`, { recursive: true, force: true });
mkdirSync(`${pycache}.part`);
plain.FS.mkdirTree('/el-pycache');
plain.FS.mount(plain.FS.filesystems.NODEFS, { root: `${pycache}.part` }, '/el-pycache');
const compile = plain.runPython(`
def _compile(prefix):
    import compileall, importlib.util, py_compile, sys
    sys.pycache_prefix = prefix
    for name in ${JSON.stringify(WHEELS)}:
        folder = importlib.util.find_spec(name).submodule_search_locations[0]
        if not compileall.compile_dir(folder, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH):
            raise RuntimeError(f"compiling {folder} failed")
_compile`);
compile('/el-pycache');
compile.destroy();
rmSync(pycache, { recursive: true, force: true });
renameSync(`${pycache}.part`, pycache);

const pyodide = await loadPyodide({ _makeSnapshot: true });
// importlib.import_module through pyimport: nothing is bound in __main__. A name that is no
// module of its own (an alias one of them registered, like __mp_main__) is left out.
const importlib = pyodide.pyimport('importlib');
const imported = [];
for (const name of stdlib) {
  try {
    importlib.import_module(name).destroy();
    imported.push(name);
  } catch { /* not importable by name */ }
}
importlib.destroy();
const bytes = pyodide.makeMemorySnapshot();
writeFileSync(`${out}.part`, bytes);
renameSync(`${out}.part`, out);
console.error(`[test] Pyodide memory snapshot: ${out} (${(bytes.length / 2 ** 20).toFixed(0)} MiB, ` +
  `${imported.length} standard-library modules elastic_lite imports, ${Date.now() - started} ms)`);
