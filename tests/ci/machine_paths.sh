#!/usr/bin/env bash
# The machine's own rdmanet paths, before and after the suites (tests/run.sh test runs it around
# them): a test must give every binary private directories, never the defaults a node uses.
#   machine_paths.sh snapshot > FILE    lists every entry under the paths with its type, size and
#                                       modification time (or that a path is absent)
#   machine_paths.sh compare FILE       exits 1, printing the differences, when they changed
# MACHINE_PATHS overrides the list (space-separated), for the guard's own test.
set -euo pipefail

paths=(${MACHINE_PATHS:-/var/lib/cni/rdmanet /etc/cni/net.d /run/rdmanet /var/log/rdmanet})

snapshot() {
  local p
  for p in "${paths[@]}"; do
    if [[ -e $p || -L $p ]]; then
      find "$p" -printf '%y %s %T@ %p\n' | sort -k4
    else
      echo "absent $p"
    fi
  done
}

case "${1:-}" in
  snapshot) snapshot ;;
  compare)
    [[ -r ${2:-} ]] || { echo "usage: $0 compare SNAPSHOT-FILE" >&2; exit 2; }
    if ! changes=$(diff "$2" <(snapshot)); then
      echo "the suites changed the machine's own rdmanet paths (${paths[*]}):" >&2
      echo "  (< before, > after; a test must use private directories instead)" >&2
      sed 's/^/  /' <<<"$changes" >&2
      exit 1
    fi
    echo "the machine's rdmanet paths are as before the suites: ${paths[*]}"
    ;;
  *) echo "usage: $0 snapshot | compare SNAPSHOT-FILE" >&2; exit 2 ;;
esac
