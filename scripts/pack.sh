#!/usr/bin/env bash
# `npm run pack` (also run by `npm test`): builds what is out of date, then writes the packages
# a user installs into dist/ (ignored by git), all of the one version of package.json:
#   elastic-lite-<version>.tgz                          npm: CLI + JS API + .wasm + wheels
#   elastic_lite-<version>-py3-none-any.whl             the kernel package for Pyodide (.wasm core)
#   elastic_lite-<version>-py3-none-<platform>.whl      the kernel package for host CPython (native
#                                                       core; manylinux_2_17_x86_64 when built here)
#   elastic_lite-<version>.tar.gz                       its sdist (compiles the core where installed)
#   jupyterlite_elastic_lite-<version>-py3-none-any.whl the JupyterLite extension
#   pyodide-<pyodide version>.tar.bz2                   offline Pyodide for `jupyter lite build --pyodide`
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bash scripts/build.sh
VERSION="$(node -p 'require("./package.json").version')"
PYODIDE_VERSION="$(node -p 'require("./node_modules/pyodide/package.json").version')"
mkdir -p dist
rm -f dist/elastic_lite-*.whl dist/elastic_lite-*.tar.gz dist/jupyterlite_elastic_lite-*.whl dist/pyodide-*.tar.bz2
cp "build/wheels/elastic_lite-$VERSION-py3-none-any.whl" \
   build/native-wheel/elastic_lite-"$VERSION"-py3-none-*.whl \
   "build/native-wheel/elastic_lite-$VERSION.tar.gz" \
   "build/jupyterlite/jupyterlite_elastic_lite-$VERSION-py3-none-any.whl" \
   "build/jupyterlite/pyodide-$PYODIDE_VERSION.tar.bz2" dist/
node scripts/pack-npm.mjs
printf '[pack] dist/: %s\n' "$(cd dist && ls | tr '\n' ' ')" >&2
