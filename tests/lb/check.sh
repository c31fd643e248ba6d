#!/usr/bin/env bash
# The example load-balancer configuration (packaging/haproxy-drainwise.cfg)
# is one HAProxy accepts: `haproxy -c` parses it, resolves nothing and sends
# no traffic. haproxy comes with Debian's `haproxy` package
# (packaging/install-deps.sh); without it the test is skipped (exit 77).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v haproxy >/dev/null; then
  echo "SKIP: haproxy not found (Debian package 'haproxy', installed by packaging/install-deps.sh)"
  exit 77
fi
haproxy -c -f packaging/haproxy-drainwise.cfg
# The health check is the one the docs promise: GET /readyz, 200 in rotation.
grep -q 'http-check send meth GET uri /readyz' packaging/haproxy-drainwise.cfg
grep -q 'http-check expect status 200' packaging/haproxy-drainwise.cfg
