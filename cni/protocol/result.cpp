#include "rdmanet/cni/protocol/result.hpp"

#include "rdmanet/cni/protocol/json_fields.hpp"
#include "rdmanet/cni/protocol/result_parse.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/version.hpp"
#include "rdmanet/base/ip.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

constexpr auto kDecode = ErrorCode::decode_failure;

// Result fields that carry addresses are parsed here, when they enter, so a malformed IPAM
// answer is reported as such and not later as a failed netlink call.
base::IpNetwork required_cidr(const JsonFields& fields, std::string_view key) {
    auto value = fields.string(key);
    if (!value) fields.invalid(key, "is required");
    auto net = base::IpNetwork::parse(*value);
    if (!net) fields.invalid(key, text::quote(*value) + " is not an address in CIDR notation", "example: 10.1.0.5/24");
    return *net;
}
// An absent or empty gateway is none.
std::optional<base::IpAddress> optional_ip(const JsonFields& fields, std::string_view key) {
    auto value = fields.string(key);
    if (!value || value->empty()) return std::nullopt;
    auto ip = base::IpAddress::parse(*value);
    if (!ip) fields.invalid(key, text::quote(*value) + " is not an IP address");
    return ip;
}

Interface interface_from_json(const JsonFields& f) {
    Interface iface;
    iface.name = f.string("name").value_or("");
    iface.mac = f.string("mac").value_or("");
    iface.mtu = f.uint("mtu");
    iface.sandbox = f.string("sandbox").value_or("");
    iface.socket_path = f.string("socketPath").value_or("");
    iface.pci_id = f.string("pciID").value_or("");
    return iface;
}

IpConfig ip_from_json(const JsonFields& f, std::size_t interface_count) {
    IpConfig ip;
    ip.address = required_cidr(f, "address");
    ip.gateway = optional_ip(f, "gateway");
    if (auto index = f.uint("interface", 0x7fffffff)) {
        // IPAM results have no interfaces; only a result that lists some can be checked.
        if (interface_count > 0 && *index >= interface_count)
            f.invalid("interface", std::to_string(*index) + " is not an index into interfaces (" +
                                       std::to_string(interface_count) + " listed)");
        ip.interface = static_cast<int>(*index);
    }
    // ips[].version (0.x) is ignored: the address says its family.
    return ip;
}

Route route_from_json(const JsonFields& f) {
    Route route;
    route.dst = required_cidr(f, "dst");
    route.gw = optional_ip(f, "gw");
    route.mtu = f.uint("mtu");
    route.advmss = f.uint("advmss");
    route.priority = f.uint("priority");
    route.table = f.uint("table");
    route.scope = f.uint("scope", 255);
    return route;
}

nlohmann::json interface_to_json(const Interface& iface, bool v1_1) {
    nlohmann::json j = {{"name", iface.name}};
    if (!iface.mac.empty()) j["mac"] = iface.mac;
    if (!iface.sandbox.empty()) j["sandbox"] = iface.sandbox;
    if (v1_1) {
        if (iface.mtu) j["mtu"] = *iface.mtu;
        if (!iface.socket_path.empty()) j["socketPath"] = iface.socket_path;
        if (!iface.pci_id.empty()) j["pciID"] = iface.pci_id;
    }
    return j;
}

nlohmann::json ip_to_json(const IpConfig& ip, bool with_version) {
    nlohmann::json j = {{"address", ip.address.str()}};
    if (with_version) j["version"] = ip.address.address.is_v4() ? "4" : "6";
    if (ip.gateway) j["gateway"] = ip.gateway->str();
    if (ip.interface) j["interface"] = *ip.interface;
    return j;
}

nlohmann::json route_to_json(const Route& route, bool v1_1) {
    nlohmann::json j = {{"dst", route.dst.str()}};
    if (route.gw) j["gw"] = route.gw->str();
    if (v1_1) {
        if (route.mtu) j["mtu"] = *route.mtu;
        if (route.advmss) j["advmss"] = *route.advmss;
        if (route.priority) j["priority"] = *route.priority;
        if (route.table) j["table"] = *route.table;
        if (route.scope) j["scope"] = *route.scope;
    }
    return j;
}

}  // namespace

Dns parse_dns_at(const nlohmann::json& j, std::string path, ErrorCode code) {
    Dns dns;
    if (j.is_null()) return dns;
    auto f = JsonFields::of_object(j, std::move(path), code);
    dns.nameservers = f.strings("nameservers");
    dns.domain = f.string("domain").value_or("");
    dns.search = f.strings("search");
    dns.options = f.strings("options");
    return dns;
}

nlohmann::json dns_to_json(const Dns& dns) {
    nlohmann::json j = nlohmann::json::object();
    if (!dns.nameservers.empty()) j["nameservers"] = dns.nameservers;
    if (!dns.domain.empty()) j["domain"] = dns.domain;
    if (!dns.search.empty()) j["search"] = dns.search;
    if (!dns.options.empty()) j["options"] = dns.options;
    return j;
}

Dns dns_from_json(const nlohmann::json& j) { return parse_dns_at(j, "dns", kDecode); }

Result parse_result_at(const nlohmann::json& j, std::string path, ErrorCode code) {
    auto f = JsonFields::of_object(j, std::move(path), code);
    Result r;
    r.cni_version = f.string("cniVersion").value_or("");
    // libcni fills in a missing cniVersion; a present one must be a shape we know.
    if (!r.cni_version.empty() && !is_supported_version(r.cni_version))
        f.invalid("cniVersion", text::quote(r.cni_version) + " is not a supported result version");

    f.for_each_object("interfaces", [&](const JsonFields& e) { r.interfaces.push_back(interface_from_json(e)); });
    // 0.3.0's spec text spells the list "ip"; accept it when "ips" is absent.
    std::string_view ips_key = !f.has("ips") && f.has("ip") ? "ip" : "ips";
    f.for_each_object(ips_key, [&](const JsonFields& e) { r.ips.push_back(ip_from_json(e, r.interfaces.size())); });
    f.for_each_object("routes", [&](const JsonFields& e) { r.routes.push_back(route_from_json(e)); });
    if (const auto* dns = f.get("dns")) r.dns = parse_dns_at(*dns, f.name("dns"), code);
    return r;
}

Result result_from_json(const nlohmann::json& j) { return parse_result_at(j, "result", kDecode); }

nlohmann::json result_to_json(const Result& r, std::string_view version) {
    if (!is_supported_version(version))
        throw Error(ErrorCode::incompatible_version, "incompatible CNI versions",
                    "cannot print a result as version " + text::quote(version));
    const bool v0 = compare_versions(version, "1.0.0") < 0;
    const bool v1_1 = compare_versions(version, "1.1.0") >= 0;

    nlohmann::json j = {{"cniVersion", std::string(version)}};
    if (!r.interfaces.empty()) {
        auto& list = j["interfaces"] = nlohmann::json::array();
        for (const auto& iface : r.interfaces) list.push_back(interface_to_json(iface, v1_1));
    }
    if (!r.ips.empty()) {
        auto& list = j["ips"] = nlohmann::json::array();
        for (const auto& ip : r.ips) list.push_back(ip_to_json(ip, v0));
    }
    if (!r.routes.empty()) {
        auto& list = j["routes"] = nlohmann::json::array();
        for (const auto& route : r.routes) list.push_back(route_to_json(route, v1_1));
    }
    // Go's 0.x types always print "dns": {}; 1.x omits an empty one.
    if (v0 || !r.dns.empty()) j["dns"] = dns_to_json(r.dns);
    return j;
}

}  // namespace rdmanet::cni
