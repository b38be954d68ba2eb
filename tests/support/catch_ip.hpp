#pragma once
// Catch2 printers for the IP value types, so failed comparisons show addresses, not "{?}".
#include <catch2/catch.hpp>

#include "rdmanet/base/ip.hpp"

namespace Catch {
template <>
struct StringMaker<rdmanet::base::IpAddress> {
    static std::string convert(const rdmanet::base::IpAddress& ip) {
        return (ip.is_v4() ? "v4 " : "v6 ") + ip.str();
    }
};
template <>
struct StringMaker<rdmanet::base::IpNetwork> {
    static std::string convert(const rdmanet::base::IpNetwork& net) {
        return (net.address.is_v4() ? "v4 " : "v6 ") + net.str();
    }
};
}  // namespace Catch
