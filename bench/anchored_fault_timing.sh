#!/usr/bin/env bash
# How soon a fault timed by another's event lands (after_event / during, docs/scenarios.md):
# runs configs/scenarios/fault_during_recovery.yaml (h2.nic0 down `during` h1.nic0's flap, 2 ms
# after its first detection) REPEAT times and prints, over the runs, the median, min and max of
#   - lateness: f1's effective time minus its due time (the anchor's detection + 2 ms), i.e. the
#     detection's trip to the coordinator plus the inject call;
#   - f1 after f0: f1's effective time minus f0's;
#   - f0 recovered: f0's recovery_ms (docs/metrics.md), to compare with the above.
# Root; run from the repository root.
#   bench/anchored_fault_timing.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/anchored.db
echo "load before: $(uptime)"
for i in $(seq "$repeat"); do
  build/bin/faultline run configs/scenarios/fault_during_recovery.yaml --db "$db" -q >/dev/null
done
echo "load after:  $(uptime)"
# stat SQL NAME: median, min and max (ms) of the values SQL selects, one a run.
stat() {
  sqlite3 "$db" "$1" | sort -g > "$tmp/v"
  awk -v name="$2" '{v[NR] = $1} END {
      printf "%s over %d runs: median %.2f ms, min %.2f ms, max %.2f ms\n",
             name, NR, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR]}' \
    "$tmp/v"
}
stat "SELECT (effective_wall_ns - scheduled_wall_ns) / 1e6 FROM faults WHERE fault_id = 'f1'" \
  "lateness (effective - due)"
stat "SELECT (b.effective_wall_ns - a.effective_wall_ns) / 1e6 FROM faults a JOIN faults b
      ON a.run_id = b.run_id AND a.fault_id = 'f0' AND b.fault_id = 'f1'" "f1 after f0"
stat "SELECT value FROM metrics WHERE fault_id = 'f0' AND name = 'recovery_ms'" "f0 recovered"
