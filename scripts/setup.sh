#!/usr/bin/env bash
# One set-up for every entry point (npm run build, npm start, npm test): installs what is
# missing and nothing else, so it is safe to rerun. Pins live in versions.env and package.json.
#   1. Debian packages (emscripten, chromium, clang for fuzzing, cmake) when missing
#   2. npm ci when node_modules is missing or older than package-lock.json
#   3. the project .venv with the host-Python tools (pytest, pyodide-lock, jupyterlite, ...)
#   4. the PyPI wheels Pyodide loads, into build/wheels (ignored by git)
#   5. scripts/setup.d/*.sh: set-up steps of individual parts, in name order
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=../versions.env
source versions.env
# Several builds may start at once (parallel test runs, a developer and an editor): one at a
# time does the set-up, the others wait and then find everything in place.
mkdir -p build
exec 9>build/.setup.lock
flock 9
log() { printf '[setup] %s\n' "$*" >&2; }

# 1. Debian packages -------------------------------------------------------------------
missing=()
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. npm packages ----------------------------------------------------------------------
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# 3. host-Python tools in .venv --------------------------------------------------------
VENV_STAMP=".venv/.elastic-lite-$(sha256sum versions.env | cut -c1-16)"
if [ ! -f "$VENV_STAMP" ]; then
  log "creating .venv with host-Python tools"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check \
    "pytest==$PYTEST_VERSION" \
    "pyodide-lock==$PYODIDE_LOCK_VERSION" \
    "cloudpickle==$CLOUDPICKLE_VERSION" "dill==$DILL_VERSION" \
    "jupyterlite-core==$JUPYTERLITE_CORE_VERSION" \
    "jupyterlite-pyodide-kernel==$JUPYTERLITE_PYODIDE_KERNEL_VERSION" \
    "jupyterlab==$JUPYTERLAB_VERSION"
  rm -f .venv/.elastic-lite-*
  touch "$VENV_STAMP"
fi

# 4. wheels Pyodide loads --------------------------------------------------------------
mkdir -p build/wheels
for spec in "cloudpickle==$CLOUDPICKLE_VERSION" "dill==$DILL_VERSION"; do
  name="${spec%%==*}"; ver="${spec##*==}"
  if ! ls "build/wheels/$name-$ver-"*.whl >/dev/null 2>&1; then
    log "downloading $spec wheel"
    .venv/bin/pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      -d build/wheels "$spec"
  fi
done

# 5. per-part set-up -------------------------------------------------------------------
for step in scripts/setup.d/*.sh; do
  [ -e "$step" ] || continue
  bash "$step"
done
