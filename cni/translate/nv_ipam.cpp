#include "nv_ipam.hpp"

#include <stdexcept>
#include <vector>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::cni::translate {

namespace {

using json = nlohmann::json;
using base::IpAddress;
using base::IpNetwork;
using base::uint128;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

std::string text_at(const json& object, const char* key, const std::string& where) {
    if (!object.contains(key) || object[key].is_null()) return "";
    if (!object[key].is_string()) fail(where + "." + key + " must be a string");
    return object[key].get<std::string>();
}

IpAddress address_at(const json& object, const char* key, const std::string& where) {
    const std::string text = text_at(object, key, where);
    const auto ip = IpAddress::parse(text);
    if (!ip) fail(where + "." + key + " \"" + text + "\" is not an IP address");
    return *ip;
}

// The smallest prefix of `bits` whose block holds at least `count` addresses.
int prefix_holding(std::uint64_t count, int bits) {
    int host_bits = 0;
    while (host_bits < bits && (uint128{1} << host_bits) < count) ++host_bits;
    return bits - host_bits;
}

// [first, last] as the fewest aligned CIDRs (the classic range-to-prefix split).
std::vector<std::string> range_to_cidrs(const IpAddress& first, const IpAddress& last) {
    std::vector<std::string> cidrs;
    const int bits = first.bits();
    uint128 at = first.to_u128();
    const uint128 end = last.to_u128();
    for (;;) {
        int host_bits = 0;
        // Grow the block while it stays aligned at `at` and inside the range.
        while (host_bits + 1 < bits) {  // a whole address space is never one exclusion
            const uint128 size = uint128{1} << (host_bits + 1);
            if ((at & (size - 1)) != 0 || end - at < size - 1) break;
            ++host_bits;
        }
        cidrs.push_back(IpNetwork{IpAddress::from_u128(first.family(), at), bits - host_bits}.str());
        const uint128 block_last = at + ((uint128{1} << host_bits) - 1);
        if (block_last >= end) break;
        at = block_last + 1;
    }
    return cidrs;
}

}  // namespace

json convert_nv_ipam(const json& nv_ipam, const std::string& network, const std::map<std::string, json>& pools,
                     const std::string& kubeconfig) {
    const std::string where = "nv-ipam IPAM of " + network;
    if (const auto type = text_at(nv_ipam, "poolType", where); !type.empty() && type != "ippool")
        fail(where + ": poolType \"" + type + "\" has no rdmanet equivalent: only IPPool pools convert");
    std::string pool_name = text_at(nv_ipam, "poolName", where);
    if (pool_name.empty()) pool_name = network;  // nv-ipam's default
    if (pool_name.find(',') != std::string::npos)
        fail(where + ": poolName \"" + pool_name + "\" names two pools; rdmanet-ipam converts one pool per network");
    const auto found = pools.find(pool_name);
    if (found == pools.end())
        fail(where + ": nv-ipam IPPool \"" + pool_name +
             "\" is not in the input: add it to -f (kubectl get "
             "ippools.nv-ipam.nvidia.com " +
             pool_name + " -n <namespace> -o yaml)");
    const std::string pool_where = "nv-ipam IPPool " + pool_name;
    const json spec = found->second.value("spec", json::object());
    if (!spec.is_object()) fail(pool_where + ": spec must be a map");

    const std::string subnet_text = text_at(spec, "subnet", pool_where + ".spec");
    const auto subnet = IpNetwork::parse(subnet_text);
    if (!subnet) fail(pool_where + ": spec.subnet \"" + subnet_text + "\" is not a CIDR");
    if (!spec.contains("perNodeBlockSize") || !spec["perNodeBlockSize"].is_number_unsigned() ||
        spec["perNodeBlockSize"].get<std::uint64_t>() < 2)
        fail(pool_where + ": spec.perNodeBlockSize must be a number of addresses, at least 2");
    const int slice_prefix = prefix_holding(spec["perNodeBlockSize"].get<std::uint64_t>(), subnet->address.bits());
    if (slice_prefix < subnet->prefix)
        fail(pool_where + ": spec.perNodeBlockSize is larger than the subnet " + subnet->masked().str());
    if (spec.contains("perNodeExclusions") && !spec["perNodeExclusions"].empty())
        fail(pool_where +
             ": spec.perNodeExclusions has no rdmanet equivalent (exclusions apply to the whole "
             "range): list those addresses in spec.exclusions for every block, or remove them");

    json ipam = {{"type", "rdmanet-ipam"},
                 {"datastore", "kubernetes"},
                 {"kubernetes", {{"kubeconfig", kubeconfig}}},
                 {"range", subnet->masked().str()},
                 {"node_slice_size", "/" + std::to_string(slice_prefix)},
                 {"network_name", pool_name}};
    std::string gateway;
    if (!text_at(spec, "gateway", pool_where + ".spec").empty()) {
        const auto gw = address_at(spec, "gateway", pool_where + ".spec");
        if (!subnet->contains(gw))
            fail(pool_where + ": spec.gateway " + gw.str() + " is outside " + subnet->masked().str());
        gateway = gw.str();
        ipam["gateway"] = gateway;
    }
    json exclude = json::array();
    if (spec.contains("exclusions") && spec["exclusions"].is_array()) {
        for (std::size_t i = 0; i < spec["exclusions"].size(); ++i) {
            const auto& e = spec["exclusions"][i];
            const std::string at = pool_where + ".spec.exclusions[" + std::to_string(i) + "]";
            const auto first = address_at(e, "startIP", at);
            const auto last = address_at(e, "endIP", at);
            if (first.family() != subnet->address.family() || last.family() != first.family() || last < first)
                fail(at + ": startIP and endIP must be addresses of the subnet's family, startIP <= endIP");
            for (const auto& cidr : range_to_cidrs(first, last)) exclude.push_back(cidr);
        }
    }
    if (!exclude.empty()) ipam["exclude"] = exclude;
    json routes = json::array();
    if (spec.contains("routes") && spec["routes"].is_array())
        for (const auto& r : spec["routes"])
            routes.push_back({{"dst", text_at(r, "dst", pool_where + ".spec.routes[]")}});
    if (spec.value("defaultGateway", false)) {
        if (gateway.empty()) fail(pool_where + ": spec.defaultGateway needs spec.gateway");
        routes.push_back({{"dst", subnet->address.is_v4() ? "0.0.0.0/0" : "::/0"}});
    }
    if (!routes.empty()) ipam["routes"] = routes;
    return ipam;
}

}  // namespace rdmanet::cni::translate
