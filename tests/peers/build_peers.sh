#!/usr/bin/env bash
# Builds the real peers of rdmanet's tests from their published Go modules, pinned by the
# go.mod + go.sum of tests/peers/<group>/ (one module per group: k8s.io/kubernetes can be in a
# module only once, and the peers' dependency graphs conflict).
#
#   build_peers.sh [name...]     build the named peers (none: all, in the order below)
#   build_peers.sh --env         print `export RDMANET_PEER_<NAME>=<dir>` for every peer already
#                                built at its pinned version (no build, no Go needed)
#   build_peers.sh --list        print `name version` for every peer (no build)
#
# Each peer lands in $PEERS_CACHE/<name>-<version>/ (default root /var/cache/rdmanet-peers), built
# in a temporary folder and renamed only when complete, so a folder that exists is whole and is
# reused as is; builders of the same peer run one at a time (a lock file beside it), so any
# number may be started at once. Go's module and build caches live under the same root (gomod/, gocache/), and
# -mod=readonly makes the committed go.sum the pin: a module the proxy refuses or whose checksum
# differs fails the peer with the module's name. stdout gets one line per peer,
# `name version path`; progress goes to stderr. <root>/peers.env is rewritten with a line
# `RDMANET_PEER_<NAME>=<dir>` for each peer present.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${PEERS_CACHE:-/var/cache/rdmanet-peers}

# name | module group folder | module whose version names the peer | package=binary ...
# The order is the order the suites need them in: what the most suites wait for comes first; the
# node lab's peers come last (kube-node-1.37 is the kubelet, scheduler and controller-manager of
# the same Kubernetes module as kube-1.37, apart so that the API server suites need not wait for
# them; containerd-node is the runc shim and ctr of the containerd module, kubectl-1.37 the node
# lab's client, in a group of its own because kubectl pulls in kustomize).
PEERS=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|go.etcd.io/etcd/server/v3=etcd"
  "kube-1.37|kube-1.37|k8s.io/kubernetes|k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver"
  "whereabouts|whereabouts|github.com/k8snetworkplumbingwg/whereabouts|github.com/k8snetworkplumbingwg/whereabouts/cmd=whereabouts github.com/k8snetworkplumbingwg/whereabouts/cmd/controlloop=ip-control-loop github.com/k8snetworkplumbingwg/whereabouts/cmd/reconciler=ip-reconciler github.com/k8snetworkplumbingwg/whereabouts/cmd/nodeslicecontroller=node-slice-controller"
  "cnitool|cnitool|github.com/containernetworking/cni|github.com/containernetworking/cni/cnitool=cnitool"
  "cni-plugins|cni-plugins|github.com/containernetworking/plugins|github.com/containernetworking/plugins/plugins/main/macvlan=macvlan github.com/containernetworking/plugins/plugins/ipam/host-local=host-local github.com/containernetworking/plugins/plugins/meta/sbr=sbr github.com/containernetworking/plugins/plugins/meta/tuning=tuning github.com/containernetworking/plugins/plugins/main/host-device=host-device"
  "multus|multus|gopkg.in/k8snetworkplumbingwg/multus-cni.v4|gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus=multus gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus-daemon=multus-daemon gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus-shim=multus-shim"
  "helm|helm|helm.sh/helm/v3|helm.sh/helm/v3/cmd/helm=helm"
  "kustomize|kustomize|sigs.k8s.io/kustomize/kustomize/v5|sigs.k8s.io/kustomize/kustomize/v5=kustomize"
  "kube-1.34|kube-1.34|k8s.io/kubernetes|k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver"
  "kube-node-1.37|kube-1.37|k8s.io/kubernetes|k8s.io/kubernetes/cmd/kubelet=kubelet k8s.io/kubernetes/cmd/kube-scheduler=kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager=kube-controller-manager"
  "containerd|containerd|github.com/containerd/containerd/v2|github.com/containerd/containerd/v2/cmd/containerd=containerd"
  "dranet|dranet|sigs.k8s.io/dranet|sigs.k8s.io/dranet/cmd/dranet=dranet"
  "containerd-node|containerd|github.com/containerd/containerd/v2|github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2=containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr=ctr"
  "kubectl-1.37|kubectl-1.37|k8s.io/kubernetes|k8s.io/kubernetes/cmd/kubectl=kubectl"
)

log() { echo "build_peers: $*" >&2; }
die() {
  log "$*"
  exit 1
}

entry_of() {
  local e
  for e in "${PEERS[@]}"; do
    [[ ${e%%|*} == "$1" ]] && {
      echo "$e"
      return 0
    }
  done
  return 1
}

# The version a group's go.mod requires of its peer's module (read from the file, so that
# --env and --list need no Go toolchain).
pinned_version() {
  local group=$1 module=$2
  awk -v m="$module" '($1 == m && $2 ~ /^v/) {print $2; exit} ($1 == "require" && $2 == m) {print $3; exit}' \
    "$here/$group/go.mod"
}

env_name() {
  local n=${1^^}
  n=${n//-/_}
  echo "RDMANET_PEER_${n//./_}"
}

# Extra -ldflags a peer needs to report its own version: Kubernetes binaries read theirs from
# variables its release scripts fill in, and kube-apiserver serves it on /version.
extra_ldflags() {
  local module=$1 version=$2
  [[ $module == k8s.io/kubernetes ]] || return 0
  local major=${version#v}
  major=${major%%.*}
  local minor=${version#v*.}
  minor=${minor%%.*}
  local pkg flags=""
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

present_dir() {
  local name=$1 version=$2
  local dir="$root/$name-$version"
  [[ -f $dir/.complete ]] && echo "$dir"
}

write_env_file() {
  local e name group module version dir tmp
  mkdir -p "$root"
  tmp=$(mktemp "$root/.peers.env.XXXXXX")
  for e in "${PEERS[@]}"; do
    IFS='|' read -r name group module _ <<<"$e"
    version=$(pinned_version "$group" "$module")
    dir=$(present_dir "$name" "$version") || continue
    echo "$(env_name "$name")=$dir" >>"$tmp"
  done
  chmod 0644 "$tmp"
  mv -f "$tmp" "$root/peers.env"
}

# Go's own messages name the module for both failures that matter here: a proxy that refuses
# ("reading https://...: 404 Not Found", "410 Gone") and a checksum mismatch ("verifying
# <module>@<version>: checksum mismatch"). Keep those lines as the reason.
reason_of() {
  grep -E 'verifying|checksum mismatch|SECURITY ERROR|reading |not found|Not Found|Gone|missing go.sum|updates to go.(mod|sum) needed|go: ' "$1" |
    head -n 4 | tr '\n' ' '
}

build_one() {
  local name=$1 e group module pkgs version
  e=$(entry_of "$name") || die "unknown peer '$name' (known: $(list_names))"
  IFS='|' read -r name group module pkgs <<<"$e"
  version=$(pinned_version "$group" "$module")
  [[ -n $version ]] || die "$name: tests/peers/$group/go.mod does not require $module"
  local dest="$root/$name-$version"
  if [[ -f $dest/.complete ]]; then
    log "$name $version: reusing $dest"
    echo "$name $version $dest"
    return 0
  fi
  mkdir -p "$root"
  # One builder per peer at a time: a second one (another suite's, started meanwhile) waits here
  # and then reuses the folder the first one made.
  local lockfd
  exec {lockfd}>"$root/.lock-$name-$version"
  if ! flock -n "$lockfd"; then
    log "$name $version: another builder is building it; waiting"
    flock "$lockfd"
  fi
  if [[ -f $dest/.complete ]]; then
    log "$name $version: reusing $dest"
    echo "$name $version $dest"
    return 0
  fi
  local tmp logf start
  tmp=$(mktemp -d "$root/.build-$name-$version.XXXXXX")
  logf="$tmp/.build.log"
  start=$(date +%s)
  log "$name $version: building in $tmp"
  local gomod
  gomod=$(
    cd "$here/$group"
    export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
    if ! go mod download >"$logf" 2>&1; then
      echo "FAIL"
    fi
  )
  if [[ $gomod == FAIL ]]; then
    local why
    why=$(reason_of "$logf")
    rm -rf "$tmp"
    die "$name $version: a module of tests/peers/$group could not be fetched or verified: ${why:-see go mod download}"
  fi
  # No debug information: -s -w leaves it out of the binaries, and -dwarf=false keeps the compiler
  # from making it (measured on the reference plugins from an empty build cache: 16% less time).
  local p pkg out ldflags
  ldflags="-s -w$(extra_ldflags "$module" "$version")"
  for p in $pkgs; do
    pkg=${p%%=*}
    out=${p#*=}
    log "$name $version: go build $pkg -> $out"
    if ! (cd "$here/$group" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath -buildvcs=false" \
      go build -gcflags=all=-dwarf=false -ldflags="$ldflags" -o "$tmp/$out" "$pkg") >>"$logf" 2>&1; then
      local why
      why=$(reason_of "$logf")
      tail -n 20 "$logf" >&2
      rm -rf "$tmp"
      die "$name $version: building $pkg failed: ${why:-see the log above}"
    fi
  done
  local secs=$(($(date +%s) - start))
  printf '%s %s %s\nbuilt in %ss with %s\n' "$name" "$version" "$module" "$secs" "$(go version)" >"$tmp/.complete"
  rm -f "$logf"
  chmod 0755 "$tmp"
  if ! mv -T "$tmp" "$dest" 2>/dev/null; then
    # Another builder finished the same peer first: its folder is as good as ours.
    rm -rf "$tmp"
    [[ -f $dest/.complete ]] || die "$name $version: could not rename the build to $dest"
  fi
  log "$name $version: done in ${secs}s"
  echo "$name $version $dest"
}

list_names() {
  local e out=""
  for e in "${PEERS[@]}"; do out+="${e%%|*} "; done
  echo "${out% }"
}

case ${1:-} in
  --env)
    for e in "${PEERS[@]}"; do
      IFS='|' read -r name group module _ <<<"$e"
      version=$(pinned_version "$group" "$module")
      dir=$(present_dir "$name" "$version") || continue
      echo "export $(env_name "$name")=$dir"
    done
    exit 0
    ;;
  --list)
    for e in "${PEERS[@]}"; do
      IFS='|' read -r name group module _ <<<"$e"
      echo "$name $(pinned_version "$group" "$module")"
    done
    exit 0
    ;;
  -h | --help)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

# The machine's Go 1.26 lives in /usr/local/go; Debian's golang-go (1.19, which the suites'
# packages pull in for the libcni driver) is too old for these modules, so /usr/local/go comes first.
[[ -x /usr/local/go/bin/go ]] && export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || die "no go toolchain (Go 1.26 expected at /usr/local/go/bin/go)"
export GOMODCACHE="$root/gomod" GOCACHE="$root/gocache" GOTOOLCHAIN=local
names=("$@")
[[ ${#names[@]} -gt 0 ]] || read -r -a names <<<"$(list_names)"
status=0
for n in "${names[@]}"; do
  if ! (build_one "$n"); then status=1; fi
  write_env_file
done
exit $status
