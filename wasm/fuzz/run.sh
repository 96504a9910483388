#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang and fuzzes one of them, or all in turn.
#   bash wasm/fuzz/run.sh validate|container|pull|stream|all [seconds per target=600]
#   validate   el_validate_pickle on arbitrary bytes          seeds: corpus/validate/
#   stream     the resumable validator in windows == whole    seeds: corpus/validate/
#   container  el_inspect three ways, and the writer's output reads back   corpus/container/
#   pull       the pull reader in chunks == el_inspect         seeds: corpus/container/
# Seeds are committed (real pickle streams and checkpoints of formats 1.0 and 2.0). New
# inputs go to wasm/fuzz/corpus-run/<target>/ (ignored by git); a crash, leak, sanitizer
# report or a difference between the resumable and whole-buffer paths stops the run and
# leaves crash-*/leak-* files in build/fuzz/artifacts/. Prints libFuzzer's final stats.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
target="${1:?usage: run.sh validate|container|pull|stream|all [seconds per target]}"
secs="${2:-600}"
if [ "$target" = all ]; then
  for t in validate stream container pull; do bash "$0" "$t" "$secs"; done
  exit 0
fi
case "$target" in
  validate|stream) seeds=validate ;;
  container|pull) seeds=container ;;
  *) echo "unknown target $target (validate, stream, container, pull or all)" >&2; exit 2 ;;
esac
if [ ! -f build/fuzz/CMakeCache.txt ]; then
  CC=clang cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEL_FUZZ=ON >/dev/null
fi
cmake --build build/fuzz --target "fuzz_$target" >/dev/null
mkdir -p "wasm/fuzz/corpus-run/$target" build/fuzz/artifacts
echo "[fuzz] $target for ${secs}s from $(date -u +%H:%M:%S) UTC" >&2
exec "build/fuzz/fuzz_$target" -max_total_time="$secs" -max_len=16384 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/ \
  "wasm/fuzz/corpus-run/$target" "wasm/fuzz/corpus/$seeds"
