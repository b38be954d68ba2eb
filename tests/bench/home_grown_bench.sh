#!/usr/bin/env bash
# Does rdmanet's home-grown performance part pay for itself? Paired whole-process benchmark of the
# product built with the part and built with the stock alternative (a CMake option), in one run,
# the variants interleaved per iteration (their order alternating), so machine drift hits both.
# The part kept: the IPPool scanner (include/rdmanet/ipam/kube/json_scan.hpp), against nlohmann's
# SAX parser driving the same handler (-DRDMANET_NLOHMANN_POOL_PARSER=ON). A custom SQLite WAL VFS
# was measured the same way and removed (docs/benchmarks.md, Home-grown parts).
#
#   tests/bench/home_grown_bench.sh [WORK_ROOT] [ITERATIONS]    (defaults: ./build-home-grown, 100; or $N)
#
# Builds only rdmanet-ipam, in two build dirs under WORK_ROOT (incremental when they exist; extra
# configure arguments in $CMAKE_ARGS, e.g. the ccache launchers):
#   custom   the default build                  + bench_measure and test_apiserver (the harness)
#   nlohmann -DRDMANET_NLOHMANN_POOL_PARSER=ON
# and measures with bench/measure.c (user + system CPU of the process tree; wall too) one ADD of
# bin/rdmanet-ipam with "datastore": "kubernetes" against bin/test_apiserver (TLS, 127.0.0.1) on a
# pool holding 10k allocations; each ADD is followed by its DEL (not measured), so every ADD sees
# 10k. Only the client process is measured; the server is not in its process tree.
# CPU time is the decision figure (wall time is printed but depends on the machine's load).
# No root needed: the API server binds 127.0.0.1; it is stopped (by its PID) and the temporary
# directory removed by the trap, also on failure or Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
ROOT=${1:-./build-home-grown}
N=${2:-${N:-100}}
WARMUP=2
POOL_SIZE=10000

die() { echo "home_grown_bench: $*" >&2; exit 1; }
[[ $N =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS must be a positive integer, got '$N'"
for tool in cmake openssl curl; do command -v "$tool" >/dev/null || die "needs $tool"; done
mkdir -p "$ROOT"
ROOT=$(cd "$ROOT" && pwd)

# ---- build the variants ---------------------------------------------------------------------
declare -A OPTS=([custom]="" [nlohmann]="-DRDMANET_NLOHMANN_POOL_PARSER=ON")
build_variant() {
  local v=$1 targets=(rdmanet-ipam)
  [[ $v == custom ]] && targets+=(bench_measure test_apiserver)
  # shellcheck disable=SC2086 # option lists are word lists
  cmake -S "$root" -B "$ROOT/$v" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_NLOHMANN_POOL_PARSER=OFF \
    ${OPTS[$v]} ${CMAKE_ARGS:-} >"$ROOT/$v.configure.log" 2>&1 ||
    die "configure of $v failed: $ROOT/$v.configure.log"
  cmake --build "$ROOT/$v" -j"$(nproc)" --target "${targets[@]}" >"$ROOT/$v.build.log" 2>&1 ||
    die "build of $v failed: $ROOT/$v.build.log"
}
echo "building the variants in $ROOT (rdmanet-ipam only)"
for v in custom nlohmann; do build_variant "$v"; done
H=$ROOT/custom/bin   # the harness
declare -A BIN=([custom]=$ROOT/custom/bin [nlohmann]=$ROOT/nlohmann/bin)
cmp -s "${BIN[custom]}/rdmanet-ipam" "${BIN[nlohmann]}/rdmanet-ipam" && die "nlohmann build is identical to custom"

# ---- the scene --------------------------------------------------------------------------------
WORK=$(mktemp -d /tmp/rdmanet-home-grown.XXXXXX)
SERVER_PID=
cleanup() {
  if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

printf '{"ipamDataDirs":["%s"],"kubeconfigDirs":["%s"],"logDir":"%s","stateDir":"%s/state"}\n' \
  "$WORK" "$WORK" "$WORK" "$WORK" >"$WORK/policy.json"
export RDMANET_POLICY_FILE=$WORK/policy.json

# The API server, with a test CA, as tests/apiserver/fixture.cpp starts it.
pki=$WORK/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/ca.key" \
  -out "$pki/ca.crt" -days 2 -subj /CN=rdmanet-home-grown-bench-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/server.key" \
  -out "$pki/server.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$pki/san.ext"
openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
  -out "$pki/server.crt" -days 2 -extfile "$pki/san.ext" 2>/dev/null
token=home-grown-bench-$RANDOM$RANDOM
"$H/test_apiserver" --port-file "$WORK/port" --cert "$pki/server.crt" --key "$pki/server.key" \
  --token "$token" >"$WORK/apiserver.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 200); do [[ -s $WORK/port ]] && break; sleep 0.05; done
[[ -s $WORK/port ]] || die "test_apiserver did not start: $(cat "$WORK/apiserver.log")"
port=$(cat "$WORK/port")
cat >"$WORK/kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: bench
clusters:
- name: bench
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $pki/ca.crt
users:
- name: bench
  user:
    token: $token
contexts:
- name: bench
  context:
    cluster: bench
    user: bench
YAML
chmod 600 "$WORK/kubeconfig"

# The pool, offsets 1..POOL_SIZE taken (what lowest-first allocation leaves), in one POST.
awk -v n="$POOL_SIZE" 'BEGIN {
  printf "{\"apiVersion\":\"whereabouts.cni.cncf.io/v1alpha1\",\"kind\":\"IPPool\","
  printf "\"metadata\":{\"name\":\"bench-10.80.0.0-16\",\"namespace\":\"kube-system\"},"
  printf "\"spec\":{\"range\":\"10.80.0.0/16\",\"allocations\":{"
  for (i = 1; i <= n; i++) printf "%s\"%d\":{\"id\":\"prefill-%d\",\"podref\":\"bench/prefill-%d\",\"ifname\":\"net1\"}", (i > 1 ? "," : ""), i, i, i
  printf "}}}"
}' >"$WORK/pool.json"
status=$(curl -sS -o "$WORK/post.out" -w '%{http_code}' --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/json' --data-binary @"$WORK/pool.json" \
  "https://127.0.0.1:$port/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools")
[[ $status == 201 ]] || die "prefilling the pool: HTTP $status $(head -c 300 "$WORK/post.out")"

# The configs, one data dir (the journal of the kubernetes datastore) per variant.
for v in custom nlohmann; do
  cat >"$WORK/kube-$v.json" <<JSON
{"cniVersion":"1.0.0","name":"hg-kube","type":"rdmanet-ipam",
 "ipam":{"type":"rdmanet-ipam","range":"10.80.0.0/16","network_name":"bench","datastore":"kubernetes",
         "kubernetes":{"kubeconfig":"$WORK/kubeconfig"},"data_dir":"$WORK/kube-$v"}}
JSON
done

# call CFG PROGRAM VERB ID: one CNI call as a runtime makes it; prints "wall_us cpu_us".
call() {
  local m wall cpu code
  m=$(CNI_COMMAND=$3 CNI_CONTAINERID=$4 CNI_NETNS=/proc/self/ns/net CNI_IFNAME=net1 CNI_PATH=/nonexistent CNI_ARGS= \
      "$H/bench_measure" -i "$WORK/$1.json" -o "$WORK/out" -- "$2")
  read -r wall cpu code <<<"$m"
  if [[ $code -ne 0 ]]; then
    echo "home_grown_bench: $1 $3 failed (exit $code):" >&2
    cat "$WORK/out" >&2
    exit 1
  fi
  echo "$wall $cpu"
}

one_round() {
  local i=$1 record=$2 v r order
  # Alternate which variant goes first.
  if (( ${i#w} % 2 == 0 )) 2>/dev/null; then order="custom nlohmann"; else order="nlohmann custom"; fi
  for v in $order; do
    r=$(call "kube-$v" "${BIN[$v]}/rdmanet-ipam" ADD "hg-$v-$i") || exit 1
    # The first free offset after the prefill: proof that the ADD read the whole pool.
    grep -q '"10\.80\.39\.17/16"' "$WORK/out" || die "kube ADD of $v did not get 10.80.39.17: $(cat "$WORK/out")"
    [[ $record == yes ]] && echo "$r" >>"$WORK/scan-kube-$v.dat"
    call "kube-$v" "${BIN[$v]}/rdmanet-ipam" DEL "hg-$v-$i" >/dev/null || exit 1
  done
  return 0
}

echo "IPPool scanner vs nlohmann: $N iterations (+$WARMUP warm-up), variants interleaved per iteration"
echo "kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
for ((i = 0; i < WARMUP; i++)); do one_round "w$i" no; done
for ((i = 0; i < N; i++)); do one_round "$i" yes; done

# median FILE COLUMN (microseconds in, milliseconds out)
median() { sort -n -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.3f", m/1000}'; }
# paired_saving A B: median over iterations of (B - A) / B, in % (A the part, B the stock path).
paired_saving() {
  paste "$1" "$2" | awk '{print ($4 - $2) / $4 * 100}' | sort -g |
    awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.1f", m}'
}
row() {   # row LABEL KEY PART STOCK
  local a=$WORK/$2-$3.dat b=$WORK/$2-$4.dat ca cb
  ca=$(median "$a" 2)
  cb=$(median "$b" 2)
  printf '%-44s %10s %10s %8s %8s %8s %10s %10s\n' "$1" "$ca" "$cb" \
    "$(awk -v a="$ca" -v b="$cb" 'BEGIN {printf "%.3f", a/b}')" \
    "$(awk -v a="$ca" -v b="$cb" 'BEGIN {printf "%.1f", (b-a)/b*100}')" "$(paired_saving "$a" "$b")" \
    "$(median "$a" 1)" "$(median "$b" 1)"
}
echo
echo "median per ADD, ms; saved = (stock - part) / stock"
printf '%-44s %10s %10s %8s %8s %8s %10s %10s\n' "" "CPU part" "CPU stock" "ratio" "saved%" "paired%" "wall part" "wall stock"
row "scanner: rdmanet-ipam kube ADD, 10k pool" scan-kube custom nlohmann
echo
echo "paired% = median of the per-iteration savings; $N iterations, $((SECONDS - start)) s measuring"
