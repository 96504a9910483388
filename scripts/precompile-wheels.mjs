#!/usr/bin/env node
// `node scripts/precompile-wheels.mjs OUT_DIR WHEEL...`: writes to OUT_DIR a copy of each
// pure-Python wheel (same file name) that also holds the bytecode of its modules, compiled by
// Pyodide's own Python (npm `pyodide`, the interpreter the JupyterLite site serves), so that a
// Pyodide kernel imports them without compiling their sources on every start.
//
// Each `pkg/mod.py` gets `pkg/__pycache__/mod.<cache tag>.pyc` beside it (the name
// importlib.util.cache_from_source gives in that Python), an unchecked-hash pyc (PEP 552): the
// import system uses it without looking at the source's time or bytes (the files a wheel
// installs never change in a kernel; a wheel's unpacked files get new times in every kernel, so
// a time-checked pyc would never match). The sources stay, so tracebacks show their lines. The
// wheel's RECORD lists the new files with their hashes. A source that does not compile for this
// Python (py2-only test data some wheels carry) gets no pyc, as `compileall` would skip it.
// The output is byte-for-byte the same for the same inputs (entries keep their order and
// times; a pyc takes its source's time).
import fs from 'node:fs';
import path from 'node:path';

const [outDir, ...wheels] = process.argv.slice(2);
if (!outDir || wheels.length === 0) {
  console.error('usage: node scripts/precompile-wheels.mjs OUT_DIR WHEEL...');
  process.exit(2);
}
const { loadPyodide } = await import('pyodide');
const pyodide = await loadPyodide();
const compileWheel = pyodide.runPython(`
import base64, csv, hashlib, importlib.util, io, sys, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

def compile_wheel(src, dst):
    compiled = skipped = 0
    with zipfile.ZipFile(src) as zin:
        infos = zin.infolist()
        names = {i.filename for i in infos}
        record = next(i.filename for i in infos if i.filename.endswith('.dist-info/RECORD'))
        added = []  # (ZipInfo, bytes) of each pyc, written after its source
        out = io.BytesIO()
        with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as zout:
            for info in infos:
                data = zin.read(info)
                if info.filename == record:
                    continue  # written last, with the pycs in it
                zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
                if not info.filename.endswith('.py') or '.dist-info/' in info.filename:
                    continue
                pyc_name = importlib.util.cache_from_source(info.filename)
                if pyc_name in names:
                    continue
                try:
                    code = compile(data, info.filename, 'exec', dont_inherit=True)
                except (SyntaxError, ValueError):
                    skipped += 1
                    continue
                pyc = bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
                pinfo = zipfile.ZipInfo(pyc_name, date_time=info.date_time)
                pinfo.external_attr = 0o644 << 16
                zout.writestr(pinfo, pyc, compress_type=zipfile.ZIP_DEFLATED)
                added.append((pyc_name, pyc))
                compiled += 1
            rows = list(csv.reader(io.StringIO(zin.read(record).decode('utf-8'))))
            at = next((k for k, r in enumerate(rows) if r and r[0] == record), len(rows))
            for name, pyc in added:
                digest = base64.urlsafe_b64encode(hashlib.sha256(pyc).digest()).rstrip(b'=').decode()
                rows.insert(at, [name, 'sha256=' + digest, str(len(pyc))])
                at += 1
            text = io.StringIO()
            csv.writer(text, lineterminator='\\n').writerows(rows)
            rinfo = next(i for i in infos if i.filename == record)
            zout.writestr(rinfo, text.getvalue().encode('utf-8'), compress_type=zipfile.ZIP_DEFLATED)
    with open(dst, 'wb') as f:
        f.write(out.getvalue())
    return f'{compiled}' + (f' ({skipped} not Python {sys.version_info[0]}.{sys.version_info[1]})' if skipped else '')

compile_wheel`);
fs.mkdirSync(outDir, { recursive: true });
pyodide.FS.mkdirTree('/wheels');
const said = [];
for (const whl of wheels) {
  const name = path.basename(whl);
  pyodide.FS.writeFile(`/wheels/in-${name}`, fs.readFileSync(whl));
  const count = compileWheel(`/wheels/in-${name}`, `/wheels/${name}`);
  const tmp = path.join(outDir, `${name}.partial`);
  fs.writeFileSync(tmp, pyodide.FS.readFile(`/wheels/${name}`));
  fs.renameSync(tmp, path.join(outDir, name));
  pyodide.FS.unlink(`/wheels/in-${name}`);
  pyodide.FS.unlink(`/wheels/${name}`);
  said.push(`${name.split('-')[0]} ${count}`);
}
console.error(`[precompile-wheels] modules compiled: ${said.join(', ')}`);
compileWheel.destroy();
