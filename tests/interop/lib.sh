# Shared by the interop suites (sourced, not run). What it gives a suite:
#   interop_init BUILD_DIR   root check, a private work dir $WORK, a unique $TAG, the cleanup trap
#   need_peer NAME           sets $PEER to the peer's directory (RDMANET_PEER_<NAME>); missing:
#                            fail under CI, else SKIPPED + exit 77 (the rule for tests needing a peer)
#   peer_bin DIR BIN         the executable BIN of a peer directory (DIR/BIN or DIR/bin/BIN)
#   make_netns NAME          a network namespace with lo up, removed at exit
#   start_apiserver NETNS    a real kube-apiserver + etcd inside NETNS ($API_DIR: kubeconfigs, env)
#   api VERB PATH [BODY [CONTENT_TYPE]]   a request as the admin, from inside the server's netns
#   isolated NETNS ROOT CMD...  CMD inside NETNS with a private /var (and /etc/cni/net.d), see below
#   on_exit CMD...           run at exit (reverse order), also on failure or a signal
#   fail MSG / ok MSG        assertion outcome lines; fail exits 1
# Everything the suites make (netns, links, processes, files) is theirs: the trap removes it, and
# no path of the machine's own CNI setup (/etc/cni/net.d, /var/lib/cni, /run/rdmanet) is used.
set -euo pipefail

INTEROP_OK=0
declare -a INTEROP_EXIT_CMDS=()

on_exit() { INTEROP_EXIT_CMDS+=("$*"); }

interop_cleanup() {
  local rc=$? i
  set +e
  for ((i = ${#INTEROP_EXIT_CMDS[@]} - 1; i >= 0; i--)); do
    eval "${INTEROP_EXIT_CMDS[i]}" >/dev/null 2>&1
  done
  if ((rc != 0 && rc != 77)) && [[ -n ${WORK:-} && -d $WORK ]]; then
    echo "--- logs of the failed run ($WORK) ---" >&2
    find "$WORK" -name '*.log' -size -2M -print0 2>/dev/null | while IFS= read -r -d '' f; do
      echo "== $f" >&2
      tail -n 40 "$f" >&2
    done
  fi
  [[ -n ${WORK:-} && ${KEEP_WORK:-} != 1 ]] && rm -rf "$WORK"
  return $rc
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() {
  INTEROP_OK=$((INTEROP_OK + 1))
  echo "ok: $*"
}
skip_or_fail() {
  if [[ -n ${CI:-} ]]; then
    echo "FAIL: $* (CI is set: a peer the interop suites need is missing)" >&2
    exit 1
  fi
  echo "SKIPPED: $*"
  exit 77
}

interop_init() {
  BUILD=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
  BIN=$BUILD/bin
  TESTBIN=$BUILD/test-bin
  [[ $(id -u) -eq 0 ]] || skip_or_fail "needs root (network namespaces, veth, macvlan)"
  local f
  for f in "$BIN/rdmanet" "$BIN/rdmanet-ipam" "$BIN/rdmanetctl"; do
    [[ -x $f ]] || fail "missing $f (build the targets rdmanet rdmanet-ipam rdmanetctl)"
  done
  command -v curl >/dev/null && command -v jq >/dev/null || fail "curl and jq are needed"
  WORK=$(mktemp -d /tmp/rdmanet-interop.XXXXXX)
  chmod 0755 "$WORK"
  TAG=$(printf 'ri%04x' $(((RANDOM << 1 ^ $$) & 0xffff)))
  trap interop_cleanup EXIT
  trap 'exit 130' INT TERM
  SECONDS=0
}

# need_peer NAME: sets PEER to the directory of peer NAME (e.g. whereabouts, kube-1.37). Run it in
# the suite's own shell (not in $(...)), so that a skip or failure ends the suite.
need_peer() {
  local var
  var=RDMANET_PEER_$(tr 'a-z.-' 'A-Z__' <<<"$1")
  PEER=${!var:-}
  [[ -n $PEER ]] || skip_or_fail "$var is not set: the peer $1 (tests/peers/build_peers.sh builds it)"
  [[ -d $PEER ]] || fail "$var=$PEER is not a directory"
}

peer_bin() {
  local c
  for c in "$1/$2" "$1/bin/$2"; do
    [[ -x $c ]] && { echo "$c"; return; }
  done
  fail "no executable $2 in the peer directory $1"
}

make_netns() {
  ip netns add "$1"
  on_exit "ip netns del $1"
  ip -n "$1" link set lo up
}

# ASSETS: the envtest-style directory of kube-apiserver and etcd: KUBEBUILDER_ASSETS when set,
# else one made of the peers kube-1.37 and etcd.
kube_assets() {
  if [[ -n ${KUBEBUILDER_ASSETS:-} ]]; then
    ASSETS=$KUBEBUILDER_ASSETS
    return
  fi
  local bin
  ASSETS=$WORK/assets
  mkdir -p "$ASSETS"
  need_peer kube-1.37
  bin=$(peer_bin "$PEER" kube-apiserver)
  ln -sfn "$bin" "$ASSETS/kube-apiserver"
  need_peer etcd
  bin=$(peer_bin "$PEER" etcd)
  ln -sfn "$bin" "$ASSETS/etcd"
}

start_apiserver() {
  API_NETNS=$1
  API_DIR=$WORK/api
  local pid rc t0=$SECONDS
  [[ -x $TESTBIN/interop_apiserver ]] || fail "missing $TESTBIN/interop_apiserver (build the target interop_apiserver)"
  kube_assets
  mkdir -p "$API_DIR"
  KUBEBUILDER_ASSETS=$ASSETS RDMANET_KUBE_APISERVER= RDMANET_ETCD= \
    ip netns exec "$API_NETNS" "$TESTBIN/interop_apiserver" "$API_DIR" >"$WORK/apiserver.log" 2>&1 &
  pid=$!
  on_exit "kill -TERM $pid; wait $pid"
  until [[ -f $API_DIR/ready ]]; do
    kill -0 "$pid" 2>/dev/null || {
      wait "$pid" && rc=0 || rc=$?
      cat "$WORK/apiserver.log" >&2
      ((rc == 77)) && skip_or_fail "no kube-apiserver binaries"
      fail "the real kube-apiserver did not start (exit $rc)"
    }
    ((SECONDS - t0 < 300)) || fail "the real kube-apiserver was not ready after 300 s"
    sleep 0.5
  done
  # shellcheck disable=SC1091
  source "$API_DIR/server.env"
  echo "real kube-apiserver ready in $((SECONDS - t0)) s ($(grep -o -m1 'Kubernetes v[0-9.]*' "$WORK/apiserver.log" || true))"
}

# api_try VERB PATH [BODY [CONTENT_TYPE]]: a request as the admin; prints the body, returns 1 on
# an HTTP error (the status and body on stderr). api: the same, failing the suite on an error.
api_try() {
  local out code
  out=$(ip netns exec "$API_NETNS" curl -sS --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" \
    -H "Content-Type: ${4:-application/json}" -X "$1" ${3:+--data-binary "$3"} \
    -w '\n%{http_code}' "$URL$2") || { echo "curl $1 $2 failed" >&2; return 1; }
  code=${out##*$'\n'}
  out=${out%$'\n'*}
  if ((code >= 400)); then
    echo "$1 $2: HTTP $code: $out" >&2
    return 1
  fi
  printf '%s\n' "$out"
}
api() { api_try "$@" || fail "API request $1 $2 failed"; }

# isolated NETNS ROOT CMD...: runs CMD inside NETNS and in a private mount namespace where
# ROOT/var replaces /var, so whatever a peer writes to or reads from fixed paths there
# (/var/lib/cni/results of libcni's default cache, /var/run/secrets/kubernetes.io/serviceaccount
# of an in-cluster client; /var/run is ROOT/var/run here, not the machine's /run) is ROOT's. With
# ROOT/cni-net.d, that directory replaces /etc/cni/net.d (on an overlay of /etc whose writes go to
# ROOT, so this works when the machine has no /etc/cni/net.d). Network namespaces made before the
# call are visible under /run/netns. Executables under /var are not: stage_bin copies them out.
isolated() {
  local ns=$1 root=$2
  shift 2
  mkdir -p "$root/var/lib/cni" "$root/var/run" "$root/var/log" "$root/var/tmp"
  ip netns exec "$ns" unshare -m --propagation private env ISO_ROOT="$root" sh -c '
    set -e
    mount --bind "$ISO_ROOT/var" /var
    if [ -d "$ISO_ROOT/cni-net.d" ]; then
      mkdir -p "$ISO_ROOT/etc-upper" "$ISO_ROOT/etc-work"
      mount -t overlay overlay -o "lowerdir=/etc,upperdir=$ISO_ROOT/etc-upper,workdir=$ISO_ROOT/etc-work" /etc
      mkdir -p /etc/cni/net.d
      mount --bind "$ISO_ROOT/cni-net.d" /etc/cni/net.d
    fi
    exec "$@"' isolated "$@"
}

# stop_bg PID: stops a background job of this shell: a function run with & is a subshell whose
# child is the real process, so the children of PID get SIGTERM first, then PID; then it waits.
stop_bg() {
  pkill -TERM -P "$1" 2>/dev/null
  kill -TERM "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  return 0
}

# stage_bin FILE...: copies executables into $WORK/bin, the suites' CNI_PATH. Copies, not links:
# `isolated` hides /var, where the peers' cache usually lies. Prints the last copy's path.
stage_bin() {
  local f
  mkdir -p "$WORK/bin"
  for f in "$@"; do cp -L "$f" "$WORK/bin/"; done
  echo "$WORK/bin/$(basename "${!#}")"
}

# A pod object (it stays Pending: no scheduler or kubelet runs), in namespace $1 named $2, with
# the annotations JSON object $3 (default {}). Prints its uid.
create_pod() {
  local body
  body=$(jq -nc --arg ns "$1" --arg name "$2" --argjson ann "${3:-{\}}" \
    '{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$name,annotations:$ann},
      spec:{containers:[{name:"c",image:"registry.invalid/none"}]}}')
  api POST "/api/v1/namespaces/$1/pods" "$body" | jq -r .metadata.uid
}

ensure_namespace() {
  api_try GET "/api/v1/namespaces/$1" >/dev/null 2>&1 && return
  api POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}" >/dev/null
}

# The node policy of rdmanet for this run: every directory a config may name lies in $WORK.
write_policy() {
  mkdir -p "$WORK/state" "$WORK/log"
  jq -n --arg w "$WORK" '{logDir: ($w + "/log"), auditLog: ($w + "/log/policy.log"), ipamDataDirs: [$w],
    ipamConfigDirs: [$w], kubeconfigDirs: [$w], deviceInfoDirs: [$w + "/devinfo"],
    stateDir: ($w + "/state")}' >"$WORK/policy.json"
  export RDMANET_POLICY_FILE=$WORK/policy.json
}

# The closing line ctest and the project's runners read.
interop_done() {
  echo "$INTEROP_OK passed, 0 failed (${SECONDS} s)"
}
