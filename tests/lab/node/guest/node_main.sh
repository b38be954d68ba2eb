# The node lab's guest (run by /init): a Kubernetes node of the host's control plane. containerd
# 2.x (NRI on) with Debian's runc, the kubelet, then the Multus path (node_multus.sh) and the DRA
# path with DRANET and rdmanet's profile provider (node_dra.sh). Each check prints one
# LAB-PASS/LAB-FAIL line (lab_lib.sh); the last line is the summary the host parses.
. /lab/lab_lib.sh
export KUBECONFIG=/lab/config/kubeconfig
NODE=labnode
LOGS=/var/log
mkdir -p "$LOGS" "$LOGS/rdmanet"
# dump_logs: the tails of the node's logs on the console (after a failure).
dump_logs() {
  for f in "$LOGS"/*.log "$LOGS"/rdmanet/*.log; do
    echo "---- tail of $f"
    tail -n "${1:-25}" "$f" | sed 's/^/    | /'
  done
}
# critical <name> <command...>: a check the rest depends on; when it fails the logs are shown and
# the lab ends here (summary printed, machine powered off).
critical() {
  _before=$LAB_FAIL
  check "$@"
  if [ "$LAB_FAIL" -ne "$_before" ]; then
    dump_logs 60
    lab_summary
    sync
    poweroff -f
  fi
}


echo "== node: modules, network"
check_modules_load
mount -t configfs configfs /sys/kernel/config 2>/dev/null

# The NICs, found by the MACs the host gave them: the uplink (QEMU user networking: the only way
# out is the forward to the host's kube-apiserver) and the two rails on QEMU's internal hub.
if_of_mac() {
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && { basename "$d"; return 0; }
  done
  return 1
}
UPLINK=$(if_of_mac 52:54:00:4c:00:01)
RAIL0=$(if_of_mac 52:54:00:4c:00:02)
RAIL1=$(if_of_mac 52:54:00:4c:00:03)
echo "LAB-INFO: uplink $UPLINK, rails $RAIL0 $RAIL1"
hostname "$NODE"
# The kubelet reads /etc/passwd and /etc/group (its user-namespace mappings) at start.
echo 'root:x:0:0:root:/root:/bin/bash' >/etc/passwd
echo 'root:x:0:' >/etc/group
printf '127.0.0.1 localhost\n10.0.2.15 %s\n' "$NODE" >/etc/hosts
: >/etc/resolv.conf
uplink_up() {
  ip link set "$UPLINK" up && ip addr add 10.0.2.15/24 dev "$UPLINK" && ip route add default via 10.0.2.2
}
check "uplink $UPLINK: 10.0.2.15/24, default route via QEMU's gateway" uplink_up
for r in "$RAIL0" "$RAIL1"; do ip link set "$r" up; done
critical "the host's kube-apiserver answers through the forward (10.0.2.100:6443)" \
  retry 30 kubectl get --raw /readyz

echo "== node: containerd"
mkdir -p /etc/containerd /etc/cni/net.d/rdmanet.d /etc/cni/multus/cluster.d /opt/cni/bin /var/lib/cni
# rdmanet's kubeconfig and CA where its node policy allows them (kubeconfigDirs: /etc/cni/net.d).
cp /lab/config/ca.crt /etc/cni/net.d/rdmanet.d/ca.crt
sed 's|/lab/config/ca.crt|/etc/cni/net.d/rdmanet.d/ca.crt|' /lab/config/kubeconfig >/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig
chmod 0600 /etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig
# NoPivotRoot: the guest's root is the initramfs (rootfs), which pivot_root cannot leave.
cat >/etc/containerd/config.toml <<'EOF'
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "native"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "lab.local/pause:1"
[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        NoPivotRoot = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/opt/cni/bin"]
    conf_dir = "/etc/cni/net.d"
    use_internal_loopback = true
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = "/var/run/nri/nri.sock"
EOF
# The cluster network behind Multus: a macvlan child of a dummy link, host-local addresses (one
# node; the pods never talk over it). Multus (the thin plugin) is the node's CNI network and
# delegates to it, and to the networks a pod's annotation names.
ip link add clu0 type dummy && ip link set clu0 up
cat >/etc/cni/multus/cluster.d/10-cluster.conflist <<'EOF'
{"cniVersion":"1.0.0","name":"cluster","plugins":[{"type":"macvlan","master":"clu0","mode":"bridge",
 "ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.0.0/24"}]],"dataDir":"/var/lib/cni/networks"}}]}
EOF
cat >/etc/cni/net.d/00-multus.conf <<'EOF'
{"cniVersion":"1.0.0","name":"multus-cni-network","type":"multus",
 "kubeconfig":"/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig","clusterNetwork":"/etc/cni/multus/cluster.d",
 "cniDir":"/var/lib/cni/multus","binDir":"/opt/cni/bin","logFile":"/var/log/multus.log","logLevel":"verbose"}
EOF
containerd --config /etc/containerd/config.toml >"$LOGS/containerd.log" 2>&1 &
CONTAINERD_PID=$!
containerd_up() { [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1; }
critical "containerd $(containerd --version | awk '{print $3}') serves its socket (NRI on)" retry 60 containerd_up
check "NRI socket /var/run/nri/nri.sock" retry 10 test -S /var/run/nri/nri.sock
check "the pods' image (/pause + busybox, built on the host) imported as lab.local/pause:1" \
  ctr -n k8s.io images import --local --snapshotter native /lab/image.tar

echo "== node: kubelet"
mkdir -p /var/lib/kubelet /etc/kubernetes
cat >/etc/kubernetes/kubelet.yaml <<'EOF'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
resolvConf: /etc/resolv.conf
localStorageCapacityIsolation: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "1Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
allowedUnsafeSysctls: [net.ipv4.conf.all.arp_ignore, net.ipv4.conf.all.arp_announce]
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
EOF
kubelet --config=/etc/kubernetes/kubelet.yaml --kubeconfig="$KUBECONFIG" --hostname-override="$NODE" \
  --node-ip=10.0.2.15 --root-dir=/var/lib/kubelet --v=1 >"$LOGS/kubelet.log" 2>&1 &
KUBELET_PID=$!
kubelet_alive() { sleep 10; kill -0 "$KUBELET_PID"; }
critical "kubelet still running 10 s after its start" kubelet_alive
node_ready() {
  [ "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# wait_ready <seconds>: node_ready within that time; the kubelet's log tail every 60 s meanwhile.
wait_ready() {
  _t0=$(date +%s)
  _next=$((_t0 + 60))
  while ! node_ready; do
    [ $(($(date +%s) - _t0)) -ge "$1" ] && return 1
    if [ "$(date +%s)" -ge "$_next" ]; then
      tail -n 8 "$LOGS/kubelet.log" | cut -c1-240 | sed 's/^/LAB-INFO: kubelet: /' >/dev/console
      _next=$((_next + 60))
    fi
    sleep 2
  done
}
critical "kubelet $(kubelet --version | awk '{print $2}') registers $NODE and the node is Ready" wait_ready 300
check "the default ServiceAccount exists (kube-controller-manager runs)" retry 120 kubectl get serviceaccount default

# pod_json <name> [annotations-json]: a pod of the lab image.
pod_json() {
  _ann=${2:-}
  [ -n "$_ann" ] || _ann='{}'
  jq -n --arg n "$1" --argjson a "$_ann" '{apiVersion: "v1", kind: "Pod",
    metadata: {name: $n, namespace: "default", annotations: $a},
    spec: {automountServiceAccountToken: false, dnsPolicy: "Default", terminationGracePeriodSeconds: 1,
      containers: [{name: "c", image: "lab.local/pause:1", imagePullPolicy: "Never", command: ["/pause"]}]}}'
}
pod_running() { [ "$(kubectl get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; }
pod_gone() { ! kubectl get pod "$1" >/dev/null 2>&1; }
# pod_pid <name>: the host PID of the pod's container (its network namespace is the pod's).
pod_pid() {
  _cid=$(kubectl get pod "$1" -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|.*://||')
  [ -n "$_cid" ] && ctr -n k8s.io task ls 2>/dev/null | awk -v c="$_cid" '$1 == c {print $2}'
}
# in_pod <name> <command...>: the command in the pod's network namespace.
in_pod() { _p=$(pod_pid "$1"); shift; nsenter -t "$_p" -n "$@"; }

make_plain() { pod_json plain | kubectl apply -f -; }
check "a plain pod is created" make_plain
check "the plain pod is scheduled by kube-scheduler and Running (sandbox of the lab's own pause image)" retry 240 pod_running plain
plain_net() { in_pod plain ip -4 -o addr show dev eth0 | grep -q '10\.244\.0\.'; }
check "the plain pod has its cluster address (Multus -> macvlan + host-local) on eth0" plain_net
check "the plain pod is deleted" kubectl delete pod plain --wait=true --timeout=120s

for section in $(echo "${NODE_LAB_SECTIONS:-node_multus,node_dra}" | tr , " "); do
  [ -f "/lab/$section.sh" ] || continue
  echo "== $section"
  . "/lab/$section.sh"
done

[ "$LAB_FAIL" -gt 0 ] && dump_logs
kill "$KUBELET_PID" 2>/dev/null
kill "$CONTAINERD_PID" 2>/dev/null
lab_summary
