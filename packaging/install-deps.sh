#!/usr/bin/env bash
# Installs every Debian 12 package that building and testing drainwise needs.
# Idempotent and non-interactive: packages already present are left alone, and
# `apt-get update` runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libboost-dev libboost-system-dev   # Asio + Beast: the HTTP server and clients
  libssl-dev                         # TLS for the server and https:// sources
  nlohmann-json3-dev                 # JSON documents and the REST API
  libsqlite3-dev sqlite3             # the versioned store and audit trail
  libpq-dev                          # the PostgreSQL store backend (several daemons, one state)
  postgresql-15 postgresql-client-15 # the throw-away cluster of the PostgreSQL store and e2e tests
  libspdlog-dev libfmt-dev           # logging and formatting
  libexpected-dev                    # tl::expected, the one result type
  libcli11-dev                       # the command line
  libprotobuf-dev protobuf-compiler  # Chakra's binary execution traces (.et)
  doctest-dev                        # unit and end-to-end tests
  libbenchmark-dev                   # bench/ (run on demand)
  curl python3 openssl               # end-to-end tests (TLS certificates) and the quick start
  clang libclang-rt-14-dev           # libFuzzer targets (tests/fuzz/run.sh)
  chromium nodejs                    # the console's browser test (tests/browser); npm: tests/api
  prometheus                         # promtool: the example alerting rules' test (tests/alerts)
  haproxy                            # the example load-balancer config's test (tests/lb: haproxy -c)
  libns3-dev                         # the packet level (sim/packet, ns-3 3.37); optional: without it that mode answers 501
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The API checks' npm packages (@redocly/cli, @stoplight/prism-cli), pinned by
# tests/api/package-lock.json, into tests/api/node_modules (nothing global).
"$(dirname "$0")/../tests/api/install.sh"
