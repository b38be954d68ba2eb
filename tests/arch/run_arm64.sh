#!/usr/bin/env bash
# The arm64 build's checks on this x86-64 machine, as root (tests/run.sh test runs them; ARM64=0
# skips them):
#   run_arm64.sh <build-arm64-dir>
# 1. The host binaries rdmanet and rdmanet-ipam, from their ELF headers: aarch64, fully static
#    (no interpreter, no shared library, no GLIBC_ symbol version), every LOAD segment aligned to
#    at least 64K (loads on 4K, 16K and 64K-page kernels), an .eh_frame_hdr segment and a
#    frame_dummy that registers nothing with the unwinder (the dynamic executables' crtbegin.o,
#    not crtbeginT.o: see docs/benchmarks.md). rdmanetctl: aarch64, 64K-aligned.
# 2. Under user-mode emulation (Debian's qemu-user-static, called explicitly: binfmt_misc is not
#    assumed): VERSION of both plugins, and a macvlan ADD/CHECK/DEL with the embedded IPAM on this
#    machine's real kernel, in two network namespaces the test makes ("host" with a veth master,
#    and the pod) and removes on exit. The embedded IPAM needs no second arm64 program (an exec'd
#    one would start natively and fail without binfmt_misc).
# 3. unit_tests (cross-built) under the emulator, when <build-dir>/bin/unit_tests exists: the
#    parsers, the allocator, the netlink message building and every other pure-logic test on a
#    different architecture (alignment, char signedness, long size are where they differ).
# Prints "ARM64-PASS:"/"ARM64-FAIL:" per check and "RDMANET-ARM64-SUMMARY pass=N fail=N"; exit 0
# only with no failure.
set -uo pipefail

if [[ $# -ne 1 || ! -d $1/bin ]]; then
  echo "usage: $0 <build-arm64-dir>   (tests/run.sh build --arch arm64 makes it)" >&2
  exit 2
fi
build=$(realpath "$1")
bin=$build/bin
qemu=qemu-aarch64-static
readelf=aarch64-linux-gnu-readelf
objdump=aarch64-linux-gnu-objdump
# rdmanetctl and unit_tests are dynamic arm64 programs: the emulator loads this machine's
# multiarch arm64 libraries (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu) from "/";
# yaml-cpp's shared library is in the private unpack tests/arch/build_arm64.sh made.
yaml_lib=$(sed -n 's/^RDMANET_ARM64_EXTRA_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")/lib/aarch64-linux-gnu
export QEMU_LD_PREFIX=/

pass=0
fail=0
# check <name> <command> [args...]
check() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then
    pass=$((pass + 1))
    echo "ARM64-PASS: $name"
  else
    fail=$((fail + 1))
    echo "ARM64-FAIL: $name"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/    | /'
  fi
}

# ---- 1. ELF properties -----------------------------------------------------------------------

is_aarch64() { $readelf -h "$1" | grep -q 'Machine:.*AArch64'; }
# Every LOAD's alignment (last column of readelf -lW) at least 0x10000.
load_aligned_64k() {
  local aligns
  aligns=$($readelf -lW "$1" | awk '$1 == "LOAD" {print $NF}')
  echo "LOAD alignments of $1: $aligns"
  [[ -n $aligns ]] || return 1
  for a in $aligns; do (( a >= 0x10000 )) || return 1; done
}
fully_static() {
  local h
  h=$($readelf -lW -d "$1")
  ! grep -q 'INTERP' <<<"$h" && ! grep -q '(NEEDED)' <<<"$h" &&
    ! $readelf -sW --dyn-syms "$1" | grep -q 'GLIBC_'
}
has_eh_frame_hdr() { $readelf -lW "$1" | grep -q 'GNU_EH_FRAME'; }
# frame_dummy of crtbeginT.o calls __register_frame_info (the first exception then sorts every
# FDE of the binary); crtbegin.o's only branches to register_tm_clones.
no_frame_registration() {
  local body
  body=$($objdump -d --no-show-raw-insn "$1" | awk '/<frame_dummy>:/ {p = 1; next} p && /^$/ {exit} p')
  echo "$body"
  [[ -n $body ]] && ! grep -q '__register_frame_info' <<<"$body"
}
for b in rdmanet rdmanet-ipam; do
  check "$b: aarch64 ELF" is_aarch64 "$bin/$b"
  check "$b: fully static (no interpreter, no shared library, no GLIBC_ symbol version)" fully_static "$bin/$b"
  check "$b: every LOAD segment aligned to >= 0x10000 (64K-page kernels)" load_aligned_64k "$bin/$b"
  check "$b: .eh_frame_hdr segment (the unwinder's binary-search table)" has_eh_frame_hdr "$bin/$b"
  check "$b: frame_dummy registers nothing with the unwinder (crtbegin.o, not crtbeginT.o)" \
    no_frame_registration "$bin/$b"
done
if [[ -x $bin/rdmanetctl ]]; then
  check "rdmanetctl: aarch64 ELF" is_aarch64 "$bin/rdmanetctl"
  check "rdmanetctl: every LOAD segment aligned to >= 0x10000" load_aligned_64k "$bin/rdmanetctl"
  ctl_help() { LD_LIBRARY_PATH=$yaml_lib $qemu "$bin/rdmanetctl" --help | grep -q 'rdma'; }
  check "rdmanetctl: --help runs under qemu-aarch64" ctl_help
fi

# ---- 2. the plugins under qemu-user on this kernel -------------------------------------------

version_ok() { CNI_COMMAND=VERSION $qemu "$1" </dev/null | grep -q '"supportedVersions":\["0.3.0"'; }
check "rdmanet: VERSION under qemu-aarch64" version_ok "$bin/rdmanet"
check "rdmanet-ipam: VERSION under qemu-aarch64" version_ok "$bin/rdmanet-ipam"

tag=a64$$
host_ns=$tag-host
pod_ns=$tag-pod
tmp=$(mktemp -d /tmp/rdmanet-arm64.XXXXXX)
cleanup() {
  ip netns del "$pod_ns" 2>/dev/null
  ip netns del "$host_ns" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# The node policy: state and IPAM data in this test's temp dir, nowhere else.
printf '{"stateDir":"%s/state","ipamDataDirs":["%s"],"logDir":"%s/log"}\n' "$tmp" "$tmp" "$tmp" >"$tmp/policy.json"
conf='{"cniVersion":"1.0.0","name":"a64net","type":"rdmanet","mode":"macvlan","master":"a64m",'
conf+='"ipam":{"type":"rdmanet-ipam","range":"10.79.0.0/24","data_dir":"'$tmp'/ipam"}}'
# cni <verb> <config>: the plugin run by the emulator inside the "host" namespace, as a runtime
# runs it (environment + config on stdin).
cni() {
  ip netns exec "$host_ns" env CNI_COMMAND="$1" CNI_CONTAINERID=c-arm64 CNI_NETNS="/run/netns/$pod_ns" \
    CNI_IFNAME=net1 CNI_PATH="$bin" RDMANET_POLICY_FILE="$tmp/policy.json" $qemu "$bin/rdmanet" <<<"$2"
}
if ip netns add "$host_ns" && ip netns add "$pod_ns" &&
   ip -n "$host_ns" link add a64m type veth peer name a64p && ip -n "$host_ns" link set a64m up; then
  # check runs its command in a subshell: the ADD result goes through a file.
  add() {
    cni ADD "$conf" >"$tmp/result" || { cat "$tmp/result"; return 1; }
    cat "$tmp/result"
    grep -q '"10\.79\.0\.' "$tmp/result"
  }
  check "macvlan + embedded IPAM under qemu-aarch64: ADD returns an address of the range" add
  result=$(cat "$tmp/result" 2>/dev/null)
  addr=$(grep -o '10\.79\.0\.[0-9]*/24' <<<"$result" | head -n 1)
  pod_addr() { ip -n "$pod_ns" -o addr show dev net1 | grep -q "inet ${addr:-none} "; }
  check "macvlan under qemu-aarch64: the pod's net1 has ${addr:-the address}" pod_addr
  check "macvlan under qemu-aarch64: CHECK with the ADD's result passes" \
    cni CHECK "${conf%\}},\"prevResult\":${result:-null}}"
  check "macvlan under qemu-aarch64: DEL succeeds" cni DEL "$conf"
  no_net1() { ! ip -n "$pod_ns" -o link show dev net1 2>/dev/null; }
  check "macvlan under qemu-aarch64: net1 is gone after DEL" no_net1
  check "macvlan under qemu-aarch64: a second DEL succeeds (idempotent)" cni DEL "$conf"
  bad_netns() {
    local out
    out=$(ip netns exec "$host_ns" env CNI_COMMAND=ADD CNI_CONTAINERID=c-bad CNI_NETNS=/proc/self/ns/mnt \
      CNI_IFNAME=net1 CNI_PATH="$bin" RDMANET_POLICY_FILE="$tmp/policy.json" $qemu "$bin/rdmanet" <<<"$conf")
    local rc=$?
    echo "exit $rc: $out"
    [[ $rc -ne 0 ]] && grep -q '"code"' <<<"$out"
  }
  # Under qemu 7.2 NS_GET_NSTYPE cannot tell (ENOSYS); a mount namespace file must still be refused
  # with a CNI error, not half-configured.
  check "ADD with a non-network namespace file fails with a CNI error under qemu-aarch64" bad_netns
else
  fail=$((fail + 1))
  echo "ARM64-FAIL: could not create the test namespaces $host_ns / $pod_ns with a veth master"
fi

# ---- 3. unit tests under the emulator --------------------------------------------------------

if [[ -x $bin/unit_tests ]]; then
  t0=$SECONDS
  unit() { (cd "$build" && LD_LIBRARY_PATH=$yaml_lib $qemu "$bin/unit_tests" -w NoTests); }
  check "unit_tests (aarch64) under qemu-aarch64" unit
  echo "== arm64: unit_tests ran $((SECONDS - t0))s under emulation"
else
  echo "ARM64-SKIP: unit_tests not built in $build (ARM64_TESTS=1 tests/arch/build_arm64.sh $build unit_tests)"
fi

echo "RDMANET-ARM64-SUMMARY pass=$pass fail=$fail"
((fail == 0))
