#include "rdmanet/ipam/core/static_ips.hpp"

#include "rdmanet/ipam/core/error.hpp"

namespace rdmanet::ipam {

StaticPlan plan_static_ips(const IpamConfig& config, std::span<const std::string> static_ips) {
    StaticPlan plan;
    plan.per_range.resize(config.ranges.size());
    for (const auto& text : static_ips) {
        const std::string what = "static IP request \"" + text + "\"";
        auto net = base::IpNetwork::parse_address_or_cidr(text);
        if (!net) config_error(what + " is neither an IP address nor a CIDR");
        const bool has_prefix = text.find('/') != std::string::npos;

        std::size_t i = 0;
        while (i < config.ranges.size() && !config.ranges[i].cidr.contains(net->address)) ++i;
        if (i == config.ranges.size()) {
            // Not ours to manage: returned as-is, like whereabouts' static addresses.
            if (!has_prefix) config_error(what + " is inside no configured range and so needs a prefix length");
            plan.passthrough.push_back(*net);
            continue;
        }
        const Range& r = config.ranges[i];
        if (has_prefix && net->prefix != r.cidr.prefix) {
            config_error(what + " has prefix /" + std::to_string(net->prefix) + " but " + r.field + " is " +
                         r.cidr.str());
        }
        const uint128 offset = *r.offset_of(net->address);
        if (!r.allocatable(offset)) {
            config_error(what + " cannot be handed out in " + r.describe() +
                         " (outside range_start..range_end, excluded, gateway, network or broadcast)");
        }
        if (plan.per_range[i]) {
            config_error(what + ": " + r.field + " already has a static request (" +
                         r.address_at(*plan.per_range[i]).str() + "); one address per range");
        }
        plan.per_range[i] = offset;
    }
    return plan;
}

}  // namespace rdmanet::ipam
