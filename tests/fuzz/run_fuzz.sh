#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (cmake -DRDMANET_FUZZ=ON, clang) for a bounded time
# from its seed corpus, failing on a crash, leak, timeout or sanitizer report.
#   tests/fuzz/run_fuzz.sh <build-dir> [seconds per target, default 60]
# New inputs go to a scratch corpus (the seed corpus in the repo is read, never rewritten);
# a crashing input is kept under <build-dir>/fuzz-artifacts/ and becomes a regression test by
# copying it into tests/fuzz/regressions/<target>/ (replayed by the unit suite of the fuzz build).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: run_fuzz.sh <build-dir> [seconds]}
seconds=${2:-60}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
status=0
for target in "$build"/bin/fuzz_*; do
  name=$(basename "$target")
  scratch=$(mktemp -d)
  seeds=("$here/corpus/$name")
  [[ -d "$here/regressions/$name" ]] && seeds+=("$here/regressions/$name")
  echo "== $name: ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
        "$scratch" "${seeds[@]}" >"$artifacts/$name.log" 2>&1; then
    echo "!! $name failed; last lines of $artifacts/$name.log:"
    tail -40 "$artifacts/$name.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$artifacts/$name.log" | tail -2 || true
  fi
  rm -rf "$scratch"
done
exit $status
