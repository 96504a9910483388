// elastic_lite._core's WebAssembly backend in a fresh Pyodide: the same Python tests as the
// host-CPython run (tests/py/test_core.py), executed unchanged inside Pyodide, plus the check
// that a wasm instance whose memory grew past 64 MiB is replaced once idle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { freshPyodide, py } from './helpers/pyodide.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('tests/py/test_core.py passes inside Pyodide (wasm backend)', async () => {
  const pyodide = await freshPyodide();
  // the committed fixtures the Python tests read
  const dir = '/tmp/fixtures/format-1.0';
  pyodide.FS.mkdirTree(dir);
  for (const name of ['cpython-3.11.elc', 'pyodide-3.14.elc']) {
    pyodide.FS.writeFile(`${dir}/${name}`, await readFile(path.join(ROOT, 'wasm/tests/fixtures/format-1.0', name)));
  }
  const source = await readFile(path.join(ROOT, 'tests/py/test_core.py'), 'utf8');
  pyodide.FS.writeFile('/tmp/test_core.py', source);
  const ran = await py(pyodide, `
import os, sys
os.environ["EL_FIXTURES"] = "/tmp/fixtures"
sys.path.insert(0, "/tmp")
import test_core
from elastic_lite import _core
assert type(_core.backend()).__name__ == "_WasmBackend"
names = [n for n in dir(test_core) if n.startswith("test_")]
for n in names:
    getattr(test_core, n)()
",".join(names)
`);
  assert.ok(ran.split(',').includes('test_wasm_instance_is_replaced_after_memory_grew_past_64_mib'));
  assert.ok(ran.split(',').length >= 9);
});
