#!/usr/bin/env bash
# The two commands of README.md, for a fresh Debian 12 machine, as root:
#   tests/run.sh demo   install what is missing, build, run the two-pod demo
#   tests/run.sh test   install what is missing, build, run every test suite (one ctest summary)
#   tests/run.sh build [--arch arm64]   install what is missing, build the product only
#                       (--arch arm64: cross-built for aarch64 into build-arm64/bin)
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
  iputils-arping
)

# install_missing package...: apt-get installs those not installed yet.
install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# configure [cmake option...]: the main build, RelWithDebInfo, the product libraries compiled as
# unity batches (RDMANET_UNITY_BUILD in CMakeLists.txt: about half the CPU time of a clean build).
configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_UNITY_BUILD=ON "$@" >/dev/null
}

# build [target...]: builds the given targets (all when none is named) of the configured build.
build() {
  local targets=()
  (($#)) && targets=(--target "$@")
  cmake --build "$build" -j"$jobs" "${targets[@]}"
}

# The hardening pass: a clang build with ASan + UBSan, libFuzzer instrumentation and
# the crash failpoints. Runs the unit and integration suites and the failpoint walk under the
# sanitizers, then every fuzz target for FUZZ_SECONDS (default 60) from its seed corpus.
# On by default (CI runs it); HARDENING=0 skips it for a quick local run.
hardening() {
  local hbuild=${HARDENING_BUILD_DIR:-$build-hardening}
  # -O1 with line tables only: the sanitizers' usual setting, and about half the build time of
  # RelWithDebInfo on a 2-vCPU CI machine.
  CC=clang CXX=clang++ cmake -S "$root" -B "$hbuild" -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_FLAGS="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" \
    -DRDMANET_SANITIZE=ON -DRDMANET_FUZZ=ON -DRDMANET_FAILPOINTS=ON >/dev/null || return 1
  # Only what this pass runs: the unit, integration and e2e programs (and the binaries they exec)
  # and the fuzz targets; not the benchmarks.
  cmake --build "$hbuild" -j"$jobs" --target unit_tests integration_tests e2e_tests \
    $(cd "$root/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//') || return 1
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  (cd "$hbuild" && ctest --output-on-failure --timeout 900 -j"$jobs" -L 'unit|integration') || return 1
  (cd "$hbuild" && ctest --output-on-failure --timeout 900 -R 'failpoint walk') || return 1
  "$root/tests/fuzz/run_fuzz.sh" "$hbuild" "${FUZZ_SECONDS:-60}"
}

# The Kubernetes datastore's suite against a real kube-apiserver + etcd (ctest -L kubereal, see
# docs/development.md): Debian's etcd-server, and the kube-apiserver from ../shared/kube-apiserver/
# beside the checkout when it is there, decompressed once into /var/cache/rdmanet-test and checked
# against its SHA256SUMS (tests/apiserver/real_assets.sh). KUBEBUILDER_ASSETS set by the caller
# (their own envtest assets) is kept. Without a kube-apiserver those tests say so and are skipped.
real_apiserver_assets() {
  install_missing etcd-server
  # The package's own etcd service is not what the tests use: stopped, and kept from starting.
  if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
    systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
  [[ -n ${KUBEBUILDER_ASSETS:-} ]] && return 0
  local assets rc=0
  assets=$("$root/tests/apiserver/real_assets.sh" "$root/../shared/kube-apiserver" /var/cache/rdmanet-test) || rc=$?
  case $rc in
    0) export KUBEBUILDER_ASSETS=$assets
       echo "== real kube-apiserver suite: KUBEBUILDER_ASSETS=$assets" ;;
    1) echo "== real kube-apiserver suite: no kube-apiserver in $root/../shared/kube-apiserver: skipped" ;;
    *) return 1 ;;   # a hash mismatch (real_assets.sh said which): the run fails
  esac
}

# The stages of `test`: each is run by stage(), which records its result and time; a failed stage
# fails the run but never stops the ones after it. The summary at the end names each stage's
# result and minutes and the failing ctest entries, so that the tail of a long log says what failed.
stage_lines=()
run_status=0
stage() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  local took=$(( (SECONDS - start + 30) / 60 ))
  if ((rc)); then
    run_status=1
    stage_lines+=("FAILED  ${took} min  $name (exit $rc)")
  else
    stage_lines+=("ok      ${took} min  $name")
  fi
  return 0
}

# summary: each stage's line, then the ctest entries that failed in the main and hardening builds.
summary() {
  echo "== summary of tests/run.sh test (${SECONDS}s in all)"
  printf '  %s\n' "${stage_lines[@]}"
  local dir log
  for dir in "$build" "${HARDENING_BUILD_DIR:-$build-hardening}"; do
    log=$dir/Testing/Temporary/LastTestsFailed.log
    if [[ -s $log ]]; then
      echo "  failed ctest entries in $dir:"
      sed 's/^[0-9]*:/    /' "$log"
    fi
  done
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
  (cd "$build" && ctest --output-on-failure --timeout 600 -j"$jobs" "${image_filter[@]}")
}

# The sriov lab also kills the plugin at each failpoint step (the failpoint walk on the real igb
# driver): that needs the plugin built with -DRDMANET_FAILPOINTS=ON, a gcc build like the main one
# (static, runs in the guest) with only the rdmanet target (build dir $build-failpoints, or
# FAILPOINT_BUILD_DIR), compiled as unity batches like the main build. When it fails, the run fails
# and the lab skips that section.
failpoint_build() {
  cmake -S "$root" -B "$fp_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_UNITY_BUILD=ON \
    -DRDMANET_FAILPOINTS=ON >/dev/null &&
    cmake --build "$fp_build" -j"$jobs" --target rdmanet
}

sriov_lab() {
  local fp_env=(-u LAB_FAILPOINT_BUILD)
  [[ -x $fp_build/bin/rdmanet ]] && fp_env=(LAB_FAILPOINT_BUILD="$fp_build")
  env "${fp_env[@]}" "$root/tests/lab/run_lab.sh" "$build" sriov
}

# arm64 (aarch64, e.g. Grace nodes): cross-build the product and unit_tests (unity) into
# build-arm64 (BUILD_ARM64_DIR), check the binaries and run them and the unit tests under
# qemu-user (tests/arch/run_arm64.sh), build the multi-arch image (IMAGE=0 skips it) and boot the
# arm64 kernel lab on Debian's 4K and 16K-page kernels (LAB=0 skips it). Installs its own packages.
arm64_stages() {
  local arm64_build=${BUILD_ARM64_DIR:-$root/build-arm64}
  stage "arm64: cross build" env ARM64_TESTS=1 "$here/arch/build_arm64.sh" "$arm64_build" \
    rdmanet rdmanet-ipam rdmanetctl unit_tests
  [[ ${stage_lines[-1]} == ok* ]] || return 0   # nothing to run without the binaries
  stage "arm64: binaries and unit tests under qemu-user" "$here/arch/run_arm64.sh" "$arm64_build"
  if [[ ${IMAGE:-1} != 0 ]]; then
    echo "== arm64: multi-arch image"
    stage "arm64: multi-arch image" "$here/image/run_multiarch_test.sh" "$build" "$arm64_build"
  fi
  if [[ ${LAB:-1} != 0 ]]; then
    echo "== kernel lab: Debian 12 arm64 (4K pages) under qemu-system-aarch64"
    stage "kernel lab: arm64 (4K pages)" "$here/lab/run_lab.sh" "$arm64_build" arm64
    echo "== kernel lab: Debian 13 arm64-16k (16K pages) under qemu-system-aarch64"
    stage "kernel lab: arm64-16k (16K pages)" "$here/lab/run_lab.sh" "$arm64_build" arm64-16k
  fi
}

# `test`: install what is missing, build, run every suite, print the summary; exit 1 when any
# stage failed.
run_test_command() {
  install_missing "${test_packages[@]}"
  configure -DRDMANET_BUILD_TESTS=ON -DRDMANET_CHECK_FORMAT=ON
  stage "build (main, RelWithDebInfo)" build
  stage "real kube-apiserver assets" real_apiserver_assets
  stage "test names without ';'" test_names_without_semicolon
  stage "unit, integration, e2e and image suites (main build)" main_suites
  if [[ ${HARDENING:-1} != 0 ]]; then
    echo "== hardening: sanitizers, failpoint walk, fuzzing"
    stage "hardening: sanitizers, failpoint walk, fuzzing" hardening
  fi
  # Kernel lab (tests/lab): the RDMA paths on Debian's 6.1 kernel with soft-RoCE under QEMU, then
  # the sriov mode on the same kernel with QEMU 10's emulated igb (from bookworm-backports, unpacked
  # into a cache, the system's QEMU untouched); installs its own packages. On by default (CI runs
  # it); LAB=0 skips both, LAB_SRIOV=0 only the second.
  if [[ ${LAB:-1} != 0 ]]; then
    echo "== kernel lab: Debian 6.1 + soft-RoCE under QEMU"
    stage "kernel lab: 6.1 soft-RoCE" "$root/tests/lab/run_lab.sh" "$build" rxe
    if [[ ${LAB_SRIOV:-1} != 0 ]]; then
      echo "== failpoint build of rdmanet for the sriov lab"
      fp_build=${FAILPOINT_BUILD_DIR:-$build-failpoints}
      stage "failpoint build of rdmanet (sriov lab)" failpoint_build
      echo "== kernel lab: Debian 6.1 + igb SR-IOV VFs under QEMU 10"
      stage "kernel lab: 6.1 igb SR-IOV" sriov_lab
    fi
  fi
  # Kernel lab, rdma73 suite: RDMA traffic between pods (rping, perftest, ibv_rc_pingpong) on Linux
  # 7.3 soft-RoCE, the kernel from trixie-backports unpacked into a cache (never installed);
  # installs perftest and rdmacm-utils. LAB=0 or LAB_RDMA73=0 skips it.
  if [[ ${LAB:-1} != 0 && ${LAB_RDMA73:-1} != 0 ]]; then
    echo "== kernel lab: Linux 7.3 soft-RoCE, RDMA traffic between pods under QEMU"
    stage "kernel lab: 7.3 soft-RoCE RDMA traffic" "$root/tests/lab/run_lab.sh" "$build" rdma73
  fi
  if [[ ${ARM64:-1} != 0 ]]; then
    echo "== arm64: cross build, checks under qemu-user"
    arm64_stages
  fi
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
  *)
    echo "usage: $0 demo|test|build [--arch arm64]" >&2
    exit 2
    ;;
esac
