#!/usr/bin/env bash
# Builds the JupyterLite part, each step skipped when its inputs have not changed:
#   1. the labextension js/extension -> js/extension/jupyterlite_elastic_lite/labextension
#      (tsc, then `jupyter labextension build` with @jupyterlab/builder from npm), with the
#      version of package.json stamped into js/extension/package.json first
#   2. what the labextension carries at run time: static/elastic-lite/ (the page's own ES
#      modules and the C core's .wasm) and static/pypi/ (the kernel wheel, cloudpickle, dill and
#      their piplite index all.json), each wheel with its modules' bytecode for Pyodide's Python
#      (scripts/precompile-wheels.mjs: a kernel imports them without compiling their sources)
#   3. build/jupyterlite/jupyterlite_elastic_lite-<version>-py3-none-any.whl, the extension as a
#      Python package (js/extension/pyproject.toml, hatchling, offline)
#   4. build/jupyterlite/pyodide-<pyodide version>.tar.bz2, an offline Pyodide distribution
#      (lite/make_pyodide.py: the interpreter from npm, the kernel's start-up wheels with their
#      bytecode, as in 2, a lock, and a memory snapshot of a freshly started interpreter that
#      the kernels start from: scripts/lite-snapshot.mjs, made in the tests' Chromium)
#   5. the offline site build/lite, built the way README documents for any offline site: the
#      extension wheel pip-installed into the build environment (.venv), and
#      `jupyter lite build --pyodide <that archive>`; the site's files come from lite/
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
log() { printf '[build:jupyterlite] %s\n' "$*" >&2; }
export PATH="$ROOT/.venv/bin:$PATH"
VERSION="$(node -p 'require("./package.json").version')"
PYODIDE_VERSION="$(node -p 'require("./node_modules/pyodide/package.json").version')"

# a content hash of files (names + bytes), to decide whether a step is up to date
stamp_of() {
  find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32
}
# up_to_date STAMP_FILE HASH: true when the step that writes STAMP_FILE last ran on HASH
up_to_date() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

# 1. the labextension -------------------------------------------------------------------
ext=js/extension
labext="$ext/jupyterlite_elastic_lite/labextension"
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
ext_stamp="$(stamp_of "$ext/src" "$ext/schema" "$ext/style" "$ext/package.json" "$ext/package-lock.json" "$ext/tsconfig.json")"
if [ ! -f "$labext/package.json" ] || ! up_to_date "$ext/.build-stamp" "$ext_stamp"; then
  log "building the labextension"
  rm -rf "$labext"
  (cd "$ext" && node_modules/.bin/tsc -p . && jupyter labextension build . >/dev/null)
  echo "$ext_stamp" > "$ext/.build-stamp"
fi

# 2. what it carries ------------------------------------------------------------------------
# The page imports the project's own ES modules (the IndexedDB store, the C core's loader) and
# the .wasm at run time from the extension's static folder (see js/extension/src/modules.ts).
rt="$labext/static/elastic-lite"
for f in js/*.mjs js/store/*.mjs js/shared/*.mjs; do
  [ -e "$f" ] || continue
  mkdir -p "$rt/$(dirname "$f")"
  cp -u "$f" "$rt/$f"
done
cp -u build/wasm/elastic_lite.wasm "$rt/elastic_lite.wasm"
# The kernel wheel and what it requires, with their piplite index (the format
# jupyterlite-pyodide-kernel reads: its own write_wheel_index).
pypi="$labext/static/pypi"
kernel_wheels=(build/wheels/elastic_lite-"$VERSION"-py3-none-any.whl build/wheels/cloudpickle-*.whl build/wheels/dill-*.whl)
pypi_stamp="$(stamp_of "${kernel_wheels[@]}" scripts/precompile-wheels.mjs node_modules/pyodide/package.json)"
out_dir=build/jupyterlite
mkdir -p "$out_dir"
if [ ! -f "$pypi/all.json" ] || ! up_to_date "$out_dir/pypi.stamp" "$pypi_stamp"; then
  log "putting the kernel wheel into the labextension's piplite index"
  rm -rf "$pypi"; mkdir -p "$pypi"
  node scripts/precompile-wheels.mjs "$pypi" "${kernel_wheels[@]}"
  python -c 'import sys; from pathlib import Path
from jupyterlite_pyodide_kernel.addons.piplite import write_wheel_index
write_wheel_index(Path(sys.argv[1]))' "$pypi"
  echo "$pypi_stamp" > "$out_dir/pypi.stamp"
fi

# 3. the extension wheel ------------------------------------------------------------------
ext_wheel="$out_dir/jupyterlite_elastic_lite-$VERSION-py3-none-any.whl"
wheel_stamp="$(stamp_of "$labext" "$ext/pyproject.toml" "$ext/hatch_build.py" "$ext/install.json" "$ext/jupyterlite_elastic_lite/__init__.py" "$ext/jupyterlite_elastic_lite/addon.py" package.json)"
if [ ! -f "$ext_wheel" ] || ! up_to_date "$ext_wheel.stamp" "$wheel_stamp"; then
  log "building $ext_wheel"
  rm -f "$out_dir"/jupyterlite_elastic_lite-*.whl*
  pip wheel --no-build-isolation --no-deps --no-index --quiet --wheel-dir "$out_dir" "$ext"
  echo "$wheel_stamp" > "$ext_wheel.stamp"
fi

# 4. the offline Pyodide distribution ----------------------------------------------------------
pyodide_archive="$out_dir/pyodide-$PYODIDE_VERSION.tar.bz2"
pyodide_stamp="$(stamp_of node_modules/pyodide/package.json build/lite-wheels lite/make_pyodide.py scripts/precompile-wheels.mjs scripts/lite-snapshot.mjs lite/pyodide-from-snapshot.mjs)"
if [ ! -f "$pyodide_archive" ] || ! up_to_date "$pyodide_archive.stamp" "$pyodide_stamp"; then
  rm -f "$out_dir"/pyodide-*.tar.bz2*
  compiled="$out_dir/lite-wheels"   # the kernel's start-up wheels with their bytecode
  rm -rf "$compiled"
  node scripts/precompile-wheels.mjs "$compiled" build/lite-wheels/*.whl
  python lite/make_pyodide.py --snapshot node_modules/pyodide "$pyodide_archive" "$compiled"/*.whl
  rm -rf "$compiled"
  echo "$pyodide_stamp" > "$pyodide_archive.stamp"
fi

# 5. the site -------------------------------------------------------------------------------
out="${ELASTIC_LITE_SITE_OUT:-build/lite}"  # another folder: a scratch site (a developer's check)
site_stamp="$(stamp_of lite "$ext_wheel" "$pyodide_archive")"
if [ -f "$out/jupyter-lite.json" ] && up_to_date "$out/.build-stamp" "$site_stamp"; then
  exit 0
fi
log "building the site into $out"
pip install --quiet --no-deps --no-index --force-reinstall "$ext_wheel"
# The lite dir: lite/'s sources in a scratch folder (the build keeps its database and cache
# in the lite dir; build/ is where such files belong).
case "$out" in /*) out_abs="$out" ;; *) out_abs="$ROOT/$out" ;; esac
build_log="$out_abs-build.log"   # build/lite-build.log for the project's site
src="$out_abs-src"
rm -rf "$src" "$out_abs"
mkdir -p "$src"
cp -r lite/files lite/jupyter-lite.json "$src/"
(cd "$src" && jupyter lite build --no-sourcemaps --lite-dir . --output-dir "$out_abs" \
   --pyodide "$ROOT/$pyodide_archive" >"$build_log" 2>&1) \
  || { tail -40 "$build_log" >&2; log "jupyter lite build failed (log: $build_log)"; exit 1; }
echo "$site_stamp" > "$out/.build-stamp"
log "site ready: $out"
