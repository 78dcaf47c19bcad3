#!/bin/bash
# The device check on a machine with a GPU, from a bundle made here by scripts/device_bundle.sh
# (nothing is built or downloaded there): the packaged binaries run, every [.gpu]-labelled
# test passes, and a GPU scenario (configs/scenarios/gpu_training_flap.yaml: cuBLAS training
# steps over ftccl while a NIC flaps) passes on the local lab. One line per check:
#   device_check: OK|FAIL NAME (SECONDS s)[: the last line it printed]
# then a summary; exit 0 when every check passed. Each check has its own time limit and the
# whole stays under 10 minutes. Run as root (the local lab needs it).
#
# usage: device_check.sh [BUNDLE_DIR]    (default: the folder this script is in)
set -uo pipefail
B=$(cd "${1:-$(dirname "$0")}" && pwd)
export PATH="$B/root/usr/bin:$B/root/usr/sbin:$B/root/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
export LD_LIBRARY_PATH="$B/lib:$B/root/usr/lib/x86_64-linux-gnu:$B/root/lib/x86_64-linux-gnu"
export FAULTLINE_STATE_DIR=${FAULTLINE_STATE_DIR:-/run/faultline}
LOGS=${FL_DEVICE_LOGS:-/tmp/fl_device_check}
mkdir -p "$LOGS"
passed=0 failed=0 T_START=$(date +%s)

# check NAME LIMIT_SECONDS COMMAND...
check() {
  local name=$1 limit=$2
  shift 2
  local log="$LOGS/$(echo "$name" | tr -c 'A-Za-z0-9._-' '_').log" t0 rc
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "device_check: OK $name (${dt} s)"
  else
    failed=$((failed + 1))
    local why
    why=$(grep -v '^\s*$' "$log" | tail -1 | cut -c1-160)
    [ $rc -eq 124 ] && why="timed out after ${limit} s; $why"
    echo "device_check: FAIL $name (${dt} s): $why"
  fi
}

check "a GPU is visible" 30 sh -c 'nvidia-smi -L | grep -q GPU'
check "faultline --version" 10 faultline --version
check "faultline-agent --version" 10 faultline-agent --version
# tests.tsv: ctest's name, the binary, then its arguments, tab-separated.
while IFS=$'\t' read -r -a f; do
  [ ${#f[@]} -ge 2 ] || continue
  check "${f[0]}" 120 "$B/tests/${f[1]}" "${f[@]:2}"
done <"$B/tests/tests.tsv"
scenario="$B/root/usr/share/faultline/configs/scenarios/gpu_training_flap.yaml"
db="$LOGS/results.db"
rm -f "$db"
check "scenario gpu_training_flap" 240 faultline run "$scenario" --db "$db"
check "nothing left behind" 30 sh -c '[ -z "$(ip netns list)" ] && [ -z "$(ls -A "$FAULTLINE_STATE_DIR/journal" 2>/dev/null)" ]'

echo "device_check: $passed passed, $failed failed in $(( $(date +%s) - T_START )) s (logs in $LOGS)"
[ "$failed" -eq 0 ]
