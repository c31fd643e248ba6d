#!/usr/bin/env bash
# Re-takes docs/console-*.png from the demo: runs the browser test with
# --screenshots docs. Usage: tests/browser/screenshots.sh [path/to/drainwise]
set -euo pipefail
cd "$(dirname "$0")/../.."
binary="${1:-build/src/app/drainwise}"
node tests/browser/console_test.mjs --binary "$binary" --screenshots docs
