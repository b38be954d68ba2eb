#pragma once
// Per-node address slices on whereabouts v0.9's wire format (its experimental "node slices"):
// pure logic - slice arithmetic, the NodeSlicePool object, the claim decision and the patches.
// The effects (reading, claiming over the API) are in slice_claim.hpp.
//
// Wire format (group whereabouts.cni.cncf.io/v1alpha1, in the IPAM namespace):
//   NodeSlicePool <name>   one per network; name = network_name, else the CNI network's name.
//     spec.range           the whole range, normalised CIDR ("10.0.0.0/16")
//     spec.sliceSize       the slice prefix as configured ("/25"; whereabouts also writes "25")
//     status.allocations   [{nodeName, sliceRange}]: the slices held by nodes. whereabouts' own
//                          controller lists every slice and marks a free one with nodeName "";
//                          rdmanet lists only held slices (a slice not listed is free), so that
//                          the object stays small for any range - an IPv6 /64 cut into /120
//                          slices has 2^56 of them - while whereabouts' readers, which look up
//                          their own node's entry, read it unchanged. A pool written by
//                          whereabouts' controller (free entries listed) is read and claimed in
//                          place: the free entry gets the node's name.
//   IPPool <network>-<node>-<normalised slice>   (without network name: <node>-<slice>), one per
//                          held slice, spec.range = the slice CIDR, the usual allocations map
//                          (offsets from the slice's network address).
// No status subresource: status is written with the object, under a resourceVersion test.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/range.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam::kube {

inline constexpr std::string_view kNodeSlicePools = "nodeslicepools";

// Slices of /`prefix` in `range` (range.prefix <= prefix): 2^(prefix - range.prefix), saturating
// at 2^127 (more than any cluster will ever claim).
uint128 slice_count(const base::IpNetwork& range, int prefix);
base::IpNetwork slice_at(const base::IpNetwork& range, int prefix, uint128 index);
// The index of `slice` in `range`; nullopt when it is not one of its /`prefix` slices.
std::optional<uint128> slice_index(const base::IpNetwork& range, int prefix, const base::IpNetwork& slice);

// The part of `parent` (its start/end, exclusions, gateway) inside `slice`, as a Range over the
// slice CIDR: what the node may hand out from that slice. Offsets are from the slice's address.
Range slice_range(const Range& parent, const base::IpNetwork& slice);
// Whether slice_range(parent, slice) has any allocatable offset.
bool slice_has_usable(const Range& parent, const base::IpNetwork& slice);

// The per-slice IPPool's key: its name() is whereabouts' slice pool name.
PoolKey slice_pool_key(std::string_view network_name, std::string_view node, const base::IpNetwork& slice);

struct SliceEntry {
    std::string node;  // "" = free (whereabouts' controller lists free slices)
    base::IpNetwork slice;
    friend bool operator==(const SliceEntry&, const SliceEntry&) = default;
};

struct NodeSlicePool {
    std::string name;
    std::string resource_version;
    base::IpNetwork range;
    int slice_prefix = 0;
    std::string slice_size_text;  // spec.sliceSize as stored
    bool has_status = false;
    std::vector<SliceEntry> entries;  // status.allocations in stored order

    std::vector<base::IpNetwork> slices_of(std::string_view node) const;
    // The holder of `slice`; "" when free or not listed.
    std::string holder(const base::IpNetwork& slice) const;
};

// A new NodeSlicePool with no slice held.
nlohmann::json new_node_slice_pool(std::string_view ns, std::string_view name, const base::IpNetwork& range,
                                   int slice_prefix);

// Reads a NodeSlicePool object. Throws IpamError(invalid_config) when its spec.range or spec.sliceSize differ
// from the configuration (`range`, `slice_prefix`) - another network's pool of the same name, or a
// changed configuration - and IpamError(io_failure) when it is malformed.
NodeSlicePool parse_node_slice_pool(const nlohmann::json& object, const base::IpNetwork& range, int slice_prefix);

// Reads a NodeSlicePool as stored, with its own spec.range and spec.sliceSize (the cluster-wide
// reconciler has no configuration); nullopt when it is malformed.
std::optional<NodeSlicePool> parse_stored_node_slice_pool(const nlohmann::json& object);

// The claim decision: the lowest slice of the range that no node holds, skipping `avoid` (slices
// the caller found unusable: fully excluded) and slices without a usable address. nullopt when
// every slice is held: the range is exhausted.
std::optional<base::IpNetwork> free_slice(const NodeSlicePool& pool, const Range& parent,
                                          const std::vector<base::IpNetwork>& avoid = {});

// JSON patch claiming `slice` for `node`: a test of the resourceVersion read (racing claimers:
// exactly one write succeeds, the others get 422 and re-read) and the new status. A listed free
// entry gets the node's name; otherwise the entry is added, entries kept sorted by address.
nlohmann::json claim_patch(const NodeSlicePool& pool, std::string_view node, const base::IpNetwork& slice);
// JSON patch releasing `slice` (held by `node`): under the same resourceVersion test.
nlohmann::json release_patch(const NodeSlicePool& pool, std::string_view node, const base::IpNetwork& slice);

// The error of a range with no free slice left.
IpamError range_exhausted(std::string_view pool_name, const Range& parent, int slice_prefix, std::string_view node);

}  // namespace rdmanet::ipam::kube
