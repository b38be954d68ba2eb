#!/usr/bin/env bash
# The binaries `rdmanetctl install` copies onto a node must run on the glibc of the distributions
# GPU clusters run (RHEL/Rocky 8 has glibc 2.28, Ubuntu 20.04 2.31, RHEL 9 2.34, Ubuntu 22.04 2.35).
#   1. Each host binary asks for no GLIBC_ symbol version above 2.28 (a static binary asks none).
#   2. In a Debian 11 root filesystem (glibc 2.31, made with mmdebstrap, cached), the binaries as
#      `rdmanetctl install` placed them answer VERSION, and run a macvlan ADD/CHECK/DEL with the
#      embedded IPAM against a network namespace pair this test made (the master is a veth).
# Usage: run_hostcompat.sh BUILD_DIR      (root; ROOTFS_CACHE overrides /var/cache/rdmanet-test)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
bin=$build/bin
cache=${ROOTFS_CACHE:-/var/cache/rdmanet-test}
suite=bullseye
max_glibc=2.28
host_binaries=(rdmanet rdmanet-ipam)

fail() { echo "FAIL: $*" >&2; exit 1; }

# --- 1. glibc symbol versions -------------------------------------------------------------
# The highest GLIBC_x.y a binary's dynamic symbols require, "none" for a static binary.
highest_glibc() {
  local versions
  versions=$(objdump -T "$1" 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV || true)
  if [[ -z $versions ]]; then echo none; else tail -n1 <<<"$versions"; fi
}
for b in "${host_binaries[@]}"; do
  [[ -x $bin/$b ]] || fail "$bin/$b is not built"
  v=$(highest_glibc "$bin/$b")
  needed=$(readelf -d "$bin/$b" 2>/dev/null | grep -c NEEDED || true)
  echo "$b: highest GLIBC_ symbol version: $v; shared libraries needed: $needed"
  if [[ $v != none ]] && [[ $(printf '%s\n%s\n' "$v" "$max_glibc" | sort -V | tail -n1) != "$max_glibc" ]]; then
    fail "$b needs GLIBC_$v, above $max_glibc (RHEL 8): it would not start on those nodes"
  fi
done

# --- 2. Debian 11 root filesystem ---------------------------------------------------------
mkdir -p "$cache"
tarball=$cache/$suite-minbase.tar
if [[ ! -s $tarball ]]; then
  echo "== making the Debian 11 ($suite) root filesystem with mmdebstrap (cached in $tarball)"
  # --format=tar: mmdebstrap picks the format from the name, and "*.part" would make a directory.
  mmdebstrap --quiet --variant=minbase --format=tar "$suite" "$tarball.part" http://deb.debian.org/debian
  mv "$tarball.part" "$tarball"
fi

# The extracted tree is cached too; each run writes into an overlay above it, dropped at the end.
tree=$cache/$suite-minbase
if [[ ! -f $tree/.complete ]]; then
  rm -rf "$tree"
  mkdir -p "$tree"
  tar -C "$tree" -xf "$tarball"
  touch "$tree/.complete"
fi

tag=hc$$
work=$(mktemp -d /tmp/rdmanet-hostcompat-XXXXXX)
node_ns=rdmanet-$tag-node
pod_ns=rdmanet-$tag-pod
rootfs=$work/rootfs
cleanup() {
  ip netns del "$pod_ns" 2>/dev/null || true
  ip netns del "$node_ns" 2>/dev/null || true
  umount "$rootfs" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$rootfs" "$work/upper" "$work/overlay-work"
mount -t overlay overlay -o "lowerdir=$tree,upperdir=$work/upper,workdir=$work/overlay-work" "$rootfs"
# sed reads all of ldd's output: head would close the pipe early, and with pipefail ldd's SIGPIPE
# would fail the script at random.
glibc=$(chroot "$rootfs" /usr/bin/ldd --version | sed -n '1s/.* \([0-9.]*\)$/\1/p')
echo "rootfs: Debian $(cat "$rootfs/etc/debian_version"), glibc $glibc"
[[ $glibc == 2.31 ]] || fail "the $suite root filesystem has glibc $glibc, expected 2.31"

# The binaries land where the DaemonSet's installer puts them on a node.
"$bin/rdmanetctl" install --source-dir "$bin" --cni-bin-dir "$rootfs/opt/cni/bin" \
  --cni-conf-dir "$rootfs/etc/cni/net.d" --service-account-dir "" >"$work/install.log" ||
  fail "rdmanetctl install: $(cat "$work/install.log")"
for b in "${host_binaries[@]}"; do [[ -x $rootfs/opt/cni/bin/$b ]] || fail "install did not place $b"; done

ip netns add "$node_ns"
ip netns add "$pod_ns"
ip -n "$node_ns" link add up0 type veth peer name up1
ip -n "$node_ns" link set up0 up
ip -n "$node_ns" link set up1 up
mkdir -p "$rootfs/run/netns"
touch "$rootfs/run/netns/pod"

# Runs BINARY inside the rootfs, in the node namespace, with the CNI environment and stdin.
in_rootfs() {
  local verb=$1 binary=$2
  ip netns exec "$node_ns" unshare --mount --propagation private sh -c '
    set -e
    root=$1
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --bind "/run/netns/$2" "$root/run/netns/pod"
    shift 2
    exec chroot "$root" "$@"' sh "$rootfs" "$pod_ns" \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND="$verb" CNI_CONTAINERID=hostcompat-$tag \
    CNI_NETNS=/run/netns/pod CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=hostcompat;K8S_POD_NAME=pod-$tag" "/opt/cni/bin/$binary"
}

for b in "${host_binaries[@]}"; do
  out=$(in_rootfs VERSION "$b" </dev/null) || fail "$b VERSION exited $? on glibc $glibc: $out"
  jq -e '.supportedVersions | index("1.0.0")' >/dev/null <<<"$out" || fail "$b VERSION: unexpected answer: $out"
  echo "$b VERSION on glibc $glibc: $(jq -c .supportedVersions <<<"$out")"
done

conf=$(jq -n '{cniVersion: "1.0.0", name: "hostcompat", type: "rdmanet", mode: "macvlan", master: "up0",
  macvlanMode: "bridge", ipam: {type: "rdmanet-ipam", range: "10.251.7.0/24", gateway: "10.251.7.1"}}')
add=$(in_rootfs ADD rdmanet <<<"$conf") || fail "ADD exited non-zero: $add"
addr=$(jq -r '.ips[0].address' <<<"$add")
[[ $addr == 10.251.7.2/24 ]] || fail "ADD result: $add"
ip -n "$pod_ns" -4 -o addr show dev net1 | grep "inet 10.251.7.2/24" >/dev/null || fail "net1 in the pod has no 10.251.7.2/24"
[[ $(ip -n "$pod_ns" -d -o link show net1) == *macvlan* ]] || fail "net1 is not a macvlan"
store=$rootfs/var/lib/cni/rdmanet/ipam   # the default data_dir, where the node policy allows it
allocations() { "$bin/rdmanetctl" pool list --json --data-dir "$store" | jq -c '[.[].spec.allocations | length]'; }
[[ $(allocations) == "[1]" ]] || fail "the IPAM store after ADD: $(allocations)"
echo "ADD on glibc $glibc: net1 macvlan of up0 with $addr"

check_conf=$(jq --argjson prev "$add" '. + {prevResult: $prev}' <<<"$conf")
out=$(in_rootfs CHECK rdmanet <<<"$check_conf") || fail "CHECK exited non-zero: $out"
echo "CHECK on glibc $glibc: ok"

out=$(in_rootfs DEL rdmanet <<<"$conf") || fail "DEL exited non-zero: $out"
! ip -n "$pod_ns" link show net1 >/dev/null 2>&1 || fail "net1 still in the pod after DEL"
out=$(in_rootfs DEL rdmanet <<<"$conf") || fail "a second DEL exited non-zero: $out"
[[ $(allocations) == "[0]" ]] || fail "the IPAM store after DEL: $(allocations)"
echo "DEL on glibc $glibc: net1 gone, address released, second DEL ok"
echo "PASS: host binaries run on Debian 11 (glibc $glibc)"
