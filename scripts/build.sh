#!/usr/bin/env bash
# Builds every artifact the project needs, skipping what is up to date. Each part owns one
# script in scripts/build.d/ (run in name order); each must be idempotent and fast when there
# is nothing to do.
#
#   scripts/build.sh          everything (`npm run build`, `npm test`)
#   scripts/build.sh --demo   only what the demo page serves (`npm start`): the demo set-up
#                             (scripts/setup.sh --demo), the C core and the kernel wheel
# The C core needs only the system packages: for everything, it is built while the rest of
# the set-up (npm, the .venv's tools, the wheels; mostly one core busy) runs beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
steps=(scripts/build.d/*.sh)
setup_pid=
case "${1:-}" in
  --demo) bash scripts/setup.sh --demo; steps=(scripts/build.d/10-core.sh scripts/build.d/20-wheel.sh) ;;
  "") bash scripts/setup.sh --system; bash scripts/setup.sh & setup_pid=$! ;;
  *) echo "usage: scripts/build.sh [--demo]" >&2; exit 2 ;;
esac
# One build at a time in a checkout (a test run and `npm start` may overlap): the JupyterLite
# site build, for one, keeps a database that two concurrent builds would corrupt.
mkdir -p build
exec 8>build/.build.lock
flock 8
# a failed step still waits for the set-up beside it (its output whole, nothing left running)
trap '[ -z "$setup_pid" ] || wait "$setup_pid" || true' EXIT
for step in "${steps[@]}"; do
  [ -e "$step" ] || continue
  # every step but the C core's needs the whole set-up
  if [ -n "$setup_pid" ] && [ "$(basename "$step")" != 10-core.sh ]; then
    wait "$setup_pid" || { setup_pid=; echo "[build] set-up failed" >&2; exit 1; }
    setup_pid=
  fi
  printf '[build] %s\n' "$(basename "$step")" >&2
  bash "$step"
done
if [ -n "$setup_pid" ]; then
  wait "$setup_pid" || { setup_pid=; echo "[build] set-up failed" >&2; exit 1; }
  setup_pid=
fi
