#!/usr/bin/env bash
# check_chart.sh BUILD_DIR: every check of the Helm chart (deploy/helm/rdmanet), with the real
# peers built from their Go modules (tests/peers/build_peers.sh helm kustomize etcd kube-1.37):
#   - helm lint --strict (default values and tests/helm/values/*.yaml);
#   - helm template's default render equal to `kustomize build deploy/` object by object (Helm's
#     own labels aside); what each value changes; the values schema's refusals; the rendered
#     commands run with BUILD_DIR's rdmanetctl;
#   - every rendered object (default, local datastore without the provider, kubernetes datastore
#     with the provider and every option) created with ?dryRun=All&fieldValidation=Strict on a
#     real kube-apiserver + etcd (CRDs and namespaces for real first), and a real helm install,
#     upgrade and uninstall there.
# The program is BUILD_DIR/bin/helm_chart_tests (ctest label `helm`); this script builds
# it, exports the peers that are built (tests/peers/peer_env.sh) and runs it. Exit status: 0
# passed; 77 skipped because a peer is missing (without CI in the environment); anything else
# failed (a missing peer under CI=true included).
set -euo pipefail
build=${1:?usage: check_chart.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
[[ -f $build/CMakeCache.txt ]] || {
  echo "check_chart.sh: $build is not a configured build directory" >&2
  exit 2
}
if [[ -f $here/../peers/peer_env.sh ]]; then
  # shellcheck source=/dev/null
  . "$here/../peers/peer_env.sh"
fi
cmake --build "$build" --target helm_chart_tests -j2 >/dev/null
start=$(date +%s)
rc=0
"$build/bin/helm_chart_tests" -w NoTests || rc=$?
echo "check_chart.sh: exit $rc in $(($(date +%s) - start)) s (helm: ${RDMANET_PEER_HELM:-missing}, kustomize: ${RDMANET_PEER_KUSTOMIZE:-missing})"
exit $rc
