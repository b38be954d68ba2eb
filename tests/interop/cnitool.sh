#!/usr/bin/env bash
# The conf/ examples run by the real cnitool (v1.3.1, built from its module): ADD, CHECK, DEL (and
# DEL again) of every conf/*.conflist that runs without RDMA hardware, with CNI_PATH a private
# bin dir (rdmanet, rdmanet-ipam, the reference host-local), NETCONFPATH a private dir, and a pod
# netns made here. The examples are used as shipped, with only what names this machine replaced:
# the master or device (veths in a "node" netns made here), logFile and the IPAM store directories
# (private). The sriov-* examples need SR-IOV VFs and are not run (docs/interop.md).
# Needs the peers cnitool and cni-plugins.
#   usage: cnitool.sh BUILD_DIR
source "$(dirname "$0")/lib.sh"
interop_init "$@"

need_peer cnitool
CNITOOL=$(peer_bin "$PEER" cnitool)
CNITOOL=$(stage_bin "$CNITOOL")
need_peer cni-plugins
HOST_LOCAL=$(peer_bin "$PEER" host-local)
stage_bin "$BIN/rdmanet" "$BIN/rdmanet-ipam" "$HOST_LOCAL" >/dev/null
mkdir -p "$WORK/netconf"

CONF=$(cd "$(dirname "$0")/../../conf" && pwd)
NODE=$TAG-node
POD=$TAG-pod
make_netns "$NODE"
make_netns "$POD"
ip -n "$NODE" link add up0 type veth peer name up0p
ip -n "$NODE" link add hd0 type veth peer name hd0p
for l in up0 up0p hd0p; do ip -n "$NODE" link set "$l" up; done
write_policy

# cnitool VERB NETWORK: the pod's attachment net1 (cnitool derives the container id from the
# netns path). Its libcni cache (/var/lib/cni) is private (`isolated`).
cnitool() {
  isolated "$NODE" "$WORK/iso" env NETCONFPATH="$WORK/netconf" CNI_PATH="$WORK/bin" CNI_IFNAME=net1 \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=interop;K8S_POD_NAME=$POD" "$CNITOOL" "$1" "$2" "/run/netns/$POD"
}
pod_links() { ip -n "$POD" -j -d addr show | jq -c '[.[] | select(.ifname != "lo")]'; }
node_links() { ip -n "$NODE" -j link show | jq -c '[.[].ifname] | sort'; }
local_allocations() {
  [[ -d $WORK/rdipam ]] || { echo 0; return; }
  "$BIN/rdmanetctl" pool list --json --data-dir "$WORK/rdipam" | jq '[.[].spec.allocations // {} | length] | add // 0'
}

ran=()
for src in "$CONF"/*.conflist; do
  file=$(basename "$src")
  mode=$(jq -r '.plugins[0].mode' "$src")
  case $mode in
    macvlan) kind=macvlan ;;
    hostdev) kind=veth ;;
    *)
      echo "not run here: $file (mode $mode needs RDMA/SR-IOV hardware)"
      continue
      ;;
  esac
  name=$(jq -r .name "$src")
  # Only the names of this machine's things change: master/device, logFile, IPAM store dirs.
  jq --arg w "$WORK" '.plugins[0] |= (
      (if .mode == "macvlan" then .master = "up0" else . end)
    | (if .mode == "hostdev" then .device = "hd0" else . end)
    | (if has("logFile") then .logFile = ($w + "/log/" + (.logFile | split("/") | last)) else . end)
    | (if .ipam.type == "rdmanet-ipam" then .ipam.data_dir = ($w + "/rdipam") else . end)
    | (if .ipam.type == "host-local" then .ipam.dataDir = ($w + "/host-local") else . end))' "$src" \
    >"$WORK/netconf/$file"
  subnet=$(jq -r '.plugins[0].ipam | .range // .ranges[0][0].subnet' "$src")
  prefix=${subnet%.*}
  before=$(node_links)

  out=$(cnitool add "$name" 2>"$WORK/log/$file.add.err") || fail "$file: cnitool add failed: $(cat "$WORK/log/$file.add.err") $out"
  addr=$(jq -r '.ips[0].address' <<<"$out")
  [[ $addr == "$prefix".* ]] || fail "$file: result address $addr is not in $subnet: $out"
  [[ $(jq -r --arg p "/run/netns/$POD" '[.interfaces[] | select(.sandbox == $p) | .name] | join(",")' <<<"$out") == net1 ]] ||
    fail "$file: the result names no net1 in the pod sandbox: $out"
  links=$(pod_links)
  [[ $(jq -r '.[0].ifname + " " + .[0].linkinfo.info_kind + " " + (.[0].addr_info[] | select(.family == "inet") |
    "\(.local)/\(.prefixlen)")' <<<"$links") == "net1 $kind $addr" && $(jq length <<<"$links") == 1 ]] ||
    fail "$file: the pod netns should hold net1 ($kind) with $addr: $links"
  if [[ $mode == hostdev ]]; then
    ip -n "$NODE" link show hd0 >/dev/null 2>&1 && fail "$file: hd0 is still in the node after ADD"
  fi
  [[ -n $(find "$WORK/iso/var/lib/cni" -type f -path '*results*') ]] ||
    fail "$file: libcni's cached result is not in the private /var/lib/cni"
  ok "$file: ADD gave net1 ($kind) $addr in the pod (libcni's cache in the private /var/lib/cni)"

  cnitool check "$name" >"$WORK/log/$file.check.log" 2>&1 || fail "$file: cnitool check failed: $(cat "$WORK/log/$file.check.log")"
  ok "$file: CHECK passes"

  cnitool del "$name" >"$WORK/log/$file.del.log" 2>&1 || fail "$file: cnitool del failed: $(cat "$WORK/log/$file.del.log")"
  [[ $(pod_links) == "[]" ]] || fail "$file: DEL left links in the pod: $(pod_links)"
  [[ $(node_links) == "$before" ]] || fail "$file: the node's links differ after DEL: $(node_links), before $before"
  [[ $(local_allocations) == 0 ]] || fail "$file: DEL left an address in rdmanet-ipam's store"
  [[ -z $(find "$WORK/host-local" -type f -name "$prefix.*" 2>/dev/null) ]] || fail "$file: DEL left a host-local address"
  [[ -z $(find "$WORK/state" -type f) ]] || fail "$file: DEL left rdmanet state: $(find "$WORK/state" -type f)"
  [[ -z $(find "$WORK/iso/var/lib/cni" -type f -path '*results*') ]] || fail "$file: DEL left libcni's cached result"
  cnitool del "$name" >"$WORK/log/$file.del2.log" 2>&1 || fail "$file: a second DEL failed: $(cat "$WORK/log/$file.del2.log")"
  ok "$file: DEL leaves nothing (pod, node links, IPAM, state, cache) and a second DEL succeeds"
  ran+=("$file")
done
((${#ran[@]} >= 3)) || fail "only ${#ran[@]} conf/ examples ran: ${ran[*]}"

interop_done
