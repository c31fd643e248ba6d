#!/usr/bin/env bash
# Configures and builds one tree. Usage: packaging/build.sh [release|asan] [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDRAINWISE_SANITIZE=ON -DDRAINWISE_BUILD_BENCH=OFF) ;;
  debug) dir=build-debug; flags=(-DCMAKE_BUILD_TYPE=Debug) ;;
  *) echo "usage: $0 [release|asan|debug] [targets...]" >&2; exit 2 ;;
esac
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so a fresh clone elsewhere reuses the cache.
  export CCACHE_BASEDIR="$PWD"
fi
cmake -S . -B "$dir" -G Ninja "${flags[@]}" "${launcher[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)" ${1:+--target "$@"}
