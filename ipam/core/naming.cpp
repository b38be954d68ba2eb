#include "rdmanet/ipam/core/naming.hpp"

#include "rdmanet/ipam/core/store.hpp"

namespace rdmanet::ipam {

std::string normalize_range_name(std::string_view text) {
    std::string out(text);
    if (!out.empty() && out.back() == ':') out.push_back('0');
    for (char& c : out) {
        if (c == ':' || c == '/') c = '-';
    }
    return out;
}

namespace {
std::string prefixed(std::string_view network_name, std::string name) {
    if (network_name.empty()) return name;
    return std::string(network_name) + "-" + name;
}
}  // namespace

std::string pool_object_name(std::string_view network_name, const base::IpNetwork& range) {
    return prefixed(network_name, normalize_range_name(range.masked().str()));
}

std::string reservation_object_name(std::string_view network_name, const base::IpAddress& ip) {
    return prefixed(network_name, normalize_range_name(ip.str()));
}

std::string PoolKey::name() const { return pool_object_name(network_name, range); }

}  // namespace rdmanet::ipam
