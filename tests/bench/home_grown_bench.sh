#!/usr/bin/env bash
# Do rdmanet's home-grown performance parts pay for themselves? Paired whole-process benchmark of
# the product built with each part and built with the stock alternative (a CMake option), in one
# run, the variants interleaved per iteration (their order alternating), so machine drift hits both.
#
#   sudo tests/bench/home_grown_bench.sh [WORK_ROOT] [ITERATIONS]    (defaults: ./build-home-grown, 40; or $N)
#
# Builds only rdmanet and rdmanet-ipam, in three build dirs under WORK_ROOT (incremental when
# they exist; extra configure arguments in $CMAKE_ARGS, e.g. the ccache launchers):
#   custom   the default build (both parts)     + bench_measure and test_apiserver (the harness)
#   stock    -DRDMANET_STOCK_SQLITE_VFS=ON      SQLite's own VFS for the local store
#   nlohmann -DRDMANET_NLOHMANN_POOL_PARSER=ON  nlohmann's SAX parser for IPPool bodies
# and measures, with bench/measure.c (user + system CPU of the process tree; wall too):
#   (a) the SQLite WAL VFS, custom vs stock: ADD+DEL of bin/rdmanet (macvlan on a veth made here,
#       into a namespace made here, embedded IPAM on the local store; the whole product path) and
#       ADD+DEL of bin/rdmanet-ipam alone (the IPAM process without the netlink work: the part's
#       effect undiluted). One attachment on an empty pool per call pair.
#   (b) the IPPool scanner, custom vs nlohmann: one ADD of bin/rdmanet-ipam with
#       "datastore": "kubernetes" against bin/test_apiserver (TLS, 127.0.0.1), on a pool holding
#       10k allocations; each ADD is followed by its DEL (not measured), so every ADD sees 10k.
#       Only the client process is measured; the server is not in its process tree.
# CPU time is the decision figure (wall time is printed but depends on the machine's load).
# Everything runs in namespaces, links and a temporary directory made here; the trap removes them
# and stops the API server (by its PID), also on failure or Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
ROOT=${1:-./build-home-grown}
N=${2:-${N:-40}}
WARMUP=2
POOL_SIZE=10000

die() { echo "home_grown_bench: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root (creates a namespace and links)"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS must be a positive integer, got '$N'"
for tool in cmake openssl curl ip; do command -v "$tool" >/dev/null || die "needs $tool"; done
mkdir -p "$ROOT"
ROOT=$(cd "$ROOT" && pwd)

# ---- build the variants ---------------------------------------------------------------------
declare -A OPTS=([custom]="" [stock]="-DRDMANET_STOCK_SQLITE_VFS=ON" [nlohmann]="-DRDMANET_NLOHMANN_POOL_PARSER=ON")
build_variant() {
  local v=$1 targets=(rdmanet rdmanet-ipam)
  [[ $v == custom ]] && targets+=(bench_measure test_apiserver)
  # shellcheck disable=SC2086 # option lists are word lists
  cmake -S "$root" -B "$ROOT/$v" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_STOCK_SQLITE_VFS=OFF \
    -DRDMANET_NLOHMANN_POOL_PARSER=OFF ${OPTS[$v]} ${CMAKE_ARGS:-} >"$ROOT/$v.configure.log" ||
    die "configure of $v failed: $ROOT/$v.configure.log"
  cmake --build "$ROOT/$v" -j"$(nproc)" --target "${targets[@]}" >"$ROOT/$v.build.log" ||
    die "build of $v failed: $ROOT/$v.build.log"
}
echo "building the variants in $ROOT (rdmanet, rdmanet-ipam only)"
for v in custom stock nlohmann; do build_variant "$v"; done
H=$ROOT/custom/bin   # the harness
declare -A BIN=([custom]=$ROOT/custom/bin [stock]=$ROOT/stock/bin [nlohmann]=$ROOT/nlohmann/bin)
# The variants must differ in the part and only there.
cmp -s "${BIN[custom]}/rdmanet-ipam" "${BIN[stock]}/rdmanet-ipam" && die "stock build is identical to custom"
cmp -s "${BIN[custom]}/rdmanet-ipam" "${BIN[nlohmann]}/rdmanet-ipam" && die "nlohmann build is identical to custom"

# ---- the scene --------------------------------------------------------------------------------
while :; do
  TAG=$(printf 'hg%04x' $(( (RANDOM << 1 ^ $$) & 0xffff )))
  ip link show "${TAG}m0" &>/dev/null || ip netns list | grep -q "^${TAG}-" || break
done
WORK=$(mktemp -d /tmp/rdmanet-home-grown.XXXXXX)
NS=$TAG-pod
SERVER_PID=
cleanup() {
  if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  ip netns del "$NS" 2>/dev/null || true
  ip link del "${TAG}m0" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS"
ip link add "${TAG}m0" type veth peer name "${TAG}m1"
ip link set "${TAG}m0" up
ip link set "${TAG}m1" up
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

# The configs, one data dir per variant and configuration.
for v in custom stock nlohmann; do
  cat >"$WORK/plugin-$v.json" <<JSON
{"cniVersion":"1.0.0","name":"hg-plugin","type":"rdmanet","mode":"macvlan","master":"${TAG}m0","macvlanMode":"bridge",
 "ipam":{"type":"rdmanet-ipam","range":"10.253.10.0/24","data_dir":"$WORK/plugin-$v"}}
JSON
  cat >"$WORK/ipam-$v.json" <<JSON
{"cniVersion":"1.0.0","name":"hg-ipam","type":"rdmanet-ipam",
 "ipam":{"type":"rdmanet-ipam","range":"10.252.0.0/16","data_dir":"$WORK/ipam-$v"}}
JSON
  cat >"$WORK/kube-$v.json" <<JSON
{"cniVersion":"1.0.0","name":"hg-kube","type":"rdmanet-ipam",
 "ipam":{"type":"rdmanet-ipam","range":"10.80.0.0/16","network_name":"bench","datastore":"kubernetes",
         "kubernetes":{"kubeconfig":"$WORK/kubeconfig"},"data_dir":"$WORK/kube-$v"}}
JSON
done

# call CFG PROGRAM VERB ID: one CNI call as a runtime makes it; prints "wall_us cpu_us".
call() {
  local m wall cpu code
  m=$(CNI_COMMAND=$3 CNI_CONTAINERID=$4 CNI_NETNS=/run/netns/$NS CNI_IFNAME=net1 CNI_PATH=/nonexistent CNI_ARGS= \
      "$H/bench_measure" -i "$WORK/$1.json" -o "$WORK/out" -- "$2")
  read -r wall cpu code <<<"$m"
  if [[ $code -ne 0 ]]; then
    echo "home_grown_bench: $1 $3 failed (exit $code):" >&2
    cat "$WORK/out" >&2
    exit 1
  fi
  echo "$wall $cpu"
}
# pair CFG PROGRAM ID: ADD then DEL; prints the sums "wall_us cpu_us".
pair() {
  local a d
  a=$(call "$1" "$2" ADD "$3") || exit 1
  d=$(call "$1" "$2" DEL "$3") || exit 1
  echo "$a $d" | awk '{print $1 + $3, $2 + $4}'
}

one_round() {
  local i=$1 record=$2 v r order
  # Alternate which variant goes first.
  if (( ${i#w} % 2 == 0 )) 2>/dev/null; then order="custom stock"; else order="stock custom"; fi
  for v in $order; do
    r=$(pair "plugin-$v" "${BIN[$v]}/rdmanet" "hg-$v-$i") || exit 1
    [[ $record == yes ]] && echo "$r" >>"$WORK/vfs-plugin-$v.dat"
    r=$(pair "ipam-$v" "${BIN[$v]}/rdmanet-ipam" "hg-$v-$i") || exit 1
    [[ $record == yes ]] && echo "$r" >>"$WORK/vfs-ipam-$v.dat"
  done
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

echo "home-grown parts: $N iterations (+$WARMUP warm-up), variants interleaved per iteration"
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
echo "median per call pair (ADD+DEL) or per ADD, ms; saved = (stock - part) / stock"
printf '%-44s %10s %10s %8s %8s %8s %10s %10s\n' "" "CPU part" "CPU stock" "ratio" "saved%" "paired%" "wall part" "wall stock"
row "VFS: rdmanet macvlan + IPAM, ADD+DEL" vfs-plugin custom stock
row "VFS: rdmanet-ipam local store, ADD+DEL" vfs-ipam custom stock
row "scanner: rdmanet-ipam kube ADD, 10k pool" scan-kube custom nlohmann
echo
echo "paired% = median of the per-iteration savings; $N iterations, $((SECONDS - start)) s measuring"
