#pragma once
// rdmanetctl's connection to the Kubernetes datastore (pool list/show --kubeconfig, reconcile).
#include <memory>

#include "rdmanet/cni/ctl/pool.hpp"
#include "rdmanet/ipam/kube/kube_store.hpp"

namespace rdmanet::cni::ctl {

// Budget of one rdmanetctl command against the API (lists of big pools take a while).
inline constexpr std::chrono::milliseconds kCtlBudget{120000};

// From --kubeconfig, or the in-cluster service account with --in-cluster (--namespace applied).
// Throws IpamError naming what is missing.
ipam::kube::KubeConfig kube_config(const KubeOptions& options);
// A store on kube_config(options). No node journal: rdmanetctl never allocates.
std::unique_ptr<ipam::kube::KubeStore> open_kube_store(const KubeOptions& options);

}  // namespace rdmanet::cni::ctl
