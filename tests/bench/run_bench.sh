#!/usr/bin/env bash
# ADD+DEL cost of rdmanet next to Debian's reference plugins and a raw-rtnetlink kernel floor,
# measured side by side in one run (configurations interleaved per iteration, so drift of the
# machine hits all of them alike). rdmanet runs both with host-local (an IPAM process exec'd per
# verb) and with its embedded IPAM ("type": "rdmanet-ipam", in-process, local SQLite store); the
# IPAM alone is compared as whole processes: bin/rdmanet-ipam vs host-local, and bin/rdmanet-ipam
# on a pool holding 60k allocations (prefilled by bin/ipam_prefill) vs an empty pool.
#
#   sudo tests/bench/run_bench.sh [BUILD_DIR] [ITERATIONS]     (defaults: ./build, 50; or $N)
#
# Each CNI verb is one process started by bin/bench_measure with the CNI environment and the
# plugin config on stdin, as a runtime would start it (no Go driver in the path); its wall time
# and the CPU time of its whole tree (including the host-local IPAM it execs) are recorded.
# Everything runs against veth pairs and namespaces created here with unique names; the trap
# removes them, also on failure or Ctrl-C.
#
# Two reference columns: Debian's packaged plugins (/usr/lib/cni) and the newest release built from
# github.com/containernetworking/plugins (tests/peers, RDMANET_PEER_CNI_PLUGINS or REF_NEW; tests/run.sh
# bench sets it). The newest ones run in the same interleaved rounds, each with its own host-local
# as the IPAM it execs. Without that directory the run has Debian's column only and says so.
set -euo pipefail

BUILD=${1:-./build}
N=${2:-${N:-50}}
WARMUP=3
REF=/usr/lib/cni
REF_NEW=${REF_NEW:-${RDMANET_PEER_CNI_PLUGINS:-}}
ME=run_bench
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/bench/scene.sh
. "$here/scene.sh"

[[ $(id -u) -eq 0 ]] || die "must run as root (creates namespaces and links)"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "ITERATIONS must be a positive integer, got '$N'"
BIN=$(bin_dir "$BUILD") || exit 1
MEASURE=$BIN/bench_measure
for f in "$BIN/rdmanet" "$BIN/rdmanet-ipam" "$BIN/ipam_prefill" "$BIN/kernel_floor" "$MEASURE" \
         "$REF/macvlan" "$REF/host-device" "$REF/host-local"; do
  [[ -x $f ]] || die "missing executable $f"
done
debian_version=$(dpkg-query -W -f '${Version}' containernetworking-plugins 2>/dev/null | sed 's/+.*//' || true)
REF_LABEL="Debian ${debian_version:-?}"
NEW=()
if [[ -n $REF_NEW ]]; then
  for f in "$REF_NEW/macvlan" "$REF_NEW/host-device" "$REF_NEW/host-local"; do
    [[ -x $f ]] || die "missing executable $f (REF_NEW / RDMANET_PEER_CNI_PLUGINS)"
  done
  # The peer cache names the folder <name>-<module version>.
  NEW_LABEL=$(basename "$REF_NEW" | sed -n 's/^.*-\(v[0-9][0-9.]*\)$/\1/p')
  NEW_LABEL=${NEW_LABEL:-$(basename "$REF_NEW")}
  NEW=(nm nh np)
fi

scene_open rb
scene_netns rm qm fm rh qh fh ip re he ri r6 "${NEW[@]}"
scene_veth m h q f e
((${#NEW[@]})) && scene_veth n

conf rm "\"type\":\"rdmanet\",\"mode\":\"macvlan\",\"master\":\"${TAG}m0\",\"macvlanMode\":\"bridge\"" 10.253.1.0/24
conf qm "\"type\":\"macvlan\",\"master\":\"${TAG}m0\",\"mode\":\"bridge\"" 10.253.2.0/24
conf rh "\"type\":\"rdmanet\",\"mode\":\"hostdev\",\"device\":\"${TAG}h0\"" 10.253.4.0/24
conf qh "\"type\":\"host-device\",\"device\":\"${TAG}q0\"" 10.253.5.0/24
# host-local on its own: the share of every configuration above that is the IPAM exec.
conf ip "\"type\":\"host-local\"" 10.253.7.0/24
# The same three with the newest reference plugins.
conf nm "\"type\":\"macvlan\",\"master\":\"${TAG}m0\",\"mode\":\"bridge\"" 10.253.10.0/24
conf nh "\"type\":\"host-device\",\"device\":\"${TAG}n0\"" 10.253.11.0/24
conf np "\"type\":\"host-local\"" 10.253.12.0/24

conf_emb re "\"type\":\"rdmanet\",\"mode\":\"macvlan\",\"master\":\"${TAG}m0\",\"macvlanMode\":\"bridge\"" 10.253.8.0/24
conf_emb he "\"type\":\"rdmanet\",\"mode\":\"hostdev\",\"device\":\"${TAG}e0\"" 10.253.9.0/24
# rdmanet-ipam as a process of its own (as another CNI would exec it), on an empty /16 and on a
# /16 holding 60k allocations (offsets 1..60000, as lowest-first allocation leaves them).
conf_emb ri "\"type\":\"rdmanet-ipam\"" 10.252.0.0/16
conf_emb r6 "\"type\":\"rdmanet-ipam\"" 10.254.0.0/16
"$BIN/ipam_prefill" "$WORK/ripam-r6" 10.254.0.0/16 60000 bench-r6 >/dev/null || die "ipam_prefill failed"

# floor_call CFG MODE DEVICE VERB CIDR
floor_call() {
  local m
  m=$("$MEASURE" -o "$WORK/out" -- "$BIN/kernel_floor" "$2" "$4" "$3" "/run/netns/$TAG-$1" net1 "$5")
  check "$1 $4" "$m"
}

one_round() {
  local i=$1 record=$2 id="bench-$1" a d cfg
  for cfg in rm re qm rh he qh ip ri r6 "${NEW[@]}"; do
    local plugin dir=$REF
    case $cfg in
      rm|rh|re|he) plugin=$BIN/rdmanet ;; qm) plugin=$REF/macvlan ;; qh) plugin=$REF/host-device ;;
      ip) plugin=$REF/host-local ;; ri|r6) plugin=$BIN/rdmanet-ipam ;;
      nm) dir=$REF_NEW plugin=$REF_NEW/macvlan ;; nh) dir=$REF_NEW plugin=$REF_NEW/host-device ;;
      np) dir=$REF_NEW plugin=$REF_NEW/host-local ;;
    esac
    # CNI_PATH of the call (scene.sh): the plugin's own release, so it execs its own host-local.
    a=$(REF=$dir add_del "$cfg" "$plugin" "$id") || exit 1
    [[ $record == yes ]] && echo "$a" >>"$WORK/$cfg.dat"
  done
  a=$(floor_call fm macvlan "${TAG}m0" add 10.253.3.2/24) || exit 1
  d=$(floor_call fm macvlan "${TAG}m0" del 10.253.3.2/24) || exit 1
  [[ $record == yes ]] && echo "$a $d" | awk '{print $1+$3, $2+$4}' >>"$WORK/fm.dat"
  a=$(floor_call fh hostdev "${TAG}f0" add 10.253.6.2/24) || exit 1
  d=$(floor_call fh hostdev "${TAG}f0" del 10.253.6.2/24) || exit 1
  [[ $record == yes ]] && echo "$a $d" | awk '{print $1+$3, $2+$4}' >>"$WORK/fh.dat"
  return 0
}

echo "rdmanet bench: $N iterations (+$WARMUP warm-up) of ADD+DEL per configuration"
echo "kernel $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (wall times grow with load; CPU times much less)"
for ((i = 0; i < WARMUP; i++)); do one_round "w$i" no; done
for ((i = 0; i < N; i++)); do one_round "$i" yes; done


declare -A LABEL=(
  [rm]="rdmanet macvlan + host-local" [re]="rdmanet macvlan + embedded IPAM"
  [qm]="reference macvlan + host-local ($REF_LABEL)" [fm]="kernel floor macvlan"
  [rh]="rdmanet hostdev + host-local" [he]="rdmanet hostdev + embedded IPAM"
  [qh]="reference host-device + host-local ($REF_LABEL)" [fh]="kernel floor hostdev"
  [ip]="(host-local alone, $REF_LABEL)" [ri]="(rdmanet-ipam alone, empty pool)" [r6]="(rdmanet-ipam alone, 60k pool)"
  [nm]="reference macvlan + host-local (${NEW_LABEL:-})" [nh]="reference host-device + host-local (${NEW_LABEL:-})"
  [np]="(host-local alone, ${NEW_LABEL:-})")
declare -A CPU WALL
echo
((${#NEW[@]})) || echo "newest reference plugins not given (RDMANET_PEER_CNI_PLUGINS or REF_NEW): $REF_LABEL's column only"
printf '%-50s %11s %12s %10s\n' "per ADD+DEL (ms)" "median CPU" "median wall" "p90 wall"
order=(rm re qm "${NEW[@]:0:1}" fm rh he qh "${NEW[@]:1:1}" fh ip "${NEW[@]:2:1}" ri r6)
for cfg in "${order[@]}"; do
  CPU[$cfg]=$(median "$WORK/$cfg.dat" 2)
  WALL[$cfg]=$(median "$WORK/$cfg.dat" 1)
  printf '%-50s %11s %12s %10s\n' "${LABEL[$cfg]}" "${CPU[$cfg]}" "${WALL[$cfg]}" "$(p90 "$WORK/$cfg.dat" 1)"
done
# Machine-readable copy for tests/bench/report.sh: key, label, median CPU, median wall, p90 wall (ms).
if [[ -n ${BENCH_TSV:-} ]]; then
  for cfg in "${order[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\n' "$cfg" "${LABEL[$cfg]}" "${CPU[$cfg]}" "${WALL[$cfg]}" "$(p90 "$WORK/$cfg.dat" 1)"
  done >"$BENCH_TSV"
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
# verdict VALUE LIMIT: "ok" when VALUE <= LIMIT.
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a != "n/a" && a <= b) ? "ok" : "MISSED" }'; }
# row LABEL RDMANET REFERENCE_KEY FLOOR: CPU against Debian's plugin and against the newest (when
# run), wall against the kernel floor.
row() {
  local new="-"
  ((${#NEW[@]})) && new=$(ratio "${CPU[$2]}" "${CPU[$4]}")
  printf '%-36s %13s %13s %15s\n' "$1" "$(ratio "${CPU[$2]}" "${CPU[$3]}")" "$new" "$(ratio "${WALL[$2]}" "${WALL[$5]}")"
}
echo
printf '%-36s %13s %13s %15s\n' "ratios, CPU rdmanet / reference" "$REF_LABEL" "${NEW_LABEL:-(not run)}" "wall rdm/floor"
row "macvlan" rm qm nm fm
row "macvlan + embedded IPAM" re qm nm fm
row "hostdev" rh qh nh fh
row "hostdev + embedded IPAM" he qh nh fh
echo
printf '%-36s %13s %13s %15s\n' "IPAM as a whole process" "CPU ratio" "CPU ratio" "wall ratio"
printf '%-36s %13s %13s %15s\n' "rdmanet-ipam / host-local" "$(ratio "${CPU[ri]}" "${CPU[ip]}")" \
  "$( ((${#NEW[@]})) && ratio "${CPU[ri]}" "${CPU[np]}" || echo -)" "$(ratio "${WALL[ri]}" "${WALL[ip]}")"
printf '%-36s %13s %13s %15s\n' "rdmanet-ipam 60k pool / empty pool" "$(ratio "${CPU[r6]}" "${CPU[ri]}")" "" "$(ratio "${WALL[r6]}" "${WALL[ri]}")"
echo
R_MV=$(ratio "${CPU[re]}" "${CPU[qm]}")
R_HD=$(ratio "${CPU[he]}" "${CPU[qh]}")
R_60=$(ratio "${WALL[r6]}" "${WALL[ri]}")
R_60C=$(ratio "${CPU[r6]}" "${CPU[ri]}")
echo "targets:"
printf '  %-62s %6s  %s\n' "CPU rdmanet macvlan + embedded IPAM / reference $REF_LABEL <= 0.2" "$R_MV" "$(verdict "$R_MV" 0.2)"
printf '  %-62s %6s  %s\n' "CPU rdmanet hostdev + embedded IPAM / reference $REF_LABEL <= 0.2" "$R_HD" "$(verdict "$R_HD" 0.2)"
if ((${#NEW[@]})); then
  R_MVN=$(ratio "${CPU[re]}" "${CPU[nm]}")
  R_HDN=$(ratio "${CPU[he]}" "${CPU[nh]}")
  printf '  %-62s %6s  %s\n' "CPU rdmanet macvlan + embedded IPAM / reference $NEW_LABEL <= 0.2" "$R_MVN" "$(verdict "$R_MVN" 0.2)"
  printf '  %-62s %6s  %s\n' "CPU rdmanet hostdev + embedded IPAM / reference $NEW_LABEL <= 0.2" "$R_HDN" "$(verdict "$R_HDN" 0.2)"
fi
printf '  %-62s %6s  %s\n' "wall rdmanet-ipam ADD+DEL, 60k pool / empty pool <= 2" "$R_60" "$(verdict "$R_60" 2)"
printf '  %-62s %6s  %s\n' "CPU  rdmanet-ipam ADD+DEL, 60k pool / empty pool <= 2" "$R_60C" "$(verdict "$R_60C" 2)"
