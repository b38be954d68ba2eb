#!/usr/bin/env bash
# The two commands of README.md, for a fresh Debian 12 machine, as root:
#   tests/run.sh demo   install what is missing, build, run the two-pod demo
#   tests/run.sh test   install what is missing, build, run every test suite (one ctest summary)
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
# its sanitizer runtimes (hardening pass), jq and openssl for the scripts.
test_packages=(
  "${demo_packages[@]}"
  libnl-genl-3-dev rdma-core catch2 libcpp-httplib-dev openssl
  containernetworking-plugins procps jq mmdebstrap podman runc
  clang libclang-rt-14-dev
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
    -DRDMANET_SANITIZE=ON -DRDMANET_FUZZ=ON -DRDMANET_FAILPOINTS=ON >/dev/null
  # Only what this pass runs: the unit, integration and e2e programs (and the binaries they exec)
  # and the fuzz targets; not the benchmarks.
  cmake --build "$hbuild" -j"$jobs" --target unit_tests integration_tests e2e_tests \
    $(cd "$root/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//')
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  (cd "$hbuild" && ctest --output-on-failure --timeout 900 -j"$jobs" -L 'unit|integration') || return 1
  (cd "$hbuild" && ctest --output-on-failure --timeout 900 -R 'failpoint walk') || return 1
  "$root/tests/fuzz/run_fuzz.sh" "$hbuild" "${FUZZ_SECONDS:-60}"
}

need_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "run as root: the tests create network namespaces and links" >&2
    exit 1
  fi
}

case "${1:-}" in
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
    install_missing "${test_packages[@]}"
    configure -DRDMANET_BUILD_TESTS=ON
    build
    status=0
    # ctest splits a test name at ';' (one Catch2 test case would become two failing ctest entries).
    if grep -rn --include='*.cpp' 'TEST_CASE("[^"]*;' "$root/tests"; then
      echo "run.sh: a TEST_CASE name above contains ';': ctest would split it; use ',' instead" >&2
      status=1
    fi
    # The node image suite (ctest -L image, tests/image/run_image_test.sh) builds the image from
    # the binaries just built (no second compile: ~10 s, plus 1 to 3 min once for the Debian base on
    # a machine without one) and runs its containers. IMAGE=0 skips it.
    image_filter=()
    [[ ${IMAGE:-1} == 0 ]] && image_filter=(-LE image)
    (cd "$build" && ctest --output-on-failure --timeout 600 -j"$jobs" "${image_filter[@]}") || status=1
    if [[ ${HARDENING:-1} != 0 ]]; then
      echo "== hardening: sanitizers, failpoint walk, fuzzing"
      hardening || status=1
    fi
    # Kernel lab (tests/lab): the RDMA paths on Debian's 6.1 kernel with soft-RoCE under QEMU,
    # then the sriov mode on the same kernel with QEMU 10's emulated igb (from bookworm-backports,
    # unpacked into a cache, the system's QEMU untouched); installs its own packages. On by
    # default (CI runs it); LAB=0 skips both, LAB_SRIOV=0 only the second.
    if [[ ${LAB:-1} != 0 ]]; then
      echo "== kernel lab: Debian 6.1 + soft-RoCE under QEMU"
      "$root/tests/lab/run_lab.sh" "$build" rxe || status=1
      if [[ ${LAB_SRIOV:-1} != 0 ]]; then
        # The sriov lab also kills the plugin at each failpoint step (the failpoint walk on the
        # real igb driver): that needs the plugin built with -DRDMANET_FAILPOINTS=ON, a gcc build
        # like the main one (static, runs in the guest) with only the rdmanet target (build dir
        # $build-failpoints, or FAILPOINT_BUILD_DIR): 94 compile units, about an eighth of the
        # main build's. When it fails, the run fails and the lab skips that section.
        echo "== failpoint build of rdmanet for the sriov lab"
        fp_build=${FAILPOINT_BUILD_DIR:-$build-failpoints}
        fp_env=(-u LAB_FAILPOINT_BUILD)
        if cmake -S "$root" -B "$fp_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMANET_FAILPOINTS=ON >/dev/null &&
           cmake --build "$fp_build" -j"$jobs" --target rdmanet; then
          fp_env=(LAB_FAILPOINT_BUILD="$fp_build")
        else
          status=1
        fi
        echo "== kernel lab: Debian 6.1 + igb SR-IOV VFs under QEMU 10"
        env "${fp_env[@]}" "$root/tests/lab/run_lab.sh" "$build" sriov || status=1
      fi
    fi
    exit $status
    ;;
  *)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
