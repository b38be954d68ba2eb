#!/usr/bin/env bash
# real_assets.sh [kube-1.37|kube-1.34]: prints an envtest-style assets directory (what
# KUBEBUILDER_ASSETS names: `kube-apiserver` and `etcd` side by side) for one tested Kubernetes
# version (default kube-1.37), made of symlinks to the real peers that tests/peers/build_peers.sh
# builds from their pinned Go modules (the etcd and kube-<minor> peers; built on first use, then
# reused). The directory is <peers cache>/kubereal-assets-<kube version>-etcd-<etcd version>.
# Any other first argument (an older caller's path) is ignored, and kube-1.37 is used.
# Exits 1, having said why on stderr, when a peer cannot be built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
builder=$here/../peers/build_peers.sh
kube=${1:-kube-1.37}
[[ $kube == kube-* ]] || kube=kube-1.37
root=${PEERS_CACHE:-/var/cache/rdmanet-peers}

built=$("$builder" etcd "$kube") || {
  echo "real_assets.sh: building the etcd and $kube peers failed (tests/peers/build_peers.sh said why)" >&2
  exit 1
}
read -r _ etcd_version etcd_dir < <(grep '^etcd ' <<<"$built")
read -r _ kube_version kube_dir < <(grep "^$kube " <<<"$built")
assets=$root/kubereal-assets-$kube_version-etcd-$etcd_version
mkdir -p "$assets"
ln -sfn "$kube_dir/kube-apiserver" "$assets/kube-apiserver"
ln -sfn "$etcd_dir/etcd" "$assets/etcd"
echo "$assets"
