#pragma once
// rdmanetctl's connection to the Kubernetes datastore (the agent, pool list/show --kubeconfig,
// reconcile, pool slices).
#include <chrono>
#include <memory>
#include <string>

#include "rdmanet/ipam/kube/kube_store.hpp"

namespace rdmanet::cni::node {

// The Kubernetes datastore instead of the local one: a kubeconfig, or the in-cluster service
// account (rdmanetctl run in a pod). `ns` overrides the context's namespace.
struct KubeOptions {
    std::string kubeconfig;
    bool in_cluster = false;
    std::string ns;
    bool enabled() const { return !kubeconfig.empty() || in_cluster; }
};

// Budget of one rdmanetctl command against the API (lists of big pools take a while).
inline constexpr std::chrono::milliseconds kCtlBudget{120000};

// From --kubeconfig, or the in-cluster service account with --in-cluster (--namespace applied).
// Throws IpamError naming what is missing.
ipam::kube::KubeConfig kube_config(const KubeOptions& options);
// A store on kube_config(options). No node journal: rdmanetctl never allocates.
std::unique_ptr<ipam::kube::KubeStore> open_kube_store(const KubeOptions& options);

}  // namespace rdmanet::cni::node
