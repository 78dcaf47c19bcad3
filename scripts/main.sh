#!/usr/bin/env bash
# The Quick-start main command: set up (packages, configure, build what the run needs), run the
# default resilience scenario on the embedded local lab, and write its report (results.html,
# results.md). Extra arguments go to `faultline run` (e.g. --seed 7, --tag fw=22.39, --json,
# --db PATH); FL_SCENARIO picks another scenario. Exits with the run's exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${FL_SCENARIO:-configs/scenarios/nic_flap.yaml}
# A scenario whose job runs Debian's PyTorch (its lines, comments aside, name /usr/bin/python3
# or torch, e.g. configs/scenarios/torch_ddp_nic_flap.yaml) gets python3-torch installed.
with_torch=0
if [ -f "$scenario" ] && grep -v '^[[:space:]]*#' "$scenario" | grep -Eq '/usr/bin/python3|torch'; then
  with_torch=1
fi
FL_WITH_TORCH=$with_torch scripts/setup.sh faultline faultline-agent faultline-worker
BIN=${FL_BUILD_DIR:-$(pwd)/build}/bin
db=results.db
prev=
for a in "$@"; do
  [ "$prev" = --db ] && db=$a
  case $a in --db=*) db=${a#--db=} ;; esac
  prev=$a
done
rc=0
"$BIN/faultline" run "$scenario" "$@" || rc=$?
# A run that ended with verdicts (0 passed, 1 an expectation failed) gets its report.
if [ "$rc" -le 1 ] && [ -f "$db" ]; then
  if "$BIN/faultline" report latest --db "$db" --html results.html --md results.md; then
    echo "report: results.html (open it in a browser), results.md" >&2
  fi
fi
exit "$rc"
