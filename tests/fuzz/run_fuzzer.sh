#!/usr/bin/env bash
# run_fuzzer.sh FUZZER WORK_CORPUS SEED_DIR...: one libFuzzer run (the ctest "fuzz" tests).
#   FL_FUZZ_SECONDS  how long (default 20); FL_FUZZ_RUNS=N runs N inputs instead.
# New interesting inputs go to WORK_CORPUS; a crash leaves crash-<sha1> beside it (the
# path is printed) and fails the test. Reproduce with: FUZZER crash-file
set -euo pipefail
fuzzer=$1 work=$2
shift 2
mkdir -p "$work" "$work.artifacts"
limit=(-max_total_time="${FL_FUZZ_SECONDS:-20}")
[ -z "${FL_FUZZ_RUNS:-}" ] || limit=(-runs="$FL_FUZZ_RUNS")
exec "$fuzzer" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work.artifacts/" "$work" "$@"
