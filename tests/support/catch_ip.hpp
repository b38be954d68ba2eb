#pragma once
// Catch2 printers for the IP value types, so failed comparisons show addresses, not "{?}".
#include <catch2/catch.hpp>

#include "rdmanet/netns/ip.hpp"

namespace Catch {
template <>
struct StringMaker<rdmanet::netns::IpAddress> {
    static std::string convert(const rdmanet::netns::IpAddress& ip) {
        return (ip.is_v4() ? "v4 " : "v6 ") + ip.str();
    }
};
template <>
struct StringMaker<rdmanet::netns::IpNetwork> {
    static std::string convert(const rdmanet::netns::IpNetwork& net) {
        return (net.address.is_v4() ? "v4 " : "v6 ") + net.str();
    }
};
}  // namespace Catch
