#!/bin/bash
# Makes the bundle that scripts/device_check.sh runs on a machine with a GPU, where nothing is
# built and nothing may be downloaded: the Debian packages built here unpacked (dpkg-deb -x),
# Debian's iproute2 and nftables unpacked beside them, every shared library those binaries
# and the GPU tests need (but glibc's, and the GPU driver's libcuda, which the machine has),
# and the [.gpu]-labelled test binaries (debug info stripped) with their ctest filters.
#
# usage: scripts/device_bundle.sh [OUT_DIR]     (default: device-bundle/)
# It also writes OUT_DIR.tar.gz (about 30 MiB: within what the device tool carries); on the
# GPU machine: tar -xzf device-bundle.tar.gz -C /tmp && /tmp/device-bundle/device_check.sh
# Needs the main build (scripts/setup.sh) and Debian's archive for iproute2 and nftables.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
BUILD=${FL_BUILD_DIR:-$SRC/build}
OUT=$(mkdir -p "${1:-device-bundle}" && cd "${1:-device-bundle}" && pwd)
say() { echo "device_bundle: $*"; }
rm -rf "$OUT"/{root,lib,tests,debs}
mkdir -p "$OUT"/{root,lib,tests}

say "packages (cpack)"
cmake --build "$BUILD" >/dev/null
work=$(mktemp -d /tmp/fl_bundle_XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd "$BUILD" && cpack -G DEB -B "$work/cpack" >/dev/null)
(cd "$work" && apt-get download -q iproute2 nftables libnftables1 libjansson4 libxtables12 \
   libbpf1 libelf1 libcap2 libmnl0 libnftnl11 libedit2 libbsd0 libmd0 libtirpc3 libgssapi-krb5-2 \
   >/dev/null)
for deb in "$work"/cpack/*.deb "$work"/*.deb; do dpkg-deb -x "$deb" "$OUT/root"; done
# The tools beside faultline: its ResolveTool also searches its own folder.
for t in ip tc bridge nft; do
  for d in sbin usr/sbin bin usr/bin; do
    if [ -x "$OUT/root/$d/$t" ] && [ ! -e "$OUT/root/usr/bin/$t" ]; then
      cp "$OUT/root/$d/$t" "$OUT/root/usr/bin/$t"
    fi
  done
done

say "the [.gpu] tests"
(cd "$BUILD" && ctest -N -L '^gpu$' --show-only=json-v1) >"$work/gpu.json"
/usr/bin/python3 - "$work/gpu.json" "$OUT/tests" <<'PY'
import json, os, shutil, subprocess, sys
tests = json.load(open(sys.argv[1]))["tests"]
out = sys.argv[2]
lines = []
for t in tests:
    cmd = t["command"]
    binary, args = cmd[0], cmd[1:]
    dest = os.path.join(out, os.path.basename(binary))
    if not os.path.exists(dest):
        shutil.copy2(binary, dest)
        subprocess.run(["strip", "--strip-debug", dest], check=True)
    lines.append("\t".join([t["name"], os.path.basename(binary)] + args))
open(os.path.join(out, "tests.tsv"), "w").write("\n".join(lines) + "\n")
print("device_bundle: %d gpu tests in %d binaries" % (len(lines), len({l.split("\t")[1] for l in lines})))
PY

say "shared libraries"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda\.so|libnvidia)'
for f in "$OUT"/root/usr/bin/* "$OUT"/root/usr/lib/x86_64-linux-gnu/libftccl.so.0 "$OUT"/tests/*; do
  [ -f "$f" ] && file -b "$f" | grep -q ELF || continue
  LD_LIBRARY_PATH="$OUT/root/usr/lib/x86_64-linux-gnu:$OUT/root/lib/x86_64-linux-gnu" ldd "$f" 2>/dev/null |
    awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  [ -e "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/$name"
done
cp "$SRC/scripts/device_check.sh" "$OUT/"
tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
du -sh "$OUT" "$OUT.tar.gz" | sed 's/^/device_bundle: size /'
say "done: run \`$OUT/device_check.sh\` on the GPU machine (or carry it with the device tool)"
