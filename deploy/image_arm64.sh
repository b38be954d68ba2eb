#!/usr/bin/env bash
# Makes the linux/arm64 node image from the linux/amd64 one that deploy/build_image.sh just built,
# on an x86-64 machine that cannot run arm64 programs in a build (no binfmt_misc needed):
#   deploy/image_arm64.sh <amd64-image> <staged-arm64-bin-dir> <arm64-image>
# <staged-arm64-bin-dir> holds rdmanet, rdmanet-ipam and rdmanetctl for aarch64, debug info
# stripped (build_image.sh stages them from an arm64 cross build).
#
# The Dockerfile's final stage is a Debian 12 base plus two apt packages, and apt's maintainer
# scripts are what an arm64 build could not run here. So the amd64 image's filesystem is taken
# as it is (users, CA bundle, alternatives, dpkg database: every effect of the scripts) and each
# package of architecture amd64 in its dpkg database is replaced by the arm64 build of the same
# version, from apt (its files removed, the arm64 .deb's unpacked, the database entry switched
# to arm64); the architecture-independent packages stay. The dynamic linker's cache is rebuilt by
# the arm64 ldconfig (a static program) under qemu-aarch64-static, and the three binaries are
# swapped for the arm64 ones with the same modes. The result is imported and given the amd64
# image's configuration (entrypoint, command, user, stop signal, environment, working directory).
# Needs root (ownership of the files), podman, apt with the arm64 architecture added
# (dpkg --add-architecture arm64) and qemu-user-static.
set -euo pipefail

src=$1
bins=$2
dst=$3
for b in rdmanet rdmanet-ipam rdmanetctl; do
  aarch64-linux-gnu-readelf -h "$bins/$b" 2>/dev/null | grep -q 'Machine:.*AArch64' ||
    { echo "image_arm64: $bins/$b is not an aarch64 program" >&2; exit 1; }
done

work=$(mktemp -d /tmp/rdmanet-image-arm64.XXXXXX)
ctr=
cleanup() {
  [[ -z $ctr ]] || podman rm -f "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
root=$work/root
# The arm64 .debs are kept between runs (same versions, same files).
debs=${ARM64_CACHE:-/var/cache/rdmanet-arm64}/image-debs
mkdir -p "$root" "$debs" "$work/x"
chown _apt "$debs" 2>/dev/null || true   # apt downloads as _apt

ctr=$(podman create "$src")
podman export "$ctr" | tar -x -C "$root" --numeric-owner -p
podman rm -f "$ctr" >/dev/null
ctr=

# The amd64 packages, with their versions, from the image's dpkg database.
status=$root/var/lib/dpkg/status
mapfile -t pkgs < <(awk -F': ' '
  /^Package: / {p = $2} /^Version: / {v = $2} /^Architecture: / {a = $2}
  /^$/ {if (a == "amd64") print p "=" v; p = v = a = ""}
  END {if (a == "amd64") print p "=" v}' "$status")
((${#pkgs[@]})) || { echo "image_arm64: no amd64 package in $src's dpkg database" >&2; exit 1; }
echo "== image_arm64: replacing ${#pkgs[@]} amd64 packages with their arm64 builds"
# apt-get download's file names: <name>_<version, ':' as %3a>_arm64.deb.
deb_of() { local p=${1%%=*} v=${1#*=}; echo "$debs/${p}_${v//:/%3a}_arm64.deb"; }
fetch=()
for spec in "${pkgs[@]}"; do [[ -f $(deb_of "$spec") ]] || fetch+=("${spec/=/:arm64=}"); done
if ((${#fetch[@]})) && ! (cd "$debs" && apt-get download -qq "${fetch[@]}"); then
  echo "image_arm64: apt cannot download every arm64 package at the image's versions (a base made" >&2
  echo "before a Debian point release: podman rmi localhost/rdmanet-base:bookworm and rebuild)" >&2
  exit 1
fi

info=$root/var/lib/dpkg/info
for spec in "${pkgs[@]}"; do
  p=${spec%%=*}
  deb=$(deb_of "$spec")
  # Multi-Arch: same packages keep their database files under <name>:<arch>.
  if [[ -f $info/$p:amd64.list ]]; then old=$p:amd64 new=$p:arm64; else old=$p new=$p; fi
  # The amd64 files, not the directories (which other packages may share) nor what resolves to
  # one: the list names /lib, which is the merged /usr's symlink to usr/lib here.
  while IFS= read -r path; do
    [[ -d $root$path ]] && continue
    if [[ -L $root$path || -f $root$path ]]; then rm -f "$root$path"; fi
  done <"$info/$old.list"
  # Unpacked over the root with the image's symlinks to directories kept (merged /usr: /lib ->
  # usr/lib; /var/run -> /run), which dpkg-deb -x or cp would replace by directories, and the
  # existing directories' owners and modes kept (apt's partial/ belongs to _apt), as dpkg does.
  rm -rf "$work/x" && mkdir -p "$work/x/control"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" -p --same-owner --numeric-owner --keep-directory-symlink --no-overwrite-dir
  # The database: the arm64 package's file list and control files.
  dpkg-deb -e "$deb" "$work/x/control"
  rm -f "$info/$old".*
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./$|/.|; s|^\.||; s|/$||' >"$info/$new.list"
  for f in "$work"/x/control/*; do
    [[ $(basename "$f") == control ]] || cp -p "$f" "$info/$new.$(basename "$f")"
  done
done
# Every amd64 stanza of the status file is now an arm64 package's.
sed -i 's/^Architecture: amd64$/Architecture: arm64/' "$status"
# dpkg's native architecture is the first line of its arch file when present.
[[ -f $root/var/lib/dpkg/arch ]] && sed -i 's/^amd64$/arm64/' "$root/var/lib/dpkg/arch"
# The amd64 library directories are empty now (the files were the amd64 packages'): removed.
find "$root/usr/lib/x86_64-linux-gnu" -depth -type d -empty -delete 2>/dev/null || true
if [[ -n $(find "$root/usr/lib/x86_64-linux-gnu" -type f 2>/dev/null | head -n 1) ]]; then
  echo "image_arm64: amd64 files remain in /usr/lib/x86_64-linux-gnu:" >&2
  find "$root/usr/lib/x86_64-linux-gnu" -type f | sed "s|^$root||" | head >&2
  exit 1
fi
qemu-aarch64-static "$root/sbin/ldconfig" -r "$root"

# The product's binaries, with the modes the amd64 image gave them.
for pair in rdmanet:/opt/rdmanet/bin/rdmanet rdmanet-ipam:/opt/rdmanet/bin/rdmanet-ipam \
            rdmanetctl:/usr/local/bin/rdmanetctl; do
  b=${pair%%:*} path=${pair#*:}
  mode=$(stat -c %a "$root$path")
  install -m "$mode" -o 0 -g 0 "$bins/$b" "$root$path"
done

# The amd64 image's configuration, set by the same Containerfile instructions as the Dockerfile's
# (podman import --change would store the stop signal as a number): a build with no RUN step,
# which needs no arm64 execution.
cfg() { podman image inspect --format "$1" "$src"; }
rm -rf "$work/x" && mkdir -p "$work/x"   # the build's context: the Containerfile alone
{
  echo "FROM $dst-rootfs"
  while IFS= read -r e; do
    [[ -n $e ]] && printf 'ENV %s="%s"\n' "${e%%=*}" "$(sed 's/[\"]/\\&/g' <<<"${e#*=}")"
  done < <(cfg '{{range .Config.Env}}{{println .}}{{end}}')
  workdir=$(cfg '{{.Config.WorkingDir}}'); [[ -z $workdir ]] || echo "WORKDIR $workdir"
  user=$(cfg '{{.Config.User}}'); [[ -z $user ]] || echo "USER $user"
  stop=$(cfg '{{.Config.StopSignal}}'); [[ -z $stop ]] || echo "STOPSIGNAL $stop"
  entrypoint=$(cfg '{{json .Config.Entrypoint}}'); [[ $entrypoint == null ]] || echo "ENTRYPOINT $entrypoint"
  cmd=$(cfg '{{json .Config.Cmd}}'); [[ $cmd == null ]] || echo "CMD $cmd"
} >"$work/x/Containerfile"
tar -C "$root" --numeric-owner -c . | podman import --arch arm64 --os linux - "$dst-rootfs" >/dev/null
podman build -q --platform linux/arm64 -f "$work/x/Containerfile" -t "$dst" "$work/x" >/dev/null
podman rmi "$dst-rootfs" >/dev/null
echo "== image_arm64: $dst (linux/arm64) from $src"
