#pragma once
// nv-ipam's pools over the Kubernetes API: reading a pool, the node's labels, and the claim of a
// block or subnet for a node when nv-ipam's controller has not given it one.
//
// The claim is an update of the pool's status subresource carrying the resourceVersion read
// (what nv-ipam's controller does too): among writers of one version exactly one succeeds, the
// others get 409 Conflict, re-read and decide again. The decision is blocks.hpp's (the
// controller's order and validity rules), so when both rdmanet nodes and nv-ipam's controller
// write at once, whichever write lands first stands and the other re-reads: the controller keeps
// every valid allocation it finds for a matching node, and a node that finds an allocation for
// itself (the controller's or its own) uses it. No allocation is ever handed out twice.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/nvipam/blocks.hpp"

namespace rdmanet::ipam::nvipam {

struct PoolRef {
    PoolType type = PoolType::ippool;
    std::string ns;
    std::string name;
    std::string path() const;  // /apis/nv-ipam.nvidia.com/v1alpha1/namespaces/<ns>/<plural>/<name>
};

// GET. Throws IpamError(io_failure) "no CIDRPool <name> in namespace <ns>" when it does not exist (or the
// API server does not serve nv-ipam's CRDs, saying so), the mapped status error otherwise.
nlohmann::json get_pool(kube::KubeApi& api, const PoolRef& ref);

// The Node's labels; nullopt when there is no Node object of that name.
std::optional<std::map<std::string, std::string>> node_labels(kube::KubeApi& api, const std::string& node);

struct Claimed {
    Pool pool;  // as read (with the claim applied when this node wrote it)
    NodeAllocation allocation;
    bool written_here = false;  // this node wrote the status entry (no controller had)
    nlohmann::json object;      // the pool object as read (status as written when written_here)
};

// The node's allocation: its valid status entry, else a claim. Throws IpamError(invalid_config) when the node
// does not match the pool's nodeSelector, (5) naming pool and node when no block is free.
Claimed claim_allocation(kube::KubeApi& api, const PoolRef& ref, const std::string& node);

}  // namespace rdmanet::ipam::nvipam
