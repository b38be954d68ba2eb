#!/usr/bin/env bash
# Kubernetes datastore benchmark: 16 concurrent callers on one pool, 2 ms added latency
# per API request, 800 ADDs then 800 DELs; then the same on a pool already holding 10k allocations
# (and their reservations); then without overlap reservations.
#
#   tests/bench/kube_bench.sh [BUILD_DIR]        (no root needed; the test API server binds 127.0.0.1)
set -euo pipefail
BUILD=${1:-./build}
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd) || { echo "kube_bench.sh: no $BUILD/bin" >&2; exit 1; }
for f in kube_bench test_apiserver; do
  [[ -x $BIN/$f ]] || { echo "kube_bench.sh: missing $BIN/$f (cmake --build $BUILD --target kube_bench)" >&2; exit 1; }
done
"$BIN/kube_bench" --callers 16 --ops 800 --latency-ms 2 --prefill 0
"$BIN/kube_bench" --callers 16 --ops 800 --latency-ms 2 --prefill 10000
"$BIN/kube_bench" --callers 16 --ops 800 --latency-ms 2 --prefill 0 --overlap 0
