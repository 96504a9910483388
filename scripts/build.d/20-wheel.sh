#!/usr/bin/env bash
# Builds build/wheels/elastic_lite-<version>-py3-none-any.whl: the Python package from py/,
# the C core build/wasm/elastic_lite.wasm and the IndexedDB store js/store/indexeddb.mjs as
# package data. Skips the work when the wheel is newer than all of them (py/build_wheel.py).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
if [ ! -f build/wasm/elastic_lite.wasm ] && [ ! -f scripts/build.d/10-core.sh ]; then
  # Only while the C core's build step has not landed yet: nothing to package.
  echo "[20-wheel] build/wasm/elastic_lite.wasm not built (no C core build step yet); wheel skipped" >&2
  exit 0
fi
exec .venv/bin/python py/build_wheel.py --out build/wheels \
  --wasm build/wasm/elastic_lite.wasm --js js/store/indexeddb.mjs
