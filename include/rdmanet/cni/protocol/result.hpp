#pragma once
// The CNI result in a version-neutral form, with conversion to and from every supported version.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmanet/base/ip.hpp"
#include "rdmanet/base/route.hpp"

namespace rdmanet::cni {

struct Interface {
    std::string name;
    std::string mac;
    std::optional<unsigned> mtu;  // 1.1.0
    std::string sandbox;
    std::string socket_path;  // 1.1.0
    std::string pci_id;       // 1.1.0
};

struct IpConfig {
    base::IpNetwork address;  // with host bits: 10.1.0.5/24
    std::optional<base::IpAddress> gateway;
    std::optional<int> interface;  // index into interfaces
};

// Routes (with the 1.1.0 extras mtu, advmss, priority, table, scope) and DNS settings: the model
// the IPAM hands out too.
using Route = base::Route;
using Dns = base::Dns;

struct Result {
    std::string cni_version;
    std::vector<Interface> interfaces;
    std::vector<IpConfig> ips;
    std::vector<Route> routes;
    Dns dns;
};

// Reads a result of any supported version (0.3.0's "ip" spelling accepted, "ips[].version"
// ignored, a missing cniVersion accepted as libcni fills it in). Checks what later steps rely on:
// addresses and route destinations in CIDR notation, gateways as IPs, ips[].interface inside
// interfaces when any are listed. Throws Error(decode_failure) naming the bad field
// ("result.ips[0].address ..."); an unsupported cniVersion is such a bad field.
Result result_from_json(const nlohmann::json& j);
// Emits `r` in `version`: 0.3.x/0.4.0 with ips[].version (from the address family) and
// "dns":{} always; 1.0.0 without version and without an empty dns; 1.1.0 adds interface
// mtu/socketPath/pciID and route extras. Empty strings, unset optionals and empty lists are
// omitted. Unknown version -> Error code 1.
nlohmann::json result_to_json(const Result& r, std::string_view version);

Dns dns_from_json(const nlohmann::json& j);
nlohmann::json dns_to_json(const Dns& dns);

}  // namespace rdmanet::cni
