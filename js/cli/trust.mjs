// The restore deny-list, read from the one place it lives: py/elastic_lite/denylist.json (the
// Python package reads the same file; see py/elastic_lite/_trust.py). A checkpoint written by
// Elastic Lite never imports these globals; a hostile one does, to run a command or code the
// moment it is restored. Restore refuses such records unless trusted; the CLI marks them
// (inspect) and warns (import). Not a sandbox: pickle can reach the same callables indirectly.
import fs from 'node:fs';

const FILE = new URL('../../py/elastic_lite/denylist.json', import.meta.url);
let rules = null;

// '*' matches any run of characters (dots included); nothing else is special (same as Python).
const pattern = (text) => new RegExp(`^${text.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*')}$`);

function load() {
  rules ??= JSON.parse(fs.readFileSync(FILE, 'utf8')).entries.map((e) => ({
    module: pattern(e.module), names: e.names.map(pattern), why: e.why,
  }));
  return rules;
}

/** The reason when module.name is deny-listed, else null. */
export function whyDenied(module, name) {
  for (const r of load()) if (r.module.test(module) && r.names.some((n) => n.test(name))) return r.why;
  return null;
}

/** [{ module, name, global: 'module.name', why }] of a record's globals that are deny-listed (each once). */
export function deniedGlobals(globals) {
  const out = []; const seen = new Set();
  for (const g of globals ?? []) {
    if (!Array.isArray(g) || g.length !== 2) continue;
    const [module, name] = g.map(String);
    const why = whyDenied(module, name);
    if (why && !seen.has(`${module}\0${name}`)) {
      seen.add(`${module}\0${name}`);
      out.push({ module, name, global: `${module}.${name}`, why });
    }
  }
  return out;
}

/** Records (of an inspection report) with deny-listed globals: [{ index, names, denied }]. */
export function deniedRecords(report) {
  return (report.records ?? [])
    .map((r) => ({ index: r.index, names: r.names ?? [], denied: deniedGlobals(r.globals) }))
    .filter((r) => r.denied.length);
}
