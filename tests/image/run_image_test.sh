#!/usr/bin/env bash
# The node image, built with deploy/build_image.sh from the binaries of BUILD_DIR (--prebuilt: no
# second compile), run the way the kubelet runs the DaemonSet's containers (deploy/daemonset.yaml)
# and the reconcile CronJob's (deploy/reconcile-cronjob.yaml): read-only root filesystem, every
# capability dropped (the agent gets back NET_ADMIN and SYS_ADMIN), no privilege escalation, host
# network, the hostPath volumes mapped to temporary directories, a projected service-account
# directory (token, ca.crt, namespace) and KUBERNETES_SERVICE_HOST/PORT pointing at the in-repo
# test API server on 127.0.0.1. Checks:
#   - the init container installs both binaries (nothing else left in the bin dir), they run on
#     this host, and the IPAM kubeconfig is 0600;
#   - the installer (--watch) follows a token rotation and puts a deleted binary back;
#   - `rdmanetctl doctor --root /host` inside the installer sees the host's /sys;
#   - the node agent lists its node's pods without error and its metrics endpoint answers
#     GET /metrics with its pass counter, which a SIGHUP (one more pass) raises;
#   - the agent sees the host's /sys/bus/pci/drivers as a writable sysfs mount (an InfiniBand VF
#     GUID restore rebinds the VF's driver there) while the rest of its /sys stays read-only;
#   - the CronJob's reconcile (user 65534) completes a round against the API server and exits 0;
#   - the installer and the agent exit 0 within 2 s of SIGTERM.
# Usage: run_image_test.sh BUILD_DIR    (root; podman; IMAGE_NAME overrides localhost/rdmanet:test;
#        IMAGE_BUILD=source compiles the binaries in the Dockerfile's build stage instead, ~22 min)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
image=${IMAGE_NAME:-localhost/rdmanet:test}
tag=rdmanet-it-$$
started=$(date +%s)

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v podman >/dev/null || fail "podman is not installed"

work=$(mktemp -d /tmp/rdmanet-image-test-XXXXXX)
# podman (and the image build's RUN steps) keep their CNI networks' lock file in the network config
# dir, /etc/cni/net.d by default: a machine's CNI folder, which no test may write. Everything podman
# does here uses a private one instead (containers.conf, read from CONTAINERS_CONF alone).
mkdir -p "$work/cni-net"
printf '[network]\nnetwork_config_dir = "%s"\n' "$work/cni-net" >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
runtime=()
server_pid=
cleanup() {
  for c in probe install installer agent reconcile; do podman "${runtime[@]}" rm -f -t 0 "$tag-$c" >/dev/null 2>&1 || true; done
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# The base image first (made with mmdebstrap on a machine that has none, 1 to 3 min, then kept):
# the probe below needs an image to run.
base=$("$root/deploy/build_image.sh" --print-base) || fail "no Debian 12 base image (see above)"

# Some sandboxes (this project's CI machine among them) forbid setrlimit, and every container
# podman starts fails on the rlimits it puts in the spec: then run them, and the image build's RUN
# steps, through a runc wrapper that drops those (the containers keep podman's own limits).
if ! podman run --rm --network none --name "$tag-probe" "$base" true 2>"$work/probe"; then
  grep -q "rlimit" "$work/probe" || fail "podman cannot run a container here: $(cat "$work/probe")"
  command -v runc >/dev/null || fail "podman cannot set rlimits here and runc is not installed: $(cat "$work/probe")"
  runtime=(--runtime "$root/tests/image/runc_without_rlimits.sh")
  export OCI_RUNTIME=$root/tests/image/runc_without_rlimits.sh
  echo "podman cannot set rlimits here: containers run through tests/image/runc_without_rlimits.sh"
fi

# --prebuilt takes no test build and no dynamically linked plugin (it would not run on every node).
refused() {
  local out
  if out=$("$root/deploy/build_image.sh" --prebuilt "$1" "$image-refused" 2>&1); then
    podman rmi "$image-refused" >/dev/null 2>&1 || true
    fail "build_image.sh --prebuilt took $1"
  fi
  grep -q -- "$2" <<<"$out" || fail "build_image.sh --prebuilt $1 did not say \"$2\": $out"
}
mkdir -p "$work/failpoints/bin" "$work/dynamic/bin"
echo "RDMANET_FAILPOINTS:BOOL=ON" >"$work/failpoints/CMakeCache.txt"
refused "$work/failpoints" "built with RDMANET_FAILPOINTS=ON"
echo "RDMANET_FAILPOINTS:BOOL=OFF" >"$work/dynamic/CMakeCache.txt"
for b in rdmanet rdmanet-ipam rdmanetctl; do cp "$(type -P true)" "$work/dynamic/bin/$b"; done
refused "$work/dynamic" "bin/rdmanet is dynamically linked"
echo "build_image.sh --prebuilt refuses a failpoint build and a dynamically linked plugin"

# Rebuilt every run from BUILD_DIR's binaries (a few seconds: podman caches the base and the
# package layer).
build_from=(--prebuilt "$build")
[[ ${IMAGE_BUILD:-prebuilt} == source ]] && build_from=()
previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
"$root/deploy/build_image.sh" "${build_from[@]}" "$image" >"$work/build.log" 2>&1 ||
  fail "the image build failed: $(tail -n 30 "$work/build.log")"
tail -n 1 "$work/build.log"
# The previous run's image, when the new one took its tag and nobody else tagged it: removed
# (podman refuses while a container uses it), so repeated runs do not pile up images.
if [[ -n $previous && $previous != $(podman image inspect --format '{{.Id}}' "$image") ]] &&
  [[ $(podman image inspect --format '{{len .RepoTags}}' "$previous" 2>/dev/null) == 0 ]]; then
  podman rmi "$previous" >/dev/null 2>&1 || true
fi

# The node's directories the DaemonSet mounts.
host=$work/host
mkdir -p "$host/opt/cni/bin" "$host/etc/cni/net.d" "$host/var/lib/cni" "$host/var/log/rdmanet" "$host/etc/modprobe.d" \
  "$host/run/netns"

# A CA and a server certificate for 127.0.0.1, the test API server, the service account.
pki=$work/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/ca.key" \
  -out "$pki/ca.crt" -days 2 -subj /CN=rdmanet-image-test-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/server.key" \
  -out "$pki/server.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$pki/san.ext"
openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
  -out "$pki/server.crt" -days 2 -extfile "$pki/san.ext" 2>/dev/null
token=eyJhbGciOi.image-test-one.sig
"$build/bin/test_apiserver" --port-file "$work/port" --cert "$pki/server.crt" --key "$pki/server.key" \
  --token "$token" >"$work/apiserver.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
[[ -s $work/port ]] || fail "test_apiserver did not start: $(cat "$work/apiserver.log")"
port=$(cat "$work/port")

sa=$work/serviceaccount
mkdir -p "$sa"
printf '%s' "$token" >"$sa/token"
cp "$pki/ca.crt" "$sa/ca.crt"
printf 'rdmanet-system' >"$sa/namespace"

# What the kubelet gives every container of the pod (securityContext and pod spec of the manifest).
kubelet=(--read-only --cap-drop=all --user 0 --security-opt no-new-privileges --network host
  -v "$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro"
  -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e "KUBERNETES_SERVICE_PORT=$port" -e NODE_NAME=node-image-test)
# The CronJob's container: the same, as user 65534 (runAsNonRoot), without NODE_NAME.
cronjob=(--read-only --cap-drop=all --user 65534 --security-opt no-new-privileges --network host
  -v "$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro"
  -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e "KUBERNETES_SERVICE_PORT=$port")
install_args=(--source-dir=/opt/rdmanet/bin --cni-bin-dir=/host/opt/cni/bin --cni-conf-dir=/host/etc/cni/net.d
  --ipam-namespace=kube-system)

# --- init container "install" --------------------------------------------------------------
podman "${runtime[@]}" run --name "$tag-install" "${kubelet[@]}" \
  -v "$host/opt/cni/bin:/host/opt/cni/bin" -v "$host/etc/cni/net.d:/host/etc/cni/net.d" \
  -v "$host/etc/modprobe.d:/host/etc/modprobe.d" \
  --entrypoint rdmanetctl "$image" install "${install_args[@]}" --modprobe-dir=/host/etc/modprobe.d \
  >"$work/install.log" 2>&1 || fail "the install init container failed: $(cat "$work/install.log")"
[[ $(ls "$host/opt/cni/bin" | tr '\n' ' ') == "rdmanet rdmanet-ipam " ]] ||
  fail "the bin dir holds: $(ls -a "$host/opt/cni/bin")"
for b in rdmanet rdmanet-ipam; do
  out=$(CNI_COMMAND=VERSION "$host/opt/cni/bin/$b" </dev/null) || fail "the installed $b does not run here: $out"
  jq -e '.supportedVersions | length > 0' >/dev/null <<<"$out" || fail "$b VERSION: $out"
done
kubeconfig=$host/etc/cni/net.d/rdmanet.d/rdmanet.kubeconfig
[[ $(stat -c %a "$kubeconfig") == 600 ]] || fail "the kubeconfig is $(stat -c %a "$kubeconfig"), not 0600"
grep -q "$token" "$kubeconfig" || fail "the kubeconfig lacks the service account token"
grep -q "https://127.0.0.1:$port" "$kubeconfig" || fail "the kubeconfig does not name the API server"
echo "install: both binaries installed and run here, kubeconfig 0600"

# Waits up to $1 seconds for the command in the rest of the arguments to succeed.
eventually() {
  local seconds=$1
  shift
  for _ in $(seq $((seconds * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}

# Stops container $1 as the kubelet does (SIGTERM, grace period 10 s); fails unless it exited 0 in < 2 s.
stop_promptly() {
  local start end code
  start=$(date +%s%N)
  podman "${runtime[@]}" stop -t 10 "$1" >/dev/null
  end=$(date +%s%N)
  code=$(podman inspect --format '{{.State.ExitCode}}' "$1")
  local ms=$(((end - start) / 1000000))
  echo "$1: stopped by SIGTERM in $ms ms, exit $code"
  ((ms < 2000)) || fail "$1 took $ms ms to stop on SIGTERM"
  [[ $code == 0 ]] || fail "$1 exited $code on SIGTERM: $(podman logs "$1" 2>&1 | tail -5)"
}

# --- container "installer" (--watch) ---------------------------------------------------------
podman "${runtime[@]}" run -d --name "$tag-installer" "${kubelet[@]}" \
  -v "$host/opt/cni/bin:/host/opt/cni/bin" -v "$host/etc/cni/net.d:/host/etc/cni/net.d" \
  -v /sys:/host/sys:ro -v /proc/cmdline:/host/proc/cmdline:ro -v "$host/etc/modprobe.d:/host/etc/modprobe.d:ro" \
  --entrypoint rdmanetctl "$image" install --watch --interval=1 "${install_args[@]}" >/dev/null
# The kubelet rotates the projected token by replacing the file.
rotated=eyJhbGciOi.image-test-two.sig
printf '%s' "$rotated" >"$sa/token.new" && mv "$sa/token.new" "$sa/token"
eventually 10 grep -q "$rotated" "$kubeconfig" || fail "the kubeconfig did not follow the token rotation"
[[ $(stat -c %a "$kubeconfig") == 600 ]] || fail "the rewritten kubeconfig is not 0600"
echo "installer: the kubeconfig follows a token rotation (still 0600)"
rm "$host/opt/cni/bin/rdmanet"
eventually 10 test -x "$host/opt/cni/bin/rdmanet" || fail "the installer did not put a deleted binary back"
echo "installer: a deleted binary is put back"

# doctor, as `kubectl exec ds/rdmanet -c installer -- rdmanetctl doctor --root /host` runs it.
# Its node.sysfs line names up to 8 of the interfaces it sees ("N network interface(s): a, b, ...").
# Other tests on this machine add and remove links meanwhile, so each name must be one the host
# had just before or just after the call (tried 3 times: a link can come and go in between).
doctor_sees_host() {
  local before after names n
  before=$(ls /sys/class/net)
  doctor=$(podman "${runtime[@]}" exec "$tag-installer" rdmanetctl doctor --root /host 2>&1 || true)
  after=$(ls /sys/class/net)
  sysfs_line=$(grep '^ok *node.sysfs' <<<"$doctor" || true)
  names=$(sed -n 's/.*network interface(s): //p' <<<"$sysfs_line" | sed 's/, \.\.\.$//; s/, /\n/g' || true)
  [[ -n $names ]] || return 1
  for n in $names; do
    grep -qx -- "$n" <<<"$before"$'\n'"$after" || { echo "doctor names $n, which the host does not have" >&2; return 1; }
  done
}
for _ in 1 2 3; do doctor_sees_host && break; done ||
  fail "doctor in the installer does not see the host's /sys: $doctor"
grep -q '^ok *cni.binary *.*/opt/cni/bin/rdmanet ' <<<"$doctor" || fail "doctor does not see the installed binary: $doctor"
echo "doctor in the installer sees the host: ${sysfs_line#*network}"

# --- container "agent" ----------------------------------------------------------------------
# Back to the token the API server accepts.
printf '%s' "$token" >"$sa/token.new" && mv "$sa/token.new" "$sa/token"
# The DaemonSet binds the metrics to 127.0.0.1:9750 on the node's network; here port 0 (the agent
# picks a free one and prints it), as this machine may run other tests on fixed ports.
podman "${runtime[@]}" run -d --name "$tag-agent" "${kubelet[@]}" --cap-add NET_ADMIN,SYS_ADMIN \
  -v "$host/etc/cni/net.d:/etc/cni/net.d:ro" -v "$host/opt/cni/bin:/opt/cni/bin:ro" \
  -v "$host/var/lib/cni:/var/lib/cni" -v "$host/var/log/rdmanet:/var/log/rdmanet" \
  -v "$host/run/netns:/run/netns:ro,rslave" -v /sys/bus/pci/drivers:/sys/bus/pci/drivers \
  --entrypoint rdmanetctl "$image" agent --interval=60 --in-cluster --namespace=kube-system \
  --metrics-address=127.0.0.1:0 >/dev/null
eventually 10 sh -c "podman logs $tag-agent 2>&1 | grep -q '^metrics on 127.0.0.1:'" ||
  fail "the agent does not serve metrics: $(podman logs "$tag-agent" 2>&1 | tail -5)"
metrics_port=$(podman logs "$tag-agent" 2>&1 | sed -n 's/^metrics on 127\.0\.0\.1:\([0-9]*\)$/\1/p' | head -n 1)
[[ -n $metrics_port ]] || fail "no metrics port in the agent's log: $(podman logs "$tag-agent" 2>&1 | tail -5)"

# GET /metrics on 127.0.0.1:$1 (bash's /dev/tcp: no HTTP client needed); the whole response.
scrape() {
  timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" >&3 && cat <&3' "$1"
}
# The agent's pass counter, from a scrape that answered 200 with Prometheus text ("" otherwise).
agent_passes() {
  local r
  r=$(scrape "$metrics_port" 2>/dev/null) || return 0
  head -n 1 <<<"$r" | grep -q '^HTTP/1\.[01] 200 ' || return 0
  grep -q '^Content-Type: text/plain; version=0.0.4' <<<"$r" || return 0
  sed -n 's/^rdmanet_agent_passes_total \([0-9]*\)\r\{0,1\}$/\1/p' <<<"$r"
}
passes_at_least() { local n; n=$(agent_passes); [[ -n $n ]] && ((n >= $1)); }
eventually 10 passes_at_least 1 ||
  fail "the agent's metrics endpoint does not answer with its pass counter: $(scrape "$metrics_port" 2>&1 | head -20)"
# kill -HUP runs one more pass right away.
podman "${runtime[@]}" kill -s HUP "$tag-agent" >/dev/null
eventually 10 passes_at_least 2 || fail "no second pass after SIGHUP: $(scrape "$metrics_port" 2>&1 | grep passes)"
agent_log=$(podman logs "$tag-agent" 2>&1)
grep -q '^agent: node node-image-test, ' <<<"$agent_log" || fail "the agent did not start for NODE_NAME: $agent_log"
if grep -q 'listing the pods\|pass failed' <<<"$agent_log"; then fail "the agent's passes failed: $agent_log"; fi
echo "agent: metrics on 127.0.0.1:$metrics_port answer, $(agent_passes) passes (one by SIGHUP), the node's pods listed without error"

# The agent's /sys: the PCI drivers directory is a writable sysfs mount (a driver's bind/unbind
# files can be opened for writing: access(2) says EROFS on a read-only mount, even to root), the
# rest read-only (the bus's rescan file, also root-writable on the host, is not writable there).
# Only access checks: nothing is unbound or bound on this machine.
[[ -d /sys/bus/pci/drivers ]] || fail "this host has no /sys/bus/pci/drivers to mount into the agent"
driver=$(ls /sys/bus/pci/drivers | head -n 1)
[[ -n $driver ]] || fail "this host has no PCI driver in /sys/bus/pci/drivers"
sys_mounts=$(podman "${runtime[@]}" exec "$tag-agent" cat /proc/self/mountinfo | awk '$5 ~ "^/sys" {print $5, $6, $(NF-2)}')
grep -qx '/sys/bus/pci/drivers rw[^ ]* sysfs' <<<"$sys_mounts" ||
  fail "the agent's /sys/bus/pci/drivers is not a writable sysfs mount: $sys_mounts"
grep -qx '/sys ro[^ ]* sysfs' <<<"$sys_mounts" || fail "the agent's /sys is not a read-only sysfs mount: $sys_mounts"
podman "${runtime[@]}" exec "$tag-agent" test -w "/sys/bus/pci/drivers/$driver/unbind" ||
  fail "the agent cannot write /sys/bus/pci/drivers/$driver/unbind"
if podman "${runtime[@]}" exec "$tag-agent" test -w /sys/bus/pci/rescan; then
  fail "the agent can write /sys/bus/pci/rescan: its /sys is writable beyond the PCI drivers"
fi
echo "agent: /sys/bus/pci/drivers is a writable sysfs mount (IB VF GUID rebind), the rest of /sys read-only"

# --- CronJob "rdmanet-reconcile" -------------------------------------------------------------
# One round against the API server. The CronJob's pod is not on the host network: here it is,
# to reach the test API server on 127.0.0.1.
podman "${runtime[@]}" run --name "$tag-reconcile" "${cronjob[@]}" \
  --entrypoint rdmanetctl "$image" reconcile --in-cluster --namespace=kube-system \
  >"$work/reconcile.log" 2>&1 || fail "the reconcile job failed: $(tail -5 "$work/reconcile.log")"
grep -q '^reconcile kube-system' "$work/reconcile.log" ||
  fail "the reconcile job did not complete a round: $(tail -5 "$work/reconcile.log")"
echo "reconcile job (user 65534): $(grep '^reconcile kube-system' "$work/reconcile.log" | head -n 1)"

stop_promptly "$tag-installer"
stop_promptly "$tag-agent"
echo "PASS: the node image runs as the kubelet runs it ($(($(date +%s) - started)) s in all)"
