#!/usr/bin/env bash
# Builds build/wheels/elastic_lite-<version>-py3-none-any.whl: the Python package from py/,
# the C core build/wasm/elastic_lite.wasm (from 10-core.sh) and the IndexedDB store
# js/store/indexeddb.mjs as package data, plus build/wheels/wheels.json (the list of wheels a
# browser fetches). py/elastic_lite/*.json (the restore deny-list) is package data too. Skips
# the work when the wheel is newer than all inputs (py/build_wheel.py).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
exec .venv/bin/python py/build_wheel.py --out build/wheels \
  --wasm build/wasm/elastic_lite.wasm --js js/store/indexeddb.mjs
