#!/usr/bin/env bash
# One command for every benchmark in tests/bench: runs them, writes a Markdown report and a PNG
# chart (gnuplot), and replaces the block between the `bench-report` markers in docs/benchmarks.md
# (the one place the figures are printed; README.md links to it).
#
#   sudo tests/bench/report.sh [BUILD_DIR] [ITERATIONS]      (defaults: ./build, 30)
#
# Outputs (committed together so the figures and the chart match):
#   docs/benchmarks.md, between the markers   the tables (nowhere else)
#   tests/bench/report/benchmark.png          CPU and wall per ADD+DEL, rdmanet vs reference vs floor
# Extra benchmarks are picked up when their executables exist: bin/ipam_bench (in-process IPAM),
# tests/bench/kube_bench.sh (Kubernetes datastore against the test API server).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
n=${2:-30}
out="$here/report"
mkdir -p "$out"
work=$(mktemp -d /tmp/rdmanet-report.XXXXXX)
trap 'rm -rf "$work"' EXIT

command -v gnuplot >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox
}

# The newest reference plugins, when tests/run.sh peers (or bench) built them: a second column.
# shellcheck source=tests/peers/peer_env.sh
. "$root/tests/peers/peer_env.sh"
[[ -n ${RDMANET_PEER_CNI_PLUGINS:-} ]] ||
  echo "== the newest reference plugins are not built (tests/run.sh peers cni-plugins): Debian's column only"
echo "== process benchmark (run_bench.sh, $n iterations)"
BENCH_TSV="$work/process.tsv" "$here/run_bench.sh" "$build" "$n" | tee "$work/process.txt"

echo "== in-process IPAM (ipam_bench)"
"$build/bin/ipam_bench" | tee "$work/ipam.txt"

kube_section=""
if [[ -x "$here/kube_bench.sh" ]]; then
  echo "== Kubernetes datastore (kube_bench.sh)"
  "$here/kube_bench.sh" "$build" | tee "$work/kube.txt"
  kube_section=$(printf '\n### Kubernetes datastore\n\n```\n%s\n```\n' "$(cat "$work/kube.txt")")
fi

val() { awk -F'\t' -v k="$1" -v c="$2" '$1 == k { print $c }' "$work/process.tsv"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }

{
  echo "Measured $(date -u +%Y-%m-%d) on $(nproc) vCPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg);"
  echo "\`tests/bench/report.sh build $n\` (median of $n ADD+DEL pairs, one process per verb)."
  echo
  echo "| per ADD+DEL (ms) | median CPU | median wall | p90 wall |"
  echo "| --- | ---: | ---: | ---: |"
  while IFS=$'\t' read -r key label cpu wall p90; do
    echo "| $label | $cpu | $wall | $p90 |"
  done <"$work/process.tsv"
  echo
  # Two reference columns when run_bench.sh measured the newest plugins too (rows nm, nh, np).
  newest=$(val nm 2 | sed -n 's/.*(\(.*\))$/\1/p')
  debian=$(val qm 2 | sed -n 's/.*(\(.*\))$/\1/p')
  if [[ -n $newest ]]; then
    echo "| ratio | CPU rdmanet / reference ($debian) | CPU rdmanet / reference ($newest) | wall rdmanet / kernel floor |"
    echo "| --- | ---: | ---: | ---: |"
  else
    echo "| ratio | CPU rdmanet / reference${debian:+ ($debian)} | wall rdmanet / kernel floor |"
    echo "| --- | ---: | ---: |"
  fi
  # ratio_row LABEL RDMANET REFERENCE NEWEST FLOOR
  ratio_row() {
    local cols="| $1 | $(ratio "$(val "$2" 3)" "$(val "$3" 3)") |"
    [[ -n $newest ]] && cols+=" $(ratio "$(val "$2" 3)" "$(val "$4" 3)") |"
    echo "$cols $(ratio "$(val "$2" 4)" "$(val "$5" 4)") |"
  }
  ratio_row "macvlan + host-local" rm qm nm fm
  ratio_row "macvlan + embedded IPAM" re qm nm fm
  ratio_row "hostdev + host-local" rh qh nh fh
  ratio_row "hostdev + embedded IPAM" he qh nh fh
  [[ -n $newest ]] && echo "| rdmanet-ipam / host-local (whole processes) | $(ratio "$(val ri 3)" "$(val ip 3)") | $(ratio "$(val ri 3)" "$(val np 3)") | |"
  echo
  echo "In-process IPAM, µs per allocate+release (\`build/bin/ipam_bench\`, IPv6 with 1M allocations):"
  echo
  echo "| range | allocations | median µs | p99 µs |"
  echo "| --- | ---: | ---: | ---: |"
  awk 'NR > 2 && NF >= 8 { printf "| %s %s | %s | %s | %s |\n", $1, $2, $3, $4, $6 }' "$work/ipam.txt"
  printf '%s\n' "$kube_section"
  echo
  echo "![ADD+DEL cost per configuration](../tests/bench/report/benchmark.png)"   # relative to docs/
} >"$work/benchmark.md"

# Chart: grouped bars, median CPU and median wall per configuration (the IPAM-alone rows left out).
grep -v -E '^(ip|ri|r6|np)\b' "$work/process.tsv" >"$work/chart.tsv"
gnuplot <<GP
set terminal pngcairo size 1100,520 noenhanced font ",10"
set output "$out/benchmark.png"
set datafile separator "\t"
set title "ADD+DEL per configuration (median, ms): rdmanet vs reference plugins (Debian, newest) vs kernel floor"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -25 left
set ylabel "ms"
set grid ytics
set key top left
set bmargin 8
plot "$work/chart.tsv" using 3:xtic(2) title "CPU", "" using 4 title "wall"
GP

# docs/benchmarks.md: replace what lies between the markers with the report (markers kept).
page="$root/docs/benchmarks.md"
grep -q '<!-- bench-report:begin -->' "$page" && grep -q '<!-- bench-report:end -->' "$page" ||
  { echo "$page has no bench-report markers" >&2; exit 1; }
awk -v report="$work/benchmark.md" '
  /<!-- bench-report:begin -->/ { print; while ((getline line < report) > 0) print line; skip = 1; next }
  /<!-- bench-report:end -->/ { skip = 0 }
  !skip { print }' "$page" >"$work/benchmarks.md"
cat "$work/benchmarks.md" >"$page"
echo "== wrote the benchmark block of docs/benchmarks.md and $out/benchmark.png"
