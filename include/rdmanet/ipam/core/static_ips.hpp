#pragma once
// Static address requests (runtimeConfig.ips, args.cni.ips, CNI_ARGS IP=) mapped onto the
// configured ranges. Pure.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdmanet/ipam/core/config.hpp"

namespace rdmanet::ipam {

struct StaticPlan {
    std::vector<std::optional<uint128>> per_range;  // size == config.ranges.size()
    std::vector<base::IpNetwork> passthrough;       // inside no range: returned as-is
};

// Throws IpamError(invalid_config): text not an IP/CIDR; two requests for one range; a request inside a range
// that is excluded there, outside range_start..range_end, or with a prefix other than the range's;
// a request inside no range without a prefix length.
StaticPlan plan_static_ips(const IpamConfig& config, std::span<const std::string> static_ips);

}  // namespace rdmanet::ipam
