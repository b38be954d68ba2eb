#!/usr/bin/env bash
# kubereal.sh BUILD_DIR [kube-1.37 kube-1.34]: the real kube-apiserver suite (ctest -L kubereal)
# once per tested Kubernetes version, each against the kube-apiserver and etcd built from their
# pinned Go modules (tests/apiserver/real_assets.sh makes the KUBEBUILDER_ASSETS directory; the
# peers are built on first use). Fails when any entry fails or is skipped: a skipped entry here
# means a server that did not run, never a pass. The last line counts every entry of every run.
set -uo pipefail
build=${1:?usage: kubereal.sh BUILD_DIR [kube-1.37 kube-1.34]}
shift
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(kube-1.37 kube-1.34)
here=$(cd "$(dirname "$0")" && pwd)
[[ -f $build/CTestTestfile.cmake ]] || {
  echo "kubereal.sh: $build is not a configured build directory" >&2
  exit 2
}

total_pass=0 total_fail=0 total_skip=0 status=0
for v in "${versions[@]}"; do
  assets=$("$here/../apiserver/real_assets.sh" "$v") || {
    echo "kubereal.sh: $v: no assets (see above)" >&2
    status=1
    total_fail=$((total_fail + 1))
    continue
  }
  echo "== kubereal $v: KUBEBUILDER_ASSETS=$assets ($("$assets/kube-apiserver" --version), etcd $("$assets/etcd" --version | sed -n 's/^etcd Version: //p'))"
  log=$(mktemp)
  start=$(date +%s)
  # Two entries at a time: each runs its own etcd + kube-apiserver (the entries are grouped for that).
  KUBEBUILDER_ASSETS=$assets ctest --test-dir "$build" -L kubereal --output-on-failure -j "${KUBEREAL_JOBS:-2}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # ctest's result lines: "1/7 Test #3: kubereal: single pool ....   Passed   41.2 sec"
  pass=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed +' "$log")
  skip=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$log")
  fail=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|\*\*\*Not Run)' "$log")
  rm -f "$log"
  echo "== kubereal $v: $pass passed, $fail failed, $skip skipped in $(($(date +%s) - start)) s (ctest exit $rc)"
  if [[ $rc -ne 0 || $fail -ne 0 || $skip -ne 0 || $pass -eq 0 ]]; then status=1; fi
  total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail)) total_skip=$((total_skip + skip))
done
echo "kubereal: $total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
