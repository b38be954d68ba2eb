#!/usr/bin/env bash
# The kernel lab: rdmanet on a real kernel with real drivers, booted under QEMU (KVM when this
# machine offers it, else TCG), as root on a Debian 12 machine:
#   tests/lab/run_lab.sh <build-dir> [rxe|sriov|rdma73|arm64|arm64-16k]
# rxe (default): the RDMA paths on Debian 12's 6.1 kernel with soft-RoCE, on the system's QEMU.
# rdma73: RDMA traffic between pods (rping, perftest, ibv_rc_pingpong) on Linux 7.x soft-RoCE: the
#   kernel from Debian trixie-backports, unpacked into LAB_KERNEL73_CACHE (default
#   /var/cache/rdmanet-lab/kernel73) by tests/lab/fetch_kernel73.sh, never installed.
# sriov: the sriov mode on the same kernel with QEMU's emulated Intel 82576 (igb PF, igbvf VFs),
#   which needs QEMU >= 8: QEMU 10 from bookworm-backports, unpacked into LAB_QEMU_CACHE (default
#   /var/cache/rdmanet-lab/qemu) by tests/lab/fetch_qemu.sh, never installed over the system's.
# arm64, arm64-16k: <build-dir> is the arm64 cross build (tests/run.sh build --arch arm64); boots
#   Debian 12's arm64 kernel (6.1, 4K pages) or Debian 13's linux-image-arm64-16k (16K pages) under
#   qemu-system-aarch64 (TCG, -M virt -cpu max), both unpacked with an arm64 userland into
#   LAB_ARM64_CACHE (default /var/cache/rdmanet-lab/arm64) by tests/lab/fetch_arm64.sh; the
#   initramfs comes from tests/lab/build_initramfs_arm64.sh. Runs lab_arm64.sh (page size, the
#   static plugin starting, macvlan ADD/CHECK/DEL with the embedded IPAM) and the rxe suite's
#   sections without its integration_tests scenarios.
# Installs what is missing, builds an initramfs (tests/lab/build_initramfs.sh), boots it, lets the
# guest's /init run that suite's tests/lab/guest/*.sh and prints their results. Exit 0 only when
# the guest printed its summary line with no failure; non-zero on a failure, a crash or the time
# limit.
#
# Environment: LAB_TIMEOUT (seconds for boot + tests, default 1800: a hang guard sized for a
# loaded 2-CPU CI machine under TCG, not the expected duration), LAB_KEEP=1 keeps the temp dir,
# LAB_ACCEL=kvm|tcg overrides the accelerator probe. LAB_FAILPOINT_BUILD (sriov): a build dir
# configured with -DRDMANET_FAILPOINTS=ON with rdmanet built; the sriov suite then kills the plugin
# at each of its named steps (the failpoint walk), and skips that section without it. The serial console is also saved as
# <build-dir>/lab-console.log (rxe), <build-dir>/lab-sriov-console.log (sriov) or
# <build-dir>/lab-rdma73-console.log (rdma73).
#
# The kernel package goes to /boot like any Debian kernel. On a machine that boots from /boot this
# adds a boot entry (the host's bootloader would offer 6.1 too); containers and VMs that are
# started with an external kernel (as this CI machine is, see docs/development.md, "Kernel lab") ignore /boot.
set -euo pipefail

suite=${2:-rxe}
if [[ $# -lt 1 || $# -gt 2 || ! -d $1 || ! $suite =~ ^(rxe|sriov|rdma73|arm64|arm64-16k)$ ]]; then
  echo "usage: $0 <build-dir> [rxe|sriov|rdma73|arm64|arm64-16k]   (built: rdmanet rdmanetctl rdmanet-ipam," >&2
  echo "       and for rxe integration_tests, for sriov and rdma73 cni-driver)" >&2
  exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "run as root: the lab installs packages" >&2
  exit 1
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(realpath "$1")
timeout_s=${LAB_TIMEOUT:-1800}

packages=(qemu-system-x86 linux-image-amd64 busybox-static iproute2 rdma-core ibverbs-providers
          ibverbs-utils cpio kmod binutils)
# rdma73: the traffic tools the guest runs, and xz for the 7.x kernel's compressed modules.
[[ $suite == rdma73 ]] && packages+=(perftest rdmacm-utils util-linux xz-utils)
# arm64: instead, the aarch64 system emulator, xz for trixie's modules, the cross binutils
# (readelf, objcopy), qemu-user to list the arm64 busybox's applets; kernel and guest userland
# are unpacked by fetch_arm64.sh, not installed.
[[ $suite == arm64* ]] && packages=(qemu-system-arm cpio kmod xz-utils binutils-aarch64-linux-gnu qemu-user-static)
# shellcheck source=tests/ci/install_missing.sh
. "$here/../ci/install_missing.sh"
install_missing "${packages[@]}"

module_root=
if [[ $suite == arm64* ]]; then
  # arm64: the kernel (and its modules) is the arm64 package, unpacked, not an installed one.
  arm64_cache=${LAB_ARM64_CACHE:-/var/cache/rdmanet-lab/arm64}
  read -r kver kernel arm64_kroot < <("$here/fetch_arm64.sh" "$arm64_cache" "$([[ $suite == arm64-16k ]] && echo 16k || echo 4k)")
  [[ -n $kver && -r $kernel ]] || { echo "lab: fetch_arm64.sh found no arm64 kernel" >&2; exit 1; }
elif [[ $suite == rdma73 ]]; then
  # Linux 7.x from trixie-backports, unpacked into a cache (never installed): its soft-RoCE
  # carries RoCE between network namespaces.
  read -r kernel module_root kver < <("$here/fetch_kernel73.sh" "${LAB_KERNEL73_CACHE:-/var/cache/rdmanet-lab/kernel73}")
  module_root=${module_root%/usr/lib/modules/*}
  [[ -r $kernel && -d $module_root/lib/modules/$kver ]] || { echo "lab: no 7.x kernel in the cache" >&2; exit 1; }
else
  # The kernel version linux-image-amd64 points at (e.g. 6.1.0-56-amd64), not whatever runs here.
  kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 | sed -n 's/^linux-image-\([^ ,]*\).*/\1/p')
  kernel=/boot/vmlinuz-$kver
  if [[ -z $kver || ! -r $kernel || ! -d /lib/modules/$kver ]]; then
    echo "lab: no kernel for linux-image-amd64 ($kver): $kernel or /lib/modules/$kver missing" >&2
    exit 1
  fi
fi

work=$(mktemp -d /tmp/rdmanet-lab.XXXXXX)
cleanup() {
  if [[ -n ${LAB_KEEP:-} ]]; then echo "lab: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The emulator and its machine. rxe: the system's QEMU, default machine, no NIC. sriov: QEMU 10
# (fetched once, then cached), q35 with one igb behind a PCIe root port (SR-IOV needs PCIe
# extended capabilities), its uplink QEMU's user-mode network (nothing leaves this machine:
# the guest never configures an address on the PF).
qemu=(qemu-system-x86_64)
machine=(-nic none)
console=$build/lab-console.log
if [[ $suite == sriov ]]; then
  qemu_cache=${LAB_QEMU_CACHE:-/var/cache/rdmanet-lab/qemu}
  qemu_bin=$("$here/fetch_qemu.sh" "$qemu_cache")
  qemu=(env QEMU_MODULE_DIR="$qemu_cache/usr/lib/x86_64-linux-gnu/qemu")
  [[ -d $qemu_cache/libs ]] && qemu+=(LD_LIBRARY_PATH="$qemu_cache/libs")
  qemu+=("$qemu_bin" -L "$qemu_cache/usr/share/qemu" -L /usr/share/seabios)
  machine=(-M q35 -nic none -device pcie-root-port,id=rp1,slot=1
           -netdev user,id=n0,restrict=on -device igb,netdev=n0,bus=rp1)
  console=$build/lab-sriov-console.log
fi
[[ $suite == rdma73 ]] && console=$build/lab-rdma73-console.log
# arm64: QEMU's generic arm64 board, its PL011 UART as the console, TCG (no KVM across
# architectures); "-cpu max" has every feature the arm64 kernels may use (LSE, PAC, 16K granule).
kernel_args_arch=
if [[ $suite == arm64* ]]; then
  qemu=(qemu-system-aarch64)
  machine=(-M virt -nic none)
  console=$build/lab-$suite-console.log
  LAB_ACCEL=tcg
  kernel_args_arch=" console=ttyAMA0"
fi

# KVM when it works here, else TCG. /dev/kvm existing is not enough: on some hosts (nested or
# sandboxed KVM) QEMU aborts on an MSR that "-cpu host" passes through, or the guest kernel hangs
# right after the BIOS. The probe boots the lab's kernel with each CPU model (no initramfs:
# it panics at once and -no-reboot ends QEMU) and takes the first that prints the kernel's
# banner within 15 s; that costs 15-30 s when KVM does not work.
accel=${LAB_ACCEL:-}
cpu=(-cpu max)
probe_kvm() {
  timeout 15 "${qemu[@]}" -accel kvm -cpu "$1" "${machine[@]}" -smp 1 -m 256M -display none -no-reboot \
    -serial stdio -monitor none -kernel "$kernel" -append "console=ttyS0 earlyprintk=ttyS0 panic=-1" \
    </dev/null 2>/dev/null | grep -a -m1 -q 'Linux version'
}
if [[ -z $accel || $accel == kvm ]]; then
  accel=tcg
  if [[ -w /dev/kvm ]]; then
    for model in host host,-arch-capabilities; do
      if probe_kvm "$model"; then
        accel=kvm
        cpu=(-cpu "$model")
        break
      fi
    done
  fi
  [[ ${LAB_ACCEL:-} == kvm && $accel != kvm ]] && { echo "lab: LAB_ACCEL=kvm, but KVM does not work here" >&2; exit 1; }
fi

t0=$SECONDS
if [[ $suite == arm64* ]]; then
  "$here/build_initramfs_arm64.sh" "$build" "$arm64_kroot" "$kver" "$arm64_cache/userland" "$work/root" \
    "$work/initrd.cpio.gz" "$suite"
else
  LAB_MODULE_ROOT=$module_root "$here/build_initramfs.sh" "$build" "$kver" "$work/root" "$work/initrd.cpio.gz" "$suite"
fi
rm -rf "$work/root"
echo "== lab: initramfs ($suite) $(du -h "$work/initrd.cpio.gz" | cut -f1) built in $((SECONDS - t0))s; booting $kver under QEMU (${accel^^} ${cpu[1]}), limit ${timeout_s}s"

# no_timer_check: on a loaded host, TCG is too slow for the kernel's IO-APIC timer check, which
# then panics ("IO-APIC + timer doesn't work!"). mitigations=off: a throwaway test guest, and
# page-table isolation costs TCG a TLB flush per system call.
kernel_args="no_timer_check mitigations=off$kernel_args_arch"
# boot_guest [QEMU_ACCEL]: one boot of the guest, its console in $console; sets qemu_rc.
boot_guest() {
  local t1=$SECONDS
  set +e
  # -no-reboot: a guest reboot or panic ends QEMU; /init powers off when it is done. stdin is
  # /dev/null so nothing on the CI side can reach the QEMU monitor.
  timeout -k 10 "$timeout_s" "${qemu[@]}" \
    -accel "$1" "${cpu[@]}" -smp 2 -m 1G -nographic -no-reboot "${machine[@]}" \
    -kernel "$kernel" -initrd "$work/initrd.cpio.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init $kernel_args" \
    </dev/null 2>&1 | tr -d '\r' | tee "$console"
  qemu_rc=${PIPESTATUS[0]}
  set -e
  echo "== lab: guest ran $((SECONDS - t1))s (QEMU exit $qemu_rc); console saved to $console"
}
boot_guest "$accel"
# Multi-threaded TCG runs each vCPU on its own host thread, and a vCPU can still execute its old
# translation of kernel text that another vCPU has just patched: the 7.3 kernel then oopses on
# an int3 at a static-key site while it boots (seen once in CI, 1.3 s into the boot, before any
# lab code). That is the emulator, not the code under test, so a guest that crashed before /init
# started boots once more on single-threaded TCG, where the vCPUs share one translation. A crash
# after /init started is never retried.
if [[ $accel == tcg ]] && ! grep -a -q '^RDMANET-LAB-BOOTED ' "$console" &&
   grep -a -q -E 'Oops:|Kernel panic' "$console"; then
  cp "$console" "$console.first-boot"
  echo "== lab: the kernel crashed before /init (first console kept as $console.first-boot);" \
    "booting once more with single-threaded TCG"
  boot_guest tcg,thread=single
fi

summary=$(grep -a '^RDMANET-LAB-SUMMARY ' "$console" | tail -n 1 || true)
if [[ -z $summary ]]; then
  if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
    echo "lab: FAILED: time limit of ${timeout_s}s reached before the guest finished" >&2
  else
    echo "lab: FAILED: the guest stopped without printing its summary (QEMU exit $qemu_rc)" >&2
  fi
  exit 1
fi

echo "== lab: $summary"
failures=$(grep -a '^LAB-FAIL: ' "$console" || true)
if [[ -n $failures ]] || ! grep -q ' fail=0 ' <<<"$summary "; then
  echo "lab: FAILED checks:" >&2
  printf '%s\n' "$failures" >&2
  exit 1
fi
skips=$(grep -a '^LAB-SKIP: ' "$console" || true)
[[ -n $skips ]] && printf 'lab: skipped (not passed):\n%s\n' "$skips"
echo "lab: PASSED"
