#!/usr/bin/env bash
# Builds the .deb with CPack, installs it with apt, checks what it installed
# (binary, user, state directory, conffiles, unit, default config and policy
# by running the daemon as the drainwise user on the installed files), runs
# the maintainer scripts a second time (idempotent), then purges it and checks
# that nothing is left. Needs root (CI runs as root on Debian 12).
# Usage: packaging/deb-test.sh [BUILD_DIR]   (default: build, the release tree)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build="${1:-build}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
step() { echo "deb-test: $*"; }
fail() { echo "deb-test: FAIL: $*" >&2; exit 1; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  packaging/build.sh release drainwise
  build=build
else
  cmake -S . -B "$build" >/dev/null  # picks up packaging/cpack.cmake if the tree predates it
  cmake --build "$build" --target drainwise
fi
rm -f "$build"/drainwise_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/drainwise_*.deb)
step "built $deb"
dpkg-deb -I "$deb" | grep -E '^ (Depends|Version):'
want_version=$(dpkg-deb -f "$deb" Version)

workdir=$(mktemp -d)
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; fi
  if dpkg-query -W -f='${Status}' drainwise 2>/dev/null | grep -q installed; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq drainwise >/dev/null 2>&1 || true
  fi
  rm -rf "$workdir"
}
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq "$root/$deb" >/dev/null
step "installed"

# The binary, on PATH, with the package's version.
got=$(/usr/bin/drainwise --version)
[ "$got" = "drainwise $want_version" ] || fail "drainwise --version says '$got', expected 'drainwise $want_version'"
# The user, the state directory, the conffiles, the unit.
getent passwd drainwise >/dev/null || fail "no drainwise user"
[ "$(getent passwd drainwise | cut -d: -f7)" = /usr/sbin/nologin ] || fail "drainwise user has a login shell"
[ "$(stat -c %U:%a /var/lib/drainwise)" = drainwise:750 ] || fail "/var/lib/drainwise is $(stat -c %U:%a /var/lib/drainwise)"
conffiles=$(dpkg-query -W -f='${Conffiles}' drainwise)
for f in /etc/drainwise/drainwise.json /etc/drainwise/policy.json; do
  [ -f "$f" ] || fail "$f not installed"
  grep -q "$f" <<<"$conffiles" || fail "$f is not a conffile"
done
[ -f /lib/systemd/system/drainwise.service ] || fail "unit not installed"
if command -v systemd-analyze >/dev/null; then
  # Checks the unit's syntax and that ExecStart exists; warnings about the
  # container's own systemd state are not the unit's fault.
  out=$(systemd-analyze verify /lib/systemd/system/drainwise.service 2>&1 || true)
  if grep -E 'drainwise.service:[0-9]+:|Unknown (key|section)|Failed to parse|not executable' <<<"$out"; then
    fail "systemd-analyze verify: $out"
  fi
  step "unit verified"
fi

# The default config and policy are valid, as the unit's ExecStartPre checks.
/usr/bin/drainwise config check /etc/drainwise/drainwise.json || fail "the installed config is invalid"

# The daemon starts as the drainwise user on the installed config, its
# database in the state directory (the configured path), and answers.
# setpriv execs (runuser would fork and turn our SIGTERM into its own exit status).
chmod 777 "$workdir"
$SUDO setpriv --reuid drainwise --regid drainwise --init-groups -- /usr/bin/drainwise serve --config /etc/drainwise/drainwise.json \
  --listen 127.0.0.1:0 --port-file "$workdir/port" 2>"$workdir/serve.log" &
daemon_pid=$!
for _ in $(seq 1 300); do
  [ -s "$workdir/port" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$workdir/serve.log" >&2; fail "the daemon exited at start-up"; }
  sleep 0.1
done
port=$(cat "$workdir/port" 2>/dev/null) || { cat "$workdir/serve.log" >&2; fail "no port file after 30 s"; }
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "/healthz"
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || fail "/readyz"
policy=$(curl -sf "http://127.0.0.1:$port/v1/policy")
want_policy=$(python3 -c 'import json,sys; print(json.load(open("/etc/drainwise/policy.json"))["name"])')
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d.get("name")==sys.argv[2] else 1)' "$policy" "$want_policy" \
  || fail "the daemon does not serve /etc/drainwise/policy.json"
grep -q "policy '$want_policy' from /etc/drainwise/policy.json" "$workdir/serve.log" || fail "policy source not logged"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "the daemon exited $? on SIGTERM"
daemon_pid=""
[ "$(stat -c %U /var/lib/drainwise/drainwise.db)" = drainwise ] || fail "database not owned by drainwise"
step "daemon ran as drainwise on the installed config (port $port) and stopped cleanly"

# Maintainer scripts are idempotent: configure again changes nothing.
$SUDO /var/lib/dpkg/info/drainwise.postinst configure "$want_version" || fail "postinst configure is not idempotent"
# A plain remove keeps the config and the state; purge removes both and the user.
$SUDO apt-get remove -y -qq drainwise >/dev/null
[ -f /etc/drainwise/drainwise.json ] || fail "remove deleted the config"
[ -f /var/lib/drainwise/drainwise.db ] || fail "remove deleted the database"
[ ! -e /usr/bin/drainwise ] || fail "remove left /usr/bin/drainwise"
$SUDO apt-get purge -y -qq drainwise >/dev/null
for p in /etc/drainwise /var/lib/drainwise /lib/systemd/system/drainwise.service; do
  [ ! -e "$p" ] || fail "purge left $p"
done
! getent passwd drainwise >/dev/null || fail "purge left the drainwise user"
! getent group drainwise >/dev/null || fail "purge left the drainwise group"
step "removed and purged cleanly"
echo "deb-test: OK"
