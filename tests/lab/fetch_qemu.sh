#!/usr/bin/env bash
# Unpacks QEMU from Debian bookworm-backports (10.x: the first Debian QEMU that emulates Intel's
# 82576 "igb" with SR-IOV) into a cache directory, without installing it: the machine's own
# qemu-system-x86 (7.2 on Debian 12) stays as it is.
#   fetch_qemu.sh <cache-dir>
# Prints the path of the unpacked qemu-system-x86_64 on stdout. Run it as:
#   <dir>/usr/bin/qemu-system-x86_64 -L <dir>/usr/share/qemu -L /usr/share/seabios ...
# with LD_LIBRARY_PATH=<dir>/libs when that directory exists (libraries newer than the system's).
#
# Adds the backports suite to apt's sources (a file under /etc/apt/sources.list.d) only when no
# source names it yet; backports packages have pin priority 100, so nothing is upgraded from it
# unless asked for by name.
set -euo pipefail

cache=$1
qemu=$cache/usr/bin/qemu-system-x86_64
if [[ -x $qemu && -f $cache/.complete ]]; then
  echo "$qemu"
  exit 0
fi

if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "== lab: adding bookworm-backports to apt's sources" >&2
  cat >/etc/apt/sources.list.d/rdmanet-lab-backports.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq >&2
elif ! apt-cache policy qemu-system-x86 | grep -q 'bookworm-backports'; then
  apt-get update -qq >&2
fi

rm -rf "$cache"
mkdir -p "$cache/debs"
# apt drops privileges to _apt for downloads; let it write there (else it warns and runs as root).
chown _apt "$cache/debs" 2>/dev/null || true
(cd "$cache/debs" && apt-get download -qq -t bookworm-backports \
  qemu-system-x86 qemu-system-common qemu-system-data >&2)
for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$cache"; done
[[ -x $qemu ]] || { echo "lab: $qemu missing after unpacking" >&2; exit 1; }

# Libraries the backports build needs that Debian 12 does not have at the required version:
# fetch the backports package that ships each missing one and point LD_LIBRARY_PATH at it.
missing=$(LD_LIBRARY_PATH= ldd "$qemu" | awk '/not found/{print $1}')
if [[ -n $missing ]]; then
  echo "== lab: QEMU needs libraries not on this system: $missing" >&2
  mkdir -p "$cache/libs" "$cache/libdebs"
  for lib in $missing; do
    pkg=$(apt-cache search --names-only "^$(sed 's/\.so\./ /; s/-\([0-9]\)/\1/' <<<"$lib" | awk '{print $1}')" 2>/dev/null | head -n1 | cut -d' ' -f1)
    [[ -n $pkg ]] || { echo "lab: no package for $lib" >&2; exit 1; }
    (cd "$cache/libdebs" && apt-get download -qq -t bookworm-backports "$pkg" >&2)
  done
  for deb in "$cache"/libdebs/*.deb; do dpkg -x "$deb" "$cache/libroot"; done
  find "$cache/libroot" -name '*.so*' -exec cp -a {} "$cache/libs/" \;
  still=$(LD_LIBRARY_PATH=$cache/libs ldd "$qemu" | awk '/not found/{print $1}')
  [[ -z $still ]] || { echo "lab: QEMU still misses: $still" >&2; exit 1; }
fi
touch "$cache/.complete"
echo "$qemu"
