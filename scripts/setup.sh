#!/usr/bin/env bash
# One set-up for every entry point: installs what is missing and nothing else, so it is safe
# to rerun. Pins live in versions.env and package.json.
#
#   scripts/setup.sh --demo   what `npm start` needs to build and serve the demo page: the
#                             Debian packages that build the C core, npm packages, a .venv with
#                             the wheel build backend, the wheels Pyodide loads
#   scripts/setup.sh          everything (`npm run build`, `npm test`): also Chromium and clang,
#                             the host-Python test and JupyterLite tools, the wheelhouse the
#                             package tests install from offline, scripts/setup.d/*.sh
#
#   1. Debian packages (APT_PACKAGES_DEMO, + APT_PACKAGES_TEST) when missing
#   2. npm ci when node_modules is missing or older than package-lock.json
#   3. the project .venv (hatchling; + pytest, import-linter, pyodide-lock, jupyterlite, ...)
#   4. the PyPI wheels Pyodide loads, into build/wheels (ignored by git)
#   5. everything only: build/pip-wheels, the wheelhouse of the JupyterLite build tools (the
#      package tests create virtual environments from it, offline); the npm package's runtime
#      dependencies in npm's cache (the package tests install it offline); scripts/setup.d/*.sh,
#      the set-up steps of individual parts, in name order (ELASTIC_LITE_SETUP=all is exported)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PROFILE=all
case "${1:-}" in
  --demo) PROFILE=demo ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--demo]" >&2; exit 2 ;;
esac
# shellcheck source=../versions.env
source versions.env
# Several builds may start at once (parallel test runs, a developer and an editor): one at a
# time does the set-up, the others wait and then find everything in place.
mkdir -p build
exec 9>build/.setup.lock
flock 9
log() { printf '[setup] %s\n' "$*" >&2; }

# 1. Debian packages -------------------------------------------------------------------
wanted="$APT_PACKAGES_DEMO"
[ "$PROFILE" = demo ] || wanted="$wanted $APT_PACKAGES_TEST"
missing=()
for p in $wanted; do
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
# The wheelhouse of the JupyterLite build tools comes first: .venv installs from it, and the
# package tests build fresh virtual environments from it without the network.
[ -x .venv/bin/python ] || { log "creating .venv"; python3 -m venv .venv; }
wheelhouse=build/pip-wheels
# (the [contents] extra, jupyter-server, is what `jupyter lite build` needs to put notebooks
# into a site)
jupyterlite_specs=("jupyterlite-core[contents]==$JUPYTERLITE_CORE_VERSION"
                   "jupyterlite-pyodide-kernel==$JUPYTERLITE_PYODIDE_KERNEL_VERSION")
if [ "$PROFILE" = all ]; then
  wh_stamp="$wheelhouse/.stamp-$(printf '%s\n' "${jupyterlite_specs[@]}" | sha256sum | cut -c1-16)"
  if [ ! -f "$wh_stamp" ]; then
    log "downloading the JupyterLite build tools into $wheelhouse"
    mkdir -p "$wheelhouse"
    .venv/bin/pip download -q --only-binary=:all: -d "$wheelhouse" "${jupyterlite_specs[@]}"
    rm -f "$wheelhouse"/.stamp-*
    touch "$wh_stamp"
  fi
fi

hash="$(sha256sum versions.env | cut -c1-16)"
if [ "$PROFILE" = demo ] && [ -f ".venv/.elastic-lite-all-$hash" ]; then
  :  # a full set-up is a superset of the demo's
elif [ ! -f ".venv/.elastic-lite-$PROFILE-$hash" ]; then
  log "installing the host-Python tools into .venv ($PROFILE)"
  tools=("hatchling==$HATCHLING_VERSION")
  if [ "$PROFILE" = all ]; then
    tools+=("pytest==$PYTEST_VERSION" "pyodide-lock==$PYODIDE_LOCK_VERSION"
            "import-linter==$IMPORT_LINTER_VERSION" "grimp==$GRIMP_VERSION"
            "cloudpickle==$CLOUDPICKLE_VERSION" "dill==$DILL_VERSION"
            "${jupyterlite_specs[@]}" "jupyterlab==$JUPYTERLAB_VERSION"
            "numpy==$NUMPY_VERSION" "pandas==$PANDAS_VERSION"
            "matplotlib==$MATPLOTLIB_VERSION" "scikit-learn==$SCIKIT_LEARN_VERSION")
  fi
  from_wheelhouse=(); [ -d "$wheelhouse" ] && from_wheelhouse=(--find-links "$wheelhouse")
  .venv/bin/pip install -q --disable-pip-version-check "${from_wheelhouse[@]}" "${tools[@]}"
  rm -f .venv/.elastic-lite-*
  touch ".venv/.elastic-lite-$PROFILE-$hash"
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

[ "$PROFILE" = all ] || exit 0

# 5. the npm cache holds the npm package's runtime dependencies (pyodide and what it requires,
#    as package-lock.json resolves them), so `npm install --offline dist/elastic-lite-*.tgz`
#    works in the package tests ---------------------------------------------------------
npm_stamp="build/.npm-cache-$(sha256sum package-lock.json | cut -c1-16)"
if [ ! -f "$npm_stamp" ]; then
  mapfile -t runtime < <(node -e '
    const lock = require("./package-lock.json");
    for (const [where, p] of Object.entries(lock.packages))
      if (where && !p.dev) console.log(`${where.replace(/^.*node_modules\//, "")}@${p.version}`);')
  if [ ${#runtime[@]} -gt 0 ]; then
    log "npm cache add ${runtime[*]}"
    npm cache add --loglevel=error "${runtime[@]}"
  fi
  rm -f build/.npm-cache-*
  touch "$npm_stamp"
fi

# 6. per-part set-up -------------------------------------------------------------------
export ELASTIC_LITE_SETUP=all
for step in scripts/setup.d/*.sh; do
  [ -e "$step" ] || continue
  bash "$step"
done
