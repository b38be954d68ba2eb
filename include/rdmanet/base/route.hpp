#pragma once
// A route and the DNS settings as a CNI result carries them. One model for both layers: the IPAM
// reads them from its config and hands them on, the plugin prints and applies them. Pure values,
// typed: parsed once where they enter (the IPAM config, a result read from JSON).
#include <optional>
#include <string>
#include <vector>

#include "rdmanet/base/ip.hpp"

namespace rdmanet::base {

struct Route {
    IpNetwork dst;                    // host bits kept as written (printed back unchanged)
    std::optional<IpAddress> gw;      // none: the interface's gateway of the family, or on-link
    // CNI 1.1.0 route extras; the IPAM config has no keys for them, a result may carry them.
    std::optional<unsigned> mtu, advmss, priority, table, scope;
    friend bool operator==(const Route&, const Route&) = default;
};

struct Dns {
    std::vector<std::string> nameservers;
    std::string domain;
    std::vector<std::string> search;
    std::vector<std::string> options;
    bool empty() const { return nameservers.empty() && domain.empty() && search.empty() && options.empty(); }
    friend bool operator==(const Dns&, const Dns&) = default;
};

}  // namespace rdmanet::base
