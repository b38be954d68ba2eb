# The DRA path on the node lab (sourced by node_main.sh): DRANET v1.4.0 (driver dra.net) with
# rdmanet's profile provider (`rdmanetctl dranet-provider`) and node agent, the DeviceClass and
# ResourceClaimTemplate of conf/dra/dranet-rdmanet.yaml as shipped (applied by the host) and the
# profile conf/dra/dranet-profile-rail0.json as shipped. The rails are the guest's two virtio NICs
# on QEMU's internal hub, each with a soft-RoCE device (DRANET publishes a netdev as rdma == true
# only when an RDMA device is bound to it). Linux deletes an rxe device when its netdev leaves the
# namespace, so in shared RDMA netns mode each pod creates its own rxe over the moved interface, as
# the 7.3 soft-RoCE lab does, and the traffic tools run between the pods.

PROFILE_DIR=/etc/rdmanet/profiles
CLAIMS=/var/lib/cni/rdmanet/dranet/claims.json
mkdir -p "$PROFILE_DIR" /var/lib/dranet
install -d -m 0700 /run/rdmanet
cp /lab/config/profile-rail0.json "$PROFILE_DIR/rail0.json"
TOOL_TIMEOUT=180

rxe_on_rails() {
  for _r in "$RAIL0" "$RAIL1"; do
    ip link set "$_r" up
    [ -e "/sys/class/infiniband/rxe_$_r" ] || rdma link add "rxe_$_r" type rxe netdev "$_r" || return 1
  done
  rdma link show
}
check "dra: soft-RoCE over the rails on the node (rxe_$RAIL0, rxe_$RAIL1)" rxe_on_rails

start_provider() {
  rdmanetctl dranet-provider --socket /run/rdmanet/dranet.sock --profiles "$PROFILE_DIR" --node-name "$NODE" \
    >>"$LOGS/provider.log" 2>&1 &
  PROVIDER_PID=$!
  retry 30 test -S /run/rdmanet/dranet.sock
}
start_dranet() {
  dranet --kubeconfig="$KUBECONFIG" --hostname-override="$NODE" --profile-provider=webhook \
    --webhook-url=unix:///run/rdmanet/dranet.sock --cloud-provider-hint=NONE \
    --db-path=/var/lib/dranet/dranet.db --bind-address=127.0.0.1:9177 --inventory-max-poll-interval=5s --v=4 \
    >>"$LOGS/dranet.log" 2>&1 &
  DRANET_PID=$!
}
critical "dra: rdmanetctl dranet-provider serves /run/rdmanet/dranet.sock" start_provider
check "dra: the provider says at start which DRANET it answers (1.4) and that the ARP settings stay behind" \
  output_has "arp" cat "$LOGS/provider.log"
rdmanetctl agent --interval=30 --kubeconfig=/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig --node-name="$NODE" \
  >>"$LOGS/agent.log" 2>&1 &
AGENT_PID=$!
start_dranet

# The node's dra.net devices that have rdma == true, from the ResourceSlices on the apiserver.
rdma_devices() {
  kubectl get resourceslices -o json | jq -r --arg n "$NODE" '.items[] | select(.spec.driver == "dra.net" and
    .spec.nodeName == $n) | .spec.devices[] | select(.attributes["dra.net/rdma"].bool == true) |
    "\(.name) \(.attributes["dra.net/ifName"].string // "-") \(.attributes["dra.net/rdmaDevice"].string // "-")"'
}
two_rdma_devices() { _d=$(rdma_devices) || return 1; echo "$_d"; [ "$(echo "$_d" | grep -c .)" -ge 2 ]; }
critical "dra: DRANET publishes the two rails in a ResourceSlice with dra.net/rdma == true" retry 180 two_rdma_devices
rdma_devices | sed 's/^/LAB-INFO: dra: ResourceSlice device (name ifName rdmaDevice): /'
no_rdma_device_attr() { ! rdma_devices | awk '$3 != "-"' | grep -q .; }
check "dra: DRANET v1.4.0 publishes no dra.net/rdmaDevice for a RoCE netdev (only for IB-only devices)" no_rdma_device_attr

# dra_pod <name>: the example pod of conf/dra/dranet-rdmanet.yaml (claim from rail0-dranet, IPC_LOCK)
# with the lab's image, and the pod-wide ARP sysctls docs/dra.md gives for DRANET 1.4.
dra_pod() {
  jq --arg n "$1" '.metadata.name = $n | .spec.automountServiceAccountToken = false |
    .spec.dnsPolicy = "Default" | .spec.terminationGracePeriodSeconds = 1 |
    .spec.securityContext.sysctls = [{name: "net.ipv4.conf.all.arp_ignore", value: "1"},
                                     {name: "net.ipv4.conf.all.arp_announce", value: "2"}] |
    .spec.containers[0].image = "lab.local/pause:1" | .spec.containers[0].imagePullPolicy = "Never" |
    .spec.containers[0].command = ["/pause"]' /lab/config/trainer-pod.json | kubectl apply -f -
}
claim_of() { kubectl get pod "$1" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}'; }
claim_uid() { kubectl get resourceclaim "$1" -o jsonpath='{.metadata.uid}'; }

check "dra: pods dra-a and dra-b created from conf/dra's example (claim from rail0-dranet)" eval 'dra_pod dra-a && dra_pod dra-b'
critical "dra: dra-a Running (claim allocated by kube-scheduler, prepared by DRANET)" retry 300 pod_running dra-a
critical "dra: dra-b Running" retry 180 pod_running dra-b
CA=$(claim_of dra-a) CB=$(claim_of dra-b)
UA=$(claim_uid "$CA") UB=$(claim_uid "$CB")
echo "LAB-INFO: dra: claims $CA ($UA), $CB ($UB)"
PA=$(pod_pid dra-a) PB=$(pod_pid dra-b)
# inp <pod> <command...>: the command in the pod's network namespace. (Not `ip netns attach`: it
# makes /run/netns a shared bind mount of itself, and containerd then cannot unlink its own netns
# files there, EBUSY, so the pods never finish terminating.)
inp() {
  case $1 in dra-a) _pp=$PA ;; dra-b) _pp=$PB ;; *) _pp=$(pod_pid "$1") ;; esac
  shift
  nsenter -t "$_pp" -n "$@"
}
addr_of() { inp "$1" ip -4 -o addr show dev net1 2>/dev/null | awk '{print $4}' | head -n1; }
IA=$(addr_of dra-a) IB=$(addr_of dra-b)
A=${IA%/*} B=${IB%/*}
echo "LAB-INFO: dra: dra-a net1 $IA, dra-b net1 $IB"
check "dra: dra-a has net1 with an address of the profile's range 192.168.101.0/24 ($IA)" \
  eval 'case $IA in 192.168.101.*/24) true ;; *) false ;; esac'
check "dra: dra-b has net1 with an address of the profile's range 192.168.101.0/24 ($IB)" \
  eval 'case $IB in 192.168.101.*/24) true ;; *) false ;; esac'
check "dra: the two pods got different addresses" test "$A" != "$B"
for _p in dra-a dra-b; do
  inp "$_p" ip rule show | sed "s/^/LAB-INFO: dra: $_p rule: /"
  inp "$_p" ip route show table all | grep -v '^local\|^broadcast\|^multicast\|fe80\|ff00' | sed "s/^/LAB-INFO: dra: $_p route: /"
done
rule_and_table() { # <pod> <address>: a `from <address>` rule whose table routes through net1 via the gateway
  _t=$(inp "$1" ip rule show | awk -v a="$2" '$2 == "from" && $3 == a {print $5; exit}')
  echo "table: ${_t:-none}"
  [ -n "$_t" ] && inp "$1" ip route show table "$_t" | tee /dev/stderr | grep -q 'dev net1'
}
check "dra: dra-a has the per-rail rule 'from $A lookup <table>' and the table routes through net1" rule_and_table dra-a "$A"
check "dra: dra-b has the per-rail rule 'from $B lookup <table>' and the table routes through net1" rule_and_table dra-b "$B"
network_data() { # <claim> <address>
  _nd=$(kubectl get resourceclaim "$1" -o json | jq -c '[.status.devices[]?.networkData]')
  echo "$_nd"
  echo "$_nd" | jq -e --arg a "$2" '[.[].ips[]?] | any(startswith($a + "/"))' >/dev/null
}
check "dra: claim $CA: status.devices[].networkData holds $A" retry 30 network_data "$CA" "$A"
check "dra: claim $CB: status.devices[].networkData holds $B" retry 30 network_data "$CB" "$B"
kubectl get resourceclaim "$CA" -o json | jq -c '.status.devices' | sed 's/^/LAB-INFO: dra: status.devices: /'
# What reaches the pod with DRANET 1.4: the per-rail ARP settings stay behind (1.4 has no field for
# them), the pod-wide sysctls of docs/dra.md stand in.
check "dra: with DRANET 1.4 net1's own arp_ignore stays 0 in the pod (no field for it)" \
  eval "[ \"\$(inp dra-a cat /proc/sys/net/ipv4/conf/net1/arp_ignore)\" = 0 ]"
check "dra: the pod-wide sysctl net.ipv4.conf.all.arp_ignore=1 is in effect in the pod" \
  eval "[ \"\$(inp dra-a cat /proc/sys/net/ipv4/conf/all/arp_ignore)\" = 1 ]"
dev_ib() { ls -l "/proc/$1/root/dev/infiniband/"; ls "/proc/$1/root/dev/infiniband/" | grep -q '^uverbs'; }
check "dra: DRANET gave dra-a's container /dev/infiniband (uverbs*, rdma_cm) through NRI" dev_ib "$PA"
rxe_gone() { ! [ -e "/sys/class/infiniband/rxe_$1" ]; }
check "dra: the node's rxe over the moved rail is gone (Linux deletes rxe when its netdev leaves)" \
  eval "rxe_gone $RAIL0 && rxe_gone $RAIL1"

# RDMA between the pods: rxe in each pod over net1 (shared mode), then rping and ib_write_bw.
gid_of_ipv4() { printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$1" | tr . ' '); }
has_gid() { grep -qx "$(gid_of_ipv4 "$2")" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null; }
check "dra: rdma link add rxe_a type rxe netdev net1, inside dra-a" inp dra-a rdma link add rxe_a type rxe netdev net1
check "dra: rdma link add rxe_b type rxe netdev net1, inside dra-b" inp dra-b rdma link add rxe_b type rxe netdev net1
check "dra: rxe_a's GID table holds $A as RoCE v2" retry 15 has_gid rxe_a "$A"
check "dra: rxe_b's GID table holds $B as RoCE v2" retry 15 has_gid rxe_b "$B"
run_pair() { # <server-pod> <client-pod> <server-cmd...> -- <client-cmd...>
  _sp=$1 _cp=$2
  shift 2
  _srv=()
  while [ "$1" != "--" ]; do _srv+=("$1"); shift; done
  shift
  inp "$_sp" taskset -c 0 timeout "$TOOL_TIMEOUT" "${_srv[@]}" >/tmp/srv.out 2>&1 &
  _spid=$!
  sleep 4
  inp "$_cp" taskset -c 1 timeout "$TOOL_TIMEOUT" "$@" >/tmp/cli.out 2>&1
  _crc=$?
  wait "$_spid"
  _src=$?
  echo "server (exit $_src):"; tail -n 15 /tmp/srv.out
  echo "client (exit $_crc):"; tail -n 15 /tmp/cli.out
  [ "$_src" -eq 0 ] && [ "$_crc" -eq 0 ]
}
rping_pair() {
  run_pair dra-a dra-b rping -s -a "$A" -C 10 -v -- rping -c -a "$A" -C 10 -v -V || return 1
  _n=$(grep -c 'ping data: rdma-ping-' /tmp/cli.out)
  echo "client ping data lines: $_n"
  [ "$_n" -eq 10 ] && ! grep -qi 'data mismatch\|error' /tmp/cli.out
}
write_bw_pair() {
  run_pair dra-a dra-b ib_write_bw -R -F -d rxe_a -s 1048576 -n 20 -- ib_write_bw -R -F -d rxe_b -s 1048576 -n 20 "$A" ||
    return 1
  _line=$(awk '$1 == 1048576 && $2 == 20' /tmp/cli.out | tail -n1)
  echo "bandwidth line: ${_line:-(none)}"
  [ -n "$_line" ] && echo "$_line" | awk '{exit !($4 > 0)}'
}
check "dra: rping dra-b -> dra-a ($A): 10 iterations, data verified" rping_pair
check "dra: ib_write_bw -R 1 MiB x 20 between the claimed rails: bandwidth line" write_bw_pair
echo "LAB-INFO: dra: ib_write_bw: $(awk '$1 == 1048576 && $2 == 20' /tmp/cli.out | tail -n1)"

# The provider's records and the slice IPPool on the apiserver (published by the agent's pass).
claims_hold() { _c=$(cat "$CLAIMS" 2>/dev/null); for _u in "$@"; do echo "$_c" | grep -q "$_u" || { echo "$_c"; return 1; }; done; }
check "dra: the provider's claims.json records both claims" claims_hold "$UA" "$UB"
pool_refs() {
  kubectl get ippools.whereabouts.cni.cncf.io -A -o json | jq -r '.items[] | (.spec.allocations // {}) | to_entries[] | .value.podref'
}
published() { kill -HUP "$AGENT_PID"; sleep 3; _r=$(pool_refs); echo "$_r"; for _u in "$@"; do echo "$_r" | grep -q "$_u" || return 1; done; }
check "dra: the apiserver's slice IPPool holds dranet:<uid> entries for both claims (agent pass)" retry 10 published "$UA" "$UB"

inp dra-a rdma link delete rxe_a 2>/dev/null
inp dra-b rdma link delete rxe_b 2>/dev/null
check "dra: pods deleted" kubectl delete pod dra-a dra-b --wait=true --timeout=180s
claims_gone() { ! kubectl get resourceclaim "$CA" "$CB" 2>/dev/null | grep -q .; }
check "dra: their ResourceClaims are deleted (kube-controller-manager)" retry 60 claims_gone
released() { ! claims_hold "$@" >/dev/null 2>&1; }
check "dra: ReleaseProfileConfig: the provider no longer records either claim" retry 60 eval "released $UA && released $UB"
unpublished() { kill -HUP "$AGENT_PID"; sleep 3; _r=$(pool_refs); echo "$_r"; ! echo "$_r" | grep -q "$UA\|$UB"; }
check "dra: their addresses are gone from the apiserver's IPPools (agent pass)" retry 10 unpublished
check "dra: both rails are back on the node" retry 30 eval "ip link show dev $RAIL0 && ip link show dev $RAIL1"

# ---- claim GC: a claim deleted while the provider is stopped ----------------------------------
check "dra gc: soft-RoCE again over the returned rails" rxe_on_rails
check "dra gc: DRANET publishes the rails as rdma == true again" retry 120 two_rdma_devices
check "dra gc: pod dra-c created" dra_pod dra-c
check "dra gc: dra-c Running" retry 240 pod_running dra-c
CC=$(claim_of dra-c)
UC=$(claim_uid "$CC")
check "dra gc: the provider records dra-c's claim $UC" claims_hold "$UC"
stop_provider() { kill "$PROVIDER_PID" && wait "$PROVIDER_PID"; ! test -S /run/rdmanet/dranet.sock || rm -f /run/rdmanet/dranet.sock; true; }
check "dra gc: the provider is stopped" stop_provider
check "dra gc: dra-c deleted while the provider is down" kubectl delete pod dra-c --wait=true --timeout=180s
check "dra gc: its ResourceClaim is deleted" retry 60 eval "! kubectl get resourceclaim $CC >/dev/null 2>&1"
check "dra gc: DRANET's release failed (provider down): the claim is still recorded" claims_hold "$UC"
grep -i 'release' "$LOGS/dranet.log" | tail -n 3 | sed 's/^/LAB-INFO: dra gc: dranet: /'
critical "dra gc: the provider is started again" start_provider
gc_done() { kill -HUP "$AGENT_PID"; sleep 5; released "$UC"; }
check "dra gc: the agent's claim GC has the provider release the gone claim" retry 12 gc_done
check "dra gc: the agent logged the release" output_has "released DRANET claim $UC" cat "$LOGS/agent.log"
unpublished_c() { kill -HUP "$AGENT_PID"; sleep 3; _r=$(pool_refs); echo "$_r"; ! echo "$_r" | grep -q "$UC"; }
check "dra gc: the claim's address is gone from the IPPools" retry 10 unpublished_c

# ---- exclusive RDMA netns mode: recorded, an expected outcome --------------------------------------
# DRANET moves the netdev first and then the RDMA device it found when the claim was prepared; a
# soft-RoCE device is deleted by the kernel as soon as its netdev leaves the namespace, so there is
# no RDMA device left to move. What DRANET v1.4.0 does then is recorded here (its RunPodSandbox
# fails with RDMADeviceAttachFailed and the sandbox is not started); a hardware RoCE NIC's RDMA
# device does not go away with its netdev. The mode is switched back to shared afterwards.
no_netns_left() { _n=$(ls /run/netns 2>/dev/null); echo "$_n"; [ -z "$_n" ]; }
check "exclusive: no pod network namespace left" retry 60 no_netns_left
check "exclusive: rdma system set netns exclusive" retry 20 rdma system set netns exclusive
restart_dranet() { kill "$DRANET_PID"; wait "$DRANET_PID"; start_dranet; sleep 5; kill -0 "$DRANET_PID"; }
check "exclusive: DRANET restarted (it reads the RDMA netns mode at start)" restart_dranet
check "exclusive: DRANET logs exclusive mode" retry 30 eval "grep -q 'RDMA subsystem in mode: exclusive' $LOGS/dranet.log"
check "exclusive: soft-RoCE over the rails" rxe_on_rails
check "exclusive: DRANET publishes the rails as rdma == true" retry 120 two_rdma_devices
check "exclusive: pod dra-x created" dra_pod dra-x
x_events() { kubectl get events --field-selector involvedObject.name=dra-x -o json | jq -r '.items[] | "\(.reason): \(.message)"'; }
x_outcome() { x_events | grep -q 'RDMADeviceAttachFailed\|NetworkDeviceAttachFailed' || pod_running dra-x; }
retry 240 x_outcome
x_events | sort -u | tail -n 6 | sed 's/^/LAB-INFO: exclusive: event: /'
echo "LAB-INFO: exclusive: dra-x phase $(kubectl get pod dra-x -o jsonpath='{.status.phase}'), RDMA devices: $(rdma dev show | awk '{print $2}' | tr '\n' ' ')"
grep -i 'rdma' "$LOGS/dranet.log" | grep -i 'fail\|error' | tail -n 3 | sed 's/^/LAB-INFO: exclusive: dranet: /'
x_expected() { x_events | grep 'RDMADeviceAttachFailed' && ! pod_running dra-x; }
check "exclusive (expected, documented): rxe vanished with its netdev, DRANET reports RDMADeviceAttachFailed, dra-x not Running" x_expected
check "exclusive: dra-x deleted" kubectl delete pod dra-x --wait=true --timeout=180s
check "exclusive: back to shared mode" retry 60 eval 'no_netns_left >/dev/null && rdma system set netns shared'
kill "$DRANET_PID" "$AGENT_PID" "$PROVIDER_PID" 2>/dev/null
