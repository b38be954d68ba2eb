#pragma once
// A network's range is written in one mode only: one IPPool for the whole range (single-pool mode)
// or node slices (node_slice_size: a NodeSlicePool and an IPPool per slice). The two modes' objects
// do not see each other's allocations, so a range switched from one to the other while the first
// still holds live addresses would hand them out again. rdmanet refuses the switch (code 7, with
// the way to migrate) instead of migrating: a migration would have to keep every node from
// allocating the single pool's addresses of pods on other nodes, while nodes that have not picked
// up the new configuration yet keep writing the single pool; only once it holds nothing is the
// switch safe. docs/ipam-node-slices.md#switching-a-network-between-modes tells how.
//
// The checks cost a request only where a mode starts on a range, never per steady-state ADD:
//   - node slices, before each claim of a slice: the single-pool IPPool of the range must not
//     hold allocations; an empty one is deleted (resourceVersion precondition), so that a node
//     still in single-pool mode must create it again, and that creation finds the NodeSlicePool;
//   - single pool, before creating the range's IPPool: no NodeSlicePool of the network for the range.
#include <string>

#include "rdmanet/ipam/core/store.hpp"
#include "rdmanet/ipam/kube/api.hpp"

namespace rdmanet::ipam::kube {

// Node-slice mode about to claim a slice of `range` for NodeSlicePool `nsp_name`: throws
// IpamError(invalid_config) when IPPool `single` (the range's single-pool IPPool) holds allocations.
void guard_slices_against_single_pool(KubeApi& api, const std::string& ns, const PoolKey& single,
                                      const std::string& nsp_name);

// Single-pool mode about to create IPPool `single`: throws IpamError(invalid_config) when NodeSlicePool
// `nsp_name` exists for the same range.
void guard_single_pool_against_slices(KubeApi& api, const std::string& ns, const PoolKey& single,
                                      const std::string& nsp_name);

}  // namespace rdmanet::ipam::kube
