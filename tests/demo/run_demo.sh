#!/usr/bin/env bash
# rdmanet demo: two "pods" get a macvlan secondary interface from rdmanet through the real CNI
# caller (Debian's libcni, bin/cni-driver), addresses from rdmanet's embedded IPAM
# ("type": "rdmanet-ipam", in-process, local SQLite store), ping each other over it, and are torn
# down again; the IPAM pool is printed with bin/rdmanetctl after the ADDs and after the DELs.
#
#   sudo tests/demo/run_demo.sh [BUILD_DIR]        (default ./build)
#
# Everything lives in objects made here: a veth pair as the node's "uplink" (the macvlan master),
# two network namespaces as pods, a temp dir for the conflist, the IPAM store (data_dir), the
# libcni cache and rdmanet's state. The trap removes them all, also on failure or Ctrl-C; the
# machine's own interfaces and routes are never touched.
set -euo pipefail

BUILD=${1:-./build}
die() { echo "run_demo: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root (creates namespaces and links)"
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd) || die "no $BUILD/bin (build first: cmake --build $BUILD)"
for f in "$BIN/rdmanet" "$BIN/cni-driver" "$BIN/rdmanetctl"; do
  [[ -x $f ]] || die "missing executable $f"
done

while :; do
  TAG=$(printf 'dm%04x' $(( (RANDOM << 1 ^ $$) & 0xffff )))
  ip link show "${TAG}u0" &>/dev/null || ip netns list | grep -q "^${TAG}-" || break
done
UPLINK=${TAG}u0
PODS=("$TAG-pod1" "$TAG-pod2")
WORK=$(mktemp -d /tmp/rdmanet-demo.XXXXXX)
# Node policy for this run: attachment state, IPAM data dirs and logs live in $WORK, not /var/lib,
# /var/log.
printf '{"ipamDataDirs":["%s"],"logDir":"%s","stateDir":"%s/state"}\n' "$WORK" "$WORK" "$WORK" > "$WORK/policy.json"
export RDMANET_POLICY_FILE=$WORK/policy.json

cleanup() {
  local pod
  # Best-effort DEL first so the demo never leaves IPAM or state behind, then the objects.
  for pod in "${PODS[@]}"; do
    [[ -e /run/netns/$pod ]] && cni del "$pod" &>/dev/null || true
    ip netns del "$pod" 2>/dev/null || true
  done
  ip link del "$UPLINK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# cni VERB POD: one libcni call for the pod's attachment (container id = pod name; the pod
# identity in CNI_ARGS as kubelet passes it, so the IPAM records podref demo/<pod>).
cni() {
  "$BIN/cni-driver" "$1" --conflist "$WORK/demo.conflist" --netns "/run/netns/$2" --ifname net1 \
    --container-id "$2" --cni-path "$BIN:/usr/lib/cni" --cache-dir "$WORK/cache" \
    --args "IgnoreUnknown=1;K8S_POD_NAMESPACE=demo;K8S_POD_NAME=$2"
}

step() { printf '\n== %s\n' "$*"; }

# pod_ping POD IP: three ICMP echos from inside POD. iputils ping when installed; otherwise Perl's
# core Net::Ping in ICMP mode (the machine image has perl but no ping).
pod_ping() {
  if command -v ping >/dev/null; then
    ip netns exec "$1" ping -c 3 -W 2 "$2"
  else
    ip netns exec "$1" perl -MNet::Ping -e '
      my ($ip, $ok) = ($ARGV[0], 0);
      my $p = Net::Ping->new("icmp", 2); $p->hires(1);
      for my $seq (1 .. 3) {
        my ($up, $rtt) = $p->ping($ip);
        printf "echo %d to %s: %s\n", $seq, $ip, $up ? sprintf("reply in %.3f ms", $rtt * 1000) : "no reply";
        $ok++ if $up;
      }
      exit($ok == 3 ? 0 : 1);' "$2"
  fi
}

step "uplink $UPLINK (veth, peer ${TAG}u1) and pods ${PODS[*]}"
ip link add "$UPLINK" type veth peer name "${TAG}u1"
ip link set "$UPLINK" up
ip link set "${TAG}u1" up
for pod in "${PODS[@]}"; do
  ip netns add "$pod"
  ip -n "$pod" link set lo up
done

cat >"$WORK/demo.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "rdma-demo",
  "plugins": [{
    "type": "rdmanet",
    "mode": "macvlan",
    "master": "$UPLINK",
    "macvlanMode": "bridge",
    "ipam": {"type": "rdmanet-ipam", "range": "10.250.0.0/24", "data_dir": "$WORK/ipam"}
  }]
}
JSON
step "conflist"
cat "$WORK/demo.conflist"

for pod in "${PODS[@]}"; do
  step "ADD $pod"
  cni add "$pod" || die "ADD $pod failed (error JSON above)"
  cni check "$pod" || die "CHECK $pod failed (error JSON above)"
  echo "CHECK $pod: ok"
done

step "IPAM pool (rdmanetctl pool list --json --data-dir \$WORK/ipam)"
"$BIN/rdmanetctl" pool list --json --data-dir "$WORK/ipam" || die "rdmanetctl pool list failed"

step "inside the pods"
for pod in "${PODS[@]}"; do ip -n "$pod" -br addr show dev net1; done
POD2_IP=$(ip -n "${PODS[1]}" -4 -o addr show dev net1 | awk '{split($4, a, "/"); print a[1]; exit}')
[[ -n $POD2_IP ]] || die "pod2 has no IPv4 address on net1"

step "ping ${PODS[0]} -> ${PODS[1]} ($POD2_IP) over net1"
pod_ping "${PODS[0]}" "$POD2_IP" || die "no echo reply from $POD2_IP"

for pod in "${PODS[@]}"; do
  step "DEL $pod"
  cni del "$pod" || die "DEL $pod failed (error JSON above)"
  if ip -n "$pod" link show net1 &>/dev/null; then die "net1 still in $pod after DEL"; fi
  echo "net1 gone from $pod"
done
step "IPAM pool after the DELs"
"$BIN/rdmanetctl" pool list --data-dir "$WORK/ipam" || die "rdmanetctl pool list failed"
"$BIN/rdmanetctl" pool verify --data-dir "$WORK/ipam" || die "rdmanetctl pool verify failed"
held=$("$BIN/rdmanetctl" pool list --data-dir "$WORK/ipam" | awk '{n += $3} END {print n + 0}')
[[ $held -eq 0 ]] || die "$held addresses still allocated after DEL"
left=0
[[ -d $WORK/state ]] && left=$(find "$WORK/state" -type f | wc -l)
echo "state files left: $left"
[[ $left -eq 0 ]] || die "rdmanet left state behind"
step "demo done"
