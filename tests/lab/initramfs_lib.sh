# shellcheck shell=bash
# What the initramfs builders share (build_initramfs.sh for x86-64 from this machine's files,
# build_initramfs_arm64.sh from an unpacked arm64 userland, node/build_node_guest.sh for the node
# lab); sourced, not run. The caller sets `root` (the staging dir), `build` (the build dir,
# absolute) and `here` (tests/lab). copy_libs ELF copies the libraries an ELF file needs into the
# root; the one below asks ldd (this machine's files), and the arm64 builder defines its own.
# The guest layout: a merged /usr (bin, sbin and lib are links into usr/), the project's programs
# at the same absolute paths as in the build dir, /lab/modules in insmod order, the in-guest
# scripts in /lab and /init.

# copy_file FILE: a host file into the root at its canonical path (symlinks resolved into the
# merged /usr), and the name it was asked for as a symlink when that differs.
copy_file() {
  local src=$1 real dest asked
  real=$(realpath "$src")
  dest="$root$real"
  if [[ ! -e $dest ]]; then
    mkdir -p "$(dirname "$dest")"
    cp "$real" "$dest"
  fi
  # Keep the requested name (e.g. libfoo.so.1 -> libfoo.so.1.2.3) reachable in the guest.
  asked=$(realpath -s "$src")
  asked=${asked/#\/lib\//\/usr\/lib\/}
  asked=${asked/#\/lib64\//\/usr\/lib64\/}
  asked=${asked/#\/bin\//\/usr\/bin\/}
  asked=${asked/#\/sbin\//\/usr\/sbin\/}
  if [[ $asked != "$real" && ! -e $root$asked ]]; then
    mkdir -p "$(dirname "$root$asked")"
    ln -s "$real" "$root$asked"
  fi
}

# copy_libs ELF: the shared libraries of an ELF file as ldd resolves them on this machine
# (nothing for static programs).
copy_libs() {
  local lib
  while read -r lib; do
    [[ -n $lib ]] && copy_file "$lib"
  done < <(ldd "$1" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}')
}

# copy_program FILE: a host program and its libraries.
copy_program() {
  copy_file "$1"
  copy_libs "$1"
}

# initramfs_skeleton: the empty root, with the merged-/usr links.
initramfs_skeleton() {
  rm -rf "$root"
  mkdir -p "$root"/usr/{bin,sbin,lib} "$root"/{etc,proc,sys,dev,run,tmp,var,root,lab}
  ln -s usr/bin "$root/bin"
  ln -s usr/sbin "$root/sbin"
  ln -s usr/lib "$root/lib"
  ln -s ../run "$root/var/run"
}

# initramfs_busybox BUSYBOX LIST_COMMAND...: a static busybox, and every applet that LIST_COMMAND
# (the busybox run with --list, under emulation for another architecture) names and the tools
# already copied do not replace, as a link in /usr/bin.
initramfs_busybox() {
  local busybox=$1 applet
  shift
  cp "$busybox" "$root/usr/bin/busybox"
  for applet in $("$@" --list); do
    [[ -e $root/usr/bin/$applet || -e $root/usr/sbin/$applet ]] && continue
    case $applet in init | linuxrc) continue ;; esac
    ln -s busybox "$root/usr/bin/$applet"
  done
  [[ -L $root/usr/bin/insmod ]] || { echo "initramfs: busybox lists no insmod" >&2; return 1; }
}

# initramfs_project OBJCOPY MACHINE PROGRAM...: the project's programs at their absolute paths,
# without debug info (the size of the initramfs), each of MACHINE (readelf -h's word), and their
# libraries; /lab/build_dir and /lab/suite tell the guest where they are and what to run.
initramfs_project() {
  local objcopy=$1 machine=$2 program
  shift 2
  for program in "$@"; do
    [[ -x $program ]] || { echo "missing $program (build it first)" >&2; return 1; }
    readelf -h "$program" | grep -q "Machine:.*$machine" ||
      { echo "$program is not a $machine program" >&2; return 1; }
    mkdir -p "$root$(dirname "$program")"
    "$objcopy" --strip-debug "$program" "$root$program"
    copy_libs "$root$program"
  done
  printf '%s\n' "$build" >"$root/lab/build_dir"
  printf '%s\n' "$suite" >"$root/lab/suite"
}

# initramfs_modules PLACE MODPROBE_OPTION... -- MODULE...: the modules with their dependencies,
# each once, in insmod order into /lab/modules, with the parameters modprobe.d gives them. PLACE
# is a function that copies one module file (path as modprobe prints it) into the root and prints
# its path in the guest.
initramfs_modules() {
  local place=$1 verb path params module guest
  shift
  local options=()
  while [[ $1 != -- ]]; do options+=("$1"); shift; done
  shift
  : >"$root/lab/modules"
  declare -A seen=()
  for module in "$@"; do
    while read -r verb path params; do
      [[ $verb == insmod ]] || continue
      [[ -n ${seen[$path]:-} ]] && continue
      seen[$path]=1
      guest=$("$place" "$path") || return 1
      printf '%s %s\n' "$guest" "$params" >>"$root/lab/modules"
    done < <(modprobe "${options[@]}" --show-depends "$module")
  done
}

# initramfs_pack OUTPUT: the in-guest scripts and /init, then the gzip'd newc cpio.
initramfs_pack() {
  case $build in
    /run/* | /proc/* | /sys/* | /dev/*)
      echo "the build dir $build is hidden in the guest by a mount; use another one" >&2
      return 1 ;;
  esac
  cp "$here"/guest/*.sh "$root/lab/"
  install -m 0755 "$here/guest/init" "$root/init"
  (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$1"
}
