#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the daemon on the
# embedded demo fabric at 127.0.0.1:8080 (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/install-deps.sh
packaging/build.sh release drainwise
mkdir -p var
exec build/src/app/drainwise serve --demo --db var/drainwise.db --listen "${DRAINWISE_LISTEN:-127.0.0.1:8080}" "$@"
