#!/usr/bin/env bash
# Injection time error of `faultline run`: for every fault of a run, effective minus scheduled
# time (scheduled = the timeline's time; effective = when the kernel acknowledged it, on the
# coordinator's clock). Runs bench/configs/injection_timing.yaml (30 flaps) REPEAT times and
# prints the median and p99 over all faults. Root; run from the repository root.
#   bench/injection_timing.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
db=$(mktemp -d)/timing.db
for i in $(seq "$repeat"); do
  build/bin/faultline run bench/configs/injection_timing.yaml --db "$db" >/dev/null
done
sqlite3 "$db" "SELECT (effective_wall_ns - scheduled_wall_ns) / 1000.0 FROM faults
               WHERE effective_wall_ns IS NOT NULL AND scheduled_wall_ns IS NOT NULL ORDER BY 1;" > "$db.us"
n=$(wc -l < "$db.us")
median=$(awk -v n="$n" 'NR == int((n + 1) / 2) {print}' "$db.us")
p99=$(awk -v n="$n" 'BEGIN {k = int(n * 0.99); if (k < 1) k = 1} NR == k {print}' "$db.us")
echo "injection time error (effective - scheduled) over $n faults in $repeat runs: median ${median} us, p99 ${p99} us"
rm -rf "$(dirname "$db")"
