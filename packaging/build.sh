#!/usr/bin/env bash
# Configures and builds one tree. Usage: packaging/build.sh [release|asan|debug] [ninja targets...]
#   release  build/       the optimised build (the .deb, the load tests, benchmarks)
#   asan     build-asan/  clang, ASan + UBSan + libFuzzer coverage: the sanitizer
#                         test pass AND the fuzzers (target `fuzzers`), one build;
#                         -O1 with line tables only (enough for sanitizer stacks,
#                         cheaper to compile and link than -g), asserts on
#   debug    build-debug/
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)
    dir=build-asan
    cxx=$(command -v clang++ || command -v clang++-14 || true)
    [ -n "$cxx" ] || { echo "build.sh: clang++ not found (packaging/install-deps.sh installs it)" >&2; exit 1; }
    flags=(-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo
           -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only"
           -DDRAINWISE_SANITIZE=ON -DDRAINWISE_FUZZ=ON -DDRAINWISE_BUILD_BENCH=OFF) ;;
  debug) dir=build-debug; flags=(-DCMAKE_BUILD_TYPE=Debug) ;;
  *) echo "usage: $0 [release|asan|debug] [targets...]" >&2; exit 2 ;;
esac
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so a fresh clone elsewhere reuses the cache.
  export CCACHE_BASEDIR="$PWD"
  # With debug info (the sanitizer tree's line tables) ccache also hashes the
  # working directory, so every fresh clone missed the whole sanitizer tree
  # (seen: 21 min instead of minutes); the price is that a cached object's
  # line tables may name another checkout's folder.
  export CCACHE_NOHASHDIR=1
fi
cmake -S . -B "$dir" -G Ninja "${flags[@]}" "${launcher[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" ${1:+--target "$@"}
