#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + coverage) in
# build-fuzz and runs each for a bounded time on a copy of its seed corpus.
# A crash, leak, timeout or sanitizer report fails the run; the input is
# copied to tests/data/fuzz-regressions/<target>/ so that it becomes a
# regression test (tests/fuzz/regressions_test.cpp replays it in ctest).
#
# Usage: tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 20 (CI: 10); TARGETs default to all.
#   DRAINWISE_FUZZ_BUILD=dir  build directory (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs="${1:-20}"
shift || true
build="${DRAINWISE_FUZZ_BUILD:-build-fuzz}"
cxx=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$cxx" ] || { echo "fuzz: clang++ not found (packaging/install-deps.sh installs it)" >&2; exit 1; }

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1 -g without NDEBUG: asserts stay on, stacks stay readable.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DDRAINWISE_FUZZ=ON -DDRAINWISE_BUILD_TESTS=OFF \
  -DDRAINWISE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" --target fuzzers

if [ $# -eq 0 ]; then
  set -- $(ls tests/fuzz/corpus)
fi
summary="$build/fuzz-summary.txt"
printf '%-16s %10s %8s %8s %8s %s\n' target execs exec/s cov ft result >"$summary"
failed=()
for name in "$@"; do
  bin="$build/tests/fuzz/fuzz_${name//-/_}"
  [ -x "$bin" ] || { echo "fuzz: no binary for target $name" >&2; exit 1; }
  work="$build/corpus/$name"
  artifacts="$build/artifacts/$name/"
  mkdir -p "$work" "$artifacts"
  log="$build/fuzz-$name.log"
  set +e
  # New inputs go to the first (scratch) directory; the checked-in seeds are
  # read only. -timeout: an input taking 10 s is a hang. 2 GiB RSS at most.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED (exit $rc, log $log)"
    failed+=("$name")
    mkdir -p "tests/data/fuzz-regressions/$name"
    for a in "$artifacts"*; do
      [ -f "$a" ] || continue
      cp "$a" "tests/data/fuzz-regressions/$name/"
      echo "fuzz: $name: $(basename "$a") copied to tests/data/fuzz-regressions/$name/ (commit it with the fix)" >&2
    done
    grep -E 'ERROR|runtime error|SUMMARY' "$log" | head -5 >&2 || true
  fi
  printf '%-16s %10s %8s %8s %8s %s\n' "$name" "$execs" "$speed" "$cov" "$ft" "$result" | tee -a "$summary"
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#@} targets, ${secs} s each, no crash"
