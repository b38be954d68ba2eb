#!/usr/bin/env bash
# The two commands of README.md, for a fresh Debian 12 machine, as root:
#   tests/run.sh demo   install what is missing, build, run the two-pod demo
#   tests/run.sh test   install what is missing, build, run every test suite (one ctest summary)
#   tests/run.sh build [--arch arm64]   install what is missing, build the product only
#                       (--arch arm64: cross-built for aarch64 into build-arm64/bin)
#   tests/run.sh peers [name...]        build the real peers (kube-apiserver, etcd, whereabouts,
#                       Multus, ...) from their pinned Go modules into /var/cache/rdmanet-peers
#   tests/run.sh bench [ITERATIONS [POD_ITERATIONS]]
#                                       build and run the whole-process and multi-rail benchmarks
#                                       against Debian's and the newest reference plugins (never
#                                       part of `test`)
#   tests/run.sh fuzz [SECONDS]         every fuzz target for SECONDS (default 600) each
#   tests/run.sh lab SUITE              one kernel lab: rxe, sriov, rdma73 or node (docs/kernel-lab.md)
# BUILD_DIR (default ./build) and JOBS (default nproc) can be set in the environment.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

# What `demo` needs: the compiler and build tools, the product's libraries, Go and Debian's libcni
# for bin/cni-driver, and ip + ping for the pods. About 180 MB of downloads on a minimal Debian 12.
demo_packages=(
  g++ cmake make pkg-config
  libnl-3-dev libnl-route-3-dev libibverbs-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libyaml-cpp-dev libssl-dev
  golang-go golang-github-appc-cni-dev
  iproute2 iputils-ping
)
# `test` needs the demo's packages and the suites' own: Catch2, cpp-httplib (test API server),
# the reference CNI plugins, podman/runc/mmdebstrap (node image, host compatibility), clang with
# its sanitizer runtimes (hardening pass), clang-format (the style check), jq and openssl for the
# scripts.
test_packages=(
  "${demo_packages[@]}"
  libnl-genl-3-dev rdma-core catch2 libcpp-httplib-dev openssl
  containernetworking-plugins procps jq mmdebstrap podman runc
  clang libclang-rt-14-dev clang-format
  iputils-arping ccache curl
)

# shellcheck source=tests/ci/install_missing.sh
. "$here/ci/install_missing.sh"

# ccache under every C++ build (main, sanitizers, failpoints, and the arm64 cross build, which reads
# the same environment). The cache lives outside the checkout and is size-capped; CCACHE_BASEDIR
# and CCACHE_NOHASHDIR make its entries independent of the checkout's folder, so a fresh clone of
# the same sources (CI clones into a new folder each time) compiles nothing again. Without ccache
# on the machine the builds run uncached.
ccache_launcher=()
use_ccache() {
  command -v ccache >/dev/null || return 0
  export CCACHE_DIR=${RDMANET_CCACHE_DIR:-/var/cache/rdmanet-ccache}
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE=${RDMANET_CCACHE_SIZE:-10G}
  # The test programs compile with a precompiled header: ccache caches those compilations only
  # with these sloppinesses (its manual, "Precompiled headers").
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  mkdir -p "$CCACHE_DIR"
  ccache --zero-stats >/dev/null
  ccache_launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
}

# ccache_line: the hit rate of this run's compilations, for the summary.
ccache_line() {
  ((${#ccache_launcher[@]})) || { echo "ccache: not installed, builds uncached"; return; }
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hit += $2 }
    $1 == "cache_miss" { miss += $2 }
    $1 == "cache_size_kibibyte" { size = $2 }
    END {
      total = hit + miss
      printf "ccache: %d of %d compilations from the cache (%.0f%%), cache %.1f GiB in %s\n",
        hit, total, total ? 100 * hit / total : 0, size / 1048576, ENVIRON["CCACHE_DIR"]
    }'
}

# configure [cmake option...]: the main build, RelWithDebInfo, the product libraries compiled as
# unity batches (RDMANET_UNITY_BUILD in CMakeLists.txt: about half the CPU time of a clean build).
configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_UNITY_BUILD=ON \
    "${ccache_launcher[@]}" "$@" >/dev/null
}

# build [target...]: builds the given targets (all when none is named) of the configured build.
build() {
  local targets=()
  (($#)) && targets=(--target "$@")
  cmake --build "$build" -j"$jobs" "${targets[@]}"
}

# The hardening build: clang with ASan + UBSan, libFuzzer instrumentation and the failpoints,
# -O1 with line tables only (the sanitizers' usual setting), the product libraries in unity
# batches like the main build. Only what the hardening stages run: the unit, integration and e2e
# programs (and the binaries they exec) and the fuzz targets; not the benchmarks.
hbuild=${HARDENING_BUILD_DIR:-$build-hardening}
hardening_configure() {
  CC=clang CXX=clang++ cmake -S "$root" -B "$hbuild" -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_FLAGS="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" \
    -DRDMANET_UNITY_BUILD=ON -DRDMANET_BUILD_BENCH=OFF "${ccache_launcher[@]}" \
    -DRDMANET_SANITIZE=ON -DRDMANET_FUZZ=ON -DRDMANET_FAILPOINTS=ON >/dev/null
}
fuzz_targets() { (cd "$root/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//'); }
hardening_build() {
  hardening_configure || return 1
  cmake --build "$hbuild" -j"$jobs" --target unit_tests integration_tests e2e_tests $(fuzz_targets)
}

# The unit and integration suites and the failpoint and error walks under the sanitizers.
hardening_suites() {
  [[ -x $hbuild/bin/e2e_tests ]] || { echo "no hardening build in $hbuild" >&2; return 1; }
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  local rc=0
  # (The helm entries' program is not part of this build: its peer rule runs in the main suites.)
  (cd "$hbuild" && ctest --output-on-failure --timeout 900 -j"$jobs" -L 'unit|integration' -LE helm) || rc=1
  (cd "$hbuild" && ctest --output-on-failure --timeout 900 -R 'failpoint walk') || rc=1
  return $rc
}

# Every fuzz target of the hardening build for FUZZ_SECONDS each (default 30: the 10 targets two
# at a time take about 3 minutes), from its seed corpus and the corpus the earlier runs kept
# under /var/cache/rdmanet-fuzz (FUZZ_CORPUS_DIR). `tests/run.sh fuzz SECONDS` runs longer.
fuzz_corpus=${FUZZ_CORPUS_DIR:-/var/cache/rdmanet-fuzz}
fuzzing() {
  FUZZ_CORPUS_DIR=$fuzz_corpus "$root/tests/fuzz/run_fuzz.sh" "$hbuild" "${1:-${FUZZ_SECONDS:-30}}"
}

# The Kubernetes-side suites against the real peers (tests/peers): `peers` builds what the suites
# need into /var/cache/rdmanet-peers (or reuses it) and exports RDMANET_PEER_<NAME> for them.
# In CI (CI set) a suite whose peer is missing fails; elsewhere it skips with a message.
peers_cache=${PEERS_CACHE:-/var/cache/rdmanet-peers}
suite_peers=(etcd kube-1.37 kube-1.34 whereabouts cnitool cni-plugins multus helm kustomize)
node_lab_peers=(kube-node-1.37 kubectl-1.37 containerd containerd-node dranet)
# On a machine without the peers' cache their build is most of an hour of CPU, and much of `test`
# leaves a core idle (downloads, guests booting, suites waiting on processes): `test` starts the
# build in the background at once, at a lower priority. It builds the suites' peers first, then
# the node lab's: the peers stage waits only for the first part, so the Kubernetes suites run
# while the node lab's peers build, and the node lab's stage waits for the second part.
peers_pid=
peers_log=
start_peers_build() {
  peers_log=$(mktemp -d /tmp/rdmanet-peers-build.XXXXXX)
  ( build_part() { # build_part PART name...: one part, its log and exit status in $peers_log/PART.*
      local part=$1 rc=0
      shift
      nice -n 10 env PEERS_CACHE="$peers_cache" "$here/peers/build_peers.sh" "$@" \
        >"$peers_log/$part.out" 2>"$peers_log/$part.err" || rc=$?
      echo "$rc" >"$peers_log/$part.rc"
    }
    build_part suites "${suite_peers[@]}"
    if [[ ${LAB:-1} != 0 ]]; then build_part node-lab "${node_lab_peers[@]}"; fi
  ) &
  peers_pid=$!
  echo "== peers: building or reusing ${suite_peers[*]} in the background (logs in $peers_log)"
  [[ ${LAB:-1} == 0 ]] || echo "== peers: then the node lab's: ${node_lab_peers[*]}"
}
# wait_peers_part PART: waits for that part of the background build, prints its log, fails when
# it failed, and exports RDMANET_PEER_<NAME> for every peer built so far.
wait_peers_part() {
  [[ -n $peers_pid ]] || { echo "the peers' background build was not started" >&2; return 1; }
  while [[ ! -f $peers_log/$1.rc ]]; do
    kill -0 "$peers_pid" 2>/dev/null || [[ -f $peers_log/$1.rc ]] ||
      { echo "the peers' background build ended before its part '$1'" >&2; return 1; }
    sleep 2
  done
  cat "$peers_log/$1.err" "$peers_log/$1.out"
  [[ $(cat "$peers_log/$1.rc") == 0 ]] || return 1
  # shellcheck source=tests/peers/peer_env.sh
  PEERS_CACHE=$peers_cache . "$here/peers/peer_env.sh"
}
node_lab() {
  wait_peers_part node-lab && "$here/lab/run_node_lab.sh" "$build"
}

# ctest splits a test name at ';' (one Catch2 test case would become two failing ctest entries).
test_names_without_semicolon() {
  if grep -rn --include='*.cpp' 'TEST_CASE("[^"]*;' "$root/tests"; then
    echo "run.sh: a TEST_CASE name above contains ';': ctest would split it; use ',' instead" >&2
    return 1
  fi
}

# The node image suite (ctest -L image, tests/image/run_image_test.sh) builds the image from the
# binaries just built (no second compile: ~10 s, plus 1 to 3 min once for the Debian base on a
# machine without one) and runs its containers. IMAGE=0 skips it.
main_suites() {
  local image_filter=()
  [[ ${IMAGE:-1} == 0 ]] && image_filter=(-LE image)
  # Not the suites that need the real peers: they run in their own stages, after the peers.
  (cd "$build" && ctest --output-on-failure --timeout 600 -j"$jobs" -LE 'kubereal|interop|peer-whereabouts' \
    -E '^helm: the chart \(' "${image_filter[@]}")
}

# The sriov lab also kills the plugin at each failpoint step (the failpoint walk on the real igb
# driver): that needs the plugin built with -DRDMANET_FAILPOINTS=ON, a gcc build like the main one
# (static, runs in the guest) with only the rdmanet target (build dir $build-failpoints, or
# FAILPOINT_BUILD_DIR), compiled as unity batches like the main build.
fp_build=${FAILPOINT_BUILD_DIR:-$build-failpoints}
failpoint_build() {
  cmake -S "$root" -B "$fp_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_UNITY_BUILD=ON \
    -DRDMANET_BUILD_TESTS=OFF -DRDMANET_FAILPOINTS=ON "${ccache_launcher[@]}" >/dev/null &&
    cmake --build "$fp_build" -j"$jobs" --target rdmanet
}

sriov_lab() {
  [[ -x $fp_build/bin/rdmanet ]] || { echo "no failpoint build of rdmanet in $fp_build" >&2; return 1; }
  LAB_FAILPOINT_BUILD="$fp_build" "$root/tests/lab/run_lab.sh" "$build" sriov
}

# --- the stages of `test` -------------------------------------------------------------------
# Every stage is listed in tests/ci/stages.txt with its budget in minutes (the time it takes with
# warm caches on the 2-vCPU CI machine, plus a margin). stage() runs one, records its result and
# time, and warns when it took longer than its budget; a failed stage fails the run but never
# stops the ones after it. skip_stages() records the stages a switch turned off: that fails the run
# in CI. At the end every listed stage must have been recorded, so one quietly dropped fails too.
stages_file=$here/ci/stages.txt
stage_lines=()
stage_warnings=()
stages_seen=()
run_status=0
stage_budget() {
  awk -F' *\\| *' -v n="$1" '!/^#/ && $2 == n { print $1 }' "$stages_file"
}
record_stage() {   # record_stage NAME STATUS-TEXT SECONDS [failed]
  local name=$1 text=$2 secs=$3 budget
  budget=$(stage_budget "$name")
  stages_seen+=("$name")
  if [[ -z $budget ]]; then
    run_status=1
    stage_warnings+=("stage '$name' is not listed in tests/ci/stages.txt")
    budget='?'
  fi
  stage_lines+=("$(awk -v t="$text" -v s="$secs" -v b="$budget" -v n="$name" \
                    'BEGIN { printf "%-8s %5.1f min (budget %3s)  %s", t, s / 60, b, n }')")
  echo "== stage result: ${stage_lines[-1]}"
  if [[ $budget != '?' ]] && ((secs > budget * 60)); then
    stage_warnings+=("WARNING: '$name' took $((secs / 60)) min $((secs % 60)) s, over its budget of $budget min")
  fi
}
stage() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "== stage: $name"
  "$@" || rc=$?
  if ((rc)); then
    run_status=1
    record_stage "$name" "FAILED" $((SECONDS - start))
    echo "== stage FAILED (exit $rc): $name"
  else
    record_stage "$name" "ok" $((SECONDS - start))
  fi
  return 0
}
skip_stages() {   # skip_stages WHY NAME...: stages a switch turned off
  local why=$1 name
  shift
  for name in "$@"; do
    echo "== stage skipped ($why): $name"
    if [[ -n ${CI:-} ]]; then
      run_status=1
      record_stage "$name" "FAILED" 0
      stage_warnings+=("'$name' was skipped ($why), which CI does not allow")
    else
      record_stage "$name" "skipped" 0
    fi
  done
}
not_run() {   # not_run WHY NAME...: stages that could not run because one before them failed
  local why=$1 name
  shift
  run_status=1
  for name in "$@"; do record_stage "$name" "FAILED" 0; done
  stage_warnings+=("did not run ($why): $(printf "'%s' " "$@")")
}
# last_stage_ok: whether the stage recorded last passed.
last_stage_ok() { [[ ${stage_lines[-1]} == ok* ]]; }

# summary: each stage's line, the ccache hit rate, the warnings, the stages of the list that did
# not run, then the ctest entries that failed in the main and hardening builds.
summary() {
  echo "== summary of tests/run.sh test (${SECONDS}s in all, $((SECONDS / 60)) min)"
  printf '  %s\n' "${stage_lines[@]}"
  echo "  $(ccache_line)"
  local name missing=()
  while IFS= read -r name; do
    [[ " ${stages_seen[*]/%/|} " == *" $name|"* ]] || missing+=("$name")
  done < <(awk -F' *\\| *' '!/^#/ && NF >= 2 { print $2 }' "$stages_file")
  if ((${#missing[@]})); then
    run_status=1
    for name in "${missing[@]}"; do stage_warnings+=("stage '$name' of tests/ci/stages.txt did not run"); done
  fi
  ((${#stage_warnings[@]})) && printf '  %s\n' "${stage_warnings[@]}"
  local dir log
  for dir in "$build" "$hbuild"; do
    log=$dir/Testing/Temporary/LastTestsFailed.log
    if [[ -s $log ]]; then
      echo "  failed ctest entries in $dir:"
      sed 's/^[0-9]*:/    /' "$log"
    fi
  done
  echo "== tests/run.sh test: $([[ $run_status == 0 ]] && echo PASSED || echo FAILED)"
}

# arm64 (aarch64, e.g. Grace nodes): cross-build the product and unit_tests (unity) into
# build-arm64 (BUILD_ARM64_DIR), check the binaries and run them and the unit tests under
# qemu-user (tests/arch/run_arm64.sh), build the multi-arch image (IMAGE=0 skips it) and boot the
# arm64 kernel lab on Debian's 4K and 16K-page kernels (LAB=0 skips it). Installs its own packages.
arm64_stages() {
  local arm64_build=${BUILD_ARM64_DIR:-$root/build-arm64}
  local after=("arm64: binaries and unit tests under qemu-user" "arm64: multi-arch image"
               "kernel lab: arm64 (4K pages)" "kernel lab: arm64-16k (16K pages)")
  stage "arm64: cross build" env ARM64_TESTS=1 "$here/arch/build_arm64.sh" "$arm64_build" \
    rdmanet rdmanet-ipam rdmanetctl unit_tests
  if ! last_stage_ok; then
    not_run "the arm64 cross build failed" "${after[@]}"
    return 0
  fi
  stage "${after[0]}" "$here/arch/run_arm64.sh" "$arm64_build"
  if [[ ${IMAGE:-1} != 0 ]]; then
    stage "${after[1]}" "$here/image/run_multiarch_test.sh" "$build" "$arm64_build"
  else
    skip_stages "IMAGE=0" "${after[1]}"
  fi
  if [[ ${LAB:-1} != 0 ]]; then
    stage "${after[2]}" "$here/lab/run_lab.sh" "$arm64_build" arm64
    stage "${after[3]}" "$here/lab/run_lab.sh" "$arm64_build" arm64-16k
  else
    skip_stages "LAB=0" "${after[2]}" "${after[3]}"
  fi
}

# The suites against the real peers: kube-apiserver 1.37 and 1.34 with etcd 3.6 (ctest -L kubereal,
# tests/peers/kubereal.sh), the whereabouts, Multus and cnitool interop (ctest -L interop) and the
# Helm chart's checks (tests/helm/check_chart.sh). PEERS=0 skips them.
peer_stages() {
  local names=("peers: build or reuse" "kubereal: kube-apiserver 1.37 + etcd 3.6"
               "kubereal: kube-apiserver 1.34 + etcd 3.6" "interop: whereabouts, Multus, cnitool"
               "helm: lint, template, kustomize parity, server-side dry run"
               "kernel lab: node (kubelet, containerd, Multus, DRANET)") name
  if [[ ${PEERS:-1} == 0 ]]; then
    skip_stages "PEERS=0" "${names[@]}"
    return 0
  fi
  stage "${names[0]}" wait_peers_part suites
  stage "${names[1]}" "$here/peers/kubereal.sh" "$build" kube-1.37
  stage "${names[2]}" "$here/peers/kubereal.sh" "$build" kube-1.34
  stage "${names[3]}" bash -c 'cd "$1" && ctest --output-on-failure --timeout 900 -L "interop|peer-whereabouts"' _ "$build"
  stage "${names[4]}" "$here/helm/check_chart.sh" "$build"
  # The node lab (tests/lab/run_node_lab.sh): a real kubelet, containerd and DRANET in a 7.3 guest.
  if [[ ${LAB:-1} != 0 ]]; then
    stage "${names[5]}" node_lab
  else
    skip_stages "LAB=0" "${names[5]}"
  fi
}

# The machine's own rdmanet paths must come out of the suites as they went in
# (tests/ci/machine_paths.sh): a test that reads or writes them acts on what is not its own.
guard_file=
guard_before() {
  guard_file=$(mktemp /tmp/rdmanet-machine-paths.XXXXXX)
  "$here/ci/machine_paths.sh" snapshot >"$guard_file"
}
guard_after() {
  [[ -n $guard_file ]] || { echo "no snapshot of the machine's paths was taken" >&2; return 1; }
  "$here/ci/machine_paths.sh" compare "$guard_file"
}

# `test`: install what is missing, build, run every suite, print the summary; exit 1 when any
# stage failed. The switches HARDENING=0, LAB=0 (LAB_SRIOV=0, LAB_RDMA73=0), ARM64=0, IMAGE=0 and
# PEERS=0 skip parts for a quick local run; CI fails on any of them.
run_test_command() {
  [[ ${PEERS:-1} != 0 ]] && start_peers_build
  stage "packages" install_missing "${test_packages[@]}"
  use_ccache
  configure -DRDMANET_BUILD_TESTS=ON -DRDMANET_CHECK_FORMAT=ON -DRDMANET_BUILD_BENCH=OFF
  stage "build (main, RelWithDebInfo)" build
  stage "test names without ';'" test_names_without_semicolon
  guard_before
  stage "unit, integration, e2e, style, hostcompat and image suites (main build)" main_suites
  if [[ ${HARDENING:-1} != 0 ]]; then
    stage "hardening: clang ASan/UBSan build" hardening_build
    if last_stage_ok; then
      stage "hardening: suites, failpoint and error walks under the sanitizers" hardening_suites
      stage "hardening: fuzzing" fuzzing
    else
      not_run "the sanitizer build failed" "hardening: suites, failpoint and error walks under the sanitizers" \
        "hardening: fuzzing"
    fi
  else
    skip_stages "HARDENING=0" "hardening: clang ASan/UBSan build" \
      "hardening: suites, failpoint and error walks under the sanitizers" "hardening: fuzzing"
  fi
  # Kernel lab (tests/lab): the RDMA paths on Debian's 6.1 kernel with soft-RoCE under QEMU, then
  # the sriov mode on the same kernel with QEMU 10's emulated igb (from bookworm-backports, unpacked
  # into a cache, the system's QEMU untouched), then RDMA traffic between pods on Linux 7.3
  # soft-RoCE (the kernel from trixie-backports, unpacked into a cache, never installed).
  if [[ ${LAB:-1} != 0 ]]; then
    stage "kernel lab: 6.1 soft-RoCE" "$root/tests/lab/run_lab.sh" "$build" rxe
    if [[ ${LAB_SRIOV:-1} != 0 ]]; then
      stage "failpoint build of rdmanet (sriov lab)" failpoint_build
      stage "kernel lab: 6.1 igb SR-IOV" sriov_lab
    else
      skip_stages "LAB_SRIOV=0" "failpoint build of rdmanet (sriov lab)" "kernel lab: 6.1 igb SR-IOV"
    fi
    if [[ ${LAB_RDMA73:-1} != 0 ]]; then
      stage "kernel lab: 7.3 soft-RoCE RDMA traffic" "$root/tests/lab/run_lab.sh" "$build" rdma73
    else
      skip_stages "LAB_RDMA73=0" "kernel lab: 7.3 soft-RoCE RDMA traffic"
    fi
  else
    skip_stages "LAB=0" "kernel lab: 6.1 soft-RoCE" "failpoint build of rdmanet (sriov lab)" \
      "kernel lab: 6.1 igb SR-IOV" "kernel lab: 7.3 soft-RoCE RDMA traffic"
  fi
  if [[ ${ARM64:-1} != 0 ]]; then
    arm64_stages
  else
    skip_stages "ARM64=0" "arm64: cross build" "arm64: binaries and unit tests under qemu-user" \
      "arm64: multi-arch image" "kernel lab: arm64 (4K pages)" "kernel lab: arm64-16k (16K pages)"
  fi
  peer_stages
  stage "the machine's rdmanet paths unchanged by the suites" guard_after
  summary
  exit $run_status
}
need_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "run as root: the tests create network namespaces and links" >&2
    exit 1
  fi
}

case "${1:-}" in
  build)
    # build [--arch arm64]: install what is missing and build the product (rdmanet, rdmanet-ipam,
    # rdmanetctl) into $build/bin; --arch arm64 cross-builds it for aarch64 into build-arm64/bin
    # (tests/arch/build_arm64.sh, BUILD_ARM64_DIR to change it).
    need_root
    case "${2:-}/${3:-}" in
      /) install_missing "${demo_packages[@]}"
         configure -DRDMANET_BUILD_TESTS=OFF
         build rdmanet rdmanet-ipam rdmanetctl ;;
      --arch/arm64) exec "$here/arch/build_arm64.sh" "${BUILD_ARM64_DIR:-$root/build-arm64}" ;;
      *) echo "usage: $0 build [--arch arm64]" >&2; exit 2 ;;
    esac
    ;;
  demo)
    need_root
    install_missing "${demo_packages[@]}"
    # Only what the demo runs: without the suites (so neither Catch2 nor cpp-httplib is needed),
    # `all` is the plugins, rdmanetctl and the libcni driver. One target, not four: CMake's
    # Makefiles build named targets one after the other, which left one core idle for a minute.
    configure -DRDMANET_BUILD_TESTS=OFF
    build
    exec "$root/tests/demo/run_demo.sh" "$build"
    ;;
  test)
    need_root
    run_test_command
    ;;
  peers)
    # peers [name...]: build the real peers (all when none is named) from their pinned Go modules
    # into /var/cache/rdmanet-peers (PEERS_CACHE), or reuse them; one line per peer: name version path.
    need_root
    shift
    exec env PEERS_CACHE="$peers_cache" "$here/peers/build_peers.sh" "$@"
    ;;
  bench)
    # bench [ITERATIONS [POD_ITERATIONS]]: build the benchmark helpers with the main build and run
    # the whole-process benchmark and the 8-rail pod side by side with the reference plugins
    # (tests/bench/run_bench.sh, multirail_bench.sh; docs/benchmarks.md lists the others).
    need_root
    install_missing "${test_packages[@]}"
    use_ccache
    configure -DRDMANET_BUILD_TESTS=ON -DRDMANET_BUILD_BENCH=ON
    build rdmanet rdmanet-ipam rdmanetctl kernel_floor bench_measure ipam_bench ipam_prefill
    # The second reference column: the newest reference plugins, built from their module.
    env PEERS_CACHE="$peers_cache" "$here/peers/build_peers.sh" cni-plugins
    PEERS_CACHE=$peers_cache . "$here/peers/peer_env.sh"
    "$here/bench/run_bench.sh" "$build" "${2:-50}"
    echo
    exec "$here/bench/multirail_bench.sh" "$build" "${3:-10}"
    ;;
  lab)
    # lab SUITE: build what the labs run and boot one of them: rxe, sriov, rdma73 (tests/lab/
    # run_lab.sh) or node (tests/lab/run_node_lab.sh: kubelet, containerd, Multus and DRANET).
    case "${2:-}" in
      node) lab=("$here/lab/run_node_lab.sh" "$build") ;;
      rxe | sriov | rdma73) lab=("$here/lab/run_lab.sh" "$build" "$2") ;;
      *) echo "usage: $0 lab rxe|sriov|rdma73|node" >&2; exit 2 ;;
    esac
    need_root
    install_missing "${test_packages[@]}"
    use_ccache
    configure -DRDMANET_BUILD_TESTS=ON
    build rdmanet rdmanet-ipam rdmanetctl cni-driver integration_tests
    exec "${lab[@]}"
    ;;
  fuzz)
    # fuzz [SECONDS]: the hardening build's fuzz targets, each for SECONDS (default 600), from the
    # kept corpus under /var/cache/rdmanet-fuzz, which the run grows.
    need_root
    install_missing "${test_packages[@]}"
    use_ccache
    hardening_configure
    cmake --build "$hbuild" -j"$jobs" --target $(fuzz_targets)
    fuzzing "${2:-600}"
    ;;
  *)
    echo "usage: $0 demo|test|build [--arch arm64]|peers [name...]|bench [ITERATIONS [POD_ITERATIONS]]|fuzz [SECONDS]|lab SUITE" >&2
    exit 2
    ;;
esac
