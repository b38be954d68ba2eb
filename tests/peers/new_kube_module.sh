#!/usr/bin/env bash
# Creates (or refreshes) tests/peers/kube-<major.minor>/ for one k8s.io/kubernetes release:
# a go.mod whose `tool` lines name the commands the tests run and whose `replace` lines map
# every k8s.io/<staging> module to the matching v0.N.x (k8s.io/kubernetes' own go.mod points
# them at ./staging, which a dependent module cannot use). Maintainer tool: run it when moving
# to a new release, then commit go.mod and go.sum; build_peers.sh only reads them.
#   usage: new_kube_module.sh v1.37.2 [cmd...]   (default cmds: kube-apiserver)
set -euo pipefail
version=${1:?usage: new_kube_module.sh vX.Y.Z [cmd...]}
shift
cmds=("$@")
[[ ${#cmds[@]} -gt 0 ]] || cmds=(kube-apiserver)
minor=${version#v}
minor=${minor%.*}
staging_version="v0.${version#v1.}"
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/kube-$minor"
export GOFLAGS=-mod=mod
mkdir -p "$dir"
cd "$dir"
rm -f go.mod go.sum
go mod init "rdmanet.test/peers/kube-$minor" >/dev/null 2>&1
kmod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
[[ -f $kmod ]] || { echo "new_kube_module: k8s.io/kubernetes@$version: no go.mod from the proxy" >&2; exit 1; }
sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kmod" | while read -r mod; do
  # The sample-* staging modules are not published for every release and no command needs them.
  if go list -m "$mod@$staging_version" >/dev/null 2>&1; then
    go mod edit -replace "$mod=$mod@$staging_version"
  else
    echo "new_kube_module: $mod@$staging_version not on the proxy; left out" >&2
  fi
done
tools=()
for c in "${cmds[@]}"; do tools+=("k8s.io/kubernetes/cmd/$c@$version"); done
go get -tool "${tools[@]}"
go mod tidy
echo "$dir"
