#!/usr/bin/env bash
# The node lab: a real Kubernetes node under QEMU, as root on a Debian 12 machine:
#   tests/lab/run_node_lab.sh <build-dir>      (built: rdmanet rdmanet-ipam rdmanetctl)
# On this host: etcd, kube-apiserver 1.37, kube-scheduler and kube-controller-manager of the real
# peers (tests/peers/build_peers.sh), bound to 127.0.0.1, files in a private temp dir, stopped by
# PID at exit. In the guest (Linux 7.3 from trixie-backports, tests/lab/fetch_kernel73.sh; TCG
# unless KVM works): containerd 2.x with NRI and Debian's runc, the kubelet 1.37 registered to that
# API server, Multus, DRANET v1.4.0, rdmanet's plugin, profile provider and node agent. The guest
# reaches nothing but the API server: QEMU user networking with restrict=on and one guestfwd
# (10.0.2.100:6443 -> socat -> the API server's 127.0.0.1 port); its two rails are virtio NICs on an
# internal QEMU hub that has no other port.
# Checks: the node Ready and a pod Running; the Multus path (guest/node_multus.sh); the DRA path
# (guest/node_dra.sh). One PASS/FAIL line per check, the summary last; exit 0 only when the guest
# printed its summary with no failure and every host check passed.
#
# The guest's base archive (peers, Debian tools, modules, the pods' image) is cached by its inputs
# in LAB_NODE_CACHE (default /var/cache/rdmanet-lab/node); the per-run archive holds the build's
# programs, the guest scripts and the run's kubeconfig.
# Environment: LAB_TIMEOUT (seconds for the guest, default 1500), LAB_KEEP=1 keeps the temp dir,
# LAB_ACCEL=kvm|tcg, NODE_LAB_SECTIONS (default "node_multus,node_dra"), LAB_NODE_MEM (default 3G).
# The serial console is saved as <build-dir>/lab-node-console.log, the host's logs in
# <build-dir>/lab-node-logs/.
set -euo pipefail

if [[ $# -ne 1 || ! -d $1 ]]; then
  echo "usage: $0 <build-dir>   (built: rdmanet rdmanet-ipam rdmanetctl)" >&2
  exit 2
fi
[[ $(id -u) -eq 0 ]] || { echo "run as root: the lab installs packages" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(realpath "$1")
timeout_s=${LAB_TIMEOUT:-1500}
for p in rdmanet rdmanet-ipam rdmanetctl; do
  [[ -x $build/bin/$p ]] || { echo "missing $build/bin/$p (build it first)" >&2; exit 1; }
done

packages=(qemu-system-x86 busybox-static iproute2 rdma-core ibverbs-providers ibverbs-utils perftest
          rdmacm-utils util-linux xz-utils cpio kmod binutils runc jq openssl gcc libc6-dev curl socat)
# shellcheck source=tests/ci/install_missing.sh
. "$here/../ci/install_missing.sh"
install_missing "${packages[@]}"

# The peers (built from their pinned modules on first use, then reused).
peers=(etcd kube-1.37 kube-node-1.37 kubectl-1.37 containerd containerd-node dranet multus cni-plugins)
"$repo/tests/peers/build_peers.sh" "${peers[@]}" >/dev/null || { echo "node lab: building the peers failed" >&2; exit 1; }
eval "$("$repo/tests/peers/build_peers.sh" --env)"
KUBECTL=$RDMANET_PEER_KUBECTL_1_37/kubectl

read -r kernel module_root kver < <("$here/fetch_kernel73.sh" "${LAB_KERNEL73_CACHE:-/var/cache/rdmanet-lab/kernel73}")
module_root=${module_root%/usr/lib/modules/*}
[[ -r $kernel && -d $module_root/lib/modules/$kver ]] || { echo "node lab: no 7.x kernel in the cache" >&2; exit 1; }

work=$(mktemp -d /tmp/rdmanet-nodelab.XXXXXX)
logs=$build/lab-node-logs
rm -rf "$logs"
mkdir -p "$logs"
source "$here/node/control_plane.sh"
host_pass=0
host_fail=0
host_check() { # <name> <command...>
  local name=$1
  shift
  if "$@" >"$work/check.out" 2>&1; then
    host_pass=$((host_pass + 1))
    echo "PASS: host: $name"
  else
    host_fail=$((host_fail + 1))
    echo "FAIL: host: $name"
    tail -n 20 "$work/check.out" | sed 's/^/    | /'
  fi
}
cleanup() {
  set +e
  cp_stop
  cp "$work"/cp/*.log "$logs/" 2>/dev/null
  if [[ -n ${LAB_KEEP:-} ]]; then echo "node lab: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

t0=$SECONDS
base=$("$here/node/build_node_guest.sh" base "$kver" "$module_root" "${LAB_NODE_CACHE:-/var/cache/rdmanet-lab/node}")
echo "== node lab: guest base $(du -h "$base" | cut -f1) ($base) ready in $((SECONDS - t0))s"

# --- control plane -------------------------------------------------------------------------------
t1=$SECONDS
host_check "etcd, kube-apiserver, kube-scheduler, kube-controller-manager started on 127.0.0.1" cp_start "$work/cp" 10.0.2.100
echo "== node lab: control plane on 127.0.0.1:$CP_PORT in $((SECONDS - t1))s"
kc() { "$KUBECTL" --kubeconfig "$work/cp/admin.kubeconfig" "$@"; }

# CRDs the node's plugins use: NetworkAttachmentDefinition (Multus) and whereabouts' (rdmanet's
# Kubernetes datastore), then the DRA objects of conf/dra/dranet-rdmanet.yaml as shipped (its
# DeviceClass and ResourceClaimTemplate; its example pod, whose image is a registry's, is left
# out: the guest makes pods of the same shape with the lab's image).
crds() {
  kc apply -f "$repo/tests/interop/nad-crd.json" -f "$repo/deploy/crds/whereabouts.cni.cncf.io_ippools.yaml" \
    -f "$repo/deploy/crds/whereabouts.cni.cncf.io_nodeslicepools.yaml" \
    -f "$repo/deploy/crds/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml" &&
    kc wait --for=condition=Established --timeout=60s crd --all
}
host_check "CRDs: NetworkAttachmentDefinition, whereabouts IPPool/NodeSlicePool/OverlappingRangeIPReservation" crds
dra_objects() {
  kc create --dry-run=client -o json -f "$repo/conf/dra/dranet-rdmanet.yaml" |
    jq -s '{apiVersion: "v1", kind: "List", items: [.[] | select(.kind != "Pod")]}' >"$work/dra-objects.json" &&
    kc apply -f "$work/dra-objects.json" &&
    kc create --dry-run=client -o json -f "$repo/conf/dra/dranet-rdmanet.yaml" |
    jq -s '.[] | select(.kind == "Pod")' >"$work/trainer-pod.json" && [[ -s $work/trainer-pod.json ]]
}
host_check "conf/dra/dranet-rdmanet.yaml as shipped: DeviceClass dranet-rdma, ResourceClaimTemplate rail0-dranet" dra_objects

# --- the guest's per-run archive -----------------------------------------------------------------
config=$work/config
mkdir -p "$config"
cp "$work/cp/guest/kubeconfig" "$work/cp/guest/ca.crt" "$config/"
cp "$repo/conf/dra/dranet-profile-rail0.json" "$config/profile-rail0.json"
cp "$work/trainer-pod.json" "$config/" 2>/dev/null || true
"$here/node/build_node_guest.sh" run "$build" "$config" "$work/run.cpio.gz"
cat "$base" "$work/run.cpio.gz" >"$work/initrd.cpio.gz"

# --- boot ----------------------------------------------------------------------------------------
accel=${LAB_ACCEL:-tcg}
cpu=(-cpu max)
if [[ $accel == kvm || ( -z ${LAB_ACCEL:-} && -w /dev/kvm ) ]]; then
  if timeout 15 qemu-system-x86_64 -accel kvm -cpu host -smp 1 -m 256M -display none -no-reboot -nic none \
    -serial stdio -monitor none -kernel "$kernel" -append "console=ttyS0 panic=-1" </dev/null 2>/dev/null |
    grep -a -m1 -q 'Linux version'; then
    accel=kvm
    cpu=(-cpu host)
  else
    accel=tcg
  fi
fi
console=$build/lab-node-console.log
sections=${NODE_LAB_SECTIONS:-node_multus,node_dra}
sections=${sections// /,}
echo "== node lab: booting $kver under QEMU (${accel^^}), ${LAB_NODE_MEM:-3G}, limit ${timeout_s}s; sections: $sections"
t2=$SECONDS
set +e
# The uplink: user networking that reaches nothing (restrict=on) but the forward to the API
# server; "cmd:" starts one socat per guest connection (a "tcp:" target would be one chardev
# connection for the whole run, and the kubelet opens several). The rails: two virtio NICs on
# hub 1, which has no other port.
timeout -k 10 "$timeout_s" qemu-system-x86_64 -accel "$accel" "${cpu[@]}" -smp 2 -m "${LAB_NODE_MEM:-3G}" \
  -nographic -no-reboot -nic none \
  -netdev "user,id=up,restrict=on,net=10.0.2.0/24,guestfwd=tcp:10.0.2.100:6443-cmd:socat - TCP:127.0.0.1:$CP_PORT" \
  -device virtio-net-pci,netdev=up,mac=52:54:00:4c:00:01,romfile= \
  -netdev hubport,id=r0,hubid=1 -device virtio-net-pci,netdev=r0,mac=52:54:00:4c:00:02,romfile= \
  -netdev hubport,id=r1,hubid=1 -device virtio-net-pci,netdev=r1,mac=52:54:00:4c:00:03,romfile= \
  -kernel "$kernel" -initrd "$work/initrd.cpio.gz" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init no_timer_check mitigations=off NODE_LAB_SECTIONS=$sections" \
  </dev/null 2>&1 | stdbuf -oL tr -d '\r' | tee "$console" | grep -a -E --line-buffered '^(LAB-|RDMANET-LAB|== )'
statuses=("${PIPESTATUS[@]}")
qemu_rc=${statuses[0]:-1}
set -e
echo "== node lab: guest ran $((SECONDS - t2))s (QEMU exit $qemu_rc); console saved to $console"

summary=$(grep -a '^RDMANET-LAB-SUMMARY ' "$console" | tail -n 1 || true)
guest_pass=$(grep -a -c '^LAB-PASS: ' "$console" || true)
guest_fail=$(grep -a -c '^LAB-FAIL: ' "$console" || true)
guest_skip=$(grep -a -c '^LAB-SKIP: ' "$console" || true)
echo "node lab: host pass=$host_pass fail=$host_fail; guest pass=$guest_pass fail=$guest_fail skip=$guest_skip; $((SECONDS - t0))s in all"
if [[ -z $summary ]]; then
  if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
    echo "node lab: FAILED: time limit of ${timeout_s}s reached before the guest finished" >&2
  else
    echo "node lab: FAILED: the guest stopped without printing its summary (QEMU exit $qemu_rc)" >&2
  fi
  exit 1
fi
if ((host_fail > 0 || guest_fail > 0 || guest_pass == 0)); then
  echo "node lab: FAILED" >&2
  grep -a '^LAB-FAIL: ' "$console" >&2 || true
  exit 1
fi
echo "node lab: PASSED"
