#!/usr/bin/env node
// Session recorder and replay planner benchmark: the same Python body
// (benchmarks/replay_cases.py) in host CPython (.venv) and in Pyodide under Node, side by side.
// Run after `npm run build`:
//
//   node benchmarks/replay.mjs          # a Markdown table (about a minute)
//   node benchmarks/replay.mjs --json   # the raw rows
//
// Per cell: median process CPU time of compile + exec, with and without the recorder's
// before()/after() around it, interleaved, in namespaces of 100 and 2,000 variables. Per
// checkpoint: host.checkpoint (in-memory store) of one recorded session with and without its
// recorder, interleaved.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPyodide } from '../js/pyodide-glue.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.join(HERE, '..');

function native() {
  const res = spawnSync(path.join(ROOT, '.venv/bin/python'), [path.join(HERE, 'replay_cases.py')], {
    encoding: 'utf8', env: { ...process.env, PYTHONPATH: path.join(ROOT, 'py') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (res.status !== 0) throw new Error(`replay_cases.py failed (${res.status})`);
  return JSON.parse(res.stdout);
}

async function pyodide() {
  const py = await createPyodide({ stdout: () => {}, stderr: () => {} });
  py.FS.writeFile('/home/pyodide/replay_cases.py', readFileSync(path.join(HERE, 'replay_cases.py')));
  const text = await py.runPythonAsync(
    'import sys, json; sys.path.insert(0, "/home/pyodide"); import replay_cases; json.dumps(replay_cases.run())');
  return JSON.parse(text);
}

const envs = [native(), await pyodide()];
if (process.argv.includes('--json')) {
  console.log(JSON.stringify(envs, null, 2));
} else {
  const f = (v, d = 1) => (v == null ? '-' : v.toFixed(d));
  console.log(`cores ${os.cpus().length}, load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log('| environment | cell | variables | plain µs | recorded µs | overhead µs | recorded / plain |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const env of envs) {
    for (const r of env.rows.filter((row) => 'plain_us' in row)) {
      console.log(`| ${env.platform} ${env.python} | ${r.case} | ${r.nvars} | ${f(r.plain_us)} | ` +
        `${f(r.recorded_us)} | ${f(r.overhead_us)} | ${f(r.ratio, 2)}× |`);
    }
  }
  console.log('\n| environment | planning | prune + to_json ms | plan ms | history JSON | cells kept | cells planned |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const env of envs) {
    for (const r of env.rows.filter((row) => 'plan_ms' in row)) {
      console.log(`| ${env.platform} ${env.python} | ${r.case} | ${f(r.prune_and_json_ms)} | ` +
        `${f(r.plan_ms)} | ${(r.history_bytes / 1024).toFixed(0)} KiB | ${r.cells_kept} | ${r.planned_cells} |`);
    }
  }
  console.log('\n| environment | checkpoint | without recorder ms | with recorder ms | with / without | replay side ms | recomputed |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const env of envs) {
    for (const r of env.rows.filter((row) => 'prep_ms' in row)) {
      console.log(`| ${env.platform} ${env.python} | ${r.case} | ${f(r.plain_ms)} | ${f(r.recorded_ms)} | ` +
        `${f(r.ratio, 2)}× | ${f(r.prep_ms)} | ${r.recompute} |`);
    }
  }
}
