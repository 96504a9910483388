#!/usr/bin/env bash
# Builds the JupyterLite part (issue 6):
#   1. the prebuilt JupyterLab/JupyterLite extension js/extension -> its labextension folder
#      (tsc, then `jupyter labextension build` with @jupyterlab/builder from npm)
#   2. the offline site build/lite: a staging lite dir build/lite-src with Pyodide from the npm
#      package, every wheel the kernel loads plus a lock naming only those (lite/make_lock.py),
#      our wheel (+ cloudpickle, dill) for piplite, the example notebook; then `jupyter lite build`
# Skips each step when its inputs have not changed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
log() { printf '[build:jupyterlite] %s\n' "$*" >&2; }
export PATH="$ROOT/.venv/bin:$PATH"

# a content hash of files (names + bytes), to decide whether a step is up to date
# (inputs that do not exist yet, e.g. js/core.mjs before it lands, are left out)
stamp_of() {
  local p existing=()
  for p in "$@"; do [ -e "$p" ] && existing+=("$p"); done
  find "${existing[@]}" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32
}

# 1. the extension ---------------------------------------------------------------------
ext=js/extension
# The extension's version is the project's (package.json): stamp it into the extension's
# package.json and lock when it differs (after a version change; commit them with it).
node -e '
const fs = require("fs");
const version = JSON.parse(fs.readFileSync("package.json", "utf8")).version;
for (const file of ["js/extension/package.json", "js/extension/package-lock.json"]) {
  const doc = JSON.parse(fs.readFileSync(file, "utf8"));
  const targets = file.endsWith("lock.json") ? [doc, doc.packages[""]] : [doc];
  if (targets.every((t) => t.version === version)) continue;
  for (const t of targets) t.version = version;
  fs.writeFileSync(file, JSON.stringify(doc, null, 2) + "\n");
  console.error(`[build:jupyterlite] ${file}: version set to ${version} (from package.json)`);
}'
labext="$ext/elastic_lite_jupyterlite/labextension"
ext_inputs=("$ext/src" "$ext/schema" "$ext/style" "$ext/package.json" "$ext/package-lock.json" "$ext/tsconfig.json")
ext_stamp="$(stamp_of "${ext_inputs[@]}")"
if [ ! -f "$labext/package.json" ] || [ "$(cat "$ext/.build-stamp" 2>/dev/null)" != "$ext_stamp" ]; then
  log "building the extension"
  (cd "$ext" && node_modules/.bin/tsc -p . && jupyter labextension build . >/dev/null)
  echo "$ext_stamp" > "$ext/.build-stamp"
fi
# The page imports the project's own ES modules (the IndexedDB store, the C core's loader) and
# the .wasm at run time from the extension's static folder (see js/extension/src/modules.ts).
rt="$labext/static/elastic-lite"
mkdir -p "$rt/js/store"
for f in js/*.mjs js/store/*.mjs; do
  [ -e "$f" ] && cp -u "$f" "$rt/$f"
done
[ -f build/wasm/elastic_lite.wasm ] && cp -u build/wasm/elastic_lite.wasm "$rt/elastic_lite.wasm"

# 2. the site --------------------------------------------------------------------------
src=build/lite-src
out=build/lite
kext=.venv/share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static/pypi
shopt -s nullglob
own_wheels=(build/wheels/elastic_lite-*.whl)
[ ${#own_wheels[@]} -gt 0 ] || log "WARNING: no build/wheels/elastic_lite-*.whl yet: the site will lack elastic_lite"
kernel_wheels=(build/lite-wheels/*.whl "$kext"/piplite-*.whl "$kext"/pyodide_kernel-*.whl "$kext"/ipykernel-*.whl
               build/wheels/cloudpickle-*.whl build/wheels/dill-*.whl "${own_wheels[@]}")
site_inputs=(lite versions.env node_modules/pyodide/package.json "$labext" "${kernel_wheels[@]}")
site_stamp="$(stamp_of "${site_inputs[@]}")"
if [ -f "$out/jupyter-lite.json" ] && [ "$(cat "$out/.build-stamp" 2>/dev/null)" = "$site_stamp" ]; then
  exit 0
fi
log "building the site into $out"
rm -rf "$src" "$out"
mkdir -p "$src/static/pyodide" "$src/pypi"
cp -r lite/files "$src/files"
# Pyodide from the npm package: the interpreter only (its lock is replaced below)
for f in pyodide.mjs pyodide.asm.mjs pyodide.asm.wasm python_stdlib.zip package.json; do
  cp "node_modules/pyodide/$f" "$src/static/pyodide/$f"
done
python lite/make_lock.py node_modules/pyodide/pyodide-lock.json "$src/static/pyodide" "${kernel_wheels[@]}"
# the same cloudpickle/dill/elastic_lite wheels for `%pip install` through piplite
cp build/wheels/cloudpickle-*.whl build/wheels/dill-*.whl "${own_wheels[@]}" "$src/pypi/"
# preload only what the lock really has (elastic-lite is absent until its wheel exists)
python - "$src" <<'PY'
import json, sys
from pathlib import Path
src = Path(sys.argv[1])
cfg = json.loads(Path("lite/jupyter-lite.json").read_text())
lock = json.loads((src / "static/pyodide/pyodide-lock.json").read_text())
kernel = cfg["jupyter-config-data"]["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
opts = kernel["loadPyodideOptions"]
opts["packages"] = [p for p in opts["packages"] if p in lock["packages"]]
(src / "jupyter-lite.json").write_text(json.dumps(cfg, indent=2))
PY
(cd "$src" && jupyter lite build --no-sourcemaps --lite-dir . --output-dir "$ROOT/$out" \
   --LiteBuildConfig.federated_extensions="$ROOT/$labext" >"$ROOT/build/lite-build.log" 2>&1) \
  || { tail -40 build/lite-build.log >&2; log "jupyter lite build failed (log: build/lite-build.log)"; exit 1; }
echo "$site_stamp" > "$out/.build-stamp"
log "site ready: $out"
