#!/usr/bin/env bash
# README command 2 (and .ci/run): install what is missing, build, and run the
# whole test suite twice: an optimised build, then under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/install-deps.sh
start=$(date +%s)
packaging/build.sh release
(cd build && ctest --output-on-failure -j 2)
# Load and kill -9 tests at CI size (tests/load/*.py --help for the full size).
python3 tests/load/load_test.py --binary build/src/app/drainwise --size small
python3 tests/load/crash_test.py --binary build/src/app/drainwise --cycles 3
# The .deb: build, install, check, purge (root on Debian 12; CI, or on demand).
if [ "${CI:-}" = "true" ] || [ "${DRAINWISE_DEB_TEST:-0}" = "1" ]; then
  packaging/deb-test.sh build
fi
if [ "${DRAINWISE_SKIP_ASAN:-0}" != "1" ]; then
  packaging/build.sh asan
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j 2)
fi
# libFuzzer on every parser, briefly (CI, or on demand; tests/fuzz/run.sh for longer runs).
if [ "${CI:-}" = "true" ] || [ "${DRAINWISE_FUZZ_TEST:-0}" = "1" ]; then
  tests/fuzz/run.sh "${DRAINWISE_FUZZ_SECONDS:-10}"
fi
echo "test.sh: all suites passed in $(( $(date +%s) - start )) s"
