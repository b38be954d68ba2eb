# The Multus path on the node lab (sourced by node_main.sh): two pods whose
# k8s.v1.cni.cncf.io/networks annotation names an rdmanet macvlan network (net1) and an rdmanet
# hostdev network (net2). The kubelet -> containerd -> Multus (thin, the node's CNI network) ->
# rdmanet; addresses from rdmanet's Kubernetes datastore (whereabouts IPPools on the real
# kube-apiserver). Deleting the pods leaves no interface, no address, no state file.

KCONF=/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig
# The node's links: mvm0 is the macvlan networks' master, hda/hdb the two ends of a veth pair
# (one per pod for hostdev: the pods talk over it).
ip link add mvm0 type dummy && ip link set mvm0 up
ip link add hda type veth peer name hdb
# nad <name> <plugin keys> <range> <network_name>
nad() {
  _conf=$(jq -nc --arg kc "$KCONF" --argjson keys "{$2}" --arg r "$3" --arg n "$4" '{cniVersion: "1.0.0", name: $n,
    plugins: [{type: "rdmanet", logFile: "/var/log/rdmanet/rdmanet.log", logLevel: "debug",
      ipam: {type: "rdmanet-ipam", range: $r, datastore: "kubernetes", network_name: $n,
        kubernetes: {kubeconfig: $kc}}} + $keys]}')
  jq -n --arg name "$1" --arg conf "$_conf" '{apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinition",
    metadata: {namespace: "default", name: $name}, spec: {config: $conf}}' | kubectl apply -f -
}
make_nads() {
  nad rdma-mv '"mode": "macvlan", "master": "mvm0", "macvlanMode": "bridge"' 10.78.0.0/24 rdma-mv &&
    nad rdma-hd-a '"mode": "hostdev", "device": "hda"' 10.79.0.0/24 rdma-hd &&
    nad rdma-hd-b '"mode": "hostdev", "device": "hdb"' 10.79.0.0/24 rdma-hd
}
check "multus: NetworkAttachmentDefinitions rdma-mv (rdmanet macvlan) and rdma-hd-a/-b (rdmanet hostdev)" make_nads

mp_pod() { # <name> <hostdev NAD>
  pod_json "$1" "$(jq -nc --arg hd "$2" '{"k8s.v1.cni.cncf.io/networks":
    ([{name: "rdma-mv", interface: "net1"}, {name: $hd, interface: "net2"}] | tojson)}')" | kubectl apply -f -
}
check "multus: pods mp-a and mp-b created (networks: rdma-mv as net1, rdma-hd-a/-b as net2)" \
  eval 'mp_pod mp-a rdma-hd-a && mp_pod mp-b rdma-hd-b'
check "multus: mp-a Running" retry 300 pod_running mp-a
check "multus: mp-b Running" retry 180 pod_running mp-b

pod_addr() { in_pod "$1" ip -4 -o addr show dev "$2" 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1; }
MA1=$(pod_addr mp-a net1) MA2=$(pod_addr mp-a net2) MB1=$(pod_addr mp-b net1) MB2=$(pod_addr mp-b net2)
echo "LAB-INFO: multus: mp-a net1 $MA1 net2 $MA2; mp-b net1 $MB1 net2 $MB2"
in_subnet() { case $1 in "$2".*) return 0 ;; esac; echo "address '$1' not in $2.0/24"; return 1; }
check "multus: mp-a has net1 in 10.78.0.0/24 (macvlan) and net2 in 10.79.0.0/24 (hostdev)" \
  eval 'in_subnet "$MA1" 10.78.0 && in_subnet "$MA2" 10.79.0'
check "multus: mp-b has net1 in 10.78.0.0/24 (macvlan) and net2 in 10.79.0.0/24 (hostdev)" \
  eval 'in_subnet "$MB1" 10.78.0 && in_subnet "$MB2" 10.79.0'
hd_driver() { in_pod "$1" ip -d link show dev net2 | grep -q 'veth'; }
check "multus: mp-a's net2 is the host's veth end (hostdev moved it)" hd_driver mp-a
check "multus: the host no longer has hda and hdb" eval '! ip link show dev hda 2>/dev/null && ! ip link show dev hdb 2>/dev/null'
status_lists() { # <pod> <address>...
  _st=$(kubectl get pod "$1" -o jsonpath='{.metadata.annotations.k8s\.v1\.cni\.cncf\.io/network-status}')
  echo "$_st"
  shift
  for _a in "$@"; do echo "$_st" | jq -e --arg a "$_a" '[.[].ips[]?] | index($a) != null' >/dev/null || return 1; done
}
check "multus: mp-a's network-status annotation lists $MA1 and $MA2" status_lists mp-a "$MA1" "$MA2"
check "multus: mp-a -> mp-b over net1 (macvlan): ping $MB1" in_pod mp-a ping -c 2 -W 5 "$MB1"
check "multus: mp-a -> mp-b over net2 (hostdev veth): ping $MB2" in_pod mp-a ping -c 2 -W 5 "$MB2"

# IPPool allocations of the real kube-apiserver: "<pod>@<address>" for every entry.
pool_entries() {
  kubectl get ippools.whereabouts.cni.cncf.io -A -o json | jq -r '.items[] | .spec.range as $r |
    (.spec.allocations // {}) | to_entries[] | "\(.value.podref) \($r) \(.key)"'
}
# ip_of <range> <offset>: the address at that offset of the range (IPv4).
ip_of() {
  _net=${1%/*}
  IFS=. read -r _a _b _c _d <<<"$_net"
  _n=$(((_a << 24) + (_b << 16) + (_c << 8) + _d + $2))
  echo "$((_n >> 24 & 255)).$((_n >> 16 & 255)).$((_n >> 8 & 255)).$((_n & 255))"
}
pools_hold() { # <podref> <address>...
  _e=$(pool_entries) || return 1
  echo "$_e"
  _ref=$1
  shift
  for _want in "$@"; do
    _found=
    while read -r _pr _rng _off; do
      [ "$_pr" = "$_ref" ] && [ "$(ip_of "$_rng" "$_off")" = "$_want" ] && _found=1
    done <<<"$_e"
    [ -n "$_found" ] || { echo "(no IPPool entry for $_ref $_want)"; return 1; }
  done
}
check "multus: the apiserver's IPPools record default/mp-a at $MA1 and $MA2" pools_hold default/mp-a "$MA1" "$MA2"
check "multus: the apiserver's IPPools record default/mp-b at $MB1 and $MB2" pools_hold default/mp-b "$MB1" "$MB2"

state_files() { find /var/lib/cni/rdmanet/state -type f 2>/dev/null; }
four_states() { state_files; [ "$(state_files | grep -c .)" -ge 4 ]; }
check "multus: rdmanet keeps an attachment state file per attachment (4) while the pods run" four_states
check "multus: pods deleted" kubectl delete pod mp-a mp-b --wait=true --timeout=180s
no_mp_entries() { _e=$(pool_entries) || return 1; echo "$_e"; ! echo "$_e" | grep -q 'default/mp-'; }
check "multus: no IPPool entry of mp-a or mp-b left" retry 30 no_mp_entries
check "multus: hda and hdb are back on the node" retry 20 eval 'ip link show dev hda && ip link show dev hdb'
check "multus: no macvlan child of mvm0 left on the node" output_lacks '@mvm0' ip -o link show
no_state() { _f=$(state_files); echo "$_f"; [ -z "$_f" ]; }
check "multus: no rdmanet attachment state file left (/var/lib/cni/rdmanet/state)" no_state
ip link del mvm0 2>/dev/null
ip link del hda 2>/dev/null
