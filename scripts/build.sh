#!/usr/bin/env bash
# Builds every artifact the project needs, skipping what is up to date. Each part owns one
# script in scripts/build.d/ (run in name order); each must be idempotent and fast when there
# is nothing to do.
#
#   scripts/build.sh          everything (`npm run build`, `npm test`)
#   scripts/build.sh --demo   only what the demo page serves (`npm start`): the demo set-up
#                             (scripts/setup.sh --demo), the C core and the kernel wheel
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
steps=(scripts/build.d/*.sh)
case "${1:-}" in
  --demo) bash scripts/setup.sh --demo; steps=(scripts/build.d/10-core.sh scripts/build.d/20-wheel.sh) ;;
  "") bash scripts/setup.sh ;;
  *) echo "usage: scripts/build.sh [--demo]" >&2; exit 2 ;;
esac
# One build at a time in a checkout (a test run and `npm start` may overlap): the JupyterLite
# site build, for one, keeps a database that two concurrent builds would corrupt.
exec 8>build/.build.lock
flock 8
for step in "${steps[@]}"; do
  [ -e "$step" ] || continue
  printf '[build] %s\n' "$(basename "$step")" >&2
  bash "$step"
done
