#include "rdmanet/cni/node/kube.hpp"

#include "rdmanet/cni/protocol/env.hpp"
#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::cni::node {

ipam::kube::KubeConfig kube_config(const KubeOptions& options) {
    ipam::kube::KubeConfig config;
    if (!options.kubeconfig.empty()) {
        config = ipam::kube::load_kubeconfig(options.kubeconfig);
    } else {
        const EnvLookup env = process_env_lookup();
        auto in_cluster = ipam::kube::in_cluster_config(env("KUBERNETES_SERVICE_HOST"), env("KUBERNETES_SERVICE_PORT"));
        if (!in_cluster) {
            throw ipam::IpamError(ipam::codes::invalid_config,
                                  "--in-cluster: not running in a pod (KUBERNETES_SERVICE_HOST unset or no token in " +
                                      std::string(ipam::kube::kServiceAccountDir) + "); use --kubeconfig");
        }
        config = std::move(*in_cluster);
    }
    if (!options.ns.empty()) config.namespace_ = options.ns;
    return config;
}

std::unique_ptr<ipam::kube::KubeStore> open_kube_store(const KubeOptions& options) {
    return std::make_unique<ipam::kube::KubeStore>(kube_config(options), ipam::kube::Deadline::in(kCtlBudget), "");
}

}  // namespace rdmanet::cni::node
