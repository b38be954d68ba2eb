#!/usr/bin/env bash
# Node-slice benchmark: 200 simulated nodes x 100 pods = 20,000 ADDs on one /16 in /25 slices,
# 16 ADDs in flight, 2 ms added latency per API request; then the same ADDs in single-object
# mode (one IPPool for the range), which stops at etcd's 1.5 MiB object limit.
#
#   tests/bench/kube_slice_bench.sh [BUILD_DIR]   (no root needed; the test API server binds 127.0.0.1)
set -euo pipefail
BUILD=${1:-./build}
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd) || { echo "kube_slice_bench.sh: no $BUILD/bin" >&2; exit 1; }
for f in kube_slice_bench test_apiserver; do
  [[ -x $BIN/$f ]] || { echo "kube_slice_bench.sh: missing $BIN/$f (cmake --build $BUILD --target kube_slice_bench)" >&2; exit 1; }
done
"$BIN/kube_slice_bench" --nodes 200 --pods 100 --slice 25 --inflight 16 --latency-ms 2 --mode slices
"$BIN/kube_slice_bench" --nodes 200 --pods 100 --inflight 16 --latency-ms 2 --mode single
# The same cluster on an nv-ipam CIDRPool (/25 per node, no controller: nodes claim their subnets).
"$BIN/kube_slice_bench" --nodes 200 --pods 100 --slice 25 --inflight 16 --latency-ms 2 --mode cidrpool
# Side by side on a smaller cluster (40 nodes x 25 pods = 1,000 ADDs, 8 in flight): the in-repo
# server without added latency, then a real kube-apiserver + etcd (KUBEBUILDER_ASSETS or
# RDMANET_KUBE_APISERVER, see docs/development.md); skipped with a note when there is none.
if [[ -n ${KUBEBUILDER_ASSETS:-}${RDMANET_KUBE_APISERVER:-} ]]; then
  for server in inrepo real; do
    for mode in slices single; do
      "$BIN/kube_slice_bench" --nodes 40 --pods 25 --slice 25 --inflight 8 --latency-ms 0 --mode "$mode" --server "$server"
    done
  done
else
  echo "kube_slice_bench.sh: no real kube-apiserver (KUBEBUILDER_ASSETS unset): side-by-side run skipped"
fi
