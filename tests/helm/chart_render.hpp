#pragma once
// The Helm chart (deploy/helm/rdmanet) as its tests see it: the real helm and kustomize (built
// from their Go modules by tests/peers/build_peers.sh) run as processes, and what they print read
// into JSON objects, one per YAML document.
//
// Finding the peers (support/peers.hpp's rule): RDMANET_PEER_HELM and RDMANET_PEER_KUSTOMIZE name
// the folders that hold `helm` and `kustomize` (`. tests/peers/peer_env.sh` exports them). When
// one is missing, the test fails naming it if CI is set in the environment, and otherwise prints
// SKIPPED and ends the program with 77 (ctest: skipped, never passed).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/build_paths.hpp"

namespace rdmanet::test::chart {

using nlohmann::json;

inline const std::string kChartDir = rdmanet::test::source_dir() + "/deploy/helm/rdmanet";
inline const std::string kValuesDir = rdmanet::test::source_dir() + "/tests/helm/values";

// The executable `name` in the folder of peer `peer` ("helm"); or the CI failure / skip above.
std::string peer_binary(const std::string& peer, const std::string& name);
// A peer is missing (`why`): fails the test under CI, else skips the program (exit 77).
void missing_peer(const std::string& why);

struct Run {
    int exit_code = -1;
    std::string out, err;
};

// `helm ARGS...` with private cache, config and data directories (nothing under $HOME).
Run helm(const std::vector<std::string>& args);

// `helm template rdmanet <chart> --include-crds ARGS...`: every object, CRDs included, in the
// order helm prints them. Fails the test when helm does.
std::vector<json> render(const std::vector<std::string>& args = {});
// The same with tests/helm/values/<name>.yaml.
std::vector<json> render_values(const std::string& name, const std::vector<std::string>& args = {});
// `kustomize build deploy/`: the base the default render must equal.
std::vector<json> kustomize_base();

// The object without the labels only Helm adds (helm.sh/chart, app.kubernetes.io/managed-by,
// app.kubernetes.io/instance, app.kubernetes.io/version): what must equal the kustomize base.
json without_helm_labels(json object);
// "Kind namespace/name" (namespace empty for cluster-scoped objects).
std::string key_of(const json& object);

// The object of that kind and name, or nullptr.
const json* find(const std::vector<json>& objects, const std::string& kind, const std::string& name);
// The same, failing the test when there is none.
const json& one(const std::vector<json>& objects, const std::string& kind, const std::string& name);

// The pod spec of a DaemonSet or CronJob object.
const json& pod_spec(const json& workload);
// The container (or init container) of that name, or nullptr.
const json* container(const json& pod, const std::string& name);
// The value of `--flag=value` in a container's args ("" when absent), and whether `arg` is one.
std::string arg_value(const json& container, const std::string& flag);
bool has_arg(const json& container, const std::string& arg);

}  // namespace rdmanet::test::chart
