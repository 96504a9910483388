#!/usr/bin/env bash
# Set-up for the JupyterLite part (issue 6): everything the offline site and the extension
# build need, fetched once from PyPI / npm so that nothing is fetched at build, test or run time.
#   1. the pure-Python wheels the Pyodide kernel loads at start (LITE_KERNEL_WHEELS in
#      versions.env) into build/lite-wheels/, for the Pyodide 314 / Python 3.14 target
#   2. js/extension/node_modules (@jupyterlab/builder, typescript, JupyterLab typings)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=../../versions.env
source versions.env
log() { printf '[setup:jupyterlite] %s\n' "$*" >&2; }

# 1. kernel wheels ----------------------------------------------------------------------
dest=build/lite-wheels
mkdir -p "$dest"
need=()
for spec in $LITE_KERNEL_WHEELS; do
  name="${spec%%==*}"; ver="${spec##*==}"
  # wheel file names use underscores for dashes
  fname="${name//-/_}"
  ls "$dest/$fname-$ver-"*.whl >/dev/null 2>&1 || need+=("$spec")
done
if [ ${#need[@]} -gt 0 ]; then
  log "downloading kernel wheels: ${need[*]}"
  # pure-Python wheels only: the kernel runs in Pyodide (Python 3.14, emscripten)
  .venv/bin/pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform any --implementation py --abi none --python-version 3.14 \
    -d "$dest" "${need[@]}"
fi

# 2. extension build tools ---------------------------------------------------------------
ext=js/extension
if [ ! -f "$ext/node_modules/.package-lock.json" ] || [ "$ext/package-lock.json" -nt "$ext/node_modules/.package-lock.json" ]; then
  log "npm ci in $ext"
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
fi
