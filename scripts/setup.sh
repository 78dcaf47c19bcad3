#!/usr/bin/env bash
# Idempotent set-up used by the two Quick-start commands: installs the Debian packages that
# are missing (nothing when all are there), configures once, and builds the requested targets.
#   scripts/setup.sh [TARGET...]        default: all
# Environment: FL_BUILD_DIR (default build), FL_CMAKE_ARGS (extra configure arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${FL_BUILD_DIR:-$ROOT/build}

# Debian packages faultline needs to build, test and run its local lab (clang-14 and its
# sanitizer/libFuzzer runtimes: the build-san phase of scripts/test.sh; slurm-wlm (slurmctld,
# slurmd, the clients) and munge: the SlurmLab root tests run a real Slurm on the local lab).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git clang-14 libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev sqlite3 libboost-dev catch2 libibverbs-dev libyaml-cpp-dev
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgloo-dev libmnl-dev libnftables-dev
  iproute2 nftables ethtool iperf3 procps util-linux
  slurm-wlm munge
)
if [ -f "$ROOT/scripts/packages.extra" ]; then
  mapfile -t -O "${#PACKAGES[@]}" PACKAGES < <(grep -v '^#' "$ROOT/scripts/packages.extra" | grep .)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: run as root (or install them) and try again" >&2
    exit 3
  fi
  echo "setup: installing ${#missing[@]} missing Debian package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages (the HTML report's charting library), once the report needs them.
if [ -f "$ROOT/reports/render/web/package.json" ] && [ ! -d "$ROOT/reports/render/web/node_modules" ]; then
  # Debian's nodejs comes without npm (package npm); a NodeSource nodejs bundles npm and
  # conflicts with Debian's npm package: install it only when the command is missing.
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "setup: npm is missing: run as root (or install the Debian package npm)" >&2
      exit 3
    fi
    echo "setup: installing the Debian package npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "setup: installing npm packages for the HTML report"
  (cd "$ROOT/reports/render/web" && npm ci --no-audit --no-fund --silent)
fi

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # shellcheck disable=SC2086
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FL_CMAKE_ARGS:-}
fi
jobs=$(nproc)
if [ $# -eq 0 ]; then
  cmake --build "$BUILD_DIR" -j "$jobs"
else
  cmake --build "$BUILD_DIR" -j "$jobs" --target "$@"
fi
