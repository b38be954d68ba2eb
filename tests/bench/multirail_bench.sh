#!/usr/bin/env bash
# An 8-rail pod as Multus makes it: 8 ADDs (net1..net8, one subnet per rail), then 8 DELs, into one
# pod netns. rdmanet macvlan with policyRouting and its embedded IPAM, against the chain users run
# today for the same result: Debian's macvlan + host-local, then sbr (source-based routing), then
# tuning (arp_ignore=1, arp_announce=2, rp_filter=2), each a process of its own called with the
# previous one's result, DEL in reverse order. Both are measured side by side in one run (one
# round of each per iteration), CPU of every process tree and wall time summed over the 16 verbs.
#
#   sudo tests/bench/multirail_bench.sh [BUILD_DIR] [ITERATIONS]     (defaults: ./build, 10)
#
# With the newest reference plugins (RDMANET_PEER_CNI_PLUGINS or REF_NEW, as built by tests/peers;
# tests/run.sh bench sets it) the same chain runs a second time per round with that release, so the
# ratio is given against Debian's packaged chain and against the newest one.
#
# Needs jq (to hand a plugin's result to the next one, outside the measured processes).
set -euo pipefail

BUILD=${1:-./build}
N=${2:-${N:-10}}
WARMUP=1
RAILS=8
REF=/usr/lib/cni
REF_NEW=${REF_NEW:-${RDMANET_PEER_CNI_PLUGINS:-}}
ME=multirail_bench
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/scene.sh
. "$here/scene.sh"

[[ $(id -u) -eq 0 ]] || die "must run as root (creates namespaces and links)"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS must be a positive integer, got '$N'"
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
BIN=$(bin_dir "$BUILD") || exit 1
MEASURE=$BIN/bench_measure
for f in "$BIN/rdmanet" "$MEASURE" "$REF/macvlan" "$REF/host-local" "$REF/sbr" "$REF/tuning"; do
  [[ -x $f ]] || die "missing executable $f"
done
chains=(chain)
if [[ -n $REF_NEW ]]; then
  for p in macvlan host-local sbr tuning; do [[ -x $REF_NEW/$p ]] || die "missing executable $REF_NEW/$p"; done
  chains+=(chain_new)
fi
debian_version=$(dpkg-query -W -f '${Version}' containernetworking-plugins 2>/dev/null | sed 's/+.*//' || true)
new_version=$(basename "${REF_NEW:-none}" | sed -n 's/^.*-\(v[0-9][0-9.]*\)$/\1/p')

scene_open mr
scene_netns pr pc pn
scene_veth m

for ((r = 1; r <= RAILS; r++)); do
  cat >"$WORK/r$r.json" <<JSON
{"cniVersion":"1.0.0","name":"mr-rail$r","type":"rdmanet","mode":"macvlan","master":"${TAG}m0",
 "macvlanMode":"bridge","policyRouting":true,
 "ipam":{"type":"rdmanet-ipam","range":"10.24$r.0.0/24","gateway":"10.24$r.0.1","data_dir":"$WORK/ripam"}}
JSON
  cat >"$WORK/c$r-macvlan.json" <<JSON
{"cniVersion":"1.0.0","name":"mc-rail$r","type":"macvlan","master":"${TAG}m0","mode":"bridge",
 "ipam":{"type":"host-local","subnet":"10.23$r.0.0/24","gateway":"10.23$r.0.1","dataDir":"$WORK/hl"}}
JSON
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"mc-rail$r\",\"type\":\"sbr\"}" >"$WORK/c$r-sbr.json"
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"mc-rail$r\",\"type\":\"tuning\",\"sysctl\":{\"net.ipv4.conf.net$r.arp_ignore\":\"1\",\"net.ipv4.conf.net$r.arp_announce\":\"2\",\"net.ipv4.conf.net$r.rp_filter\":\"2\"}}" >"$WORK/c$r-tuning.json"
done

# call NETNS CONF PLUGIN VERB ID IFNAME [PREV_RESULT_FILE]: one measured process; prints "wall cpu",
# leaves its stdout in $WORK/out.
call() {
  local ns=$1 conf=$2 plugin=$3 verb=$4 id=$5 ifname=$6 prev=${7:-} input=$2 m
  if [[ -n $prev ]]; then
    input=$WORK/in.json
    jq --slurpfile p "$prev" '. + {prevResult: $p[0]}' "$conf" >"$input"
  fi
  m=$(CNI_COMMAND=$verb CNI_CONTAINERID=$id CNI_NETNS=/run/netns/$TAG-$ns CNI_IFNAME=$ifname \
      CNI_PATH=$REF CNI_ARGS='' "$MEASURE" -i "$input" -o "$WORK/out" -- "$plugin" 2>>"$WORK/stderr")
  check "$ns $(basename "$conf") $verb" "$m"
}

sum() { awk '{w += $1; c += $2} END {print w, c}'; }

rdmanet_pod() {
  local id=$1 r
  {
    for ((r = 1; r <= RAILS; r++)); do call pr "$WORK/r$r.json" "$BIN/rdmanet" ADD "$id" "net$r" || exit 1; done
    for ((r = 1; r <= RAILS; r++)); do call pr "$WORK/r$r.json" "$BIN/rdmanet" DEL "$id" "net$r" || exit 1; done
  } | sum
}

# chain_pod ID NETNS DIR: the chain of the plugins in DIR (also CNI_PATH: macvlan execs DIR's host-local).
chain_pod() {
  local id=$1 ns=$2 REF=$3 r p
  {
    for ((r = 1; r <= RAILS; r++)); do
      call "$ns" "$WORK/c$r-macvlan.json" "$REF/macvlan" ADD "$id" "net$r" || exit 1
      cp "$WORK/out" "$WORK/res$r"
      for p in sbr tuning; do
        call "$ns" "$WORK/c$r-$p.json" "$REF/$p" ADD "$id" "net$r" "$WORK/res$r" || exit 1
        cp "$WORK/out" "$WORK/res$r"
      done
    done
    for ((r = 1; r <= RAILS; r++)); do
      for p in tuning sbr macvlan; do
        call "$ns" "$WORK/c$r-$p.json" "$REF/$p" DEL "$id" "net$r" "$WORK/res$r" || exit 1
      done
    done
  } | sum
}

echo "multi-rail bench: $N iterations (+$WARMUP warm-up) of an $RAILS-rail pod, $RAILS ADDs then $RAILS DELs"
echo "kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < WARMUP + N; i++)); do
  a=$(rdmanet_pod "mr-$i") || exit 1
  b=$(chain_pod "mc-$i" pc "$REF") || exit 1
  c=""
  [[ -n $REF_NEW ]] && { c=$(chain_pod "mn-$i" pn "$REF_NEW") || exit 1; }
  # Nothing of the pod's routing may be left between rounds.
  [[ -z $(ip -n "$TAG-pr" rule show | grep -v 'from all') ]] || die "rdmanet left a rule"
  [[ -z $(ip -n "$TAG-pc" rule show | grep -v 'from all') ]] || die "the chain left a rule"
  [[ -z $(ip -n "$TAG-pn" rule show | grep -v 'from all') ]] || die "the newest chain left a rule"
  ((i < WARMUP)) && continue
  echo "$a" >>"$WORK/rdmanet.dat"
  echo "$b" >>"$WORK/chain.dat"
  [[ -n $c ]] && echo "$c" >>"$WORK/chain_new.dat"
done

printf '\n%-48s %12s %12s\n' "per pod: 8 ADD + 8 DEL (ms)" "median CPU" "median wall"
for cfg in rdmanet "${chains[@]}"; do
  label="rdmanet macvlan + policyRouting + embedded IPAM"
  [[ $cfg == chain ]] && label="macvlan + host-local, sbr, tuning (Debian ${debian_version:-?})"
  [[ $cfg == chain_new ]] && label="macvlan + host-local, sbr, tuning (${new_version:-newest})"
  printf '%-48s %12s %12s\n' "$label" "$(median "$WORK/$cfg.dat" 2)" "$(median "$WORK/$cfg.dat" 1)"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
R_CPU=$(ratio "$(median "$WORK/rdmanet.dat" 2)" "$(median "$WORK/chain.dat" 2)")
R_WALL=$(ratio "$(median "$WORK/rdmanet.dat" 1)" "$(median "$WORK/chain.dat" 1)")
echo
echo "ratios rdmanet / chain (Debian ${debian_version:-?}): CPU $R_CPU, wall $R_WALL"
if [[ -n $REF_NEW ]]; then
  echo "ratios rdmanet / chain (${new_version:-newest}): CPU $(ratio "$(median "$WORK/rdmanet.dat" 2)" "$(median "$WORK/chain_new.dat" 2)"), wall $(ratio "$(median "$WORK/rdmanet.dat" 1)" "$(median "$WORK/chain_new.dat" 1)")"
else
  echo "newest reference plugins not given (RDMANET_PEER_CNI_PLUGINS or REF_NEW): Debian's chain only"
fi
awk -v a="$R_CPU" 'BEGIN { printf "target: CPU <= 0.35x of the chain: %s\n", (a != "n/a" && a <= 0.35) ? "ok" : "MISSED" }'
