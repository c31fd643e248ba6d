#!/usr/bin/env bash
# The issue-18 goal case over REST (docs/performance.md, "Packet level"): the
# case of bench/packet_bench.cpp (128 hosts, 2,000 flows of 1 MB, spine0
# drained, hash ECMP, 4 KiB MTU) as an operator runs it, through a real
# daemon: POST /v1/simulations {"mode":"packet"}, then GET the run until it
# is done. Prints the wall time from the POST to the done state, the CPU the
# daemon and its packet workers used meanwhile (/proc: the daemon's own time
# and its reaped children's), and the run's headline numbers.
#
# Usage: bench/packet_rest.sh [path/to/drainwise]   (default build/src/app/drainwise)
# Needs curl and python3; listens on 127.0.0.1 only, on a port the kernel picks.
set -euo pipefail
bin=$(realpath "${1:-build/src/app/drainwise}")
dir=$(mktemp -d)
pid=
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# The fabric of packet_bench.cpp: 8 leaves of 16 hosts at 100G, 4 spines,
# one 400G link from every leaf to every spine.
"$bin" fabric --tiers 2 --hosts 128 --hosts-per-leaf 16 --spines 4 --gpus-per-host 1 --rails 1 \
  --host-gbps 100 --uplink-gbps 400 --out "$dir" >/dev/null
# Its flows: flow i from host i mod 128 to a host of another leaf (packet_bench.cpp's Case()).
python3 - "$dir" <<'EOF'
import json, sys
d = sys.argv[1]
topo = json.load(open(f"{d}/topology.json"))
hosts = [n["id"] for n in topo["nodes"] if n["kind"] == "host"]
assert len(hosts) == 128, len(hosts)
flows = []
for i in range(2000):
    src = i % 128
    dst = (src + 16 + 17 * (i // 128)) % 128
    flows.append({"src": hosts[src], "dst": hosts[(dst + 1) % 128 if dst == src else dst], "bytes": 1e6})
jobs = {"format": "drainwise.jobs/v1",
        "jobs": [{"id": "flows", "hosts": hosts, "gpus_per_host": 1,
                  "iteration": {"compute_ms": 0, "collectives": [{"kind": "flows", "flows": flows}]}}]}
json.dump(jobs, open(f"{d}/jobs.json", "w"))
EOF

"$bin" serve --listen 127.0.0.1:0 --port-file "$dir/port" --db "$dir/drainwise.db" --log-level warn 2>"$dir/log" &
pid=$!
for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
[[ -s $dir/port ]] || { echo "the daemon did not start:" >&2; cat "$dir/log" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$dir/port")"
curl -sf -X PUT --data-binary @"$dir/topology.json" "$url/v1/topology" >/dev/null
curl -sf -X PUT --data-binary @"$dir/jobs.json" "$url/v1/jobs" >/dev/null

# utime stime cutime cstime of the daemon, in clock ticks (proc(5)).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pid/stat"; }
ticks=$(getconf CLK_TCK)
cpu0=$(cpu_ticks)
t0=$(date +%s.%N)
location=$(curl -sf -D - -o /dev/null -X POST \
  --data '{"mode":"packet","drain":{"switches":["spine0"]},"routing":"hash"}' "$url/v1/simulations" |
  tr -d '\r' | awk 'tolower($1) == "location:" { print $2 }')
[[ -n $location ]] || { echo "POST /v1/simulations gave no Location" >&2; exit 1; }
deadline=$((SECONDS + 900))  # bounded: 15 minutes
# Polled with curl and grep only, twice a second: the poller's own CPU would
# otherwise be taken from the two workers' cores.
while curl -sf "$url$location" | grep -Eq '"state": *"running"'; do
  ((SECONDS < deadline)) || { echo "still running after 15 minutes" >&2; exit 1; }
  sleep 0.5
done
t1=$(date +%s.%N)
cpu1=$(cpu_ticks)
curl -sf "$url$location" >"$dir/run.json"
python3 - "$dir/run.json" "$t0" "$t1" "$cpu0" "$cpu1" "$ticks" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
t0, t1, c0, c1, hz = (float(x) for x in sys.argv[2:])
print(f"state {run['state']}: wall {t1 - t0:.1f} s, CPU {(c1 - c0) / hz:.1f} s (daemon + packet workers)")
if run["state"] == "done":
    r = run["result"]
    job = r["jobs"][0]
    print(f"packets {r['runs']['baseline']['packets'] + r['runs']['drained']['packets']}, "
          f"slowdown {job['slowdown_pct']:.1f} % (flow level {job['flow']['slowdown_pct']:.1f} %)")
else:
    print(json.dumps(run.get("error")))
    sys.exit(1)
EOF
