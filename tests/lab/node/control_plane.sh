# The node lab's control plane on the host (sourced by run_node_lab.sh): etcd, kube-apiserver,
# kube-scheduler and kube-controller-manager of the real peers, every one bound to 127.0.0.1, with
# its files in $CP_DIR, stopped by PID (cp_stop, which the caller's exit trap runs).
#   cp_start <dir> <guest-address>   starts all four; sets CP_PORT, CP_TOKEN, writes
#                                    <dir>/admin.kubeconfig (host) and <dir>/guest/ (the guest's
#                                    kubeconfig and CA, naming https://<guest-address>:6443)
#   cp_stop                          stops what cp_start started
# Access: one token of the group system:masters (a throwaway cluster that lives for one run, on
# the loopback address only); the apiserver's certificate is signed by a CA made here and names
# 127.0.0.1 and the guest's address of the host, so every client verifies it.
CP_PIDS=()

cp_free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

cp_wait_healthy() { # <url path> <seconds>
  local t0=$SECONDS
  until curl -fsS --cacert "$CP_DIR/ca.crt" -H "Authorization: Bearer $CP_TOKEN" \
    "https://127.0.0.1:$CP_PORT$1" >/dev/null 2>&1; do
    ((SECONDS - t0 < $2)) || return 1
    sleep 1
  done
}

cp_start() {
  CP_DIR=$1
  local guest_addr=$2 etcd_port etcd_peer
  mkdir -p "$CP_DIR/guest"
  chmod 0700 "$CP_DIR"
  (
    cd "$CP_DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=nodelab-ca 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=kube-apiserver 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:%s,DNS:kubernetes,DNS:kubernetes.default\n' "$guest_addr" >san.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
      -extfile san.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
  )
  CP_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  printf '%s,lab-admin,lab-admin,system:masters\n' "$CP_TOKEN" >"$CP_DIR/tokens.csv"
  CP_PORT=$(cp_free_port)
  etcd_port=$(cp_free_port)
  etcd_peer=$(cp_free_port)

  "$RDMANET_PEER_ETCD/etcd" --name nodelab --data-dir "$CP_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "nodelab=http://127.0.0.1:$etcd_peer" --listen-metrics-urls "" \
    --unsafe-no-fsync >"$CP_DIR/etcd.log" 2>&1 &
  CP_PIDS+=($!)

  "$RDMANET_PEER_KUBE_1_37/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$CP_PORT" \
    --tls-cert-file="$CP_DIR/server.crt" --tls-private-key-file="$CP_DIR/server.key" \
    --client-ca-file="$CP_DIR/ca.crt" --token-auth-file="$CP_DIR/tokens.csv" \
    --authorization-mode=Node,RBAC --service-account-key-file="$CP_DIR/sa.key" \
    --service-account-signing-key-file="$CP_DIR/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none \
    --profiling=false --cert-dir="$CP_DIR/certs" >"$CP_DIR/apiserver.log" 2>&1 &
  CP_PIDS+=($!)

  cat >"$CP_DIR/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:$CP_PORT", certificate-authority: "$CP_DIR/ca.crt"}
users:
- name: admin
  user: {token: "$CP_TOKEN"}
contexts:
- name: lab
  context: {cluster: lab, user: admin, namespace: default}
current-context: lab
EOF
  chmod 0600 "$CP_DIR/admin.kubeconfig"
  cp "$CP_DIR/ca.crt" "$CP_DIR/guest/ca.crt"
  sed -e "s|https://127.0.0.1:$CP_PORT|https://$guest_addr:6443|" -e "s|$CP_DIR/ca.crt|/lab/config/ca.crt|" \
    "$CP_DIR/admin.kubeconfig" >"$CP_DIR/guest/kubeconfig"

  cp_wait_healthy /readyz 180 || { echo "control plane: kube-apiserver not ready in 180 s" >&2; tail -n 30 "$CP_DIR/apiserver.log" >&2; return 1; }

  "$RDMANET_PEER_KUBE_NODE_1_37/kube-scheduler" --kubeconfig="$CP_DIR/admin.kubeconfig" \
    --authentication-kubeconfig="$CP_DIR/admin.kubeconfig" --authorization-kubeconfig="$CP_DIR/admin.kubeconfig" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 >"$CP_DIR/scheduler.log" 2>&1 &
  CP_PIDS+=($!)
  "$RDMANET_PEER_KUBE_NODE_1_37/kube-controller-manager" --kubeconfig="$CP_DIR/admin.kubeconfig" \
    --authentication-kubeconfig="$CP_DIR/admin.kubeconfig" --authorization-kubeconfig="$CP_DIR/admin.kubeconfig" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 \
    --service-account-private-key-file="$CP_DIR/sa.key" --root-ca-file="$CP_DIR/ca.crt" \
    --use-service-account-credentials=false \
    >"$CP_DIR/controller-manager.log" 2>&1 &
  CP_PIDS+=($!)
  # Both read their flags at start: a bad one ends them at once.
  sleep 3
  local pid
  for pid in "${CP_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "control plane: process $pid exited" >&2; tail -n 5 "$CP_DIR"/*.log >&2; return 1; }
  done
}

cp_stop() {
  local i
  for ((i = ${#CP_PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${CP_PIDS[i]}" 2>/dev/null
  done
  # kube-apiserver may wait long for the guest's dropped watch connections: 15 s, then KILL.
  local t0=$SECONDS
  for ((i = ${#CP_PIDS[@]} - 1; i >= 0; i--)); do
    while kill -0 "${CP_PIDS[i]}" 2>/dev/null && ((SECONDS - t0 < 15)); do sleep 0.5; done
    kill -KILL "${CP_PIDS[i]}" 2>/dev/null
    wait "${CP_PIDS[i]}" 2>/dev/null
  done
  CP_PIDS=()
}
