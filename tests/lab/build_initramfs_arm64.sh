#!/usr/bin/env bash
# Builds the arm64 kernel lab's initramfs (a gzip'd newc cpio) from the cross-built binaries and
# an arm64 userland unpacked from Debian's .debs (tests/lab/fetch_arm64.sh), not from this
# machine's own (x86-64) files as build_initramfs.sh does:
#   build_initramfs_arm64.sh <build-dir> <kernel-root> <kernel-version> <userland> <staging-dir> \
#     <output.cpio.gz> <suite>
# <build-dir>: the cross build (tests/arch/build_arm64.sh) with rdmanet, rdmanet-ipam, rdmanetctl.
# <kernel-root>: the unpacked kernel package with modules.dep (lib/modules/<kernel-version>).
# Same guest layout and /init as the x86-64 lab: merged /usr, the project's programs at the same
# absolute paths as in the build dir, /lab/modules in insmod order, the in-guest scripts. ldd
# cannot inspect arm64 programs here, so each program's libraries are found from its ELF headers
# (NEEDED entries and the program interpreter) in the userland, then in this machine's multiarch
# arm64 libraries; a library found in neither fails the build instead of the boot.
set -euo pipefail

build=$(realpath "$1")
kroot=$(realpath "$2")
kver=$3
userland=$(realpath "$4")
root=$5
out=$6
suite=$7
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lab/initramfs_lib.sh
. "$here/initramfs_lib.sh"
readelf=aarch64-linux-gnu-readelf
objcopy=aarch64-linux-gnu-objcopy

# The x86-64 lab's modules (see build_initramfs.sh for why crc32_generic and configfs).
modules=(crc32_generic ib_core ib_uverbs rdma_rxe rdma_cm configfs veth macvlan dummy 8021q bridge)
tools=(bash ip rdma ibv_devinfo ibv_devices timeout)
project=("$build/bin/rdmanet" "$build/bin/rdmanetctl" "$build/bin/rdmanet-ipam")
libdirs=("$userland/lib/aarch64-linux-gnu" "$userland/usr/lib/aarch64-linux-gnu" /usr/lib/aarch64-linux-gnu)

initramfs_skeleton
mkdir -p "$root/usr/lib/aarch64-linux-gnu"

# copy_libs <elf-in-root>: its interpreter and NEEDED libraries (recursively), each once, into
# /usr/lib/aarch64-linux-gnu (on Debian's arm64 ld.so search path; /lib is a link to usr/lib).
declare -A have=()
copy_libs() {
  local elf=$1 interp soname dir found
  interp=$($readelf -l "$elf" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
  if [[ -n $interp && ! -e $root$interp ]]; then
    found=$(readlink -f "$userland$interp") || true
    [[ -f $found ]] || { echo "build_initramfs_arm64: interpreter $interp not in $userland" >&2; return 1; }
    mkdir -p "$(dirname "$root$interp")"
    cp "$found" "$root/usr/lib/aarch64-linux-gnu/$(basename "$interp")"
    [[ -e $root$interp ]] || ln -s "aarch64-linux-gnu/$(basename "$interp")" "$root$interp"
  fi
  for soname in $($readelf -d "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ -n ${have[$soname]:-} ]] && continue
    found=
    for dir in "${libdirs[@]}"; do
      [[ -e $dir/$soname ]] && { found=$dir/$soname; break; }
    done
    [[ -n $found ]] || { echo "build_initramfs_arm64: $soname (needed by ${elf#"$root"}) not found" >&2; return 1; }
    have[$soname]=1
    cp -L "$found" "$root/usr/lib/aarch64-linux-gnu/$soname"
    copy_libs "$root/usr/lib/aarch64-linux-gnu/$soname"
  done
}

# A userland program by name, from wherever its package put it, into /usr/bin.
for tool in "${tools[@]}"; do
  src=
  for dir in bin sbin usr/bin usr/sbin; do
    [[ -f $userland/$dir/$tool ]] && { src=$userland/$dir/$tool; break; }
  done
  [[ -n $src ]] || { echo "build_initramfs_arm64: $tool not in $userland" >&2; exit 1; }
  cp -L "$src" "$root/usr/bin/$tool"
  copy_libs "$root/usr/bin/$tool"
done

# busybox (static): every applet the tools above do not replace, listed by the arm64 busybox
# itself under user-mode emulation.
initramfs_busybox "$userland/bin/busybox" qemu-aarch64-static "$userland/bin/busybox"

# libibverbs' providers and their driver files, as on a Debian host.
mkdir -p "$root/etc/libibverbs.d" "$root/usr/lib/aarch64-linux-gnu/libibverbs"
cp "$userland"/etc/libibverbs.d/*.driver "$root/etc/libibverbs.d/"
for provider in "$userland"/usr/lib/aarch64-linux-gnu/libibverbs/*.so; do
  cp -L "$provider" "$root/usr/lib/aarch64-linux-gnu/libibverbs/"
  copy_libs "$root/usr/lib/aarch64-linux-gnu/libibverbs/$(basename "$provider")"
done

# The project's programs (tests/run.sh build --arch arm64), which must be aarch64.
initramfs_project "$objcopy" AArch64 "${project[@]}"
# The page size the guest's kernel must report (lab_arm64.sh checks it): 16 for the -16k flavour.
case $kver in *-16k) echo 16 ;; *) echo 4 ;; esac >"$root/lab/page_kb"

# Kernel modules in dependency order, at their path in the guest.
place_module() {
  local guest=/lib/modules/$kver/${1#*/lib/modules/"$kver"/}
  mkdir -p "$(dirname "$root$guest")"
  cp "$1" "$root$guest"
  echo "$guest"
}
initramfs_modules place_module -d "$kroot" -S "$kver" -- "${modules[@]}"

initramfs_pack "$out"
