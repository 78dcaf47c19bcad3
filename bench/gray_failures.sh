#!/usr/bin/env bash
# The gray-failure benchmark (issue 18; docs/performance.md "Gray failures"): on the hpn4 lab,
# each of configs/scenarios/gray_{loss,throttle,pfc_stall,blackhole,port_down}.yaml runs
# REPEAT times (blackhole BLACKHOLE_REPEAT times) into one results database, then a
# fault-free run of HEALTHY_S seconds at full load counts ftccl's path faults (fault_detected
# events: every one there is a false alarm). Prints per kind the medians of detection,
# failover, degraded ratio (against the run's own baseline) and the degraded throughput against
# what the remaining ports carry, two ways: the median degraded ratio over gray_port_down's
# (the same port cleanly down; each run measured against its own baseline, so the machine's
# drift between runs cancels), and the median degraded algbw over gray_port_down's (raw).
# Root; run from the repository root after a build.
#   bench/gray_failures.sh [REPEAT (5)] [BLACKHOLE_REPEAT (20)] [HEALTHY_S (600)]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}
bh_repeat=${2:-20}
healthy_s=${3:-600}
fl=build/bin/faultline
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=${GRAY_DB:-$tmp/gray.db}  # GRAY_DB=FILE keeps the results (a new file: the medians are over all of it)

run() {  # scenario, index, count
  printf '[gray] %s run %d of %d\n' "$1" "$2" "$3" >&2
  if ! "$fl" run "configs/scenarios/gray_$1.yaml" --db "$db" --tag "bench=gray_$1" -q \
      >"$tmp/out" 2>&1; then
    echo "[gray] $1 run $2 did not pass:" >&2
    tail -n 15 "$tmp/out" >&2
  fi
}
for kind in port_down loss throttle pfc_stall; do
  for i in $(seq "$repeat"); do run "$kind" "$i" "$repeat"; done
done
for i in $(seq "$bh_repeat"); do run blackhole "$i" "$bh_repeat"; done

if [ "$healthy_s" -gt 0 ]; then
  sed -e "s/^duration: .*//" -e "s/^  duration: 12s/  duration: ${healthy_s}s/" \
      -e '/^faults:/,/^expectations:/{/^expectations:/!d}' \
      -e 's/^name: gray_port_down/name: gray_healthy/' \
      -e 's/^description: .*/description: no fault, full load, for the false-alarm count/' \
      -e 's/^  max_detection_ms: .*//' \
      -e 's/^expectations:/faults: []\nexpectations:/' \
      configs/scenarios/gray_port_down.yaml >"$tmp/gray_healthy.yaml"
  printf '[gray] healthy run of %d s\n' "$healthy_s" >&2
  "$fl" run "$tmp/gray_healthy.yaml" --db "$db" --tag bench=gray_healthy -q >"$tmp/out" 2>&1 ||
    { echo "[gray] the healthy run did not pass:" >&2; tail -n 15 "$tmp/out" >&2; }
fi

sqlite3 "$db" <<'SQL'
.mode list
.separator " "
CREATE TEMP VIEW m AS
  SELECT t.value AS kind, x.run_id, x.name, x.value
  FROM metrics x JOIN run_tags t ON t.run_id = x.run_id AND t.key = 'bench'
  WHERE x.fault_id = 'f0';
CREATE TEMP TABLE med AS
  SELECT kind, name, value AS v, cnt AS n FROM (
    SELECT kind, name, value,
           ROW_NUMBER() OVER (PARTITION BY kind, name ORDER BY value) AS k,
           COUNT(*) OVER (PARTITION BY kind, name) AS cnt
    FROM m)
  WHERE k = (cnt + 1) / 2;
SELECT printf('%-20s %5s %12s %12s %10s %14s %14s', 'scenario', 'runs', 'detect ms',
              'failover ms', 'degraded', 'vs port down', 'raw algbw vs');
SELECT printf('%-20s %5d %12.1f %12.1f %10.3f %14.3f %14.3f', k.kind,
              (SELECT n FROM med WHERE kind = k.kind AND name = 'fault_applied'),
              (SELECT v FROM med WHERE kind = k.kind AND name = 'detection_latency_ms'),
              (SELECT v FROM med WHERE kind = k.kind AND name = 'failover_ms'),
              (SELECT v FROM med WHERE kind = k.kind AND name = 'degraded_ratio'),
              (SELECT v FROM med WHERE kind = k.kind AND name = 'degraded_ratio') /
              (SELECT v FROM med WHERE kind = 'gray_port_down' AND name = 'degraded_ratio'),
              (SELECT v FROM med WHERE kind = k.kind AND name = 'degraded_algbw') /
              (SELECT v FROM med WHERE kind = 'gray_port_down' AND name = 'degraded_algbw'))
  FROM (SELECT DISTINCT kind FROM med) k ORDER BY k.kind;
SELECT printf('healthy run: %s s, %d path fault(s) (false alarms), %d drained',
              (SELECT printf('%.0f', (MAX(wall_ns) - MIN(wall_ns)) / 1e9) FROM events e
                 JOIN run_tags t ON t.run_id = e.run_id AND t.key = 'bench' AND t.value = 'gray_healthy'),
              (SELECT COUNT(*) FROM events e JOIN run_tags t ON t.run_id = e.run_id AND
                 t.key = 'bench' AND t.value = 'gray_healthy' WHERE e.kind = 'fault_detected'),
              (SELECT COUNT(*) FROM events e JOIN run_tags t ON t.run_id = e.run_id AND
                 t.key = 'bench' AND t.value = 'gray_healthy' WHERE e.kind = 'fault_detected'
                 AND json_extract(e.detail_json, '$.cause') LIKE 'path_%'));
SQL
