#!/usr/bin/env bash
# Idempotent set-up used by the two Quick-start commands: installs the Debian packages that
# are missing (nothing when all are there), configures once, and builds the requested targets.
#   scripts/setup.sh [TARGET...]        default: all
# Environment: FL_BUILD_DIR (default build), FL_CMAKE_ARGS (extra configure arguments),
# FL_WITH_TORCH=1 (also install Debian's PyTorch, python3-torch, for /usr/bin/python3: the
# shipped PyTorch DDP job, workloads/python/ddp_train.py; scripts/test.sh always asks for it,
# scripts/main.sh when its scenario's job runs /usr/bin/python3 or names torch).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${FL_BUILD_DIR:-$ROOT/build}

# Debian packages faultline needs to build, test and run its local lab (clang-14 and its
# sanitizer/libFuzzer runtimes: the build-san phase of scripts/test.sh; slurm-wlm (slurmctld,
# slurmd, the clients) and munge: the SlurmLab root tests run a real Slurm on the local lab;
# openssh-server and -client: the local lab's switch management plane runs an sshd in every
# switch namespace, and the ssh-template switch driver runs the OpenSSH client; prometheus
# (promtool) and prometheus-pushgateway: the tests check `faultline report --openmetrics` with
# promtool and push to a real Pushgateway on loopback; frr: a `routing: bgp` lab runs zebra and
# bgpd in every switch namespace, and its root test brings configs/labs/clos4.yaml up).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git clang-14 libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev sqlite3 libboost-dev catch2 libibverbs-dev libyaml-cpp-dev
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgloo-dev libmnl-dev libnftables-dev
  iproute2 nftables ethtool iperf3 procps util-linux
  slurm-wlm munge openssh-server openssh-client prometheus prometheus-pushgateway frr
  # Alertmanager: the alert receiver's test sends it an alert and takes its webhook
  # notifications (harness/alerts, docs/detectors.md); node_exporter: the detectors' root test
  # runs one inside a lab host's namespace for Prometheus to scrape
  prometheus-alertmanager prometheus-node-exporter
  # PostgreSQL: libpq for the store's PostgreSQL back end (--db postgresql://...); the server
  # (postgresql-15) for the tests, which start their own with initdb and pg_ctl as nobody
  postgresql-15 libpq-dev
  # /usr/bin/python3's jsonschema and yaml: ctest schema:check_schemas validates the shipped
  # YAML files against configs/schema/*.schema.json (tests/schema/check_schemas.py)
  python3-jsonschema python3-yaml
  # The Debian packages (cmake/FaultlinePackage.cmake): dpkg-shlibdeps (dpkg-dev), man pages
  # from --help (help2man); their test installs them into a root file system made by
  # mmdebstrap and runs lintian (tests/package/install_test.sh)
  dpkg-dev help2man mmdebstrap lintian
  # lldpd (lldpcli): the LLDP test runs it inside a lab's host and ToR namespaces (never on
  # this machine's own interfaces: no service is started at install, see policy-rc.d below)
  lldpd
  # libfaketime: the doctor's root test runs one agent with its clock 2 s ahead
  faketime
)
# PyTorch (CPU, 1.13 on Debian 12; about 200 packages, a minute) only when asked: most runs
# never start a Python job.
if [ "${FL_WITH_TORCH:-0}" = 1 ]; then
  PACKAGES+=(python3-torch)
fi
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
  # Daemons of newly installed packages (sshd, munged, slurmd, frr) are not started: faultline runs
  # its own, inside the lab, and a set-up must not open a port on the machine. policy-rc.d is
  # Debian's switch for that (invoke-rc.d(8)); ours is removed again unless one was there.
  own_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  status=0
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
  if [ -n "$own_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
  [ "$status" -eq 0 ] || exit "$status"
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
