#!/usr/bin/env bash
# The node image, built with deploy/build_image.sh, run the way the kubelet runs the DaemonSet's
# containers (deploy/daemonset.yaml): read-only root filesystem, every capability dropped, user 0,
# no privilege escalation, host network, the hostPath volumes mapped to temporary directories, a
# projected service-account directory (token, ca.crt, namespace) and KUBERNETES_SERVICE_HOST/PORT
# pointing at the in-repo test API server on 127.0.0.1. Checks:
#   - the init container installs both binaries (nothing else left in the bin dir), they run on
#     this host, and the IPAM kubeconfig is 0600;
#   - the installer (--watch) follows a token rotation and puts a deleted binary back;
#   - the reconciler completes a round against the API server;
#   - `rdmanetctl doctor --root /host` inside the installer sees the host's /sys;
#   - both long-running containers exit 0 within 2 s of SIGTERM.
# Usage: run_image_test.sh BUILD_DIR    (root; podman; IMAGE overrides localhost/rdmanet:test)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
image=${IMAGE:-localhost/rdmanet:test}
tag=rdmanet-it-$$

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v podman >/dev/null || fail "podman is not installed"

# Some sandboxes (this project's CI machine among them) forbid setrlimit, and every container
# podman starts fails on the rlimits it puts in the spec: then run them through a runc wrapper
# that drops those (the containers keep podman's own limits).
runtime=()
probe_image=$(podman images --format '{{.Repository}}:{{.Tag}}' | grep -m1 -E 'rdmanet-base:bookworm|debian:bookworm-slim' || true)
if [[ -n $probe_image ]] && ! podman run --rm "$probe_image" true 2>"/tmp/$tag.probe"; then
  if grep -q "rlimit" "/tmp/$tag.probe" && command -v runc >/dev/null; then
    runtime=(--runtime "$root/tests/image/runc_without_rlimits.sh")
    export OCI_RUNTIME=$root/tests/image/runc_without_rlimits.sh
    echo "podman cannot set rlimits here: containers run through tests/image/runc_without_rlimits.sh"
  fi
fi
rm -f "/tmp/$tag.probe"

# Rebuilt every run: podman's layer cache makes it a few seconds when the sources did not change.
"$root/deploy/build_image.sh" "$image" | tail -n 1

work=$(mktemp -d /tmp/rdmanet-image-test-XXXXXX)
server_pid=
cleanup() {
  for c in install installer reconciler; do podman "${runtime[@]}" rm -f -t 0 "$tag-$c" >/dev/null 2>&1 || true; done
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# The node's directories the DaemonSet mounts.
host=$work/host
mkdir -p "$host/opt/cni/bin" "$host/etc/cni/net.d" "$host/var/lib/cni" "$host/var/log/rdmanet" "$host/etc/modprobe.d"

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
doctor=$(podman "${runtime[@]}" exec "$tag-installer" rdmanetctl doctor --root /host 2>&1 || true)
sysfs_line=$(grep '^ok *node.sysfs' <<<"$doctor" || true)
[[ -n $sysfs_line ]] || fail "doctor in the installer does not see the host's /sys: $doctor"
for n in $(ls /sys/class/net | head -n 8); do
  [[ $sysfs_line == *"$n"* ]] || fail "doctor's view of the host lacks $n: $sysfs_line"
done
grep -q '^ok *cni.binary *.*/opt/cni/bin/rdmanet ' <<<"$doctor" || fail "doctor does not see the installed binary: $doctor"
echo "doctor in the installer sees the host: ${sysfs_line#*network}"

# --- container "reconciler" ------------------------------------------------------------------
# Back to the token the API server accepts.
printf '%s' "$token" >"$sa/token.new" && mv "$sa/token.new" "$sa/token"
podman "${runtime[@]}" run -d --name "$tag-reconciler" "${kubelet[@]}" \
  -v "$host/etc/cni/net.d:/etc/cni/net.d:ro" -v "$host/var/lib/cni:/var/lib/cni" \
  -v "$host/var/log/rdmanet:/var/log/rdmanet" \
  --entrypoint rdmanetctl "$image" reconcile --in-cluster --namespace=kube-system --interval=300 >/dev/null
eventually 20 sh -c "podman logs $tag-reconciler 2>&1 | grep -q '^reconcile kube-system'" ||
  fail "the reconciler did not complete a round: $(podman logs "$tag-reconciler" 2>&1 | tail -5)"
echo "reconciler: $(podman logs "$tag-reconciler" 2>&1 | grep '^reconcile kube-system' | head -n1)"

stop_promptly "$tag-installer"
stop_promptly "$tag-reconciler"
echo "PASS: the node image runs as the kubelet runs it"
