#!/usr/bin/env bash
# rdmanet-ipam and the real whereabouts (v0.9.4, built from its module) on one IPPool of a real
# kube-apiserver + etcd: concurrent ADDs by several workers of each from one range with exclusions,
# then DELs, `rdmanetctl reconcile`, and whereabouts' own reconciler (cmd/reconciler, ip-reconciler) over both
# plugins' entries. Needs the peers whereabouts (and kube-1.37 + etcd, or KUBEBUILDER_ASSETS).
#   usage: whereabouts.sh BUILD_DIR
source "$(dirname "$0")/lib.sh"
interop_init "$@"

need_peer whereabouts
WB=$(peer_bin "$PEER" whereabouts)
WB_RECONCILER=$(peer_bin "$PEER" ip-reconciler)
WB_RECONCILER=$(stage_bin "$WB_RECONCILER") # run under `isolated`, which hides /var

NODE=$TAG-node
make_netns "$NODE"
# CNI_NETNS of the IPAM calls: a pod netns other than the plugin's own (CNI's skel refuses the
# plugin's own netns).
make_netns "$TAG-pod"
start_apiserver "$NODE"
write_policy

NS=interop
RANGE=10.77.0.0/24
POOL=10.77.0.0-24
EXCLUDE='["10.77.0.0/28", "10.77.0.40/29", "10.77.0.53/32"]'
WORKERS=${INTEROP_WORKERS:-3}   # per plugin
PER_WORKER=${INTEROP_PER_WORKER:-3}
ensure_namespace "$NS"

# whereabouts reads kubernetes.kubeconfig; its flat file (configuration_path, searched before the
# default /etc/cni/net.d/whereabouts.d/...) is private too. The admin kubeconfig: whereabouts'
# leader election needs Leases, which deploy/rbac.yaml (rdmanet's least privilege) does not grant.
# rdmanet-ipam gets the service account of deploy/rbac.yaml.
mkdir -p "$WORK/wb" "$WORK/rdipam"
jq -n --arg kc "$API_DIR/admin.kubeconfig" '{datastore: "kubernetes", kubernetes: {kubeconfig: $kc},
  reconciler_cron_expression: "* * * * *", log_level: "debug"}' >"$WORK/wb/whereabouts.conf"
WB_CONF=$(jq -nc --arg kc "$API_DIR/admin.kubeconfig" --arg flat "$WORK/wb/whereabouts.conf" \
  --arg log "$WORK/log/whereabouts.log" --arg range "$RANGE" --argjson ex "$EXCLUDE" \
  '{cniVersion: "0.3.1", name: "interop-net", ipam: {type: "whereabouts", range: $range, exclude: $ex,
    configuration_path: $flat, kubernetes: {kubeconfig: $kc}, log_file: $log, log_level: "debug"}}')
RD_CONF=$(jq -nc --arg kc "$API_DIR/sa.kubeconfig" --arg dd "$WORK/rdipam" \
  --arg log "$WORK/log/rdmanet-ipam.log" --arg range "$RANGE" --argjson ex "$EXCLUDE" \
  '{cniVersion: "1.0.0", name: "interop-net", ipam: {type: "rdmanet-ipam", range: $range, exclude: $ex,
    datastore: "kubernetes", kubernetes: {kubeconfig: $kc}, data_dir: $dd, log_file: $log,
    log_level: "debug"}}')

# ipam PLUGIN VERB POD: one CNI call of the IPAM plugin for pod $NS/POD (container id cid-POD, or $CID),
# inside the node netns (where the API server listens). Prints the result; the exit code is the
# plugin's.
ipam() {
  local exe conf
  case $1 in
    wb) exe=$WB conf=$WB_CONF ;;
    rd) exe=$BIN/rdmanet-ipam conf=$RD_CONF ;;
  esac
  ip netns exec "$NODE" env CNI_COMMAND="$2" CNI_CONTAINERID="${CID:-cid-$3}" CNI_NETNS="/run/netns/$TAG-pod" \
    CNI_IFNAME=net1 CNI_PATH="$BIN" CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$NS;K8S_POD_NAME=$3" \
    "$exe" <<<"$conf"
}

pool() { api GET "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/$POOL"; }
# "podref address" per pool entry, sorted.
pool_entries() {
  pool | jq -r '.spec.allocations | to_entries[] | "\(.value.podref) \(.key)"' | while read -r ref off; do
    echo "$ref 10.77.0.$off"
  done | sort
}
reservations() {
  api GET /apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/overlappingrangeipreservations |
    jq -r '.items[] | "\(.spec.podref) \(.metadata.name)"' | sort
}

# --- concurrent ADDs: WORKERS workers of each plugin, PER_WORKER pods each -----------------------
pods=()
for p in rd wb; do
  for ((w = 0; w < WORKERS; w++)); do
    for ((k = 0; k < PER_WORKER; k++)); do pods+=("$p-$w-$k"); done
  done
done
for pod in "${pods[@]}"; do create_pod "$NS" "$pod" >/dev/null; done

mkdir -p "$WORK/add"
t0=$SECONDS
worker_pids=()
for p in rd wb; do
  for ((w = 0; w < WORKERS; w++)); do
    (
      for ((k = 0; k < PER_WORKER; k++)); do
        ipam "$p" ADD "$p-$w-$k" >"$WORK/add/$p-$w-$k.json" 2>"$WORK/add/$p-$w-$k.err" ||
          { echo "exit $?" >>"$WORK/add/$p-$w-$k.err"; exit 1; }
      done
    ) &
    worker_pids+=($!)
  done
done
failed=0
for pid in "${worker_pids[@]}"; do wait "$pid" || failed=1; done
if ((failed)); then
  for f in "$WORK"/add/*; do [[ -s $f ]] && { echo "== $f"; cat "$f"; }; done >&2
  fail "an ADD failed"
fi
echo "$((2 * WORKERS * PER_WORKER)) concurrent ADDs in $((SECONDS - t0)) s"

declare -A addr_of owner_of
for pod in "${pods[@]}"; do
  a=$(jq -r '.ips[0].address // empty' "$WORK/add/$pod.json")
  [[ -n $a ]] || fail "$pod: no address in $(cat "$WORK/add/$pod.json")"
  a=${a%/*}
  [[ -z ${owner_of[$a]:-} ]] || fail "$a handed to both ${owner_of[$a]} and $pod"
  owner_of[$a]=$pod
  addr_of[$pod]=$a
  last=${a##*.}
  [[ $a == 10.77.0.* ]] || fail "$pod got $a outside $RANGE"
  ((last >= 16 && !(last >= 40 && last < 48) && last != 53 && last != 255)) ||
    fail "$pod got the excluded address $a"
done
ok "${#pods[@]} ADDs (rdmanet-ipam and whereabouts, ${WORKERS} workers each) got distinct addresses outside the exclusions"

expected=$(for pod in "${pods[@]}"; do echo "$NS/$pod ${addr_of[$pod]}"; done | sort)
[[ $(pool_entries) == "$expected" ]] || fail "the IPPool does not hold exactly the allocations made:
$(diff <(echo "$expected") <(pool_entries))"
ok "the IPPool $POOL holds every entry of both plugins, each at the address its plugin returned"
[[ $(reservations | cut -d' ' -f1) == $(for pod in "${pods[@]}"; do echo "$NS/$pod"; done | sort) ]] ||
  fail "the OverlappingRangeIPReservations do not match the allocations: $(reservations)"
ok "one OverlappingRangeIPReservation per address, by both plugins"

# Each reads the other's entries: rdmanetctl lists whereabouts' entries of the pool, and a
# further ADD of each plugin takes the lowest address that neither holds.
shown=$(ip netns exec "$NODE" "$BIN/rdmanetctl" pool show "$POOL" --kubeconfig "$API_DIR/sa.kubeconfig")
for pod in wb-0-0 "wb-$((WORKERS - 1))-$((PER_WORKER - 1))"; do
  jq -e --arg ref "$NS/$pod" '[.spec.allocations[] | select(.podref == $ref)] | length == 1' <<<"$shown" >/dev/null ||
    fail "rdmanetctl pool show does not list whereabouts' entry of $pod: $shown"
done
ok "rdmanetctl pool show --kubeconfig reads whereabouts' entries"
lowest_free() {
  local i
  for ((i = 16; i < 255; i++)); do
    ((i >= 40 && i < 48 || i == 53)) && continue
    [[ -z ${owner_of[10.77.0.$i]:-} ]] && { echo "10.77.0.$i"; return; }
  done
}
for p in wb rd; do
  pod=$p-late
  create_pod "$NS" "$pod" >/dev/null
  want=$(lowest_free)
  got=$(ipam "$p" ADD "$pod" | jq -r '.ips[0].address') || fail "$p ADD $pod failed"
  [[ ${got%/*} == "$want" ]] || fail "$p took $got after the other's entries, expected the lowest free $want"
  owner_of[$want]=$pod
  addr_of[$pod]=$want
  pods+=("$pod")
done
ok "a later ADD of each plugin takes the lowest address free of both plugins' entries"

# --- DEL by each releases its own entry only -------------------------------------------------------
for pod in rd-0-0 wb-0-0; do
  before=$(pool_entries)
  ipam "${pod%%-*}" DEL "$pod" >/dev/null || fail "DEL $pod failed"
  want=$(grep -v "^$NS/$pod " <<<"$before")
  [[ $(pool_entries) == "$want" ]] || fail "DEL $pod changed more than its entry:
$(diff <(echo "$want") <(pool_entries))"
  reservations | grep -q "^$NS/$pod " && fail "DEL $pod left its reservation"
  unset "owner_of[${addr_of[$pod]}]"
  api DELETE "/api/v1/namespaces/$NS/pods/$pod" >/dev/null
done
ok "a DEL by rdmanet-ipam and one by whereabouts each released exactly their own entry and reservation"

# --- migration: a pod whereabouts attached, re-ADDed by rdmanet-ipam (the NAD's type changed) ----
# keeps its address; the entry is taken over (the new container id), not duplicated.
pod=wb-2-1
CID=cid-$pod-migrated ipam rd ADD "$pod" >"$WORK/add/$pod.rd.json" || fail "rdmanet-ipam re-ADD of $pod failed"
got=$(jq -r '.ips[0].address' "$WORK/add/$pod.rd.json")
[[ ${got%/*} == "${addr_of[$pod]}" ]] || fail "rdmanet-ipam gave $pod $got, whereabouts had given ${addr_of[$pod]}"
entry=$(pool | jq -c --arg ref "$NS/$pod" '[.spec.allocations | to_entries[] | select(.value.podref == $ref)]')
[[ $(jq length <<<"$entry") == 1 && $(jq -r '.[0].value.id' <<<"$entry") == "cid-$pod-migrated" ]] ||
  fail "after the re-ADD the IPPool should hold one entry of $pod with the new container id: $entry"
ok "rdmanet-ipam's re-ADD of a pod whereabouts attached keeps its address ($got) and takes the entry over"
CID=cid-$pod-migrated ipam rd DEL "$pod" >/dev/null || fail "rdmanet-ipam DEL of the migrated $pod failed"
pool_entries | grep -q "^$NS/$pod " && fail "rdmanet-ipam's DEL left the migrated $pod's entry"
reservations | grep -q "^$NS/$pod " && fail "rdmanet-ipam's DEL left the reservation whereabouts wrote for $pod"
unset "owner_of[${addr_of[$pod]}]"
api DELETE "/api/v1/namespaces/$NS/pods/$pod" >/dev/null
ok "rdmanet-ipam's DEL of the migrated pod released the entry and the reservation whereabouts had written"

# --- rdmanetctl reconcile: orphans of both plugins go, live whereabouts allocations stay --------------
# The pods of rd-1-0 and wb-1-0 are deleted without a DEL (a node lost with them).
for pod in rd-1-0 wb-1-0; do api DELETE "/api/v1/namespaces/$NS/pods/$pod" >/dev/null; done
before=$(pool_entries)
ip netns exec "$NODE" "$BIN/rdmanetctl" reconcile --kubeconfig "$API_DIR/sa.kubeconfig" \
  >"$WORK/log/reconcile.log" 2>&1 || fail "rdmanetctl reconcile failed: $(cat "$WORK/log/reconcile.log")"
want=$(grep -v -e "^$NS/rd-1-0 " -e "^$NS/wb-1-0 " <<<"$before")
[[ $(pool_entries) == "$want" ]] || fail "rdmanetctl reconcile did not release exactly the two orphans:
$(diff <(echo "$want") <(pool_entries))
$(cat "$WORK/log/reconcile.log")"
reservations | grep -q -e "^$NS/rd-1-0 " -e "^$NS/wb-1-0 " && fail "reconcile left an orphan's reservation"
grep -q "^$NS/wb-" <<<"$want" || fail "no live whereabouts entry left to check"
ok "rdmanetctl reconcile released the orphans of both plugins and kept every live whereabouts allocation"
unset "owner_of[${addr_of[rd-1-0]}]" "owner_of[${addr_of[wb-1-0]}]"

# A whereabouts ADD after the reconcile still works on the pool rdmanet wrote.
create_pod "$NS" wb-after >/dev/null
want=$(lowest_free)
got=$(ipam wb ADD wb-after | jq -r '.ips[0].address') || fail "whereabouts ADD after the reconcile failed"
[[ ${got%/*} == "$want" ]] || fail "whereabouts took $got after the reconcile, expected $want"
addr_of[wb-after]=$want owner_of[$want]=wb-after
ok "whereabouts allocates again on the pool after rdmanet's reconcile wrote it ($want)"

# --- whereabouts' own reconciler over rdmanet's entries ------------------------------------------------
# It keeps an entry only when its pod exists and lists the address in Multus' network-status
# annotation (wrappedPod.go), so the live pods get the annotation Multus would write, all but
# rd-0-2 (a pod whose attachment no Multus reported, e.g. one made through the DRA provider).
# rd-2-0's pod goes away without a DEL. Expected: rd-2-0's entry released, and rd-0-2's too
# although its pod lives (whereabouts' rule, not rdmanet's); every other one kept.
for pod in $(pool_entries | cut -d' ' -f1 | cut -d/ -f2); do
  [[ $pod == rd-0-2 ]] && continue
  status=$(jq -nc --arg ip "${addr_of[$pod]}" '[{name: "interop/interop-net", interface: "net1", ips: [$ip]}]')
  patch=$(jq -nc --arg s "$status" '{metadata: {annotations: {"k8s.v1.cni.cncf.io/network-status": $s}}}')
  api PATCH "/api/v1/namespaces/$NS/pods/$pod" "$patch" application/merge-patch+json >/dev/null
done
api DELETE "/api/v1/namespaces/$NS/pods/rd-2-0" >/dev/null
before=$(pool_entries)
want=$(grep -v -e "^$NS/rd-2-0 " -e "^$NS/rd-0-2 " <<<"$before")
# cmd/reconciler (ip-reconciler) is a cron job for a pod: rest.InClusterConfig
# (KUBERNETES_SERVICE_HOST/PORT and /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt})
# and the schedule from the flat file /etc/cni/net.d/whereabouts.d/whereabouts.conf (it has no
# /cron-schedule/config here). `isolated` gives it both in private directories. Its first run
# starts on the next minute.
iso=$WORK/wbrec
sa=$iso/var/run/secrets/kubernetes.io/serviceaccount
mkdir -p "$iso/cni-net.d/whereabouts.d" "$sa"
cp "$WORK/wb/whereabouts.conf" "$iso/cni-net.d/whereabouts.d/whereabouts.conf"
cp "$CA" "$sa/ca.crt"
printf '%s' "$ADMIN_TOKEN" >"$sa/token"
printf 'kube-system' >"$sa/namespace"
hostport=${URL#https://}
isolated "$NODE" "$iso" env KUBERNETES_SERVICE_HOST="${hostport%:*}" KUBERNETES_SERVICE_PORT="${hostport##*:}" \
  "$WB_RECONCILER" -log-level debug >"$WORK/log/whereabouts-reconciler.log" 2>&1 &
rec_pid=$!
on_exit "stop_bg $rec_pid"
t0=$SECONDS
until grep -q -e "no IP addresses to cleanup" -e "successfully cleanup IPs" -e "failed to" \
  "$WORK/log/whereabouts-reconciler.log"; do
  kill -0 "$rec_pid" 2>/dev/null || fail "whereabouts' reconciler exited: $(cat "$WORK/log/whereabouts-reconciler.log")"
  ((SECONDS - t0 < 150)) || fail "whereabouts' reconciler did not run within 150 s"
  sleep 1
done
sleep 2 # the overlapping-reservation pass follows the pool pass in the same run
grep -q "failed to" "$WORK/log/whereabouts-reconciler.log" &&
  fail "whereabouts' reconciler failed: $(grep 'failed to' "$WORK/log/whereabouts-reconciler.log")"
[[ $(pool_entries) == "$want" ]] || fail "whereabouts' reconciler did not release exactly rd-2-0's and rd-0-2's entries:
$(diff <(echo "$want") <(pool_entries))"
ok "whereabouts' reconciler released rdmanet's orphan and kept every live entry of both plugins that Multus' annotation lists"
ok "whereabouts' reconciler also released rd-0-2, a live pod without network-status (its rule: the annotation must list the address)"
t0=$SECONDS
while reservations | grep -q "^$NS/rd-2-0 "; do
  ((SECONDS - t0 < 20)) || fail "whereabouts' reconciler left rd-2-0's OverlappingRangeIPReservation"
  sleep 1
done
ok "whereabouts' reconciler removed the reservation rdmanet-ipam wrote for the orphan"

# A CHECK by rdmanet-ipam of a live entry after both reconcilers: still allocated.
ipam rd CHECK rd-0-1 >/dev/null || fail "rdmanet-ipam CHECK rd-0-1 failed after the reconcilers"
ok "rdmanet-ipam CHECK still finds its entries after both reconcilers"
out=$(ipam rd CHECK rd-0-2) && fail "rdmanet-ipam CHECK rd-0-2 passed although whereabouts released its entry"
[[ $(jq -r .code <<<"$out") == 112 ]] || fail "rdmanet-ipam CHECK rd-0-2: expected code 112, got $out"
ok "rdmanet-ipam CHECK reports the entry whereabouts released (code 112: $(jq -r .msg <<<"$out"))"

interop_done
