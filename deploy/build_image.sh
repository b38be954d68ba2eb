#!/usr/bin/env bash
# Builds the node image from deploy/Dockerfile with podman (or buildah), no registry needed:
# when debian:bookworm-slim is not in local storage, a Debian 12 base is made with mmdebstrap
# (minbase, from deb.debian.org) and imported as localhost/rdmanet-base:bookworm (kept, so only
# the first build pays for it).
# Usage: deploy/build_image.sh [--prebuilt BUILD_DIR] [IMAGE]
#        deploy/build_image.sh --print-base     (makes the base when needed, prints its name)
#        deploy/build_image.sh [--prebuilt BUILD_DIR] --arm64 BUILD_ARM64_DIR [IMAGE]
#   IMAGE                  default localhost/rdmanet:dev; root or rootless
#   --prebuilt BUILD_DIR   the image gets the rdmanet, rdmanet-ipam and rdmanetctl of this cmake
#                          build dir (a Debian 12 build without test switches), debug info
#                          stripped, instead of compiling them in the Dockerfile's build stage;
#                          the final stage, and so the image's content, is the same.
#   --arm64 BUILD_ARM64_DIR a multi-arch image: IMAGE becomes a manifest list of IMAGE-amd64
#                          (built as above) and IMAGE-arm64, made from it by deploy/image_arm64.sh
#                          with the aarch64 binaries of this cross build dir (tests/run.sh build
#                          --arch arm64); push it with `podman manifest push --all IMAGE docker://...`.
#                          (IMAGE-amd64: the tag with "-amd64" appended, ":latest" when none.)
# OCI_RUNTIME: the runtime for the RUN steps (podman's default when unset).
# Prints the image's size and the build time at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage="usage: $0 [--prebuilt BUILD_DIR] [--arm64 BUILD_ARM64_DIR] [IMAGE] | --print-base"
prebuilt=
print_base=
arm64=
while (($#)); do
  case $1 in
    --prebuilt) (($# >= 2)) || { echo "$usage" >&2; exit 2; }; prebuilt=$2; shift 2 ;;
    --prebuilt=*) prebuilt=${1#--prebuilt=}; shift ;;
    --print-base) print_base=1; shift ;;
    --arm64) (($# >= 2)) || { echo "$usage" >&2; exit 2; }; arm64=$2; shift 2 ;;
    -*) echo "unknown option $1; $usage" >&2; exit 2 ;;
    *) break ;;
  esac
done
image=${1:-localhost/rdmanet:dev}
# Multi-arch: the single-architecture images get their own tags; IMAGE names the manifest list.
list=
if [[ -n $arm64 ]]; then
  list=$image
  [[ ${image##*/} == *:* ]] || image=$image:latest
  image=$image-amd64
fi

if command -v podman >/dev/null; then
  engine=podman
elif command -v buildah >/dev/null; then
  engine=buildah
else
  echo "neither podman nor buildah is installed (apt-get install podman)" >&2
  exit 1
fi

exists() {
  if [[ $engine == podman ]]; then podman image exists "$1"; else buildah inspect --type image "$1" >/dev/null 2>&1; fi
}

# The highest GLIBC_x.y symbol version binary $1 asks for ("" when none).
glibc_needed() {
  { objdump -T "$1" 2>/dev/null || true; } | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1
}

# Checks the binaries of build dir $1 are fit for the image and copies them, debug info stripped,
# to $2/build/bin: what the Dockerfile's build stage would leave there.
stage_prebuilt() {
  local dir=$1 out=$2/build/bin cache=$1/CMakeCache.txt b
  [[ -f $cache ]] || { echo "--prebuilt $dir: not a cmake build dir (no CMakeCache.txt)" >&2; return 1; }
  # No test builds in an image: the failpoints kill the plugin on request, sanitizers and fuzzing
  # instrumentation need the compiler's runtime and drop the static link.
  for b in RDMANET_FAILPOINTS RDMANET_SANITIZE RDMANET_FUZZ; do
    if grep -q "^$b:BOOL=ON" "$cache"; then
      echo "--prebuilt $dir: built with $b=ON (a test build); use a build dir without it" >&2
      return 1
    fi
  done
  for b in rdmanet rdmanet-ipam rdmanetctl; do
    [[ -x $dir/bin/$b ]] || { echo "--prebuilt $dir: no bin/$b (cmake --build $dir --target rdmanet rdmanet-ipam rdmanetctl)" >&2; return 1; }
  done
  # rdmanet and rdmanet-ipam are copied onto nodes of any distribution: static, no interpreter.
  for b in rdmanet rdmanet-ipam; do
    if readelf -l "$dir/bin/$b" | grep -q 'INTERP' || readelf -d "$dir/bin/$b" | grep -q '(NEEDED)'; then
      echo "--prebuilt $dir: bin/$b is dynamically linked (configure with RDMANET_STATIC_PLUGINS=ON)" >&2
      return 1
    fi
  done
  # rdmanetctl runs in the image on Debian 12's glibc 2.36.
  local v
  v=$(glibc_needed "$dir/bin/rdmanetctl")
  if [[ -n $v ]] && [[ $(printf '%s\n2.36\n' "$v" | sort -V | tail -n 1) != 2.36 ]]; then
    echo "--prebuilt $dir: bin/rdmanetctl needs glibc $v, the image's Debian 12 has 2.36 (build on Debian 12)" >&2
    return 1
  fi
  mkdir -p "$out"
  for b in rdmanet rdmanet-ipam rdmanetctl; do
    strip --strip-debug -o "$out/$b" "$dir/bin/$b"
  done
}

start=$(date +%s)
base=docker.io/library/debian:bookworm-slim
if ! exists "$base"; then
  base=localhost/rdmanet-base:bookworm
  if ! exists "$base"; then
    command -v mmdebstrap >/dev/null || { echo "no $base and no mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
    echo "== making the Debian 12 base $base with mmdebstrap" >&2
    mmdebstrap --quiet --variant=minbase bookworm - http://deb.debian.org/debian | "$engine" import - "$base" >/dev/null
    echo "== made $base in $(($(date +%s) - start)) s" >&2
  fi
fi
if [[ -n $print_base ]]; then
  echo "$base"
  exit 0
fi

# With --prebuilt, an additional build context named "build" replaces the Dockerfile's build
# stage, which is then skipped.
stage_dir=
trap '[[ -z $stage_dir ]] || rm -rf "$stage_dir"' EXIT
from=(compiling in the build stage)
binaries=()
if [[ -n $prebuilt ]]; then
  stage_dir=$(mktemp -d /tmp/rdmanet-prebuilt-XXXXXX)
  stage_prebuilt "$prebuilt" "$stage_dir"
  binaries=(--build-context "build=$stage_dir")
  from=(with the binaries of "$prebuilt")
fi

echo "== building $image from $base with $engine, ${from[*]}"
runtime=()
[[ -n ${OCI_RUNTIME:-} ]] && runtime=(--runtime "$OCI_RUNTIME")
"$engine" build "${runtime[@]}" --force-rm --network=host --build-arg BASE="$base" "${binaries[@]}" \
  -f "$root/deploy/Dockerfile" -t "$image" "$root"
took=$(($(date +%s) - start))
if [[ $engine == podman ]]; then
  size=$(podman image inspect --format '{{.Size}}' "$image")
else
  size=$(buildah inspect --type image --format '{{.ImageInfo.Size}}' "$image" 2>/dev/null || echo 0)
fi
echo "== $image: $((size / 1000 / 1000)) MB, built in ${took} s"

# --arm64: the arm64 image from the amd64 one and the cross-built binaries, then the list.
if [[ -n $arm64 ]]; then
  [[ $engine == podman ]] || { echo "--arm64 needs podman (manifest lists, import)" >&2; exit 1; }
  arm64_stage=$(mktemp -d /tmp/rdmanet-prebuilt-arm64-XXXXXX)
  trap '[[ -z $stage_dir ]] || rm -rf "$stage_dir"; rm -rf "$arm64_stage"' EXIT
  for b in rdmanet rdmanet-ipam rdmanetctl; do
    [[ -x $arm64/bin/$b ]] || { echo "--arm64 $arm64: no bin/$b (tests/run.sh build --arch arm64)" >&2; exit 1; }
    aarch64-linux-gnu-strip --strip-debug -o "$arm64_stage/$b" "$arm64/bin/$b"
  done
  for b in rdmanet rdmanet-ipam; do
    if aarch64-linux-gnu-readelf -l "$arm64_stage/$b" | grep -q 'INTERP'; then
      echo "--arm64 $arm64: bin/$b is dynamically linked (configure with RDMANET_STATIC_PLUGINS=ON)" >&2
      exit 1
    fi
  done
  arm64_image=${image%-amd64}-arm64
  "$root/deploy/image_arm64.sh" "$image" "$arm64_stage" "$arm64_image"
  if podman manifest exists "$list" 2>/dev/null; then
    podman manifest rm "$list" >/dev/null
  elif podman image exists "$list"; then
    podman untag "$list" "$list"
  fi
  podman manifest create "$list" >/dev/null
  podman manifest add "$list" "containers-storage:$image" >/dev/null
  podman manifest add "$list" "containers-storage:$arm64_image" >/dev/null
  echo "== $list: manifest list of $image (linux/amd64) and $arm64_image (linux/arm64), $(($(date +%s) - start)) s"
fi
