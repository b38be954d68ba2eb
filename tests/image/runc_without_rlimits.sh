#!/bin/sh
# An OCI runtime for podman on machines whose sandbox forbids setrlimit (even to the current
# value), where crun and runc both fail with "setrlimit ...: Operation not permitted" on the
# rlimits podman always puts in the container's spec: this drops process.rlimits from the
# bundle's config.json and runs runc. The container inherits podman's limits instead.
# Used by run_image_test.sh only when a plain `podman run` fails that way (and by build_image.sh
# through OCI_RUNTIME). Not for production: the kubelet's runtime applies its rlimits.
# `create` names the bundle (config.json: .process.rlimits), `exec` a process file (.rlimits).
bundle=
process=
prev=
for a in "$@"; do
  case "$prev" in --bundle | -b) bundle=$a ;; --process | -p) process=$a ;; esac
  case "$a" in --bundle=*) bundle=${a#--bundle=} ;; --process=*) process=${a#--process=} ;; esac
  prev=$a
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  jq 'del(.process.rlimits)' "$bundle/config.json" >"$bundle/config.json.tmp" &&
    mv "$bundle/config.json.tmp" "$bundle/config.json"
fi
if [ -n "$process" ] && [ -f "$process" ]; then
  jq 'del(.rlimits)' "$process" >"$process.tmp" && mv "$process.tmp" "$process"
fi
exec runc "$@"
