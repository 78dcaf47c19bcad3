#!/usr/bin/env bash
# The Quick-start main command: set up (packages, configure, build what the run needs) and run
# the default resilience scenario on the embedded local lab. Extra arguments go to
# `faultline run` (e.g. --seed 7, --tag fw=22.39, --json); FL_SCENARIO picks another scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh faultline faultline-agent faultline-worker
BIN=${FL_BUILD_DIR:-$(pwd)/build}/bin
exec "$BIN/faultline" run "${FL_SCENARIO:-configs/scenarios/nic_flap.yaml}" "$@"
