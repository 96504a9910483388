#!/usr/bin/env bash
# Runs every test suite of the project. All suites run even when one fails; the exit code is
# non-zero if any failed. Suites: the layering of py/elastic_lite (import-linter, .importlinter),
# ctest (native, ASan+UBSan), node --test (tests/node),
# pytest (tests/py), browser tests in Chromium (tests/browser), the package tests (tests/pack).
# Suites run side by side, the Chromium suite from as early as it can (see "The schedule"
# below); each suite's output is kept in a file and printed whole when it ends, so two suites
# never interleave their lines.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# EL_SUITES: only these suites (any of: layering ctest node pytest browser pack; spaces or
# commas), e.g. EL_SUITES=browser. Set-up, build and pack and the temporary-files check always run.
ALL_SUITES="layering ctest node pytest browser pack"
SUITES=" ${EL_SUITES:-$ALL_SUITES} "; SUITES="${SUITES//,/ }"
for s in $SUITES; do
  [[ " $ALL_SUITES " == *" $s "* ]] || { echo "[test] EL_SUITES: no suite named '$s' (the suites: $ALL_SUITES)" >&2; exit 2; }
done
want() { [[ "$SUITES" == *" $1 "* ]]; }
# Each step says how long it took: wall time, and the CPU time of its processes (less noisy on a
# loaded machine; above the wall time when both cores were busy). Chromium's renderers and other
# processes a test leaves to init would not be counted: each suite runs under a subreaper that
# reaps them, so their CPU is in the figure too.
cpu_s() { # PID: CPU seconds (user + sys) of that shell's finished child processes (/proc: Linux)
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($14 + $15) / hz }' "/proc/$1/stat"
}
took() { # START_SECONDS START_CPU PID: "12 s, CPU 20 s" since then
  printf '%d s, CPU %.0f s' "$((SECONDS - $1))" "$(awk -v a="$(cpu_s "$3")" -v b="$2" 'BEGIN { print a - b }')"
}
# reaped CMD...: runs CMD as the child of a child subreaper (prctl PR_SET_CHILD_SUBREAPER) that
# waits for every descendant orphaned on the way, so their CPU time reaches this shell's count;
# exits with CMD's status once CMD and the descendants still alive at that moment are gone
# (a descendant left running after that is the suite's bug, reported, not waited for).
REAPER_PY='
import ctypes, os, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
main = os.fork()
if main == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
status = None
while status is None:
    pid, st = os.waitpid(-1, 0)
    if pid == main:
        status = os.waitstatus_to_exitcode(st)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        time.sleep(0.05)
else:
    print(f"[test] {sys.argv[1]}: processes it started still run after it ended", file=sys.stderr)
sys.exit(status if status >= 0 else 128 - status)
'
reaped() { python3 -c "$REAPER_PY" "$@"; }
# The packages a user installs are built too (scripts/pack.sh builds first): tests/pack
# installs them in fresh folders.
run_start=$SECONDS; run_cpu="$(cpu_s $$)"
bash scripts/pack.sh || { echo "[test] build or pack failed" >&2; exit 1; }
printf '[test] set-up, build and pack: %s\n' "$(took "$run_start" "$run_cpu" $$)" >&2

# Tests remove their temporary files (tests/helpers/tempdir.mjs for JS tests): every suite runs
# with TMPDIR in a fresh folder (outside the checkout: the package tests must run away from
# it), and whatever is left in it at the end fails the run.
# (The suites' buffered output is kept beside it, in $LOGS.)
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/elastic-lite-test-logs.XXXXXX")"
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

# A suite's output goes to a file, printed whole (under a lock) when the suite ends, then its
# step line; a failed suite's name goes to $LOGS/failed. Suites are commands (run under the
# subreaper) or functions of this script.
suite() {
  local name="$1"; shift
  local log start=$SECONDS me=$BASHPID cpu result=ok took_line # me: this lane's shell
  log="$(mktemp "$LOGS/suite.XXXXXX")"; cpu="$(cpu_s "$me")"
  printf '[test] %s: started\n' "$name" >&2
  if declare -F "$1" >/dev/null; then "$@" >"$log" 2>&1 || result=FAILED
  else reaped "$@" >"$log" 2>&1 || result=FAILED; fi
  took_line="$(took "$start" "$cpu" "$me")"
  [ "$result" = ok ] || echo "$name" >>"$LOGS/failed"
  { flock 9; printf '\n[test] ===== %s =====\n' "$name"; cat "$log"
    printf '[test] %s: %s (%s)\n' "$name" "$result" "$took_line"; } 9>"$LOGS/lock" >&2
  rm -f "$log"
}

shopt -s nullglob
node_tests=(tests/node/*.test.mjs)
py_tests=(tests/py/test_*.py)
browser_tests=(tests/browser/*.test.mjs)
pack_tests=(tests/pack/*.test.mjs)
# Chromium test files run two at a time: each has its own server on a port the system picks,
# its own Chromium profile and its own temporary folders, and they mostly wait on pages and
# kernels. EL_BROWSER_CONCURRENCY=1 runs them one by one.
BROWSER_CONCURRENCY="${EL_BROWSER_CONCURRENCY:-2}"

# The schedule. The run is bound by CPU (2 cores), and the Chromium suite is by far the longest
# (most of the CPU, two files at a time keep ~1.8 cores busy): it starts as soon as its inputs
# exist (the build, the Pyodide snapshot below), and every other suite runs beside it, so that
# both cores stay busy until it ends and it never waits behind shorter suites:
#   layering, ctest            while the Pyodide snapshot is made (they need none of it); the
#                              layering is .importlinter's: an import against it fails, naming
#                              the chain of imports
#   Chromium suite             from the snapshot on, to the end
#   node                       beside it (its files mostly wait on Pyodide workers and the CLI)
#   pytest, then the packages  beside both: after node, they were the only suite running for
#                              the last two minutes (one core idle) of a fresh clone's run
{ want layering && suite "layering (import-linter)" env PYTHONPATH=py .venv/bin/lint-imports --no-cache --no-logo
  want ctest && suite "C core (ctest, ASan+UBSan)" ctest --test-dir build/native-asan --output-on-failure; } &

# Every Pyodide the Node tests start in Node, and the CLI they run, is restored from one memory
# snapshot of a freshly started interpreter (js/pyodide-glue.mjs, ELASTIC_LITE_PYODIDE_SNAPSHOT):
# the same fresh interpreter for about a tenth of the CPU its start costs (4-5 s each, hundreds
# of starts). Made anew each run; without it (Pyodide's experimental snapshot API failed) they
# start the plain way. The package tests start Pyodide the plain way, as an installed package does.
PYODIDE_SNAPSHOT="$ROOT/build/pyodide-node.snap"
if ! want node && ! want browser; then : # (the browser tests run the CLI too)
elif node tests/node/helpers/pyodide-snapshot.mjs "$PYODIDE_SNAPSHOT"; then
  export ELASTIC_LITE_PYODIDE_SNAPSHOT="$PYODIDE_SNAPSHOT"
else
  echo "[test] no Pyodide memory snapshot: every interpreter starts the plain way" >&2
fi

{ want browser && [ ${#browser_tests[@]} -gt 0 ] && suite "browser (Chromium)" node --test --test-concurrency="$BROWSER_CONCURRENCY" "${browser_tests[@]}"; } &
{ want node && [ ${#node_tests[@]} -gt 0 ] && suite "node --test" node --test --test-concurrency=2 "${node_tests[@]}"; } &
{ want pytest && [ ${#py_tests[@]} -gt 0 ] && suite "pytest" .venv/bin/python -m pytest -q tests/py
  want pack && [ ${#pack_tests[@]} -gt 0 ] && suite "packages (tests/pack)" env -u ELASTIC_LITE_PYODIDE_SNAPSHOT node --test --test-concurrency=1 "${pack_tests[@]}"; } &
wait

suite "no temporary files left behind" tmp_left_empty

mapfile -t failed < <(cat "$LOGS/failed" 2>/dev/null)
rm -rf "$LOGS"
if [ ${#failed[@]} -gt 0 ]; then
  printf '\n[test] FAILED suites: %s (%s in all)\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" "$(took "$run_start" "$run_cpu" $$)" >&2
  exit 1
fi
printf '\n[test] all suites passed (%s in all)\n' "$(took "$run_start" "$run_cpu" $$)" >&2
