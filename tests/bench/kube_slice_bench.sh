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
