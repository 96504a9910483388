#!/usr/bin/env bash
# Builds the C core three ways from the top-level CMakeLists.txt (ninja rebuilds only what
# changed, so this is fast when up to date):
#   build/native       release libelastic_lite.so (+ el_validate_bench)
#   build/native-asan  ASan+UBSan build with the ctest suite (run by scripts/test.sh)
#   build/wasm         elastic_lite.wasm: standalone, no imports (checked below)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
GEN=(-G Ninja)
command -v ninja >/dev/null || GEN=()

configure() { # dir, extra cmake args...: configure once; ninja re-runs cmake when needed
  local dir="$1"; shift
  [ -f "$dir/CMakeCache.txt" ] || cmake -S . -B "$dir" "${GEN[@]}" "$@" >/dev/null
}

build() { # dir: quiet when fine, the whole log when not
  local log
  if ! log="$(cmake --build "$1" -- -j2 2>&1)"; then
    printf '%s\n' "$log" >&2
    echo "[core] build of $1 failed" >&2
    return 1
  fi
}

configure build/native -DCMAKE_BUILD_TYPE=Release
build build/native
configure build/native-asan -DCMAKE_BUILD_TYPE=Debug -DEL_SANITIZE=ON
build build/native-asan

# Debian's emscripten needs acorn from node-acorn for its optimizer.
export NODE_PATH=/usr/share/nodejs
if [ ! -f build/wasm/CMakeCache.txt ]; then
  emcmake cmake -S . -B build/wasm "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
build build/wasm
# The module must import nothing, so plain WebAssembly.instantiate works everywhere.
node -e '
const fs = require("fs");
const m = new WebAssembly.Module(fs.readFileSync("build/wasm/elastic_lite.wasm"));
const imp = WebAssembly.Module.imports(m);
if (imp.length) { console.error("elastic_lite.wasm imports", JSON.stringify(imp)); process.exit(1); }
'
printf '[core] build/native/libelastic_lite.so, build/native-asan (ctest), build/wasm/elastic_lite.wasm\n' >&2
