#pragma once
// NVIDIA nv-ipam's pools (group nv-ipam.nvidia.com, version v1alpha1) read in their own shape, so
// that a network can say {"type":"rdmanet-ipam","poolName":"...","poolType":"ippool"|"cidrpool"}
// against the very objects nv-ipam's controller and tools use. Pure: JSON in, values out.
//
// IPPool    spec.subnet, perNodeBlockSize, gateway, exclusions[{startIP,endIP}],
//           perNodeExclusions[{startIndex,endIndex}] (from the block's first address), nodeSelector,
//           routes[{dst}], defaultGateway; status.allocations[{nodeName,startIP,endIP}]
// CIDRPool  spec.cidr, perNodeNetworkPrefix, gatewayIndex (unset: no gateway), exclusions,
//           perNodeExclusions (from the node subnet's network address), staticAllocations
//           [{nodeName?, prefix, gateway?}] (no nodeName: the prefix is held back), nodeSelector,
//           routes, defaultGateway; status.allocations[{nodeName,prefix,gateway}]
//
// parse_pool refuses what nv-ipam's admission webhook refuses (IpamError 7 naming the field, e.g.
// "CIDRPool kube-system/rail1: spec.perNodeNetworkPrefix 16 must be between ..."), so a pool the
// controller would ignore is never served here either.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::ipam::nvipam {

inline constexpr std::string_view kGroup = "nv-ipam.nvidia.com";
inline constexpr std::string_view kVersion = "v1alpha1";
// nv-ipam's own default for its pools' namespace (its --ippools-namespace / --cidrpools-namespace
// flags). NVIDIA's network-operator deploys nv-ipam with its own namespace,
// nvidia-network-operator: set poolNamespace to that there.
inline constexpr std::string_view kDefaultNamespace = "kube-system";

enum class PoolType { ippool, cidrpool };

std::string_view plural(PoolType type);  // "ippools", "cidrpools"
std::string_view kind(PoolType type);    // "IPPool", "CIDRPool"
// "ippool" / "cidrpool" (nv-ipam's poolType values); IpamError(invalid_config) naming `field` otherwise.
PoolType parse_pool_type(std::string_view text, const std::string& field);

struct AddressRange {
    base::IpAddress start;
    base::IpAddress end;
};

struct IndexRange {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
};

// Kubernetes' core/v1 NodeSelector: terms are ORed, a term's requirements ANDed.
struct Requirement {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
    std::vector<std::string> values;
};
struct SelectorTerm {
    std::vector<Requirement> expressions;  // matchExpressions: on the node's labels
    std::vector<Requirement> fields;       // matchFields: metadata.name only
};
struct NodeSelector {
    std::vector<SelectorTerm> terms;
};

// One node's block (IPPool: start..end) or subnet (CIDRPool: prefix, gateway) as status holds it.
struct NodeAllocation {
    std::string node;
    base::IpAddress start;                   // IPPool; CIDRPool: prefix's network address
    base::IpAddress end;                     // IPPool; CIDRPool: prefix's last address
    base::IpNetwork prefix;                  // CIDRPool
    std::optional<base::IpAddress> gateway;  // CIDRPool: per subnet
    friend bool operator==(const NodeAllocation&, const NodeAllocation&) = default;
};

struct StaticAllocation {
    std::string node;  // "": held back for no node
    base::IpNetwork prefix;
    std::optional<base::IpAddress> gateway;
};

struct Pool {
    PoolType type = PoolType::ippool;
    std::string name;
    std::string ns;
    std::string resource_version;
    base::IpNetwork subnet;                      // IPPool spec.subnet, CIDRPool spec.cidr (normalised)
    std::uint64_t block_size = 0;                // IPPool perNodeBlockSize
    int node_prefix = 0;                         // CIDRPool perNodeNetworkPrefix
    std::optional<base::IpAddress> gateway;      // IPPool
    std::optional<std::uint64_t> gateway_index;  // CIDRPool
    std::vector<AddressRange> exclusions;
    std::vector<IndexRange> node_exclusions;
    std::vector<StaticAllocation> statics;  // CIDRPool
    std::optional<NodeSelector> selector;
    std::vector<base::IpNetwork> routes;
    bool default_gateway = false;
    std::vector<NodeAllocation> allocations;  // status, as written (possibly invalid entries)

    std::string where() const;  // "CIDRPool kube-system/rail1"
    const NodeAllocation* allocation_of(std::string_view node) const;
};

// Spec (validated as the webhook does) and status. Status entries that do not parse are skipped
// (the controller discards them too). Throws IpamError(invalid_config) naming the field.
Pool parse_pool(const nlohmann::json& object, PoolType type);

// The status.allocations array for `allocations`, in nv-ipam's shape, sorted by node name as
// the controller keeps it (so that its next reconcile finds nothing to change).
nlohmann::json allocations_json(const Pool& pool, std::vector<NodeAllocation> allocations);

// Whether the node with `labels` and `node_name` matches `selector` (Kubernetes' rules: an
// unknown operator or an unparsable Gt/Lt value does not match).
bool matches(const NodeSelector& selector, const std::map<std::string, std::string>& labels,
             std::string_view node_name);

}  // namespace rdmanet::ipam::nvipam
