// whereabouts' IPPool spec shape: {"range": CIDR, "allocations": {"<decimal offset>": {id, podref, ifname}}}.
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam {

nlohmann::json PoolDump::spec_json() const {
    nlohmann::json allocs = nlohmann::json::object();
    for (const auto& [offset, owner] : allocations) {
        allocs[to_decimal(offset)] = {{"id", owner.container_id}, {"podref", owner.podref}, {"ifname", owner.ifname}};
    }
    return {{"range", pool.range.str()}, {"allocations", std::move(allocs)}};
}

PoolDump PoolDump::from_spec_json(const nlohmann::json& spec, std::string network_name) {
    if (!spec.is_object()) config_error("IPPool spec must be an object");
    auto r = spec.find("range");
    if (r == spec.end() || !r->is_string()) config_error("IPPool spec.range is missing");
    auto net = base::IpNetwork::parse(r->get<std::string>());
    if (!net) config_error("IPPool spec.range \"" + r->get<std::string>() + "\" is not a CIDR");
    PoolDump dump{{std::move(network_name), net->masked()}, {}};
    const uint128 size_minus_one = net->last().to_u128() - dump.pool.range.address.to_u128();

    auto allocs = spec.find("allocations");
    if (allocs == spec.end() || allocs->is_null()) return dump;
    if (!allocs->is_object()) config_error("IPPool spec.allocations must be an object");
    for (auto it = allocs->begin(); it != allocs->end(); ++it) {
        const std::string field = "IPPool spec.allocations[\"" + it.key() + "\"]";
        // Malformed or out-of-range keys are rejected loudly (whereabouts #403 produced bogus ones).
        auto offset = parse_decimal(it.key());
        if (!offset) config_error(field + ": key is not a decimal offset");
        if (*offset > size_minus_one) config_error(field + ": offset is outside " + dump.pool.range.str());
        if (!it->is_object()) config_error(field + " must be an object");
        auto text = [&](const char* key) {
            auto v = it->find(key);
            return v != it->end() && v->is_string() ? v->get<std::string>() : std::string();
        };
        dump.allocations[*offset] = Owner{text("id"), text("podref"), text("ifname")};
    }
    return dump;
}

}  // namespace rdmanet::ipam
