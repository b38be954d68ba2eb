# rdmanet's own RDMA code on this kernel: rdmanetctl, the plugin binary driven the way a
# container runtime drives it (CNI environment + config on stdin), and the RDMA netlink scenarios
# shared with the unit tests' fake (integration_tests "[rdma-real]").
# Entry state (from lab_rdma_tool.sh): mode shared, no netns, rxe0 over va.

IT="$BUILD_DIR/bin/integration_tests"
LAB_STATE=/run/lab-cni-state
LAB_IPAM=/var/lib/cni/rdmanet/lab-ipam   # the node policy confines data_dir below /var/lib/cni/rdmanet
mkdir -p "$LAB_STATE"
# The node policy's defaults, with the attachment state in $LAB_STATE.
LAB_POLICY=/run/lab-policy.json
printf '{"stateDir":"%s"}\n' "$LAB_STATE" > "$LAB_POLICY"

mode_is() { output_has "netns $1" rdma system show netns; }
set_mode() { retry 10 rdma system set netns "$1"; }
# rxe0 over va, re-created when a test took it away (rxe unregisters its device when its netdev
# leaves the namespace: see the hostdev check below).
ensure_rxe0() {
  [ -d /sys/class/infiniband/rxe0 ] && return 0
  echo "LAB-INFO: re-creating rxe0 over va"
  ip link set va up && rdma link add rxe0 type rxe netdev va
}

# ---- rdmanetctl ------------------------------------------------------------------------------

check "rdmanetctl rdma mode: shows shared" output_has "RDMA netns mode: shared" rdmanetctl rdma mode
ip netns add ctl1
ctl_busy() {
  fails_with "other network namespaces exist" rdmanetctl rdma mode exclusive && mode_is shared
}
check "rdmanetctl rdma mode exclusive with a netns present: refused (EBUSY) with an explanation, mode unchanged" ctl_busy
ip netns del ctl1
check "rdmanetctl rdma mode exclusive without another netns: switches" retry 10 rdmanetctl rdma mode exclusive
check "rdmanetctl rdma mode: exclusive read back (rdma tool)" mode_is exclusive
check "rdmanetctl rdma mode: shows exclusive" output_has "RDMA netns mode: exclusive" rdmanetctl rdma mode
check "rdmanetctl rdma mode shared: switches back" retry 10 rdmanetctl rdma mode shared
check "rdmanetctl rdma mode: shared read back (rdma tool)" mode_is shared

devices_row() {
  _out=$(rdmanetctl devices 2>&1) || { echo "$_out"; return 1; }
  echo "$_out"
  printf '%s\n' "$_out" | grep -Eiq '^rxe0[[:space:]]+1[[:space:]]+ACTIVE[[:space:]]+Ethernet[[:space:]]+va([[:space:]]|$)'
}
check "rdmanetctl devices: rxe0 port 1 active, Ethernet, on va (sysfs + libibverbs)" devices_row

# ---- the plugin ------------------------------------------------------------------------------

# cni_call <verb> <container-id> <netns-path> <config-json>: runs rdmanet as a runtime does; the
# result (or CNI error) is on stdout, the exit status is the plugin's.
cni_call() {
  CNI_COMMAND=$1 CNI_CONTAINERID=$2 CNI_NETNS=$3 CNI_IFNAME=net1 CNI_PATH="$BUILD_DIR/bin" \
    RDMANET_POLICY_FILE=$LAB_POLICY rdmanet <<<"$4"
}
# net_conf <name> <mode keys> <isolation>: a network config with the embedded IPAM.
net_conf() {
  printf '{"cniVersion":"1.0.0","name":"%s","type":"rdmanet",%s,"rdma":{"isolation":"%s"},' "$1" "$2" "$3"
  printf '"ipam":{"type":"rdmanet-ipam","range":"10.77.0.0/24","data_dir":"%s"}}\n' "$LAB_IPAM"
}
HOSTDEV_VA='"mode":"hostdev","device":"va"'
MACVLAN_VA='"mode":"macvlan","master":"va"'

# Everything a failed ADD must leave as it was: va (ifindex, state, alias), rxe0 and its GID
# netdev, the RDMA devices the host sees, and the IPAM store's allocations.
snapshot() {
  ip -o link show dev va | sed 's/^[0-9]*: //; s/ qlen [0-9]*//'
  ip -o link show dev va | cut -d: -f1
  cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0
  rdma dev show
  # The store is created by the first ADD: count allocations (pool list: count last), not pools.
  rdmanetctl pool list --data-dir "$LAB_IPAM" 2>/dev/null | awk 'NF {n += $NF} END {print "ipam allocations:", n + 0}'
}
unchanged_since() {
  _now=$(snapshot 2>&1)
  if [ "$_now" = "$1" ]; then echo "$_now"; return 0; fi
  echo "before:"; echo "$1"; echo "after:"; echo "$_now"
  return 1
}
pod_sees_no_rdma() { output_lacks "rxe0" ip netns exec "$1" rdma dev show; }
pod_sees_rxe0() { output_has "rxe0" ip netns exec "$1" rdma dev show; }
pod_has_net1() { output_has "net1" ip -n "$1" -o link show; }

# 1. Exclusive mode, hostdev on va with isolation required: rxe0 is a software device bound to va
#    (its driver deletes it when va leaves the namespace), so ADD is refused before anything
#    changes, with code 7 naming it. (6.1 would also refuse to move rxe0 itself, EOPNOTSUPP; Linux
#    7.x moves it and then deletes it with va's move: the rdma73 suite checks the same refusal.)
check "plugin: switch to exclusive for the isolation checks" set_mode exclusive
ensure_rxe0
ip netns add podx
before=$(snapshot 2>&1)
add_required_fails() {
  _res=$(cni_call ADD c-required /run/netns/podx "$(net_conf lab-req "$HOSTDEV_VA" required)")
  _rc=$?
  echo "exit $_rc: $_res"
  [ "$_rc" -ne 0 ] || return 1
  case $_res in *'"code": 7'* | *'"code":7'*) ;; *) echo "(expected CNI error code 7)"; return 1 ;; esac
  case $_res in *"rxe0"*"software device bound to va"*) ;; *) echo "(expected the message to name rxe0 as bound to va)"; return 1 ;; esac
}
check "plugin: exclusive + isolation required + hostdev va: ADD refused up front with code 7 naming rxe0" add_required_fails
check "plugin: after the failed ADD, va, rxe0 and the IPAM store are exactly as before" unchanged_since "$before"
check "plugin: after the failed ADD, the pod has no net1" output_lacks "net1" ip -n podx -o link show
check "plugin: exclusive: the pod netns sees no RDMA device" pod_sees_no_rdma podx
check "plugin: DEL after the failed ADD succeeds" cni_call DEL c-required /run/netns/podx \
  "$(net_conf lab-req "$HOSTDEV_VA" required)"

# 2. Exclusive mode, macvlan on va: required fails before anything is created (a child never owns
#    its parent's RDMA device); auto works with a warning and the pod sees no RDMA device.
macvlan_required_fails() {
  _res=$(cni_call ADD c-mvreq /run/netns/podx "$(net_conf lab-mvreq "$MACVLAN_VA" required)")
  _rc=$?
  echo "exit $_rc: $_res"
  [ "$_rc" -ne 0 ] && case $_res in *'"code"'*) return 0 ;; esac
  return 1
}
check "plugin: exclusive + isolation required + macvlan on va: ADD fails" macvlan_required_fails
check "plugin: after the failed macvlan ADD, everything is as before" unchanged_since "$before"
check "plugin: exclusive + auto + macvlan on va: ADD works" \
  cni_call ADD c-mvauto /run/netns/podx "$(net_conf lab-mvauto "$MACVLAN_VA" auto)"
check "plugin: exclusive + auto + macvlan: the pod has net1" pod_has_net1 podx
check "plugin: exclusive + auto + macvlan: the pod sees no RDMA device" pod_sees_no_rdma podx
check "plugin: exclusive + auto + macvlan: DEL works" \
  cni_call DEL c-mvauto /run/netns/podx "$(net_conf lab-mvauto "$MACVLAN_VA" auto)"
ip netns del podx
check "plugin: back to shared mode" set_mode shared

# 3. Shared mode: required fails naming the mode; auto moves nothing and ADD works.
ip netns add pods
shared_required_fails() {
  _res=$(cni_call ADD c-shreq /run/netns/pods "$(net_conf lab-shreq "$HOSTDEV_VA" required)")
  _rc=$?
  echo "exit $_rc: $_res"
  [ "$_rc" -ne 0 ] || return 1
  case $_res in *shared*) return 0 ;; esac
  echo "(expected the message to name the shared mode)"
  return 1
}
before=$(snapshot 2>&1)
check "plugin: shared + isolation required + hostdev va: ADD fails naming the mode" shared_required_fails
check "plugin: after that failed ADD, everything is as before" unchanged_since "$before"
check "plugin: shared + auto + macvlan on va: ADD works" \
  cni_call ADD c-shmv /run/netns/pods "$(net_conf lab-shmv "$MACVLAN_VA" auto)"
check "plugin: shared + auto + macvlan: the pod has net1" pod_has_net1 pods
check "plugin: shared: the pod netns sees rxe0" pod_sees_rxe0 pods
check "plugin: shared: rxe0 is still the host's (not moved)" output_has "rxe0" rdma dev show
check "plugin: shared + auto + macvlan: DEL works" \
  cni_call DEL c-shmv /run/netns/pods "$(net_conf lab-shmv "$MACVLAN_VA" auto)"

hostdev_auto_add() {
  _res=$(cni_call ADD c-shhd /run/netns/pods "$(net_conf lab-shhd "$HOSTDEV_VA" auto)") || {
    echo "$_res"; return 1; }
  echo "$_res"
  pod_has_net1 pods
}
check "plugin: shared + auto + hostdev va: ADD works, va is net1 in the pod" hostdev_auto_add
check "plugin: shared + auto + hostdev: DEL works" \
  cni_call DEL c-shhd /run/netns/pods "$(net_conf lab-shhd "$HOSTDEV_VA" auto)"
check "plugin: shared + auto + hostdev: va is back in the host" ip link show dev va
# Not a check of rdmanet: whether rxe survives its netdev leaving the namespace (rxe's netdev
# notifier unregisters the device on NETDEV_UNREGISTER, which a namespace move sends).
if [ -d /sys/class/infiniband/rxe0 ]; then
  echo "LAB-INFO: rxe0 survived va's round trip through the pod"
else
  echo "LAB-INFO: rxe0 is gone after va's round trip through the pod (rxe unregisters on netdev move)"
fi
ip netns del pods
# `pool list`: one line per pool, the allocation count last.
no_allocations() {
  _out=$(rdmanetctl pool list --data-dir "$LAB_IPAM" 2>&1) || { echo "$_out"; return 1; }
  echo "$_out"
  printf '%s\n' "$_out" | awk 'NF && $NF != "0" {bad = 1} END {exit bad}'
}
check "plugin: no IPAM allocation left after all DELs" no_allocations

# The arm64 suites carry no integration_tests (the lean arm64 pass cross-builds only the product
# and unit_tests): the scenarios below run in the x86-64 suites.
case $(cat /lab/suite) in arm64*) return 0 ;; esac

# ---- the shared RDMA netlink scenarios on the real kernel ------------------------------------

no_netns_left() { [ -z "$(ls /run/netns 2>/dev/null)" ]; }
retry 10 no_netns_left
ensure_rxe0
export RDMANET_LAB_RDMA_DEVICE=rxe0 RDMANET_LAB_RDMA_NETDEV=va
"$IT" --list-test-names-only "[rdma-real]" | sed '/^$/d' >/tmp/rdma_real_cases
while IFS= read -r case_name; do
  ensure_rxe0
  spec=$(printf '%s' "$case_name" | sed 's/\\/\\\\/g; s/,/\\,/g; s/\[/\\[/g')
  check "scenarios on $(uname -r): $case_name" timeout 300 "$IT" "$spec"
  set_mode shared >/dev/null 2>&1
done </tmp/rdma_real_cases
[ -s /tmp/rdma_real_cases ] || check "scenarios: integration_tests lists [rdma-real] test cases" false
ensure_rxe0
