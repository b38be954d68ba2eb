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

# Libraries the backports build needs at a version Debian 12 does not have installed: from the
# packages' Depends (first alternative of each), every lib* package that is missing or older than
# required is downloaded too and unpacked into <cache>/libs, which LD_LIBRARY_PATH then names.
# (seabios and ipxe-qemu are not libraries: the system's SeaBIOS is on the -L path.)
needs=()
while read -r dep; do
  name=${dep%% *}
  [[ $name == lib* || $name == zlib* ]] || continue
  want=$(sed -n 's/.*(>= \(.*\))/\1/p' <<<"$dep")
  have=$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null || true)
  if [[ -z $have ]] || { [[ -n $want ]] && ! dpkg --compare-versions "$have" ge "$want"; }; then
    needs+=("$name")
  fi
done < <(for deb in "$cache"/debs/*.deb; do dpkg-deb -f "$deb" Depends; done | tr ',' '\n' |
         sed 's/|.*//; s/^ *//; s/ *$//' | sort -u)
if ((${#needs[@]})); then
  echo "== lab: QEMU needs newer or missing libraries: ${needs[*]}" >&2
  mkdir -p "$cache/libs" "$cache/libdebs" "$cache/libroot"
  chown _apt "$cache/libdebs" 2>/dev/null || true
  (cd "$cache/libdebs" && apt-get download -qq -t bookworm-backports "${needs[@]}" >&2)
  for deb in "$cache"/libdebs/*.deb; do dpkg -x "$deb" "$cache/libroot"; done
  find "$cache/libroot" -name '*.so*' -exec cp -a {} "$cache/libs/" \;
fi
libpath=
[[ -d $cache/libs ]] && libpath=$cache/libs
missing=$(LD_LIBRARY_PATH=$libpath ldd "$qemu" | awk '/not found/{print $1}')
[[ -z $missing ]] || { echo "lab: QEMU still misses libraries: $missing" >&2; exit 1; }
touch "$cache/.complete"
echo "$qemu"
