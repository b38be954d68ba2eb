#pragma once
// rdmanetctl's connection to the Kubernetes datastore (pool list/show --kubeconfig, reconcile).
#include <memory>

#include "rdmanet/cni/ctl/pool.hpp"
#include "rdmanet/ipam/kube/kube_store.hpp"

namespace rdmanet::cni::ctl {

// Budget of one rdmanetctl command against the API (lists of big pools take a while).
inline constexpr std::chrono::milliseconds kCtlBudget{120000};

// From --kubeconfig, or the in-cluster service account with --in-cluster. Throws IpamError
// naming what is missing. No node journal: rdmanetctl never allocates.
std::unique_ptr<ipam::kube::KubeStore> open_kube_store(const KubeOptions& options);

}  // namespace rdmanet::cni::ctl
