#!/usr/bin/env bash
# Builds every artifact the project needs, skipping what is up to date. Each part owns one
# script in scripts/build.d/ (run in name order); each must be idempotent and fast when there
# is nothing to do.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
# One build at a time in a checkout (a test run and `npm start` may overlap): the JupyterLite
# site build, for one, keeps a database that two concurrent builds would corrupt.
exec 8>build/.build.lock
flock 8
for step in scripts/build.d/*.sh; do
  [ -e "$step" ] || continue
  printf '[build] %s\n' "$(basename "$step")" >&2
  bash "$step"
done
