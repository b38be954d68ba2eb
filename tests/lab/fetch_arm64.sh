#!/usr/bin/env bash
# Unpacks what the arm64 kernel lab boots into a cache directory, without installing anything:
# Debian's arm64 kernel and an arm64 userland for the guest (busybox, bash, iproute2's ip and
# rdma, ibverbs-utils, libibverbs and its providers, and the shared libraries they need).
#   fetch_arm64.sh <cache-dir> 4k|16k
# 4k: Debian 12's linux-image-arm64 (6.1, 4K pages), from the system's apt sources with the arm64
#   architecture added (dpkg --add-architecture arm64, done by tests/arch/build_arm64.sh).
# 16k: Debian 13's linux-image-arm64-16k (16K pages: the page-size class of Grace's 64K kernels,
#   which Debian does not ship), from a private apt configuration under <cache-dir>/trixie-apt:
#   trixie is never added to the system's sources, so nothing on this machine can be upgraded to it.
# Prints "<kernel-version> <vmlinuz> <modules-root>" on stdout; <cache-dir>/userland is the
# guest's userland (its usr/ and lib/ as the .debs unpack them).
set -euo pipefail

cache=$1
flavour=$2
mkdir -p "$cache"
cache=$(realpath "$cache")

# apt drops privileges to _apt for downloads; let it write there (else it warns and runs as root).
download_dir() { mkdir -p "$1" && chown _apt "$1" 2>/dev/null || true; }

# Options that make apt read only <cache>/trixie-apt: its sources, lists, cache and status.
trixie_apt=(
  -o Dir::Etc::SourceList="$cache/trixie-apt/sources.list" -o Dir::Etc::SourceParts="$cache/trixie-apt/empty"
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$cache/trixie-apt/empty"
  -o Dir::State::Lists="$cache/trixie-apt/lists" -o Dir::Cache="$cache/trixie-apt/cache"
  -o Dir::State::Status="$cache/trixie-apt/status"
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64
)
trixie_update() {
  mkdir -p "$cache/trixie-apt/empty" "$cache/trixie-apt/lists/partial" "$cache/trixie-apt/cache/archives/partial"
  chown -R _apt "$cache/trixie-apt/lists" 2>/dev/null || true
  echo 'deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' \
    >"$cache/trixie-apt/sources.list"
  : >"$cache/trixie-apt/status"
  apt-get "${trixie_apt[@]}" update -qq >&2
}

# The kernel: the package the meta package points at, unpacked into <cache>/kernel-<flavour>,
# with modules.dep made by depmod (kmod reads arm64 modules like any other) and the compressed
# modules (trixie ships .ko.xz) unpacked, so the guest's busybox insmod loads them as they are.
kdir=$cache/kernel-$flavour
if [[ ! -f $kdir/.complete ]]; then
  rm -rf "$kdir"
  download_dir "$kdir/debs"
  if [[ $flavour == 16k ]]; then
    trixie_update
    pkg=$(apt-cache "${trixie_apt[@]}" depends linux-image-arm64-16k | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n 1)
    [[ -n $pkg ]] || { echo "fetch_arm64: trixie has no linux-image-arm64-16k" >&2; exit 1; }
    (cd "$kdir/debs" && apt-get "${trixie_apt[@]}" download -qq "$pkg" >&2)
  else
    apt-cache policy linux-image-arm64:arm64 | grep -q 'Candidate: [0-9]' || apt-get update -qq >&2
    pkg=$(apt-cache depends linux-image-arm64:arm64 | sed -n 's/^ *Depends: \(linux-image-[^ :]*\).*/\1/p' | head -n 1)
    [[ -n $pkg ]] || { echo "fetch_arm64: no linux-image-arm64:arm64 in apt's sources (dpkg --add-architecture arm64?)" >&2; exit 1; }
    (cd "$kdir/debs" && apt-get download -qq "$pkg:arm64" >&2)
  fi
  for deb in "$kdir"/debs/*.deb; do dpkg -x "$deb" "$kdir"; done
  rm -rf "$kdir/debs"
  # trixie's kernel ships its modules under usr/lib (merged /usr); depmod -b wants lib/modules.
  [[ -d $kdir/lib || ! -d $kdir/usr/lib/modules ]] || ln -s usr/lib "$kdir/lib"
  kver=$(ls "$kdir/lib/modules" | head -n 1)
  find "$kdir/lib/modules/$kver" -name '*.ko.xz' -exec xz -d {} +
  depmod -b "$kdir" "$kver"
  touch "$kdir/.complete"
fi
kver=$(ls "$kdir/lib/modules" | head -n 1)
vmlinuz=$kdir/boot/vmlinuz-$kver
[[ -r $vmlinuz ]] || { echo "fetch_arm64: $vmlinuz missing" >&2; exit 1; }

# The guest's userland: Debian 12 arm64 packages, unpacked (not installed) into one tree.
# Only what the lab runs and the libraries it links; build_initramfs_arm64.sh copies each
# program with the libraries its ELF headers name and fails on one that is not here.
userland=$cache/userland
guest_packages=(
  busybox-static bash iproute2 ibverbs-utils ibverbs-providers libibverbs1 libnl-3-200 libnl-route-3-200
  libc6 libgcc-s1 libtinfo6 libbpf1 libelf1 zlib1g libbsd0 libmd0 libcap2 libdb5.3 libmnl0 libselinux1
  libpcre2-8-0 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2
  libkeyutils1 libssl3 libxtables12 libzstd1 liblzma5 coreutils libacl1 libattr1 libgmp10
)
if [[ ! -f $userland/.complete ]]; then
  rm -rf "$userland"
  download_dir "$cache/userland-debs"
  rm -f "$cache"/userland-debs/*.deb
  (cd "$cache/userland-debs" && apt-get download -qq "${guest_packages[@]/%/:arm64}" >&2)
  mkdir -p "$userland"
  for deb in "$cache"/userland-debs/*.deb; do dpkg -x "$deb" "$userland"; done
  rm -rf "$cache/userland-debs"
  touch "$userland/.complete"
fi

echo "$kver $vmlinuz $kdir"
