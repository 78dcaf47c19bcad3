#!/usr/bin/env bash
# Injection time error of `faultline run`: for every fault of a run, effective minus scheduled
# time (scheduled = the timeline's time; effective = when the kernel acknowledged it, on the
# coordinator's clock). Runs bench/configs/injection_timing.yaml (30 flaps) REPEAT times and
# prints the median and p99 over all faults, split into the agent's wake-up (requested -
# scheduled: when it started to act) and the injector's own time (effective - requested: the
# netlink round trip), and the revert time error (reverted - effective - duration), with the
# machine's load (uptime) before and after. Root; run from the
# repository root. FL_TIMING_KEEP=DIR keeps the runs' store there.
#   bench/injection_timing.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
tmp=$(mktemp -d)
db=${FL_TIMING_KEEP:-$tmp}/timing.db
echo "load before: $(uptime)"
for i in $(seq "$repeat"); do
  build/bin/faultline run bench/configs/injection_timing.yaml --db "$db" >/dev/null
done
echo "load after:  $(uptime)"
# stat COLUMN-EXPRESSION NAME: median, p99 and max in us over the faults with all three times.
stat() {
  sqlite3 "$db" "SELECT ($1) / 1000.0 FROM faults WHERE effective_wall_ns IS NOT NULL
                 AND scheduled_wall_ns IS NOT NULL AND requested_wall_ns IS NOT NULL
                 ORDER BY 1;" > "$tmp/v"
  awk -v name="$2" '{v[NR] = $1} END {
      n = NR; k = int(n * 0.99); if (k < 1) k = 1
      printf "%s over %d faults in '"$repeat"' runs: median %s us, p99 %s us, max %s us\n",
             name, n, v[int((n + 1) / 2)], v[k], v[n]}' "$tmp/v"
}
stat "effective_wall_ns - scheduled_wall_ns" "injection time error (effective - scheduled)"
stat "requested_wall_ns - scheduled_wall_ns" "  agent start (requested - scheduled)"
stat "effective_wall_ns - requested_wall_ns" "  injector (effective - requested)"
# Reverts are sent by the coordinator when due (not ahead): reverted minus (effective + the
# faults' duration, 300 ms in bench/configs/injection_timing.yaml).
dur_ns=$(awk '/^faults:/ {f = 1} f && $1 == "duration:" {sub(/ms$/, "", $2); print $2 * 1000000; exit}' \
  bench/configs/injection_timing.yaml)
stat "reverted_wall_ns - effective_wall_ns - $dur_ns" "revert time error (reverted - effective - duration)"
rm -rf "$tmp"
