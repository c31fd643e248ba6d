#!/usr/bin/env bash
# Installs the pinned npm packages of the API checks (package-lock.json) into
# tests/api/node_modules, project-local; called by packaging/install-deps.sh.
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "tests/api: npm not found (Debian's nodejs package provides it)" >&2; exit 1; }
if [ -f node_modules/.package-lock.json ] && [ -x node_modules/.bin/redocly ] && [ -x node_modules/.bin/prism ] &&
   [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
echo "tests/api: npm ci (@redocly/cli, @stoplight/prism-cli; pinned in package-lock.json)" >&2
npm ci --no-audit --no-fund --loglevel=error
