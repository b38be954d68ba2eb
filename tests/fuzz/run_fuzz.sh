#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (cmake -DRDMANET_FUZZ=ON, clang) for a bounded time
# from its seed corpus, failing on a crash, leak, timeout or sanitizer report.
#   tests/fuzz/run_fuzz.sh <build-dir> [seconds per target, default 60]
# Targets run $JOBS at a time (default nproc). New inputs go to a scratch corpus (the seed corpus
# in the repo is read, never rewritten); a crashing input is kept under <build-dir>/fuzz-artifacts/
# and becomes a regression test by copying it into tests/fuzz/regressions/<target>/, which every
# later run replays first.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: run_fuzz.sh <build-dir> [seconds]}" && pwd)
seconds=${2:-60}
jobs=${JOBS:-$(nproc)}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

fuzz_one() {
  local target=$1 name scratch status=0
  name=$(basename "$target")
  scratch=$(mktemp -d)
  local seeds=("$here/corpus/$name")
  [[ -d "$here/regressions/$name" ]] && seeds+=("$here/regressions/$name")
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
    "$scratch" "${seeds[@]}" >"$artifacts/$name.log" 2>&1 || status=$?
  rm -rf "$scratch"
  if ((status)); then
    echo "!! $name failed (exit $status); last lines of $artifacts/$name.log:"
    tail -40 "$artifacts/$name.log"
    return 1
  fi
  echo "ok $name: $(grep -E '^stat::number_of_executed_units' "$artifacts/$name.log" | awk '{print $2}') runs in ${seconds}s"
}
export -f fuzz_one
export here seconds artifacts

targets=("$build"/bin/fuzz_*)
[[ -x ${targets[0]} ]] || { echo "no fuzz targets in $build/bin (configure with -DRDMANET_FUZZ=ON)" >&2; exit 1; }
echo "== fuzzing ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1"' _ {}
