#!/usr/bin/env bash
# Runs every test suite of the project. All suites run even when one fails; the exit code is
# non-zero if any failed. Suites: ctest (native, ASan+UBSan), node --test (tests/node),
# pytest (tests/py), browser tests in Chromium (tests/browser), the package tests (tests/pack).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# The packages a user installs are built too (scripts/pack.sh builds first): tests/pack
# installs them in fresh folders.
bash scripts/pack.sh || { echo "[test] build or pack failed" >&2; exit 1; }

# Tests remove their temporary files (tests/helpers/tempdir.mjs for JS tests): every suite runs
# with TMPDIR in a fresh folder (outside the checkout: the package tests must run away from
# it), and whatever is left in it at the end fails the run.
TEST_TMP="$(mktemp -d "${TMPDIR:-/tmp}/elastic-lite-test.XXXXXX")"
# Traversable (not listable) by other users: tests that run the CLI as another user (a store it
# cannot write, run as nobody) must reach their own folders below it.
chmod 711 "$TEST_TMP"
export TMPDIR="$TEST_TMP"
tmp_left_empty() {
  local left
  left="$(ls -A "$TEST_TMP")"
  if [ -z "$left" ]; then rmdir "$TEST_TMP"; return 0; fi
  printf '[test] left behind in TMPDIR (%s, kept to look at):\n%s\n' "$TEST_TMP" "$left" >&2
  return 1
}

failed=()
suite() {
  local name="$1"; shift
  printf '\n[test] ===== %s =====\n' "$name" >&2
  if "$@"; then printf '[test] %s: ok\n' "$name" >&2
  else printf '[test] %s: FAILED\n' "$name" >&2; failed+=("$name"); fi
}

suite "C core (ctest, ASan+UBSan)" ctest --test-dir build/native-asan --output-on-failure
shopt -s nullglob
node_tests=(tests/node/*.test.mjs)
[ ${#node_tests[@]} -gt 0 ] && suite "node --test" node --test --test-concurrency=2 "${node_tests[@]}"
py_tests=(tests/py/test_*.py)
[ ${#py_tests[@]} -gt 0 ] && suite "pytest" .venv/bin/python -m pytest -q tests/py
browser_tests=(tests/browser/*.test.mjs)
[ ${#browser_tests[@]} -gt 0 ] && suite "browser (Chromium)" node --test --test-concurrency=1 "${browser_tests[@]}"
pack_tests=(tests/pack/*.test.mjs)
[ ${#pack_tests[@]} -gt 0 ] && suite "packages (tests/pack)" node --test --test-concurrency=1 "${pack_tests[@]}"

suite "no temporary files left behind" tmp_left_empty

if [ ${#failed[@]} -gt 0 ]; then
  printf '\n[test] FAILED suites: %s\n' "${failed[*]}" >&2
  exit 1
fi
printf '\n[test] all suites passed\n' >&2
