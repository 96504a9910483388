#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang and fuzzes one of them.
#   bash wasm/fuzz/run.sh validate|container [seconds=600]
# Seeds: wasm/fuzz/corpus/<target>/ (committed, real pickle streams and checkpoints).
# New inputs go to wasm/fuzz/corpus-run/<target>/ (ignored by git); a crash, leak or
# sanitizer report stops the run and leaves crash-*/leak-* files in build/fuzz/artifacts/.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
target="${1:?usage: run.sh validate|container [seconds]}"
secs="${2:-600}"
if [ ! -f build/fuzz/CMakeCache.txt ]; then
  CC=clang cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEL_FUZZ=ON >/dev/null
fi
cmake --build build/fuzz --target "fuzz_$target" >/dev/null
mkdir -p "wasm/fuzz/corpus-run/$target" build/fuzz/artifacts
exec "build/fuzz/fuzz_$target" -max_total_time="$secs" -max_len=16384 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/ \
  "wasm/fuzz/corpus-run/$target" "wasm/fuzz/corpus/$target"
