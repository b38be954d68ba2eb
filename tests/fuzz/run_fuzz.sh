#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (cmake -DRDMANET_FUZZ=ON, clang) for a bounded time
# from its seed corpus, failing on a crash, leak, timeout or sanitizer report.
#   tests/fuzz/run_fuzz.sh <build-dir> [seconds per target, default 60]
# Targets run $JOBS at a time (default nproc). New inputs go to a working corpus: a scratch
# folder, or with FUZZ_CORPUS_DIR=<dir> the folder <dir>/<target>, kept between runs so that a
# later run starts where the last one stopped (tests/run.sh keeps it under /var/cache). A kept
# corpus that grew past FUZZ_CORPUS_MAX files (default 2000) is minimized (-merge=1) first. The
# seed corpus in the repo is read, never rewritten; a crashing input is kept under
# <build-dir>/fuzz-artifacts/ and becomes a regression test by copying it into
# tests/fuzz/regressions/<target>/, which every later run replays first.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: run_fuzz.sh <build-dir> [seconds]}" && pwd)
seconds=${2:-60}
jobs=${JOBS:-$(nproc)}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

# working_corpus <target> <name>: prints the folder new inputs go to (kept, or a scratch one).
working_corpus() {
  local target=$1 name=$2
  if [[ -z ${FUZZ_CORPUS_DIR:-} ]]; then
    mktemp -d
    return
  fi
  local dir=$FUZZ_CORPUS_DIR/$name
  mkdir -p "$dir"
  if (($(find "$dir" -type f | wc -l) > ${FUZZ_CORPUS_MAX:-2000})); then
    local minimized
    minimized=$(mktemp -d "$FUZZ_CORPUS_DIR/.$name.XXXXXX")
    "$target" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len=8192 "$minimized" "$dir" \
      >"$artifacts/$name.merge.log" 2>&1 && { rm -rf "$dir"; mv "$minimized" "$dir"; } || rm -rf "$minimized"
  fi
  echo "$dir"
}

fuzz_one() {
  local target=$1 name corpus status=0
  name=$(basename "$target")
  corpus=$(working_corpus "$target" "$name")
  local seeds=("$here/corpus/$name")
  [[ -d "$here/regressions/$name" ]] && seeds+=("$here/regressions/$name")
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
    "$corpus" "${seeds[@]}" >"$artifacts/$name.log" 2>&1 || status=$?
  [[ -n ${FUZZ_CORPUS_DIR:-} ]] || rm -rf "$corpus"
  if ((status)); then
    echo "!! $name failed (exit $status); last lines of $artifacts/$name.log:"
    tail -40 "$artifacts/$name.log"
    return 1
  fi
  echo "ok $name: $(grep -E '^stat::number_of_executed_units' "$artifacts/$name.log" | awk '{print $2}') runs in ${seconds}s, corpus $(find "$corpus" -type f 2>/dev/null | wc -l) kept"
}
export -f fuzz_one working_corpus
export here seconds artifacts FUZZ_CORPUS_DIR FUZZ_CORPUS_MAX

targets=("$build"/bin/fuzz_*)
[[ -x ${targets[0]} ]] || { echo "no fuzz targets in $build/bin (configure with -DRDMANET_FUZZ=ON)" >&2; exit 1; }
echo "== fuzzing ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1"' _ {}
