#!/usr/bin/env bash
# Whether two builds of drainwise write the same flow-level reports, byte
# for byte: the check behind "every report identical" in
# docs/performance.md. Generates the presets' fabrics once, then runs
# `drainwise simulate --mode flow --format json` with both binaries over
# a fixed list of (preset, routing, drain, options) and compares.
#
#   bench/same_reports.sh OLD_DRAINWISE NEW_DRAINWISE [WORKDIR]
#
# Exit 0 when every report is the same, 1 when one differs (it names
# which), 2 on bad use. About a minute on 2 cores.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
old=$1 new=$2 work=${3:-$(mktemp -d -t same-reports.XXXXXX)}
for bin in "$old" "$new"; do
  [ -x "$bin" ] || { echo "same_reports.sh: not an executable: $bin" >&2; exit 2; }
done
mkdir -p "$work"
for preset in 32k-moe 32k 32k-moe-2to1 demo; do
  [ -f "$work/$preset/topology.json" ] || "$new" fabric --preset "$preset" --out "$work/$preset" >/dev/null
done
# preset | routing | drained switch | further options
cases=(
  "32k-moe|hash|p0-spine0|"
  "32k-moe|hash|p1-spine3|--threads 1"
  "32k-moe|hash|ss0-0|--hash-seeds 3"
  "32k-moe|hash|p0-leaf0-r0|"
  "32k-moe|hash-rehash|p0-spine0|"
  "32k-moe|spray|p0-spine0|"
  "32k-moe|spray-path|p0-spine0|"
  "32k-moe|adaptive|p0-spine0|"
  "32k|hash|p0-spine0|"
  "32k|hash-rehash|p0-spine0|"
  "32k|spray|p0-spine0|"
  "32k|adaptive|p0-spine0|"
  "32k-moe-2to1|hash|p0-spine0|"
  "32k-moe-2to1|hash-rehash|p0-spine0|"
  "demo|hash|p0-spine0|"
  "demo|hash-rehash|p0-spine0|"
  "demo|spray|p0-spine0|"
  "demo|adaptive|p0-spine0|"
)
differ=0
for c in "${cases[@]}"; do
  IFS='|' read -r preset routing switch extra <<<"$c"
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    # shellcheck disable=SC2086  # $extra is a list of options
    "$bin" simulate --mode flow --format json --topology "$work/$preset/topology.json" \
      --jobs "$work/$preset/jobs.json" --routing "$routing" --switch "$switch" $extra >"$work/$side.json"
  done
  if cmp -s "$work/old.json" "$work/new.json"; then
    echo "same    $preset $routing $switch $extra ($(wc -c <"$work/new.json") B)"
  else
    echo "DIFFER  $preset $routing $switch $extra"
    differ=1
  fi
done
exit "$differ"
