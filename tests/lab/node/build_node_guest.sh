#!/usr/bin/env bash
# The node lab's guest, as two gzip'd newc cpio archives that the kernel unpacks one after the
# other (QEMU's -initrd takes their concatenation):
#   build_node_guest.sh base <kernel-version> <module-root> <cache-dir>   -> prints the base archive
#   build_node_guest.sh run <build-dir> <config-dir> <output.cpio.gz>
# base: everything that changes only with the peers, the Debian packages or this lab's own files:
#   the real peers (kubelet, containerd + its runc shim + ctr, kubectl, DRANET, Multus, the
#   reference CNI plugins), Debian's runc, iproute2, rdma-core, perftest, rdmacm-utils, busybox,
#   the 7.x kernel's modules, and the pods' image (an OCI archive of one layer: the static
#   tests/lab/node/pause.c as /pause and busybox), made here, imported by the guest (no registry).
#   Cached in <cache-dir>/base-<key>.cpio.gz, <key> a hash of every input; a later run with the
#   same inputs reuses it, older keys are removed.
# run: what changes with every build or run: the project's programs (rdmanet, rdmanet-ipam,
#   rdmanetctl at /opt/cni/bin and /usr/local/bin), the guest scripts, and <config-dir> (the
#   kubeconfig, CA and manifests the host made for this run) as /lab/config.
# The layout mirrors the host's merged /usr (bin, sbin, lib, lib64 are symlinks into usr/).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# copy_file, copy_libs, copy_program: shared with the other labs' builders.
# shellcheck source=tests/lab/initramfs_lib.sh
. "$here/../initramfs_lib.sh"
# install_bin <file> <dir>: a (static Go) program into <dir> of the root, with its libraries.
install_bin() {
  mkdir -p "$root$2"
  cp -L "$1" "$root$2/$(basename "$1")"
  copy_libs "$1"
}
pack() { (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$1"; }
new_root() {
  rm -rf "$root"
  mkdir -p "$root"
}

# peer_bin <peer> <binary>: the binary from the peer's directory ($RDMANET_PEER_<NAME>).
peer_bin() {
  local var=RDMANET_PEER_${1^^}
  var=${var//-/_}
  var=${var//./_}
  local dir=${!var:-}
  [[ -n $dir && -x $dir/$2 ]] || { echo "build_node_guest: peer $1 ($var) has no $2" >&2; exit 1; }
  echo "$dir/$2"
}

# The host tools the guest runs (busybox provides the rest). bash runs the scripts: Debian's
# busybox prefers its own applets in its shell (its `ip` would not be iproute2's).
TOOLS=(/usr/bin/bash /usr/sbin/ip /usr/bin/rdma /usr/bin/ibv_devinfo /usr/bin/ibv_devices
       /usr/bin/timeout /usr/bin/ib_write_bw /usr/bin/rping /usr/bin/taskset /usr/bin/nsenter
       /usr/bin/jq /usr/sbin/runc /usr/bin/setpriv)
# xfrm_user and nfnetlink: DRANET's netlink handle opens NETLINK_XFRM and NETLINK_NETFILTER sockets
# too (nfnetlink is built into the 7.3 kernel), and fails to prepare a claim without them.
MODULES=(ib_core ib_uverbs rdma_rxe rdma_cm rdma_ucm configfs veth macvlan dummy virtio_net xfrm_user)
PEER_BINS=("kube-node-1.37 kubelet /usr/local/bin" "containerd containerd /usr/local/bin"
           "containerd-node containerd-shim-runc-v2 /usr/local/bin" "containerd-node ctr /usr/local/bin"
           "kubectl-1.37 kubectl /usr/local/bin" "dranet dranet /usr/local/bin"
           "multus multus /opt/cni/bin" "cni-plugins macvlan /opt/cni/bin"
           "cni-plugins host-local /opt/cni/bin")

# make_image <root-dir> <name> <out.tar>: an OCI image archive of one uncompressed layer holding
# <root-dir>, entrypoint /pause, named <name> for `ctr images import`.
make_image() {
  local src=$1 name=$2 out=$3 d layer_sha layer_size cfg cfg_sha man man_sha
  d=$(mktemp -d)
  mkdir -p "$d/blobs/sha256"
  (cd "$src" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
    tar --null --no-recursion --numeric-owner --owner=0 --group=0 --mtime=@0 -cf "$d/layer.tar" -T -)
  layer_sha=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$d/layer.tar")
  mv "$d/layer.tar" "$d/blobs/sha256/$layer_sha"
  cfg=$(jq -cn --arg diff "sha256:$layer_sha" '{architecture: "amd64", os: "linux",
    config: {Entrypoint: ["/pause"], WorkingDir: "/"}, rootfs: {type: "layers", diff_ids: [$diff]},
    created: "1970-01-01T00:00:00Z"}')
  printf '%s' "$cfg" >"$d/cfg"
  cfg_sha=$(sha256sum "$d/cfg" | cut -d' ' -f1)
  mv "$d/cfg" "$d/blobs/sha256/$cfg_sha"
  man=$(jq -cn --arg c "sha256:$cfg_sha" --argjson cs "${#cfg}" --arg l "sha256:$layer_sha" --argjson ls "$layer_size" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}')
  printf '%s' "$man" >"$d/man"
  man_sha=$(sha256sum "$d/man" | cut -d' ' -f1)
  mv "$d/man" "$d/blobs/sha256/$man_sha"
  jq -cn --arg m "sha256:$man_sha" --argjson ms "${#man}" --arg n "$name" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $ms,
        platform: {architecture: "amd64", os: "linux"},
        annotations: {"io.containerd.image.name": $n, "org.opencontainers.image.ref.name": $n}}]}' >"$d/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
  tar -C "$d" -cf "$out" oci-layout index.json blobs
  rm -rf "$d"
}

build_base() {
  local kver=$1 module_root=$2 cache=$3 key_src key out
  mkdir -p "$cache"
  # The key: this script and the shared one, pause.c, the peers' build records, the packages' versions, the kernel.
  key_src=$({
    sha256sum "$0" "$here/../initramfs_lib.sh" "$here/pause.c"
    for e in "${PEER_BINS[@]}"; do
      read -r peer bin _ <<<"$e"
      sha256sum "$(peer_bin "$peer" "$bin")" | cut -d' ' -f1
    done
    dpkg-query -W -f='${Package} ${Version}\n' busybox-static iproute2 rdma-core ibverbs-providers ibverbs-utils \
      perftest rdmacm-utils util-linux coreutils jq runc libc6 bash 2>/dev/null
    echo "$kver ${MODULES[*]}"
  } | sha256sum | cut -c1-16)
  out=$cache/base-$key_src.cpio.gz
  if [[ -s $out ]]; then
    echo "$out"
    return 0
  fi
  root=$(mktemp -d /tmp/rdmanet-nodelab-base.XXXXXX)
  trap 'rm -rf "$root"' RETURN
  mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{etc,proc,sys,dev,run,tmp,var,root,lab,opt/cni/bin}
  ln -s usr/bin "$root/bin"
  ln -s usr/sbin "$root/sbin"
  ln -s usr/lib "$root/lib"
  ln -s usr/lib64 "$root/lib64"
  ln -s ../run "$root/var/run"
  local t e peer bin dir
  for t in "${TOOLS[@]}"; do copy_program "$t"; done
  # glibc loads libgcc_s at run time for rping's threads; ldd does not list it.
  copy_file /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
  cp /usr/bin/busybox "$root/usr/bin/busybox"
  for applet in $(/usr/bin/busybox --list); do
    [[ -e $root/usr/bin/$applet || -e $root/usr/sbin/$applet ]] && continue
    case $applet in init | linuxrc) continue ;; esac
    ln -s busybox "$root/usr/bin/$applet"
  done
  mkdir -p "$root/etc/libibverbs.d"
  cp /etc/libibverbs.d/*.driver "$root/etc/libibverbs.d/"
  for provider in /usr/lib/x86_64-linux-gnu/libibverbs/*.so; do copy_program "$provider"; done
  for e in "${PEER_BINS[@]}"; do
    read -r peer bin dir <<<"$e"
    install_bin "$(peer_bin "$peer" "$bin")" "$dir"
  done
  # Kernel modules in dependency order (busybox insmod loads plain, uncompressed ones).
  : >"$root/lab/modules"
  mkdir -p "$root/lab/mod"
  declare -A seen=()
  local module verb path params plain
  for module in "${MODULES[@]}"; do
    while read -r verb path params; do
      [[ $verb == insmod && -z ${seen[$path]:-} ]] || continue
      seen[$path]=1
      plain=/lab/mod/$(basename "${path%.xz}")
      if [[ $path == *.xz ]]; then xz -dc "$path" >"$root$plain"; else cp "$path" "$root$plain"; fi
      printf '%s %s\n' "$plain" "$params" >>"$root/lab/modules"
    done < <(modprobe -d "$module_root" -S "$kver" --show-depends "$module")
  done
  # The pods' image: /pause (also the sandbox) and busybox, for `sh -c` in the pods.
  local img
  img=$(mktemp -d)
  mkdir -p "$img/bin" "$img/dev" "$img/proc" "$img/sys" "$img/etc" "$img/tmp"
  gcc -static -Os -o "$img/pause" "$here/pause.c"
  cp /usr/bin/busybox "$img/bin/busybox"
  for applet in sh sleep ip cat ls; do ln -s busybox "$img/bin/$applet"; done
  make_image "$img" lab.local/pause:1 "$root/lab/image.tar"
  rm -rf "$img"
  cp /etc/ld.so.conf "$root/etc/"
  cp -r /etc/ld.so.conf.d "$root/etc/"
  ldconfig -r "$root" 2>/dev/null || true
  rm -f "$cache"/base-*.cpio.gz
  pack "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out"
}

build_run() {
  local build=$1 config=$2 out=$3 p
  root=$(mktemp -d /tmp/rdmanet-nodelab-run.XXXXXX)
  trap 'rm -rf "$root"' RETURN
  mkdir -p "$root/opt/cni/bin" "$root/usr/local/bin" "$root/lab"
  for p in rdmanet rdmanet-ipam; do
    objcopy --strip-debug "$build/bin/$p" "$root/opt/cni/bin/$p"
  done
  objcopy --strip-debug "$build/bin/rdmanetctl" "$root/usr/local/bin/rdmanetctl"
  # Their shared libraries beyond the base's (libc): copied at their host paths.
  for p in rdmanet rdmanet-ipam rdmanetctl; do copy_libs "$build/bin/$p"; done
  cp "$here"/guest/*.sh "$here/../guest/lab_lib.sh" "$root/lab/"
  install -m 0755 "$here/guest/init" "$root/init"
  cp -r "$config" "$root/lab/config"
  pack "$out"
}

case ${1:-} in
  base) build_base "$2" "$3" "$4" ;;
  run) build_run "$2" "$3" "$4" ;;
  *) echo "usage: $0 base <kver> <module-root> <cache-dir> | run <build-dir> <config-dir> <out>" >&2; exit 2 ;;
esac
