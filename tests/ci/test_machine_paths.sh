#!/usr/bin/env bash
# The guard of the machine's rdmanet paths (machine_paths.sh), on private folders: unchanged
# folders compare equal; a file created, one changed and a folder that appeared are each reported.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export MACHINE_PATHS="$tmp/lib $tmp/absent"
mkdir -p "$tmp/lib/ipam"
echo a >"$tmp/lib/ipam/pool"

"$here/machine_paths.sh" snapshot >"$tmp/before"
grep -q "absent $tmp/absent" "$tmp/before" || fail "an absent path is not listed as absent"
"$here/machine_paths.sh" compare "$tmp/before" >/dev/null || fail "unchanged paths reported as changed"

touch "$tmp/lib/ipam/new"
if "$here/machine_paths.sh" compare "$tmp/before" 2>"$tmp/err"; then fail "a new file went unnoticed"; fi
grep -q "$tmp/lib/ipam/new" "$tmp/err" || fail "the report does not name the new file"
rm "$tmp/lib/ipam/new"

echo longer >"$tmp/lib/ipam/pool"
if "$here/machine_paths.sh" compare "$tmp/before" 2>/dev/null; then fail "a changed file went unnoticed"; fi

"$here/machine_paths.sh" snapshot >"$tmp/before"
mkdir "$tmp/absent"
if "$here/machine_paths.sh" compare "$tmp/before" 2>/dev/null; then fail "a folder that appeared went unnoticed"; fi
echo "ok: the guard reports new, changed and appearing entries"
