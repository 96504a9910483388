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
#   scripts/setup.sh --system only the Debian packages of everything (step 1): what building
#                             the C core needs (scripts/build.sh builds it beside the rest)
#
#   1. Debian packages (APT_PACKAGES_DEMO, + APT_PACKAGES_TEST) when missing
#   2. npm ci when node_modules is missing or older than package-lock.json
#   3. the project .venv (hatchling; + pytest, import-linter, pyodide-lock, jupyterlite, ...)
#   4. the PyPI wheels Pyodide loads, into build/wheels (ignored by git)
#   5. everything only: build/pip-wheels, the wheelhouse of the JupyterLite build tools (the
#      package tests create virtual environments from it, offline); the npm package's runtime
#      dependencies in npm's cache (the package tests install it offline); scripts/setup.d/*.sh,
#      the set-up steps of individual parts, in name order (ELASTIC_LITE_SETUP=all is exported)
# npm ci and the steps of scripts/setup.d run beside the .venv's installs (background jobs, each
# waited for; a failed one fails the set-up): on a fresh clone they would otherwise wait for
# each other, one core idle.
set -euo pipefail
shopt -s inherit_errexit  # a failed download inside "$(wheelhouse ...)" stops the set-up
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PROFILE=all
SYSTEM_ONLY=
case "${1:-}" in
  --demo) PROFILE=demo ;;
  --system) SYSTEM_ONLY=1 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--demo | --system]" >&2; exit 2 ;;
esac
# shellcheck source=../versions.env
source versions.env
# Several builds may start at once (parallel test runs, a developer and an editor): one at a
# time does the set-up, the others wait and then find everything in place.
mkdir -p build
exec 9>build/.setup.lock
flock 9
log() { printf '[setup] %s\n' "$*" >&2; }

# beside NAME CMD...: runs CMD in the background; await_all waits for every one, and fails
# naming those that failed.
beside_pids=(); beside_names=()
trap '[ ${#beside_pids[@]} -eq 0 ] || kill "${beside_pids[@]}" 2>/dev/null' EXIT  # a step failed
beside() { local name="$1"; shift; "$@" & beside_pids+=("$!"); beside_names+=("$name"); }
await_all() {
  local i failed=()
  for i in "${!beside_pids[@]}"; do wait "${beside_pids[$i]}" || failed+=("${beside_names[$i]}"); done
  beside_pids=(); beside_names=()
  if [ ${#failed[@]} -gt 0 ]; then log "failed: ${failed[*]}"; return 1; fi
}

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
[ -z "$SYSTEM_ONLY" ] || exit 0

# 2. npm packages ----------------------------------------------------------------------
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  beside "npm ci" npm ci --no-audit --no-fund --loglevel=error
fi

# 3. host-Python tools in .venv --------------------------------------------------------
# The wheelhouse of the JupyterLite build tools comes first: .venv installs from it, and the
# package tests build fresh virtual environments from it without the network.
[ -x .venv/bin/python ] || { log "creating .venv"; python3 -m venv .venv; }

# 6. per-part set-up (they may use .venv/bin/pip, not the tools below) --------------------
if [ "$PROFILE" = all ]; then
  export ELASTIC_LITE_SETUP=all
  for step in scripts/setup.d/*.sh; do
    [ -e "$step" ] || continue
    beside "$step" bash "$step"
  done
fi

# Wheels come from wheelhouses in the user's cache (ELASTIC_LITE_CACHE, default
# ${XDG_CACHE_HOME:-~/.cache}/elastic-lite), one per list of pins and Python, downloaded whole
# the first time and installed from with no index: a second clone (or this one after
# `rm -rf .venv build`) sets up without the network and without asking PyPI to resolve
# anything again. Only downloaded wheels are shared between clones, nothing built.
cache="${ELASTIC_LITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/elastic-lite}"
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache="$ROOT/build/cache"
mkdir -p "$cache"
py_tag="$(.venv/bin/python -c 'import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())')"
# wheelhouse PIP_DOWNLOAD_ARGS...: the folder holding what `pip download ARGS` fetches,
# downloaded into the cache the first time (whole or not at all: made aside, then renamed).
wheelhouse() {
  local dir tmp
  dir="$cache/wheels-$(printf '%s\n' "$py_tag" "$@" | sha256sum | cut -c1-16)"
  if [ ! -f "$dir/.complete" ]; then
    log "downloading into $dir: $*"
    tmp="$(mktemp -d "$dir.part.XXXXXX")"
    .venv/bin/pip download -q --disable-pip-version-check -d "$tmp" "$@" >&2 || { rm -rf "$tmp"; return 1; }
    touch "$tmp/.complete"
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # another set-up made it meanwhile
  fi
  printf '%s\n' "$dir"
}
# copy_wheels FROM TO: the wheels of FROM into TO (hard links where the file system allows)
copy_wheels() { mkdir -p "$2"; cp -l "$1"/*.whl "$2"/ 2>/dev/null || cp "$1"/*.whl "$2"/; }

wheelhouse_dir=build/pip-wheels
# (the [contents] extra, jupyter-server, is what `jupyter lite build` needs to put notebooks
# into a site)
jupyterlite_specs=("jupyterlite-core[contents]==$JUPYTERLITE_CORE_VERSION"
                   "jupyterlite-pyodide-kernel==$JUPYTERLITE_PYODIDE_KERNEL_VERSION")
if [ "$PROFILE" = all ]; then
  wh_stamp="$wheelhouse_dir/.stamp-$(printf '%s\n' "${jupyterlite_specs[@]}" | sha256sum | cut -c1-16)"
  if [ ! -f "$wh_stamp" ]; then
    log "the JupyterLite build tools into $wheelhouse_dir"
    rm -rf "$wheelhouse_dir"
    jl_wh="$(wheelhouse --only-binary=:all: "${jupyterlite_specs[@]}")"
    copy_wheels "$jl_wh" "$wheelhouse_dir"
    touch "$wh_stamp"
  fi
fi

tools=("hatchling==$HATCHLING_VERSION")
if [ "$PROFILE" = all ]; then
  tools+=("pytest==$PYTEST_VERSION" "pyodide-lock==$PYODIDE_LOCK_VERSION"
          "import-linter==$IMPORT_LINTER_VERSION" "grimp==$GRIMP_VERSION"
          "cloudpickle==$CLOUDPICKLE_VERSION" "dill==$DILL_VERSION"
          "${jupyterlite_specs[@]}" "jupyterlab==$JUPYTERLAB_VERSION"
          "numpy==$NUMPY_VERSION" "pandas==$PANDAS_VERSION"
          "matplotlib==$MATPLOTLIB_VERSION" "scikit-learn==$SCIKIT_LEARN_VERSION")
fi
hash="$(sha256sum versions.env | cut -c1-16)"
if [ "$PROFILE" = demo ] && [ -f ".venv/.elastic-lite-all-$hash" ]; then
  :  # a full set-up is a superset of the demo's
elif [ ! -f ".venv/.elastic-lite-$PROFILE-$hash" ]; then
  log "installing the host-Python tools into .venv ($PROFILE)"
  tools_wh="$(wheelhouse --only-binary=:all: "${tools[@]}")"
  # --no-compile: pip would compile every module of these packages (jupyterlab, scikit-learn,
  # matplotlib...: 25 of the install's 43 s of CPU); Python compiles the few the tests and
  # builds import the first time they do (~1.5 s) and keeps them
  .venv/bin/pip install -q --disable-pip-version-check --no-compile --no-index --find-links "$tools_wh" "${tools[@]}"
  rm -f .venv/.elastic-lite-*
  touch ".venv/.elastic-lite-$PROFILE-$hash"
fi

# 4. wheels Pyodide loads --------------------------------------------------------------
mkdir -p build/wheels
for spec in "cloudpickle==$CLOUDPICKLE_VERSION" "dill==$DILL_VERSION"; do
  name="${spec%%==*}"; ver="${spec##*==}"
  if ! ls "build/wheels/$name-$ver-"*.whl >/dev/null 2>&1; then
    log "$spec wheel"
    one_wh="$(wheelhouse --no-deps --only-binary=:all: "$spec")"
    copy_wheels "$one_wh" build/wheels
  fi
done

if [ "$PROFILE" != all ]; then await_all; exit 0; fi

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

await_all
