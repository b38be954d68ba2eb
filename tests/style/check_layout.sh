#!/usr/bin/env bash
# Fails when a folder (holding files) under cni/, ipam/ or netns/ is missing from the layout block of
# docs/architecture.md (the first fenced block after "## Folders and their dependencies"), or when
# that block names a folder the tree does not have: a newcomer reads the tree through it.
# Usage: check_layout.sh [repo root] (default: the repository this script is in).
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
doc=$root/docs/architecture.md
[[ -f $doc ]] || { echo "no $doc"; exit 1; }

# The block: from the first ``` after the heading to the next ```.
block=$(awk '/^## Folders and their dependencies/ {h=1; next}
             h && /^```/ {if (in_block) exit; in_block=1; next}
             in_block {print}' "$doc")
[[ -n $block ]] || { echo "$doc: no layout block after '## Folders and their dependencies'"; exit 1; }

# Folders the block names: the first word of a line, when it ends with '/' (e.g. "cni/plugin/").
named=$(printf '%s\n' "$block" | awk '$1 ~ /\/$/ {print $1}' | sed 's:/$::' | sort -u)

status=0
while IFS= read -r dir; do
    rel=${dir#"$root"/}
    # A folder is listed by its own line, or as a subfolder named in its parent's line
    # ("cni/modes/ ... macvlan/, hostdev/ ...").
    if ! grep -qx "$rel" <<<"$named"; then
        parent=${rel%/*}; leaf=${rel##*/}
        if ! printf '%s\n' "$block" | awk -v p="$parent/" -v l="$leaf/" '
                $1 == p {inside = 1} $1 != p && $1 ~ /\/$/ {inside = 0}
                inside && index($0, l) {found = 1} END {exit !found}'; then
            echo "docs/architecture.md: the layout block does not list $rel/ (add a line saying why it exists)"
            status=1
        fi
    fi
done < <(find "$root/cni" "$root/ipam" "$root/netns" -mindepth 1 -type f -printf '%h\n' | sort -u |
         grep -vx -e "$root/cni" -e "$root/ipam")

while IFS= read -r dir; do
    case $dir in cni/*|ipam/*|netns) ;; *) continue ;; esac
    [[ -d $root/$dir ]] || { echo "docs/architecture.md: the layout block lists $dir/, which the tree does not have"; status=1; }
done <<<"$named"

((status == 0)) && echo "docs/architecture.md lists every folder under cni/, ipam/ and netns/"
exit $status
