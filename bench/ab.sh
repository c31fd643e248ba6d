#!/usr/bin/env bash
# Interleaved runs of one benchmark case from two builds of a bench binary:
# A, B, A, B, ... one process per run (each run pays its own first touch of
# memory, as a fresh assessment does), a pause between runs. Prints per run
# the wall time, the counters that say where it went, the peaks of
# Create and Simulate (flow_bench resets the kernel's high-water mark per
# phase: the process's peak is the larger, and /usr/bin/time's would be
# the last phase's) and the 1-minute load, so that two commits compare in the same minutes of the same
# machine (a VM's speed drifts by more than most changes).
#
#   bench/ab.sh A_BINARY B_BINARY FILTER [PAIRS] [PAUSE_S]
#   bench/ab.sh /tmp/flow_bench.old build/bench/flow_bench 'BM_Moe32k_Full_Hash/8/2/' 5
#
# FILTER is a --benchmark_filter that should select one case. PAIRS
# (default 3, at most 50) and PAUSE_S (default 2) bound the run.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
a=$1 b=$2 filter=$3 pairs=${4:-3} pause=${5:-2}
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "ab.sh: not an executable: $bin" >&2; exit 2; }
done
case "$pairs" in '' | *[!0-9]*) echo "ab.sh: PAIRS must be a number" >&2; exit 2 ;; esac
if [ "$pairs" -lt 1 ] || [ "$pairs" -gt 50 ]; then
  echo "ab.sh: PAIRS must be 1..50" >&2
  exit 2
fi

counter() {  # counter NAME LINE: the value of a Google Benchmark counter
  { grep -o "$1=[^ ]*" <<<"$2" || true; } | head -1 | cut -d= -f2
}
printf '%-2s %9s %9s %9s %8s %8s %9s %9s %7s %s\n' \
  run wall_ms create_s simul_s user_s sys_s create_MB simul_MB load case
for _ in $(seq "$pairs"); do
  for side in A B; do
    bin=$a
    [ "$side" = B ] && bin=$b
    out=$("$bin" --benchmark_filter="$filter" --benchmark_format=console 2>&1) || {
      echo "ab.sh: $bin failed:" >&2
      echo "$out" >&2
      exit 1
    }
    line=$({ grep -E '^BM_' <<<"$out" || true; } | head -1)
    [ -n "$line" ] || { echo "ab.sh: no case matched '$filter'" >&2; exit 1; }
    name=$(awk '{print $1}' <<<"$line")
    wall=$(awk '{print $2}' <<<"$line")
    printf '%-2s %9s %9s %9s %8s %8s %9s %9s %7s %s\n' "$side" "$wall" \
      "$(counter create_s "$line")" "$(counter simulate_s "$line")" \
      "$(counter user_s "$line")" "$(counter sys_s "$line")" \
      "$(counter create_peak_MB "$line")" "$(counter simulate_peak_MB "$line")" \
      "$(cut -d' ' -f1 /proc/loadavg)" "$name"
    sleep "$pause"
  done
done
