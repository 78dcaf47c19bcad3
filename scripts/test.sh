#!/usr/bin/env bash
# The Quick-start test command: set up (packages, configure, build) and run the whole suite.
# Tests that need root (ctest label "root": namespaces, links, nftables, cgroups) run when
# this runs as root and are excluded otherwise; GPU and RDMA tests are excluded unless
# FL_TEST_GPU=1 / FL_TEST_RDMA=1.
#   scripts/test.sh [extra ctest arguments, e.g. -R common_test]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=${FL_BUILD_DIR:-$(pwd)/build}
exclude=()
[ "$(id -u)" -eq 0 ] || exclude+=(root)
[ "${FL_TEST_GPU:-0}" = 1 ] || exclude+=(gpu)
[ "${FL_TEST_RDMA:-0}" = 1 ] || exclude+=(rdma)
args=()
if [ ${#exclude[@]} -gt 0 ]; then
  args+=(-LE "^($(IFS='|'; echo "${exclude[*]}"))\$")
fi
cd "$BUILD_DIR"
exec ctest --output-on-failure -j "$(nproc)" "${args[@]}" "$@"
