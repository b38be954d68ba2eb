#!/usr/bin/env bash
# Fails when a C++ file git tracks under base/, cni/, ipam/, netns/, include/ or tests/ differs from
# what clang-format makes of it with the repository's .clang-format, and names the files.
#   check_format.sh [repo root]          check (exit 1 and the list when any file differs)
#   check_format.sh --fix [repo root]    rewrite those files in place
# Needs clang-format (Debian: clang-format, version 14 as .clang-format was measured with).
set -euo pipefail
fix=0
if [[ ${1:-} == --fix ]]; then fix=1; shift; fi
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"
command -v clang-format >/dev/null || { echo "clang-format is not installed (Debian: apt-get install clang-format)"; exit 1; }
[[ -f .clang-format ]] || { echo "no .clang-format in $root"; exit 1; }

mapfile -t files < <(git ls-files -- 'base/*.cpp' 'cni/*.cpp' 'cni/*.hpp' 'ipam/*.cpp' 'ipam/*.hpp' 'netns/*.cpp' 'netns/*.hpp' \
                                     'include/*.hpp' 'tests/*.cpp' 'tests/*.hpp')
if ((fix)); then
    clang-format -i --style=file "${files[@]}"
    echo "formatted ${#files[@]} files"
    exit 0
fi
bad=()
for f in "${files[@]}"; do
    clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
    printf 'not formatted (tests/style/check_format.sh --fix):\n'
    printf '  %s\n' "${bad[@]}"
    exit 1
fi
echo "all ${#files[@]} files formatted"
