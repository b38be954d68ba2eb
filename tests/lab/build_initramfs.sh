#!/usr/bin/env bash
# Builds the kernel lab's initramfs (a gzip'd newc cpio) from what is installed on this machine:
#   build_initramfs.sh <build-dir> <kernel-version> <staging-dir> <output.cpio.gz> [suite]
# suite: "rxe" (default: soft-RoCE, rdmanet's RDMA paths), "sriov" (adds the igb/igbvf drivers
# and the libcni driver bin/cni-driver, a static Go program) or "rdma73" (Linux 7.x modules from
# LAB_MODULE_ROOT, perftest/rdmacm-utils, bin/cni-driver); /init runs that suite's scripts.
# Contents: busybox (every applet the real tools below do not replace), iproute2's `ip` and `rdma`,
# ibverbs-utils, libibverbs with all its providers and /etc/libibverbs.d, the kernel modules the
# lab needs (dependency order from `modprobe -S <ver> --show-depends`, loaded by /init with insmod),
# the project's executables and integration test program at the same absolute paths as in the
# build dir (the test programs have RDMANET_BIN_DIR compiled in), each with the shared libraries
# ldd names, and the in-guest scripts from tests/lab/guest. The layout mirrors the host's merged
# /usr (bin, sbin, lib, lib64 are symlinks into usr/), so every path ldd prints resolves.
# LAB_FAILPOINT_BUILD (sriov only): a build dir configured with -DRDMANET_FAILPOINTS=ON; its
# bin/rdmanet goes to /lab/fp-bin and the step names of include/rdmanet/base/failpoint.hpp's
# kFailpoints to /lab/failpoints, for the sriov suite's failpoint walk (skipped without them).
set -euo pipefail

build=$(realpath "$1")
kver=$2
root=$3
out=$4
suite=${5:-rxe}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lab/initramfs_lib.sh
. "$here/initramfs_lib.sh"

# Kernel modules, each with its dependencies (insmod order). crc32_generic must be loaded by
# hand before `rdma link add ... type rxe`: rdma_rxe asks the crypto API for "crc32" at link
# creation, and that is not a module dependency.
# rdma_cm (with configfs): the rdma.tos checks write default_roce_tos through its configfs.
modules=(crc32_generic ib_core ib_uverbs rdma_rxe rdma_cm configfs veth macvlan dummy 8021q bridge)
# sriov: Intel 82576 PF (igb) and VF (igbvf) drivers, for QEMU's emulated igb.
[[ $suite == sriov ]] && modules+=(igb igbvf)
# rdma73: Linux 7.x from LAB_MODULE_ROOT (an unpacked Debian kernel, tests/lab/fetch_kernel73.sh).
# Its rxe computes CRC32 through the kernel's crc32 library (no crypto module to load first);
# rdma_ucm is the /dev/infiniband/rdma_cm that rping and perftest's -R use.
if [[ $suite == rdma73 ]]; then
  modules=(ib_core ib_uverbs rdma_rxe rdma_cm rdma_ucm configfs veth macvlan)
fi
module_root=${LAB_MODULE_ROOT:-}

# Host tools the guest runs (copied with their libraries). busybox provides the rest. The scripts
# run in bash: Debian's busybox-static is built to prefer its own applets in its shell, so `ip`
# in a busybox script would be busybox's cut-down ip, not iproute2's.
tools=(/usr/bin/bash /usr/sbin/ip /usr/bin/rdma /usr/bin/ibv_devinfo /usr/bin/ibv_devices
       /usr/bin/timeout)
# rdma73: the traffic tools (perftest, rdmacm-utils, ibverbs-utils) and util-linux's taskset
# (server and client on different CPUs) and setpriv (the memlock checks as uid 1000).
[[ $suite == rdma73 ]] && tools+=(/usr/bin/ib_write_bw /usr/bin/ib_send_bw /usr/bin/rping /usr/bin/ucmatose
                                  /usr/bin/ibv_rc_pingpong /usr/bin/taskset /usr/bin/setpriv)

# The project's programs (must exist: the lab exercises them).
project=("$build/bin/rdmanet" "$build/bin/rdmanetctl" "$build/bin/rdmanet-ipam")
case $suite in
  sriov | rdma73) project+=("$build/bin/cni-driver") ;;
  *) project+=("$build/bin/integration_tests") ;;
esac

initramfs_skeleton
mkdir -p "$root/usr/lib64"
ln -s usr/lib64 "$root/lib64"

for tool in "${tools[@]}"; do copy_program "$tool"; done
# glibc loads libgcc_s at run time (dlopen) for pthread_exit/cancellation, which rping's threads
# use; ldd does not list it.
[[ $suite == rdma73 ]] && copy_file /usr/lib/x86_64-linux-gnu/libgcc_s.so.1

# busybox: every other applet as a symlink in /usr/bin (mount, insmod, sed, ...).
initramfs_busybox /usr/bin/busybox /usr/bin/busybox

# libibverbs loads providers by the driver files' names; all of them, so enumeration behaves as
# on a Debian host (only rxe finds a device).
mkdir -p "$root/etc/libibverbs.d"
cp /etc/libibverbs.d/*.driver "$root/etc/libibverbs.d/"
for provider in /usr/lib/x86_64-linux-gnu/libibverbs/*.so; do copy_program "$provider"; done

initramfs_project objcopy X86-64 "${project[@]}"

# The failpoint build's plugin, in a directory of its own: the guest points libcni's CNI path at
# it only for the armed calls, and the normal binaries do the recovery. Only rdmanet: the lab's
# configurations use the embedded IPAM ("type": "rdmanet-ipam" runs inside rdmanet), so libcni
# never executes a separate rdmanet-ipam. The step names come from the header's kFailpoints, the
# list the host-side walks iterate, so a step added there is walked here too.
fp_build=${LAB_FAILPOINT_BUILD:-}
if [[ $suite == sriov && -n $fp_build ]]; then
  fp_plugin=$(realpath "$fp_build")/bin/rdmanet
  [[ -x $fp_plugin ]] || { echo "LAB_FAILPOINT_BUILD: missing $fp_plugin (build rdmanet there first)" >&2; exit 1; }
  grep -q '^RDMANET_FAILPOINTS:BOOL=ON$' "$fp_build/CMakeCache.txt" 2>/dev/null ||
    { echo "LAB_FAILPOINT_BUILD: $fp_build is not configured with -DRDMANET_FAILPOINTS=ON" >&2; exit 1; }
  mkdir -p "$root/lab/fp-bin"
  objcopy --strip-debug "$fp_plugin" "$root/lab/fp-bin/rdmanet"
  copy_libs "$fp_plugin"
  sed -n '/kFailpoints = {/,/};/p' "$here/../../include/rdmanet/base/failpoint.hpp" |
    grep -o '"[a-z_]*"' | tr -d '"' >"$root/lab/failpoints"
  [[ -s $root/lab/failpoints ]] || { echo "no step names found in failpoint.hpp's kFailpoints" >&2; exit 1; }
fi

# Kernel modules in dependency order. From LAB_MODULE_ROOT: Debian 13 kernels ship xz-compressed
# modules and busybox insmod loads plain ones, so they are unpacked into /lab/mod; from this
# machine: at their own path.
place_module() {
  local plain
  if [[ -n $module_root ]]; then
    mkdir -p "$root/lab/mod"
    plain=/lab/mod/$(basename "${1%.xz}")
    if [[ $1 == *.xz ]]; then xz -dc "$1" >"$root$plain"; else cp "$1" "$root$plain"; fi
    echo "$plain"
  else
    copy_file "$1"
    echo "$1"
  fi
}
initramfs_modules place_module ${module_root:+-d "$module_root"} -S "$kver" -- "${modules[@]}"

# Dynamic linker configuration and cache for the copied libraries.
cp /etc/ld.so.conf "$root/etc/"
cp -r /etc/ld.so.conf.d "$root/etc/"
ldconfig -r "$root" 2>/dev/null || true

initramfs_pack "$out"
