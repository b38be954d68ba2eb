#!/usr/bin/env bash
# Fails when a C++ file opens a namespace that is not its room's. The rule (docs/architecture.md,
# "Namespaces"): a room's namespace is rdmanet:: followed by its folder, `/` read as `::`
# (cni/cli/ -> rdmanet::cni::cli, cni/node/dranet/ -> rdmanet::cni::node::dranet,
# ipam/kube/ -> rdmanet::ipam::kube, netns/ -> rdmanet::netns); a public header belongs to the
# room its folder below include/rdmanet/ names (include/rdmanet/cni/cli/ -> cni/cli/, base/ ->
# rdmanet::base). The rooms the plugin is made of keep the namespace of their top folder
# (SHARED below). The main()s themselves (cni/main/) stand outside every namespace.
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

# One pass over every file: a file's room is its folder (below include/rdmanet/ for a header), a
# shared folder's rooms are its top folder's, and the namespace is rdmanet:: and the room.
find cni ipam netns include/rdmanet -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print0 | sort -z |
    xargs -0 awk -v shared="$SHARED" -v rooms=" $rooms " '
        function want_of(file,    dir, n, i, parts) {
            dir = file; sub(/\/[^\/]*$/, "", dir); sub(/^include\/rdmanet\//, "", dir)
            n = split(shared, parts, " ")
            for (i = 1; i <= n; i++)
                if (dir == parts[i] || index(dir, parts[i] "/") == 1) { dir = parts[i]; sub(/\/[^\/]*$/, "", dir) }
            gsub(/\//, "::", dir)
            return "rdmanet::" dir
        }
        function allowed(ns,    rest, parts) {
            if (ns == want) return 1
            if (index(ns, want "::") == 1) {
                rest = substr(ns, length(want) + 3); split(rest, parts, "::")
                return index(rooms, " " parts[1] " ") == 0
            }
            return 0
        }
        function fwd_only(body,    n, i, s, stmts) {  # every statement a forward declaration
            gsub(/\/\/[^\n]*/, "", body)
            n = split(body, stmts, ";")
            for (i = 1; i <= n; i++) {
                s = stmts[i]; gsub(/^[ \t\n]+|[ \t\n]+$/, "", s)
                if (s == "") continue
                if (s !~ /^(struct|class|enum class|enum struct) [A-Za-z_][A-Za-z_0-9]*( *: *[A-Za-z_:0-9]+)?$/) return 0
            }
            return 1
        }
        function check(ns, body, line) {
            if (allowed(ns) || fwd_only(body)) return
            printf "%s:%d: namespace %s, but its room is %s\n", FILENAME, line, ns, want
            bad = 1
        }
        FNR == 1 { want = want_of(FILENAME); inblk = 0 }
        /^namespace rdmanet[A-Za-z_:0-9]* *\{/ {
            ns = $2; line = FNR; body = $0; sub(/^[^{]*\{/, "", body)
            if (body ~ /\}/) { sub(/\}.*/, "", body); check(ns, body, line); next }
            inblk = 1; next
        }
        inblk && /^\}/ { inblk = 0; check(ns, body, line); next }
        inblk { body = body "\n" $0 }
        END {
            if (bad) exit 1
            print "every file under cni/, ipam/, netns/ and include/rdmanet/ opens its room'"'"'s namespace"
        }'
