#pragma once
// Which block or subnet of an nv-ipam pool a node gets, and what the node may hand out of it.
// Pure: the same order as nv-ipam's controller, so that a block rdmanet claimed without the
// controller is one the controller keeps when it starts later.
//
// Order (nv-ipam's ipam-controller):
//  - IPPool: blocks of perNodeBlockSize addresses from the subnet's network address + 1; the
//    first block not held by an allocation, whose last address is inside the subnet and (IPv4)
//    not the broadcast address. Valid allocations start at network + 1 + k * perNodeBlockSize.
//  - CIDRPool: the node's staticAllocations entry when it has one; else the subnets of
//    perNodeNetworkPrefix in address order, the first neither allocated nor named by a static
//    allocation (for another node, or held back). Gateway: the static entry's, else the
//    gatewayIndex-th address of the subnet (index 0 only in /31 and /32, nv-ipam's rule).
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/base/route.hpp"
#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/ipam/nvipam/pool.hpp"

namespace rdmanet::ipam::nvipam {

// The gatewayIndex-th address of `subnet` as nv-ipam computes it; nullopt when the index does not
// fit (0 in a subnet larger than /31 or /127, or past the last host address).
std::optional<base::IpAddress> gateway_at(const base::IpNetwork& subnet, std::uint64_t index);

// Whether `a` is an allocation the controller would keep for its node (alignment, size, inside
// the pool, the computed or static gateway, not another node's static prefix).
bool valid_allocation(const Pool& pool, const NodeAllocation& a);

// Another node's status entry that shares an address with `mine`, or nullptr. nv-ipam's controller
// keeps only one of two overlapping entries; a node must never hand out addresses of a block
// another node holds too, so such a status is refused rather than used (one pass, O(n)).
const NodeAllocation* overlapping_allocation(const Pool& pool, const NodeAllocation& mine);

// The block/subnet `node` gets next: its valid allocation when status has one, else the first
// free in the controller's order. nullopt when none is free.
std::optional<NodeAllocation> next_allocation(const Pool& pool, const std::string& node);

// What the node hands out of its allocation: a Range whose CIDR carries the prefix length the
// address is returned with (IPPool: the pool's subnet; CIDRPool: the node's subnet), first..last
// (CIDRPool: network and IPv4 broadcast left out except in /31, /32, /127, /128), the gateway,
// exclusions and perNodeExclusions excluded.
Range node_range(const Pool& pool, const NodeAllocation& a);

// spec.routes via the gateway, and with defaultGateway the default route of the family.
std::vector<base::Route> node_routes(const Pool& pool, const NodeAllocation& a);

}  // namespace rdmanet::ipam::nvipam
