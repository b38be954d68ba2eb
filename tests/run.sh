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

packages=(
  g++ cmake make pkg-config
  libnl-3-dev libnl-route-3-dev libnl-genl-3-dev rdma-core libibverbs-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev catch2
  libsqlite3-dev libcurl4-openssl-dev libyaml-cpp-dev libcpp-httplib-dev
  golang-go golang-github-appc-cni-dev containernetworking-plugins
  iproute2 iputils-ping procps
)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

build_all() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j"$jobs"
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
    install_missing
    build_all
    exec "$root/tests/demo/run_demo.sh" "$build"
    ;;
  test)
    need_root
    install_missing
    build_all
    cd "$build"
    exec ctest --output-on-failure --timeout 600 -j"$jobs"
    ;;
  *)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
