#!/usr/bin/env bash
# The real Multus (v4.3.0, built from its module) delegating to rdmanet, on a real kube-apiserver:
# NetworkAttachmentDefinitions as CRs, a Pod object with the k8s.v1.cni.cncf.io/networks
# annotation, Multus run by cnitool as the runtime would run it, ADD/CHECK/DEL. Twice: the thin
# plugin (`multus`, kubeconfig in its config) and the thick one (`multus-daemon` serving
# `multus-shim` on a socket in a private directory). The cluster network (eth0) is the reference
# macvlan + host-local; rdmanet attaches net1 (macvlan, IPAM on the kube-apiserver's IPPools) and
# net2 (macvlan, local IPAM, a static address and MAC from the annotation).
# Everything runs inside a "node" network namespace made here (the API server too, on its
# 127.0.0.1), with the masters as veths there; /var and /etc/cni/net.d are private to the peers.
# Needs the peers multus, cnitool, cni-plugins (and kube-1.37 + etcd, or KUBEBUILDER_ASSETS).
#   usage: multus.sh BUILD_DIR
source "$(dirname "$0")/lib.sh"
interop_init "$@"

need_peer multus
MULTUS=$(peer_bin "$PEER" multus)
MULTUS_SHIM=$(peer_bin "$PEER" multus-shim)
MULTUS_DAEMON=$(peer_bin "$PEER" multus-daemon)
need_peer cnitool
CNITOOL=$(peer_bin "$PEER" cnitool)
need_peer cni-plugins
MACVLAN=$(peer_bin "$PEER" macvlan)
HOST_LOCAL=$(peer_bin "$PEER" host-local)
# The CNI_PATH; multus-daemon and cnitool are copied beside it (`isolated` hides /var).
stage_bin "$BIN/rdmanet" "$BIN/rdmanet-ipam" "$MULTUS" "$MULTUS_SHIM" "$MACVLAN" "$HOST_LOCAL" >/dev/null
mkdir -p "$WORK/tools"
cp -L "$MULTUS_DAEMON" "$CNITOOL" "$WORK/tools/"
MULTUS_DAEMON=$WORK/tools/multus-daemon
CNITOOL=$WORK/tools/cnitool

NODE=$TAG-node
POD_NS=(thin "$TAG-thin" thick "$TAG-thick")
make_netns "$NODE"
make_netns "$TAG-thin"
make_netns "$TAG-thick"
# The node's links, inside its namespace: rdm0 is rdmanet's macvlan master, clu0 the cluster
# network's.
for l in rdm0 clu0; do
  ip -n "$NODE" link add "$l" type veth peer name "${l}p"
  ip -n "$NODE" link set "$l" up
  ip -n "$NODE" link set "${l}p" up
done
start_apiserver "$NODE"
write_policy
NS=interop
ensure_namespace "$NS"

# --- NetworkAttachmentDefinitions -------------------------------------------------------------
api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$(cat "$(dirname "$0")/nad-crd.json")" >/dev/null
t0=$SECONDS
until api_try GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/network-attachment-definitions.k8s.cni.cncf.io |
  jq -e '.status.conditions[]? | select(.type == "Established" and .status == "True")' >/dev/null &&
  api_try GET "/apis/k8s.cni.cncf.io/v1/namespaces/$NS/network-attachment-definitions" >/dev/null 2>&1; do
  ((SECONDS - t0 < 60)) || fail "the NetworkAttachmentDefinition CRD was not Established within 60 s"
  sleep 0.5
done
nad() { # nad NAME CONFIG_JSON
  api POST "/apis/k8s.cni.cncf.io/v1/namespaces/$NS/network-attachment-definitions" "$(jq -nc --arg ns "$NS" \
    --arg name "$1" --arg conf "$2" '{apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinition",
      metadata: {namespace: $ns, name: $name}, spec: {config: $conf}}')" >/dev/null
}
nad rdma-kube "$(jq -nc --arg kc "$API_DIR/sa.kubeconfig" --arg w "$WORK" '{cniVersion: "1.0.0",
  name: "rdma-kube", plugins: [{type: "rdmanet", mode: "macvlan", master: "rdm0", macvlanMode: "bridge",
  logFile: ($w + "/log/rdmanet.log"), logLevel: "debug",
  ipam: {type: "rdmanet-ipam", range: "10.78.0.0/24", range_start: "10.78.0.10", datastore: "kubernetes",
    kubernetes: {kubeconfig: $kc}, data_dir: ($w + "/rdipam-kube")}}]}')"
nad rdma-local "$(jq -nc --arg w "$WORK" '{cniVersion: "1.0.0", name: "rdma-local",
  plugins: [{type: "rdmanet", mode: "macvlan", master: "rdm0", macvlanMode: "bridge",
  capabilities: {ips: true, mac: true}, logFile: ($w + "/log/rdmanet.log"), logLevel: "debug",
  ipam: {type: "rdmanet-ipam", range: "10.79.0.0/24", data_dir: ($w + "/rdipam-local")}}]}')"
ok "NetworkAttachmentDefinitions rdma-kube and rdma-local created as CRs"

# The cluster network (eth0): a conflist in a directory that clusterNetwork names. Not the file
# itself: Multus v4.3.0 caches a clusterNetwork given as a .conflist path re-marshalled through
# libcni's plain NetConf (LoadDelegateNetConfFromConfList), which drops every plugin-specific key
# (master, ipam.ranges, dataDir), so its DEL of the cluster network then fails ("no IP ranges
# specified"). A directory is read as raw bytes and cached as written.
mkdir -p "$WORK/multus/cluster.d"
jq -n --arg w "$WORK" '{cniVersion: "1.0.0", name: "cluster", plugins: [{type: "macvlan", master: "clu0",
  mode: "bridge", ipam: {type: "host-local", ranges: [[{subnet: "10.76.0.0/24"}]], dataDir: ($w + "/host-local")}}]}' \
  >"$WORK/multus/cluster.d/10-cluster.conflist"
NETWORKS='[{"name":"rdma-kube","interface":"net1"},{"name":"rdma-local","interface":"net2","ips":["10.79.0.50/24"],"mac":"02:00:00:00:79:50"}]'

# Thin: the multus binary with a kubeconfig. Its cache (cniDir), conf dir and log are private.
mkdir -p "$WORK/thin/netd"
jq -n --arg w "$WORK" --arg kc "$API_DIR/admin.kubeconfig" '{cniVersion: "1.0.0", name: "multus-thin",
  type: "multus", kubeconfig: $kc, clusterNetwork: ($w + "/multus/cluster.d"), cniDir: ($w + "/thin/cache"),
  binDir: ($w + "/bin"), confDir: ($w + "/thin/confdir"), logFile: ($w + "/log/multus-thin.log"), logLevel: "debug",
  logToStderr: false}' >"$WORK/thin/netd/00-multus.conf"

# Thick: multus-daemon with its config (the server's keys and the Multus keys it lays over every
# request), an in-cluster identity (KUBERNETES_SERVICE_* and the token file under the private
# /var/run/secrets), its socket in a private directory; the shim's config names that directory.
# multusConfigFile "auto", as Multus' own manifests run it: with a given file instead, v4.3.0's
# daemon returns from main (nothing waits on its WaitGroup) and exits right after it started
# serving. In "auto" its config manager writes a Multus config for the first conflist of
# multusAutoconfigDir into cniConfigDir (private) and keeps the process alive.
mkdir -p "$WORK/thick/netd" "$WORK/thick/netd-gen"
jq -n --arg w "$WORK" '{cniVersion: "1.0.0", name: "multus-thick", type: "multus-shim",
  daemonSocketDir: ($w + "/thick/run"), logFile: ($w + "/log/multus-shim.log"), logLevel: "debug"}' \
  >"$WORK/thick/netd/00-multus.conf"
jq -n --arg w "$WORK" '{chrootDir: "", socketDir: ($w + "/thick/run"), logFile: ($w + "/log/multus-daemon.log"),
  logLevel: "debug", logToStderr: true, cniVersion: "1.0.0", name: "multus-thick", type: "multus-shim",
  clusterNetwork: ($w + "/multus/cluster.d"), cniDir: ($w + "/thick/cache"), binDir: ($w + "/bin"),
  confDir: ($w + "/thick/confdir"), cniConfigDir: ($w + "/thick/netd-gen"),
  multusConfigFile: "auto", multusAutoconfigDir: ($w + "/multus/cluster.d")}' >"$WORK/thick/daemon.json"
sa=$WORK/iso-daemon/var/run/secrets/kubernetes.io/serviceaccount
mkdir -p "$sa"
cp "$CA" "$sa/ca.crt"
printf '%s' "$ADMIN_TOKEN" >"$sa/token"
printf '%s' "$NS" >"$sa/namespace"
hostport=${URL#https://}
isolated "$NODE" "$WORK/iso-daemon" env KUBERNETES_SERVICE_HOST="${hostport%:*}" \
  KUBERNETES_SERVICE_PORT="${hostport##*:}" "$MULTUS_DAEMON" -config "$WORK/thick/daemon.json" \
  >"$WORK/log/multus-daemon.out.log" 2>&1 &
daemon_pid=$!
on_exit "stop_bg $daemon_pid"
t0=$SECONDS
until [[ -S $WORK/thick/run/multus.sock ]]; do
  kill -0 "$daemon_pid" 2>/dev/null || fail "multus-daemon exited: $(tail -20 "$WORK/log/multus-daemon.out.log")"
  ((SECONDS - t0 < 60)) || fail "multus-daemon made no socket within 60 s"
  sleep 0.5
done
t0=$SECONDS
until [[ -n $(find "$WORK/thick/netd-gen" -name '*multus*' 2>/dev/null) ]]; do
  kill -0 "$daemon_pid" 2>/dev/null || fail "multus-daemon exited: $(tail -20 "$WORK/log/multus-daemon.log")"
  ((SECONDS - t0 < 30)) || fail "multus-daemon's config manager wrote no Multus config within 30 s"
  sleep 0.5
done
ok "multus-daemon serves on $WORK/thick/run/multus.sock and generated its config in a private dir"

# cnitool VERB NETWORK POD_NETNS POD UID: the runtime's call, as the kubelet's CNI_ARGS.
cnitool() {
  isolated "$NODE" "$WORK/iso-cnitool" env NETCONFPATH="$NETCONFPATH" CNI_PATH="$WORK/bin" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$NS;K8S_POD_NAME=$4;K8S_POD_INFRA_CONTAINER_ID=$4;K8S_POD_UID=$5" \
    "$CNITOOL" "$1" "$2" "/run/netns/$3"
}

links_of() { ip -n "$1" -j -d addr show | jq -c '[.[] | select(.ifname != "lo")]'; }
ippool_entries() {
  api GET /apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/10.78.0.0-24 |
    jq -c '[.spec.allocations // {} | to_entries[] | {off: .key, podref: .value.podref}]'
}

node_links_before=$(ip -n "$NODE" -j link show | jq -c '[.[].ifname] | sort')

run_mode() { # run_mode thin|thick [pod-gone]: pod-gone deletes the Pod object before the DEL
  local mode=$1 podns=$TAG-$1 pod=pod-$1 uid out links net1 net2 eth0 status a
  NETCONFPATH=$WORK/$mode/netd
  uid=$(create_pod "$NS" "$pod" "$(jq -nc --arg n "$NETWORKS" '{"k8s.v1.cni.cncf.io/networks": $n}')")

  out=$(cnitool add "multus-$mode" "$podns" "$pod" "$uid" 2>"$WORK/log/cnitool-$mode-add.log") ||
    fail "$mode: cnitool add (Multus) failed: $(cat "$WORK/log/cnitool-$mode-add.log") $out"
  jq -e '.interfaces | length > 0' <<<"$out" >/dev/null || fail "$mode: Multus printed no result: $out"

  links=$(links_of "$podns")
  eth0=$(jq -c '.[] | select(.ifname == "eth0")' <<<"$links")
  net1=$(jq -c '.[] | select(.ifname == "net1")' <<<"$links")
  net2=$(jq -c '.[] | select(.ifname == "net2")' <<<"$links")
  [[ $(jq length <<<"$links") == 3 && -n $eth0 && -n $net1 && -n $net2 ]] ||
    fail "$mode: the pod netns should hold eth0, net1, net2: $links"
  for l in "$net1" "$net2" "$eth0"; do
    [[ $(jq -r '.linkinfo.info_kind' <<<"$l") == macvlan ]] || fail "$mode: not a macvlan: $l"
  done
  ip_eth0=$(jq -r '.addr_info[] | select(.family == "inet") | .local' <<<"$eth0")
  ip_net1=$(jq -r '.addr_info[] | select(.family == "inet") | "\(.local)/\(.prefixlen)"' <<<"$net1")
  ip_net2=$(jq -r '.addr_info[] | select(.family == "inet") | "\(.local)/\(.prefixlen)"' <<<"$net2")
  [[ $ip_eth0 == 10.76.0.* ]] || fail "$mode: eth0 has $ip_eth0, not from the cluster network"
  [[ $ip_net1 == 10.78.0.*/24 ]] || fail "$mode: net1 has $ip_net1, not from rdma-kube's 10.78.0.0/24"
  [[ $ip_net2 == 10.79.0.50/24 ]] || fail "$mode: net2 has $ip_net2, not the annotation's 10.79.0.50/24"
  [[ $(jq -r .address <<<"$net2") == 02:00:00:00:79:50 ]] || fail "$mode: net2 MAC is not the annotation's: $net2"
  ok "$mode: the pod netns has eth0 ($ip_eth0, cluster network), net1 ($ip_net1) and net2 ($ip_net2, MAC from the annotation) from rdmanet"

  status=$(api GET "/api/v1/namespaces/$NS/pods/$pod" | jq -r '.metadata.annotations["k8s.v1.cni.cncf.io/network-status"] // empty')
  [[ -n $status ]] || fail "$mode: Multus wrote no network-status annotation"
  jq -e --arg ip "$ip_eth0" '[.[] | select(.default == true and .interface == "eth0" and .ips == [$ip])] | length == 1' \
    <<<"$status" >/dev/null || fail "$mode: network-status has no default eth0 with $ip_eth0: $status"
  for a in "rdma-kube net1 ${ip_net1%/*} $(jq -r .address <<<"$net1")" "rdma-local net2 10.79.0.50 02:00:00:00:79:50"; do
    read -r name ifname ip mac <<<"$a"
    jq -e --arg n "$NS/$name" --arg i "$ifname" --arg ip "$ip" --arg mac "$mac" \
      '[.[] | select(.name == $n and .interface == $i and .ips == [$ip] and .mac == $mac)] | length == 1' \
      <<<"$status" >/dev/null || fail "$mode: network-status lacks $NS/$name $ifname $ip $mac: $status"
  done
  ok "$mode: Multus wrote the Pod's network-status: eth0 default, net1 and net2 with rdmanet's addresses and MACs"

  [[ $(find "$WORK/state" -type f | wc -l) -ge 2 ]] ||
    fail "$mode: rdmanet kept no state for net1 and net2 in the policy's stateDir (was the node policy used?)"
  local off=${ip_net1%/*}
  off=${off##*.}
  jq -e --arg off "$off" --arg ref "$NS/$pod" '[.[] | select(.off == $off and .podref == $ref)] | length == 1' \
    <<<"$(ippool_entries)" >/dev/null || fail "$mode: the IPPool has no entry for $pod at $ip_net1: $(ippool_entries)"
  ok "$mode: rdmanet-ipam recorded net1's address in the IPPool for $NS/$pod"

  cnitool check "multus-$mode" "$podns" "$pod" "$uid" >"$WORK/log/cnitool-$mode-check.log" 2>&1 ||
    fail "$mode: cnitool check (Multus) failed: $(cat "$WORK/log/cnitool-$mode-check.log")"
  ok "$mode: CHECK through Multus passes"

  if [[ ${2:-} == pod-gone ]]; then
    # A force-deleted pod: the runtime's DEL comes after the Pod object is gone.
    api DELETE "/api/v1/namespaces/$NS/pods/$pod?gracePeriodSeconds=0" >/dev/null
  fi
  cnitool del "multus-$mode" "$podns" "$pod" "$uid" >"$WORK/log/cnitool-$mode-del.log" 2>&1 ||
    fail "$mode: cnitool del (Multus) failed: $(cat "$WORK/log/cnitool-$mode-del.log")"
  [[ $(links_of "$podns") == "[]" ]] || fail "$mode: DEL left links in the pod netns: $(links_of "$podns")"
  jq -e --arg ref "$NS/$pod" '[.[] | select(.podref == $ref)] | length == 0' <<<"$(ippool_entries)" >/dev/null ||
    fail "$mode: DEL left the IPPool entry: $(ippool_entries)"
  [[ -z $(find "$WORK/state" -type f) ]] || fail "$mode: DEL left rdmanet state: $(find "$WORK/state" -type f)"
  [[ $("$BIN/rdmanetctl" pool list --json --data-dir "$WORK/rdipam-local" | jq '[.[].spec.allocations // {} | length] | add // 0') == 0 ]] ||
    fail "$mode: DEL left rdma-local's address in the local store"
  [[ -z $(find "$WORK/host-local" -type f -name '10.*' 2>/dev/null) ]] || fail "$mode: DEL left a host-local address"
  [[ $(ip -n "$NODE" -j link show | jq -c '[.[].ifname] | sort') == "$node_links_before" ]] ||
    fail "$mode: the node's links changed: $(ip -n "$NODE" -j link show | jq -c '[.[].ifname]')"
  ok "$mode: DEL through Multus${2:+ (Pod object already deleted)} removed net1, net2, eth0, the IPPool entry, the local and host-local addresses and rdmanet's state"
}

t0=$SECONDS
run_mode thin
echo "thin plugin: $((SECONDS - t0)) s"
t0=$SECONDS
kill -0 "$daemon_pid" 2>/dev/null || fail "multus-daemon exited: $(tail -20 "$WORK/log/multus-daemon.log")"
run_mode thick pod-gone
echo "thick plugin: $((SECONDS - t0)) s"
grep -q "rdmanet" "$WORK/log/multus-daemon.log" 2>/dev/null ||
  grep -q "rdma-kube" "$WORK/log/multus-daemon.out.log" || fail "the thick ADD did not go through multus-daemon"
ok "the thick run went through multus-daemon (its log names the delegates)"

interop_done
