#!/usr/bin/env bash
# Builds the node image from deploy/Dockerfile with podman (or buildah), no registry needed:
# when debian:bookworm-slim is not in local storage, a Debian 12 base is made with mmdebstrap
# (minbase, from deb.debian.org) and imported as localhost/rdmanet-base:bookworm.
# Usage: deploy/build_image.sh [IMAGE]        (default localhost/rdmanet:dev; root or rootless)
# OCI_RUNTIME: the runtime for the RUN steps (podman's default when unset).
# Prints the image's size and the build time at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
image=${1:-localhost/rdmanet:dev}

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

start=$(date +%s)
base=docker.io/library/debian:bookworm-slim
if ! exists "$base"; then
  base=localhost/rdmanet-base:bookworm
  if ! exists "$base"; then
    command -v mmdebstrap >/dev/null || { echo "no $base and no mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
    echo "== making the Debian 12 base $base with mmdebstrap"
    mmdebstrap --quiet --variant=minbase bookworm - http://deb.debian.org/debian | "$engine" import - "$base" >/dev/null
  fi
fi

echo "== building $image from $base with $engine"
runtime=()
[[ -n ${OCI_RUNTIME:-} ]] && runtime=(--runtime "$OCI_RUNTIME")
if [[ $engine == podman ]]; then
  podman build "${runtime[@]}" --network=host --build-arg BASE="$base" -f "$root/deploy/Dockerfile" -t "$image" "$root"
else
  buildah build "${runtime[@]}" --network=host --build-arg BASE="$base" -f "$root/deploy/Dockerfile" -t "$image" "$root"
fi
took=$(($(date +%s) - start))
if [[ $engine == podman ]]; then
  size=$(podman image inspect --format '{{.Size}}' "$image")
else
  size=$(buildah inspect --type image --format '{{.ImageInfo.Size}}' "$image" 2>/dev/null || echo 0)
fi
echo "== $image: $((size / 1000 / 1000)) MB, built in ${took} s"
