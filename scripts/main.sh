#!/usr/bin/env bash
# The Quick-start main command: set up (packages, configure, build) and run faultline.
# Until `faultline run` lands this shows the most complete thing that is built: the CLI, and
# what the collective library finds on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh faultline faultline-agent faultline-worker ftccl-perf
BIN=${FL_BUILD_DIR:-$(pwd)/build}/bin
"$BIN/faultline" --help
"$BIN/ftccl-perf" --devices
