#!/usr/bin/env bash
# Builds the kernel package from py/ with its PEP 517 backend (hatchling, offline):
#   build/wheels/elastic_lite-<version>-py3-none-any.whl   for Pyodide/JupyterLite: the C core
#       build/wasm/elastic_lite.wasm (from 10-core.sh), the IndexedDB store js/store/indexeddb.mjs
#       and the deny-list; and build/wheels/wheels.json (the list of wheels a browser fetches)
#   build/native-wheel/elastic_lite-<version>-py3-none-<platform>.whl   for host CPython: the
#       shared library build/native/libelastic_lite.so inside (manylinux_2_17_x86_64 here)
#   build/native-wheel/elastic_lite-<version>.tar.gz   the sdist: compiles the core where installed
# Skips each when it is newer than every input.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
exec .venv/bin/python py/build_wheel.py --out build/wheels --native-out build/native-wheel
