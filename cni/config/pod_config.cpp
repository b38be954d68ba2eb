#include "rdmanet/cni/config/pod_config.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

namespace {

base::IpNetwork parse_cidr(const std::string& text, const std::string& what) {
    auto net = base::IpNetwork::parse(text);
    if (!net) throw Error(ErrorCode::decode_failure, what + " \"" + text + "\" is not an IP/prefix");
    return *net;
}

std::optional<base::IpAddress> parse_ip(const std::string& text, const std::string& what) {
    if (text.empty()) return std::nullopt;
    auto ip = base::IpAddress::parse(text);
    if (!ip) throw Error(ErrorCode::decode_failure, what + " \"" + text + "\" is not an IP address");
    return ip;
}

bool ours(const IpConfig& ip, int iface) { return !ip.interface || *ip.interface == iface; }

std::optional<base::IpAddress> default_gateway(const Result& r, int iface, base::IpAddress::Family family) {
    for (const auto& ip : r.ips) {
        if (!ours(ip, iface)) continue;
        if (auto gw = parse_ip(ip.gateway, "gateway"); gw && gw->family() == family) return gw;
    }
    return std::nullopt;
}

netns::RouteInfo to_route_info(const Route& route, const Result& r, int iface, int index) {
    netns::RouteInfo info;
    const auto dst = parse_cidr(route.dst, "route dst");
    if (dst.prefix != 0) info.dst = dst.masked();
    info.family = dst.address.af();
    info.gateway = parse_ip(route.gw, "route gw");
    if (!info.gateway) info.gateway = default_gateway(r, iface, dst.address.family());
    info.ifindex = index;
    info.priority = route.priority.value_or(0);
    if (route.table) info.table = *route.table;
    if (route.scope) info.scope = static_cast<int>(*route.scope);
    info.mtu = route.mtu.value_or(0);
    info.advmss = route.advmss.value_or(0);
    return info;
}

void write_sysctl_quietly(const std::string& key, const std::string& value) {
    try {
        netns::write_sysctl(key, value);
    } catch (const std::exception& e) {
        spdlog::debug("sysctl {}={} not applied: {}", key, value, e.what());
    }
}

}  // namespace

void configure_pod_interface(const netns::NetNamespace& pod_ns, netns::Rtnl& pod, int index,
                             const std::string& ifname, const Result& ipam, int iface) {
    bool has_v6 = false;
    for (const auto& ip : ipam.ips)
        if (ours(ip, iface) && ip.address.find(':') != std::string::npos) has_v6 = true;

    // Announce the new addresses to neighbours (as the reference macvlan plugin does).
    netns::in_netns(pod_ns, [&] {
        write_sysctl_quietly("net/ipv4/conf/" + ifname + "/arp_notify", "1");
        if (has_v6) write_sysctl_quietly("net/ipv6/conf/" + ifname + "/ndisc_notify", "1");
    });

    for (const auto& ip : ipam.ips) {
        if (!ours(ip, iface)) continue;
        pod.add_address(index, parse_cidr(ip.address, "IPAM address"), /*nodad=*/true);
        spdlog::info("address {} on {}", ip.address, ifname);
    }
    pod.set_up(index, true);
    for (const auto& route : ipam.routes) {
        try {
            pod.add_route(to_route_info(route, ipam, iface, index));
        } catch (const netns::KernelError& e) {
            if (e.errno_value() != EEXIST) throw;
        }
        spdlog::info("route {} via {} on {}", route.dst, route.gw.empty() ? "(link)" : route.gw, ifname);
    }
}

void check_pod_interface(netns::Rtnl& pod, int index, const std::string& ifname, const Result& expected,
                         int iface) {
    const auto present = pod.addresses(index);
    for (const auto& ip : expected.ips) {
        if (!ours(ip, iface)) continue;
        const auto want = parse_cidr(ip.address, "address");
        if (std::find(present.begin(), present.end(), want) == present.end())
            throw Error(ErrorCode::invalid_config, "address " + ip.address + " missing on " + ifname);
    }
    const auto routes = pod.routes(index);
    for (const auto& route : expected.routes) {
        const auto want = to_route_info(route, expected, iface, index);
        const bool found = std::any_of(routes.begin(), routes.end(), [&](const netns::RouteInfo& r) {
            return r.dst == want.dst && (!route.gw.size() || r.gateway == want.gateway);
        });
        if (!found) throw Error(ErrorCode::invalid_config, "route " + route.dst + " missing on " + ifname);
    }
}

}  // namespace rdmanet::cni
