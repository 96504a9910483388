// The hostile corpus (tests/py/hostile_corpus.py) for the tests that restore it outside
// Python's own test run: built in a fresh Pyodide under Node (the interpreter the CLI and the
// browser pages run), and the Python that checks its sentinels after a restore.
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { freshPyodide, py, pyBytes, pyJson } from '../node/helpers/pyodide.mjs';

const CORPUS = fileURLToPath(new URL('../py/hostile_corpus.py', import.meta.url));

/**
 * { hostile: every trick in one file, clean: a plain checkpoint (x = [1, 2, 3], a function
 * f), live: the ids of the payloads that really run in Pyodide when trusted }.
 */
export async function buildHostileFiles() {
  const pyodide = await freshPyodide();
  pyodide.FS.writeFile('/home/pyodide/hostile_corpus.py', await fs.readFile(CORPUS, 'utf8'));
  await py(pyodide, 'import hostile_corpus\n_items = hostile_corpus.build()');
  return {
    hostile: await pyBytes(pyodide, 'hostile_corpus.combined(_items)'),
    clean: await pyBytes(pyodide, `(lambda ns: (exec("x = [1, 2, 3]\\ndef f(v):\\n    return v + 1", ns),
      __import__("elastic_lite").snapshot(ns).data)[1])({"__name__": "__main__"})`),
    live: await pyJson(pyodide, '[i["id"] for i in _items if i["live"]]'),
  };
}

/**
 * Python run in the restored namespace: calls print (the manifest trick rebinds it to exec),
 * then prints one line "CHECK {found, kept}": the ids of the sentinels present (files in the
 * current directory of that Python, JS globals of its realm) and the benign variable `kept`.
 */
export const SENTINEL_CHECK = [
  'import builtins, os, js, json',
  `print(${JSON.stringify("open('el-pwned-manifest-print', 'w').close()")})`,
  'found = [f[len("el-pwned-"):] for f in os.listdir() if f.startswith("el-pwned-")]',
  'found += [k for k in ("pyodide_run_js", "js_eval") if getattr(js, "__el_pwned_" + k, None) is not None]',
  'builtins.print("CHECK " + json.dumps({"found": sorted(found), "kept": globals().get("kept")}))',
].join('\n');

/** The sentinel id of a corpus item (its JS-global tricks are named with underscores). */
export function sentinelOf(id) {
  return { 'pyodide-run-js': 'pyodide_run_js', 'js-eval': 'js_eval' }[id] ?? id;
}

/** The parsed CHECK line of some output, or null. */
export function checkOf(output) {
  const line = output.split('\n').find((l) => l.startsWith('CHECK '));
  return line ? JSON.parse(line.slice(6)) : null;
}
