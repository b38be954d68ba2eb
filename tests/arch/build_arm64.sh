#!/usr/bin/env bash
# Cross-builds rdmanet for arm64 (aarch64) on this x86-64 Debian 12 machine, as root:
#   build_arm64.sh <build-dir> [target...]     (default targets: rdmanet rdmanet-ipam rdmanetctl)
# tests/run.sh build --arch arm64 calls it with build-arm64/; the executables land in
# <build-dir>/bin. Installs what is missing: Debian's cross toolchain and the arm64 multiarch
# -dev packages (after dpkg --add-architecture arm64), and qemu-user-static for the arm64 tests.
# libyaml-cpp-dev:arm64 is not installed: it conflicts with the amd64 one (apt would remove
# libyaml-cpp-dev), so its .deb is unpacked into ARM64_CACHE (default /var/cache/rdmanet-arm64)
# and the toolchain file (deploy/toolchains/aarch64-linux-gnu.cmake) searches it first; only
# libyaml-cpp.a and its CMake/pkg-config files differ between the architectures.
# The :arm64 packages must have the same version as their amd64 twins (Multi-Arch: same), so
# apt may first upgrade a few amd64 libraries to the archive's current point release.
# Unity build, RelWithDebInfo like the native build. ARM64_TESTS=1 also configures the suites
# (Catch2, cpp-httplib:arm64) so that unit_tests can be built.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$1
shift
targets=("$@")
((${#targets[@]})) || targets=(rdmanet rdmanet-ipam rdmanetctl)
cache=${ARM64_CACHE:-/var/cache/rdmanet-arm64}
jobs=${JOBS:-$(nproc)}

# The arm64 libraries the product links (see the top-level CMakeLists.txt), and for the suites
# cpp-httplib (the test API server is part of the tests' CMake project).
arm64_dev=(libnl-3-dev libnl-route-3-dev libibverbs-dev libsqlite3-dev libssl-dev libspdlog-dev libfmt-dev)
[[ ${ARM64_TESTS:-0} == 1 ]] && arm64_dev+=(libcpp-httplib-dev)
# Build-machine packages: the cross compiler, the arch-independent headers, CMake, the emulator.
host_packages=(crossbuild-essential-arm64 cmake make pkg-config nlohmann-json3-dev libcli11-dev
               libyaml-cpp-dev qemu-user-static)
[[ ${ARM64_TESTS:-0} == 1 ]] && host_packages+=(catch2 file jq)   # file, jq: the multi-arch image test

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "== arm64: dpkg --add-architecture arm64"
  dpkg --add-architecture arm64
  apt-get update -qq
fi
# shellcheck source=tests/ci/install_missing.sh
. "$here/../ci/install_missing.sh"
install_missing "${host_packages[@]}" "${arm64_dev[@]/%/:arm64}"

# libyaml-cpp-dev:arm64 and its shared library package (yaml-cpp's CMake file checks the .so
# exists; the product links the .a), the same version as the installed amd64 ones, unpacked
# privately.
yaml_version=$(dpkg-query -W -f='${Version}' libyaml-cpp-dev)
yaml_lib=$(dpkg-query -W -f='${Depends}' libyaml-cpp-dev | grep -o 'libyaml-cpp[0-9][0-9.]*' | head -n 1)
yaml_root=$cache/yaml-cpp-$yaml_version
if [[ ! -f $yaml_root/.complete ]]; then
  rm -rf "$yaml_root" "$cache/debs"
  mkdir -p "$cache/debs"
  chown _apt "$cache/debs" 2>/dev/null || true   # apt downloads as _apt
  (cd "$cache/debs" && apt-get download -qq "libyaml-cpp-dev:arm64=$yaml_version" "$yaml_lib:arm64=$yaml_version")
  for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$yaml_root"; done
  rm -rf "$cache/debs"
  [[ -f $yaml_root/usr/lib/aarch64-linux-gnu/libyaml-cpp.a ]] ||
    { echo "arm64: libyaml-cpp.a missing from libyaml-cpp-dev:arm64" >&2; exit 1; }
  touch "$yaml_root/.complete"
fi

# Through ccache when tests/run.sh set it up (CCACHE_DIR exported): the cross compiler's
# entries live beside the native ones.
launcher=()
[[ -n ${CCACHE_DIR:-} ]] && command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -U: the yaml-cpp paths found are searched again (the private tree's name has the version).
cmake -S "$root" -B "$build" -UYAML_CPP_STATIC -Uyaml-cpp_DIR -DCMAKE_TOOLCHAIN_FILE="$root/deploy/toolchains/aarch64-linux-gnu.cmake" \
  -DRDMANET_ARM64_EXTRA_PREFIX="$yaml_root/usr" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DRDMANET_BUILD_BENCH=OFF \
  -DRDMANET_UNITY_BUILD=ON -DRDMANET_BUILD_TESTS="$([[ ${ARM64_TESTS:-0} == 1 ]] && echo ON || echo OFF)" >/dev/null
# One cmake --build per target list: Makefiles build named targets one after the other.
t0=$SECONDS
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
echo "== arm64: built ${targets[*]} in $((SECONDS - t0))s into $build/bin"
