#!/usr/bin/env bash
# Unpacks Linux 7.3 from Debian trixie-backports into a cache directory without installing anything: the machine's own kernel, apt sources and apt lists stay
# as they are. Linux 7.x is the first kernel whose soft-RoCE (rdma_rxe) opens its UDP socket in the
# network namespace of the netdev, so RoCE runs between pods; Debian 12's 6.1 cannot.
#   fetch_kernel73.sh <cache-dir>
# Prints "<vmlinuz> <modules-dir> <release>" on stdout.
#
# Debian splits the kernel: linux-image-<release> is a small package that depends on
# linux-binary-<release> (the kernel, in /usr/lib/modules/<release>/vmlinuz) and linux-modules-<release> (the modules); all three are
# downloaded. apt runs against a private source list and private state/cache directories under <cache>/apt, so
# trixie-backports never appears in the machine's apt configuration.
set -euo pipefail

cache=$1
release=${LAB_KERNEL73_RELEASE:-7.3.4+deb13-amd64}
vmlinuz=$cache/root/usr/lib/modules/$release/vmlinuz
moddir=$cache/root/usr/lib/modules/$release
if [[ -f $vmlinuz && -d $moddir && -f $cache/.complete ]]; then
  echo "$vmlinuz $moddir $release"
  exit 0
fi

rm -rf "$cache"
apt=$cache/apt
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/sources" "$cache/debs" "$cache/root"
cat >"$apt/sources/trixie-backports.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
: >"$apt/status"
aptopts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/sources"
         -o Dir::State::Lists="$apt/lists" -o Dir::State::Status="$apt/status"
         -o Dir::Cache="$apt" -o Dir::Cache::Archives="$apt/archives"
         -o APT::Sandbox::User=root -o Debug::NoLocking=1)
echo "== lab: fetching Linux $release from trixie-backports" >&2
apt-get "${aptopts[@]}" update -qq >&2
(cd "$cache/debs" && apt-get "${aptopts[@]}" download -qq \
  "linux-image-$release" "linux-binary-$release" "linux-modules-$release" >&2) || {
  echo "lab: linux-image-$release / linux-modules-$release not found in trixie-backports;" \
       "candidates:" >&2
  apt-cache "${aptopts[@]}" search --names-only '^linux-image-7\.[0-9.]*\+deb13-amd64$' >&2 || true
  exit 1
}
for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$cache/root"; done
rm -rf "$cache/debs" "$apt/archives" "$apt/lists"
# Debian 13 is merged-/usr (modules in usr/lib/modules); modprobe -d <root> looks in lib/modules.
# The package ships no modules.dep (its postinst runs depmod): made here, for modprobe -d.
ln -sfn usr/lib "$cache/root/lib"
depmod -b "$cache/root" "$release" 2>/dev/null
[[ -f $vmlinuz ]] || { echo "lab: $vmlinuz missing after unpacking" >&2; exit 1; }
[[ -d $moddir ]] || { echo "lab: $moddir missing after unpacking" >&2; exit 1; }
touch "$cache/.complete"
echo "$vmlinuz $moddir $release"
