#!/usr/bin/env bash
# Two builds of rdmanet (e.g. before and after a restructuring) on the same workloads in ONE run,
# interleaved per iteration with the order alternating, so drift of a shared machine hits both:
#   1. whole processes, as run_bench.sh measures them (scene.sh, bin/bench_measure): rdmanet
#      macvlan / hostdev ADD+DEL with the embedded IPAM and with host-local, and bin/rdmanet-ipam
#      alone on an empty /16 and on one holding 60k allocations (each build prefills its own store
#      with its own bin/ipam_prefill); CPU (user + sys of the process tree) and wall per ADD+DEL;
#      and two VERSION calls of each binary: the process start and exit alone;
#   2. in-process IPAM: each build's bin/ipam_bench, rounds alternating;
#   3. Kubernetes datastore: kube_bench.sh with each build, rounds alternating (run under
#      bench_measure too: the CPU of the whole run, client and test API server).
#
#   sudo tests/bench/compare_builds.sh BEFORE_BUILD AFTER_BUILD [ITERATIONS] [ROUNDS]
#        (defaults 100 iterations for 1., 5 rounds for 2. and 3.; KUBE=0 skips 3.; NOISE=0.05;
#         TMPDIR=/dev/shm puts the stores and state on a tmpfs: no disk syncs in the figures)
#
# Noise: for every figure the per-iteration (per-round) ratio after/before is computed on the
# paired samples. Part 1 prints the median ratio with a distribution-free 95% confidence interval
# of that median (order statistics n/2 -+ 0.98 sqrt(n)); parts 2 and 3 the range of the per-round
# ratios. "noise" means the interval contains 1 or the median ratio is within 1 -+ NOISE (default
# 0.05); otherwise "better" or "WORSE" (direction per figure: less CPU / time, more ops/s). CPU is
# the figure to judge by; wall time follows the load of the machine. Calibration, one build against
# itself (100 iterations, 5 rounds, load 9-18 on 2 vCPUs): parts 1 and 2 within 2%, every interval
# containing 1; part 3's ops/s and p99 spread by 15-70% between rounds (one false WORSE at 0.86),
# its CPU row within 1%.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ME=compare_builds
REF=/usr/lib/cni
# shellcheck source=tests/bench/scene.sh
. "$here/scene.sh"

[[ $# -ge 2 ]] || die "usage: $0 BEFORE_BUILD AFTER_BUILD [ITERATIONS] [ROUNDS]"
[[ $(id -u) -eq 0 ]] || die "must run as root (creates namespaces and links)"
N=${3:-100}
ROUNDS=${4:-5}
WARMUP=3
NOISE=${NOISE:-0.05}
[[ $N =~ ^[1-9][0-9]*$ && $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS and ROUNDS must be positive integers"
declare -A BIN BUILD ARG=([before]=$1 [after]=$2)
for b in before after; do
  BIN[$b]=$(bin_dir "${ARG[$b]}") || exit 1
  BUILD[$b]=${BIN[$b]%/bin}
  for f in rdmanet rdmanet-ipam ipam_prefill ipam_bench bench_measure; do
    [[ -x ${BIN[$b]}/$f ]] || die "missing executable ${BIN[$b]}/$f"
  done
done
[[ -x $REF/host-local ]] || die "missing executable $REF/host-local"
MEASURE=${BIN[after]}/bench_measure   # the harness, the same source in both trees

# ---- 1. whole processes --------------------------------------------------------------------
scene_open cb
WORKLOADS=(me he mh hh ri r6 vr vi)
declare -A LABEL=([me]="macvlan + embedded IPAM" [he]="hostdev + embedded IPAM"
  [mh]="macvlan + host-local" [hh]="hostdev + host-local"
  [ri]="rdmanet-ipam alone, empty /16" [r6]="rdmanet-ipam alone, 60k pool"
  [vr]="rdmanet, 2 x VERSION (start only)" [vi]="rdmanet-ipam, 2 x VERSION (start only)")
# Config NAME is build initial (b/a) + workload; its netns is $TAG-NAME. hostdev needs a device per
# build and IPAM kind; the macvlan master is shared.
scene_veth m hb ha lb la
for x in b a; do
  scene_netns "${x}me" "${x}he" "${x}mh" "${x}hh" "${x}ri" "${x}r6" "${x}vr" "${x}vi"
  mv="\"type\":\"rdmanet\",\"mode\":\"macvlan\",\"master\":\"${TAG}m0\",\"macvlanMode\":\"bridge\""
  conf_emb "${x}me" "$mv" 10.253.8.0/24
  conf_emb "${x}he" "\"type\":\"rdmanet\",\"mode\":\"hostdev\",\"device\":\"${TAG}h${x}0\"" 10.253.9.0/24
  conf "${x}mh" "$mv" 10.253.1.0/24
  conf "${x}hh" "\"type\":\"rdmanet\",\"mode\":\"hostdev\",\"device\":\"${TAG}l${x}0\"" 10.253.4.0/24
  conf_emb "${x}ri" "\"type\":\"rdmanet-ipam\"" 10.252.0.0/16
  conf_emb "${x}r6" "\"type\":\"rdmanet-ipam\"" 10.254.0.0/16
  # VERSION does no work: the process start and exit that every verb pays.
  echo '{"cniVersion":"1.0.0"}' | tee "$WORK/${x}vr.json" >"$WORK/${x}vi.json"
done
"${BIN[before]}/ipam_prefill" "$WORK/ripam-br6" 10.254.0.0/16 60000 bench-br6 >/dev/null || die "ipam_prefill (before) failed"
"${BIN[after]}/ipam_prefill" "$WORK/ripam-ar6" 10.254.0.0/16 60000 bench-ar6 >/dev/null || die "ipam_prefill (after) failed"

# order I: the two builds, first one alternating with the iteration.
order() { if (( ${1#w} % 2 == 0 )); then echo "before after"; else echo "after before"; fi; }

one_round() {
  local i=$1 record=$2 w b plugin r verbs
  for w in "${WORKLOADS[@]}"; do
    for b in $(order "$i"); do
      plugin=${BIN[$b]}/rdmanet verbs=()
      [[ $w == r? || $w == vi ]] && plugin=${BIN[$b]}/rdmanet-ipam
      [[ $w == v? ]] && verbs=(VERSION VERSION)
      r=$(add_del "${b:0:1}$w" "$plugin" "cb-$i" "${verbs[@]}") || exit 1
      [[ $record == yes ]] && echo "$r" >>"$WORK/$b-$w.dat"
    done
  done
  return 0
}

# paired_ci BEFORE_FILE AFTER_FILE COLUMN: "median lo hi" of the per-line ratios after/before.
paired_ci() {
  paste "$1" "$2" | awk -v c="$3" '{ n = NF / 2; print $(n + c) / $c }' | sort -g | awk '
    { v[NR] = $1 }
    END { m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
          lo = int(NR/2 - 0.98*sqrt(NR)); hi = int(NR/2 + 1 + 0.98*sqrt(NR) + 0.999)
          if (lo < 1) lo = 1; if (hi > NR) hi = NR
          printf "%.3f %.3f %.3f", m, v[lo], v[hi] }'
}
# verdict MEDIAN LO HI [higher]: where the interval lies relative to 1 (higher: bigger is better);
# a median ratio within 1 -+ $NOISE counts as noise too (run-to-run spread of this machine).
verdict() {
  awk -v m="$1" -v lo="$2" -v hi="$3" -v up="${4:-}" -v tol="$NOISE" 'BEGIN {
    if ((lo <= 1 && hi >= 1) || (m > 1 - tol && m < 1 + tol)) print "noise"
    else if ((hi < 1) != (up == "higher")) print "better"; else print "WORSE" }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }
ROW='%-40s %-5s %10s %10s %8s %22s  %s\n'
header() { printf "$ROW" "$1" "" "before" "after" "a/b" "paired a/b [interval]" "verdict"; }
# row LABEL METRIC BEFORE AFTER "MEDIAN LO HI" [higher]
row() {
  local m lo hi
  read -r m lo hi <<<"$5"
  printf "$ROW" "$1" "$2" "$3" "$4" "$(ratio "$4" "$3")" "$m [$lo, $hi]" "$(verdict "$m" "$lo" "$hi" "${6:-}")"
}

echo "compare_builds: before ${BUILD[before]}, after ${BUILD[after]}"
echo "kernel $(uname -r), $(nproc) CPUs; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
for ((i = 0; i < WARMUP; i++)); do one_round "w$i" no; done
for ((i = 0; i < N; i++)); do one_round "$i" yes; done
echo
echo "1. whole processes, per ADD+DEL, median ms over $N paired iterations ($((SECONDS - start)) s; load $(cut -d' ' -f1-3 /proc/loadavg))"
header "workload"
for w in "${WORKLOADS[@]}"; do
  for col in 2:CPU 1:wall; do
    row "${LABEL[$w]}" "${col#*:}" "$(median "$WORK/before-$w.dat" "${col%%:*}")" \
      "$(median "$WORK/after-$w.dat" "${col%%:*}")" "$(paired_ci "$WORK/before-$w.dat" "$WORK/after-$w.dat" "${col%%:*}")"
  done
done

# Parts 2 and 3: per-round figures, one line per round and build: "KEY value...". range_of
# FILE_B FILE_A KEY COLUMN: "median lo hi" of the per-round ratios (min and max as the interval).
range_of() {
  paste <(awk -v k="$3" '$1 == k' "$1") <(awk -v k="$3" '$1 == k' "$2") | awk -v c="$4" '
    { n = NF / 2; print $(n + c) / $c }' | sort -g | awk '
    { v[NR] = $1 } END { m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR] }'
}
# med FILE KEY COLUMN: median over rounds.
med() { awk -v k="$2" -v c="$3" '$1 == k { print $c }' "$1" | sort -g | awk '
  { v[NR] = $1 } END { m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.1f", m }'; }

# ---- 2. in-process IPAM --------------------------------------------------------------------
start=$SECONDS
for ((r = 0; r < ROUNDS; r++)); do
  for b in $(order "$r"); do
    # Rows: "IPv4 /16 60000 median p90 p99 cpu_med prefill mean" -> key "v4-60000".
    "${BIN[$b]}/ipam_bench" --dir "$WORK/ipam-bench-$b" | awk 'NR > 2 && NF >= 9 {
      sub(/^IP/, "", $1); print $1 "-" $3, $4, $7, $9 }' >>"$WORK/ib-$b.dat"
  done
done
echo
echo "2. in-process IPAM (ipam_bench), us per allocate+release, median over $ROUNDS rounds ($((SECONDS - start)) s; load $(cut -d' ' -f1-3 /proc/loadavg))"
header "range-fill"
for k in $(awk '!seen[$1]++ { print $1 }' "$WORK/ib-after.dat"); do
  for col in 3:CPU 2:wall; do
    row "$k" "${col#*:}" "$(med "$WORK/ib-before.dat" "$k" "${col%%:*}")" "$(med "$WORK/ib-after.dat" "$k" "${col%%:*}")" \
      "$(range_of "$WORK/ib-before.dat" "$WORK/ib-after.dat" "$k" "${col%%:*}")"
  done
done

# ---- 3. Kubernetes datastore ---------------------------------------------------------------
[[ ${KUBE:-1} == 0 ]] && exit 0
start=$SECONDS
for ((r = 0; r < ROUNDS; r++)); do
  for b in $(order "$r"); do
    m=$("$MEASURE" -o "$WORK/kube.out" -- "$here/kube_bench.sh" "${BUILD[$b]}")
    read -r wall cpu code <<<"$m"
    [[ $code -eq 0 ]] || { cat "$WORK/kube.out" >&2; die "kube_bench.sh with $b failed (exit $code)"; }
    # "ADD callers=16 latency=2ms prefill=0 overlap=on: 800 ops in 1.36 s = 588/s p50 23.9 ms p99 64.2 ms ..."
    awk '/ops in/ { sub(/prefill=/, "", $4); sub(/overlap=/, "", $5); sub(/:$/, "", $5); r = $12; sub(/\/s$/, "", r)
                    print $1 "-" $4 "-" $5, r, $17 }' "$WORK/kube.out" >>"$WORK/kb-$b.dat"
    echo "cpu-total $((cpu / 1000)) $((wall / 1000))" >>"$WORK/kb-$b.dat"
  done
done
echo
echo "3. Kubernetes datastore (kube_bench.sh: 16 callers, 800 ops, 2 ms latency), median over $ROUNDS rounds ($((SECONDS - start)) s; load $(cut -d' ' -f1-3 /proc/loadavg))"
header "verb-prefill-overlap"
for k in $(awk '!seen[$1]++ && $1 != "cpu-total" { print $1 }' "$WORK/kb-after.dat"); do
  row "$k" "ops/s" "$(med "$WORK/kb-before.dat" "$k" 2)" "$(med "$WORK/kb-after.dat" "$k" 2)" \
    "$(range_of "$WORK/kb-before.dat" "$WORK/kb-after.dat" "$k" 2)" higher
  row "$k" "p99ms" "$(med "$WORK/kb-before.dat" "$k" 3)" "$(med "$WORK/kb-after.dat" "$k" 3)" \
    "$(range_of "$WORK/kb-before.dat" "$WORK/kb-after.dat" "$k" 3)"
done
row "whole run, client + test server (ms)" "CPU" "$(med "$WORK/kb-before.dat" cpu-total 2)" "$(med "$WORK/kb-after.dat" cpu-total 2)" \
  "$(range_of "$WORK/kb-before.dat" "$WORK/kb-after.dat" cpu-total 2)"
