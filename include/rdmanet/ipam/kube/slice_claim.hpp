#pragma once
// Node slices over the API (node_slices.hpp has the pure logic): reading the network's
// NodeSlicePool (created on first use) and claiming a free slice for this node.
//
// A claim is a JSON patch of the NodeSlicePool that tests the resourceVersion read: among nodes
// that claim at the same time exactly one write succeeds per version; the others get 422 (409
// from a server that checks it as a precondition), back off, re-read and decide again. No Lease,
// no controller: the claim is the only write the NodeSlicePool sees besides releases, so it
// happens once per slice, not per ADD.
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/ipam/kube/api.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"

namespace rdmanet::ipam::kube {

struct SliceScope {
    std::string ns;         // the IPAM namespace
    std::string pool_name;  // the NodeSlicePool's name (network_name, else the network's name)
    std::string node;       // this node
    int slice_prefix = 0;
};

// GET; nullopt when it does not exist. Throws IpamError(invalid_config) when it belongs to another range or
// slice size (parse_node_slice_pool).
std::optional<NodeSlicePool> read_node_slice_pool(KubeApi& api, const SliceScope& scope, const Range& parent);
// GET, creating it (no slice held) when missing; a lost creation race reads the winner's.
NodeSlicePool read_or_create_node_slice_pool(KubeApi& api, const SliceScope& scope, const Range& parent);

// PATCH of the NodeSlicePool (claim_patch, release_patch: under a resourceVersion test): true
// when applied, false when the test failed (someone else wrote it since it was read, or it was
// deleted): re-read and decide again.
bool patch_node_slice_pool(KubeApi& api, const SliceScope& scope, const nlohmann::json& ops);

// Claims a slice for scope.node and returns it: a slice the node already holds that is not in
// `unusable` (another process of the same node may have claimed one meanwhile), else the lowest
// free one. Throws range_exhausted() when no slice is free.
base::IpNetwork claim_slice(KubeApi& api, const SliceScope& scope, const Range& parent,
                            const std::vector<base::IpNetwork>& unusable);

// Releases `slice` held by scope.node (a no-op when it is not). Returns whether it was released.
bool release_slice(KubeApi& api, const SliceScope& scope, const Range& parent, const base::IpNetwork& slice);

}  // namespace rdmanet::ipam::kube
