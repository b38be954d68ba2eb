#!/usr/bin/env bash
# real_assets.sh SHARED_DIR CACHE_DIR: prints an envtest-style assets directory (what
# KUBEBUILDER_ASSETS names: `kube-apiserver` and `etcd` side by side) made from the xz-compressed
# kube-apiserver in SHARED_DIR and Debian's etcd (/usr/bin/etcd, package etcd-server).
# The binary is decompressed once into CACHE_DIR and checked against SHARED_DIR/SHA256SUMS (both the
# archive and the decompressed binary); a cached copy whose hash no longer matches is made again.
# Prints nothing and exits 1 when SHARED_DIR has no kube-apiserver or etcd is not installed;
# exits 2 when a hash does not match (a corrupt or substituted binary is never run).
set -euo pipefail
shared=$1 cache=$2
xz_file=$shared/kube-apiserver-v1.21.xz
sums=$shared/SHA256SUMS
etcd=$(command -v etcd || true)
[[ -f $xz_file && -f $sums && -n $etcd ]] || exit 1

want_xz=$(awk '$2 == "kube-apiserver-v1.21.xz" {print $1}' "$sums")
want_bin=$(awk '$2 == "kube-apiserver" {print $1}' "$sums")
assets=$cache/kube-assets-v1.21
bin=$assets/kube-apiserver
if [[ ! -x $bin ]] || [[ $(sha256sum <"$bin" | cut -d' ' -f1) != "$want_bin" ]]; then
  if [[ $(sha256sum <"$xz_file" | cut -d' ' -f1) != "$want_xz" ]]; then
    echo "real_assets.sh: $xz_file does not match SHA256SUMS" >&2
    exit 2
  fi
  mkdir -p "$assets"
  xz -dc "$xz_file" >"$bin.tmp"
  if [[ $(sha256sum <"$bin.tmp" | cut -d' ' -f1) != "$want_bin" ]]; then
    rm -f "$bin.tmp"
    echo "real_assets.sh: the decompressed kube-apiserver does not match SHA256SUMS" >&2
    exit 2
  fi
  chmod 0755 "$bin.tmp"
  mv "$bin.tmp" "$bin"
fi
ln -sfn "$etcd" "$assets/etcd"
echo "$assets"
