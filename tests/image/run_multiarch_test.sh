#!/usr/bin/env bash
# The multi-arch node image: deploy/build_image.sh --prebuilt BUILD_DIR --arm64 BUILD_ARM64_DIR
# makes a manifest list of a linux/amd64 and a linux/arm64 image. Checks:
#   - the list has exactly those two platforms, each entry the image of that architecture;
#   - the arm64 image's configuration (entrypoint, command, user, stop signal, environment,
#     working directory) equals the amd64 one's;
#   - its file list with modes and owners equals the amd64 one's, once the architecture's own names
#     are made the same (x86_64-linux-gnu / aarch64-linux-gnu, the dynamic loader's name, amd64 /
#     arm64 in dpkg's file names), except files that one architecture's Debian packages ship and
#     the other's do not (each must be owned by a package of its image);
#   - every ELF program and library in it is aarch64 (none is x86-64);
#   - its rdmanet and rdmanet-ipam answer VERSION and its rdmanetctl runs --help under
#     qemu-aarch64-static, rdmanetctl on the image's own arm64 glibc and libraries.
# arm64 containers do not run on this x86-64 machine (no binfmt_misc), so the image is checked
# from its files, not started.
# Usage: run_multiarch_test.sh BUILD_DIR BUILD_ARM64_DIR   (root, podman; IMAGE_NAME overrides
#        localhost/rdmanet:multiarch-test)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR BUILD_ARM64_DIR}
build_arm64=${2:?usage: $0 BUILD_DIR BUILD_ARM64_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
list=${IMAGE_NAME:-localhost/rdmanet:multiarch-test}
amd64=$list-amd64
arm64=$list-arm64
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }

work=$(mktemp -d /tmp/rdmanet-multiarch-test-XXXXXX)
# podman (and the image build's RUN steps) keep their CNI networks' lock file in the network config
# dir, /etc/cni/net.d by default: a machine's CNI folder, which no test may write. Everything podman
# does here uses a private one instead (containers.conf, read from CONTAINERS_CONF alone).
mkdir -p "$work/cni-net"
printf '[network]\nnetwork_config_dir = "%s"\n' "$work/cni-net" >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
ctrs=()
cleanup() {
  for c in "${ctrs[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
  podman manifest rm "$list" >/dev/null 2>&1 || true
  podman rmi -f "$amd64" "$arm64" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Podman on some sandboxes cannot set rlimits for the build's RUN steps (run_image_test.sh).
if ! podman run --rm --network none "$("$root/deploy/build_image.sh" --print-base)" true 2>/dev/null; then
  export OCI_RUNTIME=$root/tests/image/runc_without_rlimits.sh
fi
"$root/deploy/build_image.sh" --prebuilt "$build" --arm64 "$build_arm64" "$list"

# ---- the manifest list -----------------------------------------------------------------------
platforms=$(podman manifest inspect "$list" | jq -r '.manifests[] | .platform.os + "/" + .platform.architecture' | sort | tr '\n' ' ')
[[ $platforms == "linux/amd64 linux/arm64 " ]] || fail "$list lists platforms '$platforms', expected linux/amd64 linux/arm64"
pass "$list lists linux/amd64 and linux/arm64"
for pair in amd64:"$amd64" arm64:"$arm64"; do
  arch=${pair%%:*} img=${pair#*:}
  got=$(podman image inspect --format '{{.Os}}/{{.Architecture}}' "$img")
  [[ $got == linux/$arch ]] || fail "$img is $got, expected linux/$arch"
  digest=$(podman image inspect --format '{{.Digest}}' "$img")
  podman manifest inspect "$list" | jq -e --arg a "$arch" --arg d "$digest" \
    '.manifests[] | select(.platform.architecture == $a) | .digest == $d' >/dev/null ||
    fail "the list's $arch entry is not $img ($digest)"
done
pass "each entry is the image of its architecture"

# ---- configuration ---------------------------------------------------------------------------
config() {
  podman image inspect "$1" | jq -S '.[0].Config | {Entrypoint, Cmd, User, StopSignal, Env, WorkingDir}'
}
diff <(config "$amd64") <(config "$arm64") || fail "the arm64 image's configuration differs (above)"
pass "configuration equal: $(config "$arm64" | jq -c '{Entrypoint, Cmd, User, StopSignal}')"

# ---- files -----------------------------------------------------------------------------------
unpack() {
  local c
  c=$(podman create "$1")
  ctrs+=("$c")
  mkdir -p "$2"
  podman export "$c" | tar -x -C "$2" --numeric-owner -p
}
unpack "$amd64" "$work/amd64"
unpack "$arm64" "$work/arm64"
# path, type, mode, owner; the architecture's names made the same (triplet, dynamic loader,
# dpkg's <name>:<arch> files, the per-architecture changelogs of /usr/share/doc).
normalize() {
  sed -E -e 's/x86_64-linux-gnu|aarch64-linux-gnu/TRIPLET/g' \
    -e 's/ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1/LDSO/g' \
    -e 's/:(amd64|arm64)\./:ARCH./g' -e 's/\.Debian\.(amd64|arm64)\.gz/.Debian.ARCH.gz/' \
    -e 's/build_signature_(amd64|arm64)/build_signature_ARCH/'
}
listing() { (cd "$1" && find . -printf '%p %y %m %U:%G\n') | normalize | sort; }
# The paths dpkg's database says the image's packages ship, in the merged /usr's spelling.
owned() {
  cat "$1"/var/lib/dpkg/info/*.list | sed -E 's#^/(bin|sbin|lib|lib64)(/|$)#/usr/\1\2#; s#^#.#' |
    normalize | sort -u
}
listing "$work/amd64" >"$work/amd64.list"
listing "$work/arm64" >"$work/arm64.list"
owned "$work/amd64" >"$work/amd64.owned"
owned "$work/arm64" >"$work/arm64.owned"
# What differs must be files one architecture's Debian packages ship and the other's do not
# (x86-64's /lib64 loader and libmvec, perl's per-architecture headers, ...), each owned by a
# package of the image it is in. Everything else (the product's files, users, CA bundle, the
# package database's layout, directories) must be the same.
only_amd64=$(comm -23 "$work/amd64.list" "$work/arm64.list" | cut -d' ' -f1)
only_arm64=$(comm -13 "$work/amd64.list" "$work/arm64.list" | cut -d' ' -f1)
unowned_amd64=$(comm -23 <(printf '%s\n' "$only_amd64" | sed '/^$/d' | sort -u) "$work/amd64.owned")
unowned_arm64=$(comm -23 <(printf '%s\n' "$only_arm64" | sed '/^$/d' | sort -u) "$work/arm64.owned")
if [[ -n $unowned_amd64 || -n $unowned_arm64 ]]; then
  echo "differing entries no package of their image ships:"
  printf 'amd64 only: %s\n' $unowned_amd64
  printf 'arm64 only: %s\n' $unowned_arm64
  diff "$work/amd64.list" "$work/arm64.list" | grep -F -e "$(printf '%s\n' $unowned_amd64 $unowned_arm64)" | head -n 40
  fail "the file lists, modes or owners differ beyond the packages' per-architecture files"
fi
for f in /opt/rdmanet/bin/rdmanet /opt/rdmanet/bin/rdmanet-ipam /usr/local/bin/rdmanetctl; do
  grep -q "^\.$f f " "$work/arm64.list" || fail "no $f in the arm64 image"
done
pass "file list, modes and owners equal ($(wc -l <"$work/arm64.list") entries) but for $(printf '%s\n' "$only_amd64" | sed '/^$/d' | wc -l) amd64-only and $(printf '%s\n' "$only_arm64" | sed '/^$/d' | wc -l) arm64-only files of Debian's per-architecture packages"

x86=$(find "$work/arm64" -type f -exec file {} + 2>/dev/null | grep 'ELF.*x86-64' | sed "s|$work/arm64||" || true)
[[ -z $x86 ]] || fail "x86-64 ELF files in the arm64 image: $x86"
n=$(find "$work/arm64" -type f -exec file {} + 2>/dev/null | grep -c 'ELF.*ARM aarch64' || true)
((n > 10)) || fail "only $n aarch64 ELF files in the arm64 image"
pass "$n ELF files in the arm64 image, all aarch64"

# ---- the binaries, under user-mode emulation -------------------------------------------------
for b in rdmanet rdmanet-ipam; do
  CNI_COMMAND=VERSION qemu-aarch64-static "$work/arm64/opt/rdmanet/bin/$b" </dev/null | grep -q '"supportedVersions"' ||
    fail "the arm64 image's $b does not answer VERSION under qemu-aarch64-static"
done
pass "the arm64 image's rdmanet and rdmanet-ipam answer VERSION under qemu-aarch64-static"
QEMU_LD_PREFIX=$work/arm64 qemu-aarch64-static "$work/arm64/usr/local/bin/rdmanetctl" --help | grep -q 'install' ||
  fail "the arm64 image's rdmanetctl does not run on the image's libraries under qemu-aarch64-static"
pass "the arm64 image's rdmanetctl runs --help on the image's arm64 glibc under qemu-aarch64-static"
echo "multiarch image: PASSED (arm64 containers are not started here: no arm64 execution in containers on x86-64 without binfmt_misc)"
