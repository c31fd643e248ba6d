#!/usr/bin/env bash
# README command 2 (and .ci/run): install what is missing, build, and run the
# whole test suite twice: an optimised build, then the one sanitizer build
# (clang, ASan + UBSan + libFuzzer coverage), which also runs every fuzz target
# deterministically (fixed seed, fixed number of inputs: tests/fuzz/run.sh ci).
# Every step's time is printed at the end (also when a step fails).
#
# Environment: DRAINWISE_SKIP_ASAN=1   no sanitizer build, no fuzzing
#              DRAINWISE_FUZZ_TEST=1   fuzz outside CI too
#              DRAINWISE_DEB_TEST=1    the .deb test outside CI too
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
timings=()
report() {
  local rc=$?
  echo "test.sh: step times (s), 2 cores, load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '  %s\n' "${timings[@]}"
  [ $rc -eq 0 ] || echo "test.sh: FAILED after $(( $(date +%s) - start )) s"
}
trap report EXIT
step() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  echo "test.sh: == $name"
  "$@"
  timings+=("$(printf '%-34s %5d' "$name" $(( $(date +%s) - t0 )))")
}
in_dir() { (cd "$1" && shift && "$@"); }
sanitizer_env=(env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

step "install-deps" packaging/install-deps.sh
step "release build" packaging/build.sh release
step "release ctest -j 2" in_dir build ctest --output-on-failure -j 2
# Load and kill -9 tests at CI size (tests/load/*.py --help for the full size).
step "load test" python3 tests/load/load_test.py --binary build/src/app/drainwise --size small
step "kill -9 test" python3 tests/load/crash_test.py --binary build/src/app/drainwise --cycles 3
# The .deb: build, install, check, purge (root on Debian 12; CI, or on demand).
if [ "${CI:-}" = "true" ] || [ "${DRAINWISE_DEB_TEST:-0}" = "1" ]; then
  step ".deb test" packaging/deb-test.sh build
fi
if [ "${DRAINWISE_SKIP_ASAN:-0}" != "1" ]; then
  # One tree for both: the doctest suites, the daemon and the fuzzers.
  step "sanitizer build (clang)" packaging/build.sh asan
  step "sanitizer ctest -j 2" in_dir build-asan "${sanitizer_env[@]}" ctest --output-on-failure -j 2
  # Deterministic fuzzing: the same commit passes or fails the same way
  # (tests/fuzz/run.sh SECONDS for longer random runs, on demand).
  if [ "${CI:-}" = "true" ] || [ "${DRAINWISE_FUZZ_TEST:-0}" = "1" ]; then
    step "fuzz (15 targets, fixed seed)" env DRAINWISE_FUZZ_SKIP_BUILD=1 tests/fuzz/run.sh ci
  fi
fi
echo "test.sh: all suites passed in $(( $(date +%s) - start )) s"
