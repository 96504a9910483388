#!/usr/bin/env bash
# Builds build/wheels/elastic_lite-<version>-py3-none-any.whl from py/ with its PEP 517 backend
# (hatchling, offline), carrying the C core build/wasm/elastic_lite.wasm (from 10-core.sh), the
# IndexedDB store js/store/indexeddb.mjs and the deny-list; and build/wheels/wheels.json (the
# list of wheels a browser fetches). Skips the work when the wheel is newer than every input.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
exec .venv/bin/python py/build_wheel.py --out build/wheels
