#!/usr/bin/env bash
# Fails when a C++ file opens a namespace that is not its room's. The rule (docs/architecture.md,
# "Namespaces"): a room's namespace is rdmanet:: followed by its folder, `/` read as `::`
# (cni/cli/ -> rdmanet::cni::cli, cni/node/dranet/ -> rdmanet::cni::node::dranet,
# ipam/kube/ -> rdmanet::ipam::kube, netns/ -> rdmanet::netns); a public header belongs to the
# room its folder below include/rdmanet/ names (include/rdmanet/cni/cli/ -> cni/cli/, base/ ->
# rdmanet::base). The rooms the plugin is made of keep the namespace of their top folder
# (SHARED below). cni/main/ holds main()s and opens no rdmanet namespace.
#
# Allowed besides a file's own namespace: a namespace nested in it that names no folder (a group
# such as rdmanet::ipam::sql or rdmanet::netns::detail), and a block that only forward-declares
# another room's types (`namespace rdmanet::netns { class VfControl; }`). Only namespaces opened
# at the start of a line are read; `namespace x = ...` aliases and anonymous namespaces are fine.
# Usage: check_namespaces.sh [repo root] (default: the repository this script is in).
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"

# Folders whose rooms share the namespace of the folder they name: the layers of the plugin and
# of the embedded IPAM, which every room above reads unqualified from its nested namespace.
SHARED='cni/protocol cni/config cni/policy cni/state cni/modes cni/pod cni/logging cni/plugin ipam/core ipam/local'

# The folder names of the tree: a nested namespace may not be named like a room.
rooms=$(find cni ipam netns -mindepth 1 -type d -printf '%f\n' | sort -u | tr '\n' ' ')

expected_of() {  # FILE -> the namespace its room opens ("" for cni/main)
    local dir
    dir=$(dirname "$1")
    dir=${dir#include/rdmanet/}
    case $dir in cni/main | cni/main/*) echo ""; return ;; esac
    local shared
    for shared in $SHARED; do
        case $dir in "$shared" | "$shared"/*) dir=${shared%/*} ;; esac
    done
    echo "rdmanet::${dir//\//::}"
}

status=0
while IFS= read -r file; do
    expected=$(expected_of "$file")
    out=$(awk -v want="$expected" -v rooms=" $rooms " -v file="$file" '
        function allowed(ns,    rest, first) {
            if (want != "" && ns == want) return 1
            if (want != "" && index(ns, want "::") == 1) {
                rest = substr(ns, length(want) + 3); split(rest, parts, "::"); first = parts[1]
                return index(rooms, " " first " ") == 0
            }
            return 0
        }
        function fwd_only(body) {  # every statement a forward declaration
            gsub(/\/\/[^\n]*/, "", body)
            n = split(body, stmts, ";")
            for (i = 1; i <= n; i++) {
                s = stmts[i]; gsub(/^[ \t\n]+|[ \t\n]+$/, "", s)
                if (s == "") continue
                if (s !~ /^(struct|class|enum class|enum struct) [A-Za-z_][A-Za-z_0-9]*( *: *[A-Za-z_:0-9]+)?$/) return 0
            }
            return 1
        }
        /^namespace rdmanet[A-Za-z_:0-9]* *\{/ {
            ns = $2; line = FNR; body = $0; sub(/^[^{]*\{/, "", body)
            if (body ~ /\}/) { sub(/\}.*/, "", body); check(ns, body, line); next }
            inblk = 1; next
        }
        inblk && /^\}/ { inblk = 0; check(ns, body, line); next }
        inblk { body = body "\n" $0 }
        function check(ns, body, line) {
            if (allowed(ns) || fwd_only(body)) return
            printf "%s:%d: namespace %s, but its room %s\n", file, line, ns,
                   (want == "" ? "(cni/main/) opens none" : "is " want)
        }' "$file")
    if [[ -n $out ]]; then
        printf '%s\n' "$out"
        status=1
    fi
done < <(find cni ipam netns include/rdmanet -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) | sort)

((status == 0)) && echo "every file under cni/, ipam/, netns/ and include/rdmanet/ opens its room's namespace"
exit $status
