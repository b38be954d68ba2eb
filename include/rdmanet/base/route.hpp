#pragma once
// A route and the DNS settings as a CNI result carries them. One model for both layers: the IPAM
// reads them from its config and hands them on, the plugin prints and applies them. Pure values,
// typed: parsed once where they enter (the IPAM config, a result read from JSON).
#include <optional>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::base {

struct Route {
    IpNetwork dst;                // host bits kept as written (printed back unchanged)
    std::optional<IpAddress> gw;  // none: the interface's gateway of the family, or on-link
    // CNI 1.1.0 route extras; the IPAM config has no keys for them, a result may carry them.
    std::optional<unsigned> mtu, advmss, priority, table, scope;
    friend bool operator==(const Route&, const Route&) = default;
};

// The kernel's tables by number: 0 (unspec) is read as main.
inline constexpr unsigned kMainRouteTable = 254;
inline constexpr unsigned kLocalRouteTable = 255;

inline unsigned route_table_of(const Route& route) {
    return route.table && *route.table != 0 ? *route.table : kMainRouteTable;
}
// The metric the kernel stores: IPv6 reads 0 as 1024.
inline unsigned route_metric_of(const Route& route) {
    const unsigned metric = route.priority.value_or(0);
    return metric == 0 && !route.dst.address.is_v4() ? 1024 : metric;
}

// Which routes of a list (a result's or an IPAM config's, named `list` in the message) could be
// installed but not reported and checked: "" when none. The kernel knows a route by family,
// destination, table and metric: a second route with the same four (another gateway, say) is
// refused with EEXIST, so a result listing both reports a route the pod never has and CHECK
// finds it missing. The same route listed twice is harmless (the second add finds it in place).
// The local table (255) is the kernel's own: consulted before every other one, a route there
// overrides the pod's own addresses.
inline std::string routes_problem(const std::vector<Route>& routes, std::string_view list = "routes") {
    const auto name = [&](std::size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; };
    for (std::size_t i = 0; i < routes.size(); ++i) {
        if (route_table_of(routes[i]) == kLocalRouteTable)
            return name(i) +
                   ".table 255 is the kernel's local table, which holds the node's own addresses and "
                   "is consulted before every other: use a table of 1-252 or 256 and up, or none (main)";
        for (std::size_t j = 0; j < i; ++j) {
            const Route& a = routes[j];
            const Route& b = routes[i];
            if (a == b) continue;
            if (a.dst.address.is_v4() != b.dst.address.is_v4() || !(a.dst.masked() == b.dst.masked()) ||
                route_table_of(a) != route_table_of(b) || route_metric_of(a) != route_metric_of(b))
                continue;
            return name(i) + " (dst " + b.dst.str() + ") has the destination, table and metric of " + name(j) +
                   ": the kernel holds one route for these, so the second could not be installed; give them "
                   "different \"priority\" values or keep one";
        }
    }
    return "";
}

struct Dns {
    std::vector<std::string> nameservers;
    std::string domain;
    std::vector<std::string> search;
    std::vector<std::string> options;
    bool empty() const { return nameservers.empty() && domain.empty() && search.empty() && options.empty(); }
    friend bool operator==(const Dns&, const Dns&) = default;
};

}  // namespace rdmanet::base
