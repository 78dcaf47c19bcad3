#!/bin/bash
# The Debian packages on a clean Debian 12 (ctest package:install, root): cpack makes them from
# the build; lintian finds no error in them; a minimal root file system made by mmdebstrap from
# this machine's own Debian archive installs them with apt-get (every dependency resolved from
# Debian); the binaries run there (--version, `faultline run --dry-run` of a shipped scenario,
# the agent unit's ExecStart line, there being no systemd in a chroot); `apt-get purge` leaves
# nothing of faultline but what Debian keeps (dpkg's and apt's own records and logs). A
# program built against libftccl-dev's headers, pkg-config file and library runs.
#
# usage: tests/package/install_test.sh BUILD_DIR SOURCE_DIR
# Everything is made under one temporary directory, removed at exit with every mount of the
# chroot (they live in this script's own mount namespace).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
SRC=$(cd "${2:?source dir}" && pwd)
T0=$(date +%s)
say() { echo "package: [$(( $(date +%s) - T0 )) s] $*"; }
fail() { echo "package: FAILED: $*" >&2; exit 1; }

if [ -z "${FL_PKG_IN_NS:-}" ]; then
  # A private mount namespace: whatever is mounted into the chroot goes with this process.
  exec unshare --mount --propagation private env FL_PKG_IN_NS=1 "$0" "$@"
fi

WORK=$(mktemp -d /tmp/fl_package_XXXXXX)
ROOT="$WORK/root"
AGENT_PID=
cleanup() {
  # The agent started from the unit's ExecStart line, if a failure left it running.
  if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then kill -KILL "$AGENT_PID"; fi
  for m in "$ROOT/dev/pts" "$ROOT/dev" "$ROOT/sys" "$ROOT/proc"; do
    mountpoint -q "$m" 2>/dev/null && umount -l "$m"
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

for tool in cpack mmdebstrap lintian dpkg-deb pkg-config g++; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh installs it)"
done

# 1. The packages.
say "cpack -G DEB"
mkdir -p "$WORK/debs"
(cd "$BUILD" && cpack -G DEB -B "$WORK/cpack" >"$WORK/cpack.log" 2>&1) ||
  { tail -30 "$WORK/cpack.log"; fail "cpack"; }
cp "$WORK"/cpack/*.deb "$WORK/debs/"
ls "$WORK/debs"
for p in faultline faultline-agent libftccl0 libftccl-dev; do
  ls "$WORK"/debs/${p}_*.deb >/dev/null 2>&1 || fail "no ${p}_*.deb"
done
version=$(dpkg-deb -f "$WORK"/debs/faultline_*.deb Version)
say "version $version"
[[ "$version" =~ ^[0-9] ]] || fail "version '$version' does not start with a digit"
for p in faultline faultline-agent; do
  depends=$(dpkg-deb -f "$WORK"/debs/${p}_*.deb Depends)
  echo "$p Depends: $depends"
  [[ "$depends" == *libc6* ]] || fail "$p: no shared-library dependencies (shlibdeps did not run)"
done
dpkg-deb -c "$WORK"/debs/faultline-agent_*.deb >"$WORK/agent-files.txt"
grep -q ' ./etc/faultline/policy.yaml$' "$WORK/agent-files.txt" ||
  fail "faultline-agent has no /etc/faultline/policy.yaml"
dpkg-deb -e "$WORK"/debs/faultline-agent_*.deb "$WORK/agent-control"
grep -qx /etc/faultline/policy.yaml "$WORK/agent-control/conffiles" ||
  fail "policy.yaml is not a conffile"

# 2. lintian: no errors.
say "lintian"
if ! lintian --fail-on error --no-tag-display-limit "$WORK"/debs/*.deb >"$WORK/lintian.log" 2>&1; then
  cat "$WORK/lintian.log"
  fail "lintian reports errors"
fi
grep -c '^[WI]:' "$WORK/lintian.log" | sed 's/^/lintian warnings and notes: /' || true

# 3. A minimal Debian 12 from this machine's archive.
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
say "mmdebstrap bookworm (from $sources)"
mkdir -p "$ROOT"
mmdebstrap --quiet --variant=apt bookworm "$ROOT" "$sources" >"$WORK/mmdebstrap.log" 2>&1 ||
  { tail -30 "$WORK/mmdebstrap.log"; fail "mmdebstrap"; }
mount -t proc proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$ROOT/tmp/debs"
cp "$WORK"/debs/*.deb "$ROOT/tmp/debs/"
in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev \) -prune -o -print |
  sort >"$WORK/before.txt"

# 4. apt-get install: every dependency from Debian.
say "apt-get install ./faultline-agent_*.deb ./faultline_*.deb ./libftccl*.deb"
in_root apt-get update -q >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; fail "apt-get update"; }
if ! in_root sh -c 'cd /tmp/debs && apt-get install -y -q --no-install-recommends \
      ./faultline-agent_*.deb ./faultline_*.deb ./libftccl0_*.deb ./libftccl-dev_*.deb' \
      >>"$WORK/apt.log" 2>&1; then
  tail -40 "$WORK/apt.log"
  fail "apt-get install"
fi
grep -E '^(Setting up|Unpacking) (faultline|libftccl)' "$WORK/apt.log" | sed 's/^/  /'

# 5. The binaries run.
say "the binaries run"
in_root faultline --version
in_root faultline-agent --version
in_root test -f /usr/share/man/man1/faultline.1.gz || fail "no man page faultline.1.gz"
in_root test -d /run/faultline || fail "postinst made no /run/faultline"
in_root sh -c 'cd / && faultline run --dry-run /usr/share/faultline/configs/scenarios/nic_flap.yaml' \
  >"$WORK/dryrun.log" 2>&1 || { cat "$WORK/dryrun.log"; fail "faultline run --dry-run"; }
head -5 "$WORK/dryrun.log" | sed 's/^/  /'

# The agent unit's ExecStart, as systemd would run it for faultline-agent@node01 (no systemd
# runs in a chroot): %i, and the variables of /etc/faultline/agent.env pointed at a token and
# the shipped example inventory.
unit=/lib/systemd/system/faultline-agent@.service
exec_start=$(in_root sed -n '/^ExecStart=/,/[^\\]$/p' "$unit" | sed 's/^ExecStart=//; s/\\$//' | tr '\n' ' ')
[ -n "$exec_start" ] || fail "no ExecStart in $unit"
in_root sh -c 'umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n" > /etc/faultline/token'
in_root faultline certs init /etc/faultline/tls >/dev/null
in_root faultline certs issue /etc/faultline/tls node01 >/dev/null
in_root sed -i 's|^FAULTLINE_INVENTORY=.*|FAULTLINE_INVENTORY=/usr/share/faultline/configs/inventories/example.yaml|;
  s|^FAULTLINE_COORDINATOR=.*|FAULTLINE_COORDINATOR=127.0.0.1:9|;
  s|^FAULTLINE_AGENT_ARGS=.*|FAULTLINE_AGENT_ARGS="--connect-timeout 1"|' /etc/faultline/agent.env
cmd=${exec_start//%i/node01}
echo "  ExecStart: $cmd"
# The shell writes its pid, then becomes the agent (exec): that pid is the agent's.
in_root sh -c "echo \$\$ > /tmp/agent.pid; set -a; . /etc/faultline/agent.env; set +a;
  export FAULTLINE_STATE_DIR=/run/faultline; eval exec $cmd" >"$WORK/agent.log" 2>&1 &
runner=$!
for _ in $(seq 50); do [ -s "$ROOT/tmp/agent.pid" ] && break; sleep 0.1; done
AGENT_PID=$(cat "$ROOT/tmp/agent.pid" 2>/dev/null || true)
[ -n "$AGENT_PID" ] || fail "the agent's ExecStart line did not start"
sleep 3
if ! kill -0 "$AGENT_PID" 2>/dev/null; then
  cat "$WORK/agent.log"
  fail "the agent's ExecStart line exited at once"
fi
# SIGTERM, as systemctl stop sends: the agent exits by itself.
kill -TERM "$AGENT_PID"
for _ in $(seq 100); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$AGENT_PID" 2>/dev/null; then
  kill -KILL "$AGENT_PID"
  fail "the agent did not stop within 10 s of SIGTERM"
fi
AGENT_PID=
wait "$runner" || true
sed -n '1,3s/^/  agent: /p' "$WORK/agent.log"
# Dialling a coordinator that is not there, as a service does between runs.
grep -q 'host=node01.*not registered yet' "$WORK/agent.log" ||
  fail "the agent did not dial for node01"
# What the operator made (token, certificates) is the operator's to remove.
in_root rm -rf /etc/faultline/token /etc/faultline/tls

# 6. libftccl-dev: a program built against it runs.
say "a program built against libftccl-dev"
cat >"$WORK/use_ftccl.cc" <<'EOF'
#include <cstdio>
#include <cstring>

#include "ccl_under_test/ftccl/ftccl.h"

extern "C" const char* ftccl_version();

int main() {
  fl::ccl::CclRegistry registry("ccl");
  if (!fl::ccl::ftccl::RegisterFtccl(registry).ok()) return 1;
  if (!registry.Contains("ftccl")) return 2;
  std::printf("ftccl %s registered\n", ftccl_version());
  return std::strlen(ftccl_version()) > 0 ? 0 : 3;
}
EOF
mkdir -p "$WORK/dev"
dpkg-deb -x "$WORK"/debs/libftccl-dev_*.deb "$WORK/dev"
dpkg-deb -x "$WORK"/debs/libftccl0_*.deb "$WORK/dev"
pc_dir=$(dirname "$(find "$WORK/dev" -name ftccl.pc)")
flags=$(PKG_CONFIG_SYSROOT_DIR="$WORK/dev" PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs ftccl)
echo "  pkg-config: $flags"
# shellcheck disable=SC2086
g++ "$WORK/use_ftccl.cc" -o "$WORK/use_ftccl" $flags || fail "building against libftccl-dev"
LD_LIBRARY_PATH=$(dirname "$(find "$WORK/dev" -name 'libftccl.so.0')") "$WORK/use_ftccl" ||
  fail "the program built against libftccl did not run"

# 7. Purge: nothing of faultline is left but dpkg's and apt's records.
say "apt-get purge"
in_root apt-get purge -y -q faultline faultline-agent libftccl0 libftccl-dev >>"$WORK/apt.log" 2>&1 ||
  { tail -20 "$WORK/apt.log"; fail "apt-get purge"; }
in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev \) -prune -o -print |
  sort >"$WORK/after.txt"
left=$(comm -13 "$WORK/before.txt" "$WORK/after.txt" | grep -iE 'faultline|ftccl' |
  grep -vE '^/(var/lib/dpkg|var/lib/apt|var/cache/apt|var/cache/debconf|var/log)/|^/tmp/debs' || true)
if [ -n "$left" ]; then
  echo "$left"
  fail "purge left the files above"
fi
say "passed"
