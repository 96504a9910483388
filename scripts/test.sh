#!/usr/bin/env bash
# Runs every test suite of the project. All suites run even when one fails; the exit code is
# non-zero if any failed. Suites: the layering of py/elastic_lite (import-linter, .importlinter),
# ctest (native, ASan+UBSan), node --test (tests/node),
# pytest (tests/py), browser tests in Chromium (tests/browser), the package tests (tests/pack).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# Each step says how long it took: wall time, and the CPU time of its processes (less noisy on a
# loaded machine; above the wall time when both cores were busy).
cpu_s() { # CPU seconds (user + sys) of this script's finished child processes (/proc: Linux)
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($14 + $15) / hz }' "/proc/$$/stat"
}
took() { # START_SECONDS START_CPU: "12 s, CPU 20 s" since then
  printf '%d s, CPU %.0f s' "$((SECONDS - $1))" "$(awk -v a="$(cpu_s)" -v b="$2" 'BEGIN { print a - b }')"
}
# The packages a user installs are built too (scripts/pack.sh builds first): tests/pack
# installs them in fresh folders.
run_start=$SECONDS; run_cpu="$(cpu_s)"
bash scripts/pack.sh || { echo "[test] build or pack failed" >&2; exit 1; }
printf '[test] set-up, build and pack: %s\n' "$(took "$run_start" "$run_cpu")" >&2

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
  local start=$SECONDS cpu; cpu="$(cpu_s)"
  if "$@"; then printf '[test] %s: ok (%s)\n' "$name" "$(took "$start" "$cpu")" >&2
  else printf '[test] %s: FAILED (%s)\n' "$name" "$(took "$start" "$cpu")" >&2; failed+=("$name"); fi
}

# The layering of the Python package (.importlinter, docs/ARCHITECTURE.md): an import against
# it fails here, naming the chain of imports.
suite "layering (import-linter)" env PYTHONPATH=py .venv/bin/lint-imports --no-cache --no-logo
suite "C core (ctest, ASan+UBSan)" ctest --test-dir build/native-asan --output-on-failure
# Every Pyodide the Node tests start in Node, and the CLI they run, is restored from one memory
# snapshot of a freshly started interpreter (js/pyodide-glue.mjs, ELASTIC_LITE_PYODIDE_SNAPSHOT):
# the same fresh interpreter for about a tenth of the CPU its start costs (4-5 s each, hundreds
# of starts). Made anew each run; without it (Pyodide's experimental snapshot API failed) they
# start the plain way. The package tests start Pyodide the plain way, as an installed package does.
PYODIDE_SNAPSHOT="$ROOT/build/pyodide-node.snap"
if node tests/node/helpers/pyodide-snapshot.mjs "$PYODIDE_SNAPSHOT"; then
  export ELASTIC_LITE_PYODIDE_SNAPSHOT="$PYODIDE_SNAPSHOT"
else
  echo "[test] no Pyodide memory snapshot: every interpreter starts the plain way" >&2
fi
shopt -s nullglob
node_tests=(tests/node/*.test.mjs)
[ ${#node_tests[@]} -gt 0 ] && suite "node --test" node --test --test-concurrency=2 "${node_tests[@]}"
py_tests=(tests/py/test_*.py)
[ ${#py_tests[@]} -gt 0 ] && suite "pytest" .venv/bin/python -m pytest -q tests/py
browser_tests=(tests/browser/*.test.mjs)
[ ${#browser_tests[@]} -gt 0 ] && suite "browser (Chromium)" node --test --test-concurrency=1 "${browser_tests[@]}"
pack_tests=(tests/pack/*.test.mjs)
[ ${#pack_tests[@]} -gt 0 ] && suite "packages (tests/pack)" env -u ELASTIC_LITE_PYODIDE_SNAPSHOT node --test --test-concurrency=1 "${pack_tests[@]}"

suite "no temporary files left behind" tmp_left_empty

if [ ${#failed[@]} -gt 0 ]; then
  printf '\n[test] FAILED suites: %s (%s in all)\n' "${failed[*]}" "$(took "$run_start" "$run_cpu")" >&2
  exit 1
fi
printf '\n[test] all suites passed (%s in all)\n' "$(took "$run_start" "$run_cpu")" >&2
