#!/usr/bin/env bash
# `redocly lint` on docs/openapi.yaml with Redocly's recommended rules: any
# error fails (exit 1); warnings are printed and pass. Exit 77 (ctest:
# skipped) when node or the npm packages are missing (packaging/install-deps.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
spec="${1:-$here/../../docs/openapi.yaml}"
command -v node >/dev/null || { echo "api lint skipped: node not found"; exit 77; }
redocly="$here/node_modules/.bin/redocly"
[ -x "$redocly" ] || { echo "api lint skipped: $redocly not found (packaging/install-deps.sh runs npm ci in tests/api)"; exit 77; }
# No usage telemetry, no update check: CI reaches the npm registry only.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
exec "$redocly" lint --format=codeframe "$spec"
