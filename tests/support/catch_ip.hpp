#pragma once
// Catch2 printers for the IP value types, so failed comparisons show addresses, not "{?}", and
// literals of them for expected values.
#include <stdexcept>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "rdmanet/base/ip.hpp"

namespace Catch {
template <>
struct StringMaker<rdmanet::base::IpAddress> {
    static std::string convert(const rdmanet::base::IpAddress& ip) { return (ip.is_v4() ? "v4 " : "v6 ") + ip.str(); }
};
template <>
struct StringMaker<rdmanet::base::IpNetwork> {
    static std::string convert(const rdmanet::base::IpNetwork& net) {
        return (net.address.is_v4() ? "v4 " : "v6 ") + net.str();
    }
};
}  // namespace Catch

namespace rdmanet::test {
// A malformed literal is a broken test: it throws instead of yielding an empty value.
inline base::IpNetwork ip_net(std::string_view cidr) {
    auto net = base::IpNetwork::parse(cidr);
    if (!net) throw std::invalid_argument("test literal is not a CIDR: " + std::string(cidr));
    return *net;
}
inline base::IpAddress ip_addr(std::string_view text) {
    auto ip = base::IpAddress::parse(text);
    if (!ip) throw std::invalid_argument("test literal is not an IP address: " + std::string(text));
    return *ip;
}
}  // namespace rdmanet::test
