#!/usr/bin/env node
// Serializer benchmark: the table behind Elastic Lite's design, inside Pyodide under Node and
// in native CPython, side by side. Run after `npm run build`:
//
//   node benchmarks/serializer.mjs            # prints a Markdown table (takes a few minutes)
//   node benchmarks/serializer.mjs --json     # the raw rows (also always in build/bench/)
//
// Groups: 100,000 small dicts; 20,000 instances of a notebook-defined class; 50 MiB of bytes.
// Serializers: dill, dill(byref=True), pickle, cloudpickle, pickle-then-dill, and
// elastic_lite.snapshot() (grouping walk + policy + the C core's sink, container included).
// Dump and load are medians of 5 of the process's CPU time (wall times are in --json; on a
// shared machine they swing 2-3x between runs); "fresh" = does the payload restore in an interpreter where
// the notebook code never ran (a new process / a new Pyodide instance). The same Python body
// (benchmarks/serializer_cases.py) runs in both environments.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createPyodide } from '../js/pyodide-glue.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');
const log = (msg) => process.stderr.write(`[serializer] ${msg}\n`);

function nativeRows() {
  log('native CPython (.venv) ...');
  const res = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(HERE, 'serializer_native.py')],
    { encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'inherit'] });
  if (res.status !== 0) throw new Error(`serializer_native.py failed (${res.status})`);
  return JSON.parse(res.stdout);
}

async function loadBench(pyodide) {
  for (const f of ['serializer_cases.py', 'serializer_shapes.py']) {
    pyodide.FS.writeFile(`/home/pyodide/${f}`, readFileSync(path.join(HERE, f)));
  }
  await pyodide.runPythonAsync('import sys; sys.path.insert(0, "/home/pyodide"); import serializer_cases as bench');
}

async function pyodideRows() {
  log('Pyodide under Node ...');
  const quiet = { stdout: () => {}, stderr: () => {} };
  const A = await createPyodide(quiet);
  await loadBench(A);
  const version = A.runPython('import sys; sys.version.split()[0]');
  const cases = A.runPython('list(bench.CASES)').toJs();
  const freshOrder = A.runPython('bench.FRESH_ORDER').toJs();
  const rows = [];
  for (const c of cases) {
    // One fresh interpreter per group, checks in FRESH_ORDER (by-reference loads first).
    const B = await createPyodide(quiet);
    await loadBench(B);
    A.runPython(`bench.setup(${JSON.stringify(c)})`);
    const res = A.runPython(`_rows, _payloads = bench.measure_case(${JSON.stringify(c)}); (_rows, _payloads)`);
    const caseRows = res.get(0).toJs({ dict_converter: Object.fromEntries });
    const payloadsPy = res.get(1);
    const payloads = new Map();
    for (const row of caseRows) {
      row.env = `Pyodide ${version} (Node ${process.versions.node})`;
      const p = payloadsPy.get(row.serializer);
      payloads.set(row.serializer, p ? p.toJs() : null);
      p?.destroy();
      rows.push(row);
      log(`pyodide ${c} ${row.serializer}: ${row.dump_ms?.toFixed(1)} ms CPU`);
    }
    payloadsPy.destroy();
    res.destroy();
    A.runPython('del _rows, _payloads');
    A.runPython(`bench.teardown(${JSON.stringify(c)})`);
    const check = B.runPython('lambda c, s, p: bench.check_fresh(c, s, p.to_bytes())');
    for (const s of freshOrder) {
      const row = rows.find((r) => r.case === c && r.serializer === s);
      row.fresh = payloads.get(s) ? check(c, s, payloads.get(s)) : 'no';
    }
    check.destroy();
    payloads.clear();
  }
  return rows;
}

const fmt = (v) => (v == null ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
const mb = (n) => (n == null ? '—' : (n / 1e6).toFixed(2));

function table(rows) {
  const envs = [...new Set(rows.map((r) => r.env))];
  const out = [];
  for (const c of [...new Set(rows.map((r) => r.case))]) {
    out.push(`\n**${c}**\n`);
    out.push(`| serializer | size MB | ${envs.map((e) => `${e}: dump CPU ms | load CPU ms | × pickle | fresh`).join(' | ')} |`);
    out.push(`|---|---:|${envs.map(() => '---:|---:|---:|---').join('|')}|`);
    for (const s of [...new Set(rows.filter((r) => r.case === c).map((r) => r.serializer))]) {
      const cells = envs.map((e) => {
        const r = rows.find((x) => x.env === e && x.case === c && x.serializer === s);
        const p = rows.find((x) => x.env === e && x.case === c && x.serializer === 'pickle');
        const ratio = r?.dump_ms && p?.dump_ms ? `${(r.dump_ms / p.dump_ms).toFixed(2)}×` : '—';
        return `${fmt(r?.dump_ms)} | ${fmt(r?.load_ms)} | ${ratio} | ${r?.fresh ?? '—'}`;
      });
      const any = rows.find((x) => x.case === c && x.serializer === s);
      out.push(`| ${s} | ${mb(any?.size)} | ${cells.join(' | ')} |`);
    }
  }
  const lines = envs.map((e) => {
    const get = (c, s) => rows.find((x) => x.env === e && x.case === c && x.serializer === s)?.dump_ms;
    const snap = get('dicts', 'elastic_lite.snapshot');
    return `- ${e}: dicts snapshot()/pickle = ${(snap / get('dicts', 'pickle')).toFixed(2)}× (target ≤ 1.25×), `
      + `dill/snapshot() = ${(get('dicts', 'dill') / snap).toFixed(1)}× (target ≥ 10×)`;
  });
  return `${out.join('\n')}\n\n${lines.join('\n')}\n`;
}

const rows = [...nativeRows(), ...(await pyodideRows())];
mkdirSync(path.join(ROOT, 'build/bench'), { recursive: true });
writeFileSync(path.join(ROOT, 'build/bench/serializer.json'), JSON.stringify(rows, null, 2));
log('raw rows (with wall times) in build/bench/serializer.json');
if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
else console.log(table(rows));
