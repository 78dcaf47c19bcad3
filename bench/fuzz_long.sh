#!/usr/bin/env bash
# Long fuzzing: every libFuzzer target of the sanitizer build (build-san/fuzz/) for RUNS
# inputs or CAP seconds, whichever comes first, one after the other, with the per-input time
# limit of CI (10 s, so a hang is found) and its memory limit. Seeds: the target's
# tests/fuzz/corpus/<name>/ where there is one, then what earlier long runs found (OUT/work-*).
# Prints a line per target: its inputs run, seconds, and findings (crash or timeout files).
#   bench/fuzz_long.sh [RUNS] [CAP] [OUT]       defaults: 1000000 600 /tmp/fl-fuzz-long
# After `ninja -C build-san fl_fuzzers` (scripts/test.sh builds it).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
cap=${2:-600}
out=${3:-/tmp/fl-fuzz-long}
mkdir -p "$out"
found=0
for f in build-san/fuzz/fuzz_*; do
  n=$(basename "$f" | sed 's/^fuzz_//')
  seeds=tests/fuzz/corpus/$n
  [ -d "$seeds" ] || seeds=""
  mkdir -p "$out/work-$n" "$out/work-$n.artifacts"
  start=$(date +%s)
  "$f" -runs="$runs" -max_total_time="$cap" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/work-$n.artifacts/" "$out/work-$n" $seeds > "$out/$n.log" 2>&1
  rc=$?
  done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$n.log" | grep -o '[0-9]*$')
  artifacts=$(ls "$out/work-$n.artifacts" | wc -l)
  found=$((found + artifacts + (rc != 0)))
  printf '%-14s inputs %8s  %4d s  exit %d  findings %d\n' "$n" "${done_runs:-?}" \
    $(( $(date +%s) - start )) "$rc" "$artifacts"
done
[ "$found" -eq 0 ]
