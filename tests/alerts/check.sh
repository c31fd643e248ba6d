#!/usr/bin/env bash
# The example alerting rules load in Prometheus and fire as their unit test
# says. promtool comes with Debian's `prometheus` package
# (packaging/install-deps.sh); without it the test is skipped (exit 77).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v promtool >/dev/null; then
  echo "SKIP: promtool not found (Debian package 'prometheus', installed by packaging/install-deps.sh)"
  exit 77
fi
promtool check rules ../../packaging/alerts/drainwise-link-health.rules.yml
promtool test rules drainwise-link-health.test.yml
