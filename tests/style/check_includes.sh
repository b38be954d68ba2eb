#!/usr/bin/env bash
# Fails when a file includes a header of a room above it or beside it: the includes of every file
# under cni/, ipam/, netns/ and include/rdmanet/ must follow the libraries' links
# (target_link_libraries in the CMakeLists.txt files), which are the dependency order of
# docs/architecture.md. A file belongs to the library that compiles it; a header to the library
# that compiles its .cpp (include/rdmanet/cni/cli/pool.hpp -> cni/cli/pool.cpp), else to the
# library named after its folder or the nearest folder above it (cni/node/ -> rdmanet_cni_node,
# include/rdmanet/base/ -> rdmanet_base). An include is allowed when its library is the file's own
# or one the file's library links, directly or through others.
# Usage: check_includes.sh [repo root] (default: the repository this script is in).
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"

# One line per CMake command that matters: "lib NAME DIR SOURCES..." and "link NAME DEPS...".
targets=$(for cm in CMakeLists.txt cni/CMakeLists.txt ipam/CMakeLists.txt netns/CMakeLists.txt; do
    [[ -f $cm ]] || continue
    dir=$(dirname "$cm")
    sed 's/#.*//' "$cm" | tr '\n' ' ' | grep -oE '(add_library|add_executable|target_link_libraries)\([^)]*\)' |
        awk -v dir="$dir" '{
            sub(/\)$/, ""); split($0, head, "("); cmd = head[1]; $0 = head[2]
            if (cmd == "target_link_libraries") {
                line = "link " $1
                for (i = 2; i <= NF; i++) if ($i ~ /^rdmanet/) line = line " " $i
            } else {
                line = "lib " $1 " " dir
                for (i = 2; i <= NF; i++) if ($i ~ /\.cpp$/) line = line " " (dir == "." ? "" : dir "/") $i
            }
            print line
        }'
done)

files=$(find cni ipam netns include/rdmanet -type f \( -name '*.cpp' -o -name '*.hpp' \) | sort)

# "FILE INCLUDED" per quoted include, INCLUDED as a path from the repository's root.
includes=$(for f in $files; do
    d=$(dirname "$f")
    sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f" | while IFS= read -r inc; do
        if [[ $inc == rdmanet/* ]]; then
            echo "$f include/$inc"
        elif [[ -f $d/$inc ]]; then
            echo "$f $(realpath -m --relative-to=. "$d/$inc")"
        fi
    done
done)

awk -v targets="$targets" -v includes="$includes" '
    BEGIN {
        n = split(targets, lines, "\n")
        for (i = 1; i <= n; i++) {
            split(lines[i], w, " ")
            if (w[1] == "lib") { known[w[2]] = 1; for (j = 4; j in w; j++) lib_of_src[w[j]] = w[2] }
            else if (w[1] == "link") for (j = 3; j in w; j++) deps[w[2]] = deps[w[2]] " " w[j]
            delete w
        }
        n = split(includes, pairs, "\n")
        status = 0
        for (i = 1; i <= n; i++) {
            if (pairs[i] == "") continue
            split(pairs[i], p, " ")
            from = lib_of(p[1]); to = lib_of(p[2])
            if (from == "" || to == "" || from == to || reaches(from, to)) continue
            printf "%s includes %s: %s does not link %s (a room above it or beside it)\n", p[1], p[2], from, to
            status = 1
        }
        if (status == 0) print "every include under cni/, ipam/, netns/ and include/rdmanet/ follows the libraries'"'"' links"
        exit status
    }
    function lib_of(file,    key, dir, name) {
        if (file in lib_of_src) return lib_of_src[file]
        key = file; sub(/^include\/rdmanet\//, "", key); sub(/\.[ch]pp$/, ".cpp", key)
        if (key in lib_of_src) return lib_of_src[key]
        dir = key; sub(/\/[^\/]*$/, "", dir)
        while (dir != "") {
            name = "rdmanet_" dir; gsub(/\//, "_", name)
            if (name in known) return name
            if (dir !~ /\//) break
            sub(/\/[^\/]*$/, "", dir)
        }
        return ""
    }
    function reaches(from, to,    stack, top, seen, cur, d, m, k) {
        top = 1; stack[1] = from; seen[from] = 1
        while (top > 0) {
            cur = stack[top--]
            m = split(deps[cur], d, " ")
            for (k = 1; k <= m; k++) {
                if (d[k] == to) return 1
                if (!(d[k] in seen)) { seen[d[k]] = 1; stack[++top] = d[k] }
            }
        }
        return 0
    }'
