#include "rdmanet/cni/pod/interface_setup.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/sysfs.hpp"

namespace rdmanet::cni {

namespace {

bool ours(const IpConfig& ip, int iface) { return !ip.interface || *ip.interface == iface; }

std::optional<base::IpAddress> default_gateway(const Result& r, int iface, base::IpAddress::Family family) {
    for (const auto& ip : r.ips) {
        if (!ours(ip, iface)) continue;
        if (ip.gateway && ip.gateway->family() == family) return ip.gateway;
    }
    return std::nullopt;
}

netns::RouteInfo to_route_info(const Route& route, const Result& r, int iface, int index) {
    netns::RouteInfo info;
    if (route.dst.prefix != 0) info.dst = route.dst.masked();
    info.family = route.dst.address.af();
    info.gateway = route.gw;
    if (!info.gateway) info.gateway = default_gateway(r, iface, route.dst.address.family());
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
        if (ours(ip, iface) && !ip.address.address.is_v4()) has_v6 = true;

    // Announce the new addresses to neighbours (as the reference macvlan plugin does).
    netns::in_netns(pod_ns, [&] {
        write_sysctl_quietly("net/ipv4/conf/" + ifname + "/arp_notify", "1");
        if (has_v6) write_sysctl_quietly("net/ipv6/conf/" + ifname + "/ndisc_notify", "1");
    });

    for (const auto& ip : ipam.ips) {
        if (!ours(ip, iface)) continue;
        pod.add_address(index, ip.address, /*nodad=*/true);
        spdlog::info("address {} on {}", ip.address.str(), ifname);
    }
    pod.set_up(index, true);
    for (const auto& route : ipam.routes) {
        try {
            pod.add_route(to_route_info(route, ipam, iface, index));
        } catch (const netns::KernelError& e) {
            if (e.errno_value() != EEXIST) throw;
        }
        spdlog::info("route {} via {} on {}", route.dst.str(), route.gw ? route.gw->str() : "(link)", ifname);
    }
}

void check_pod_interface(netns::Rtnl& pod, int index, const std::string& ifname, const Result& expected,
                         int iface) {
    const auto present = pod.addresses(index);
    for (const auto& ip : expected.ips) {
        if (!ours(ip, iface)) continue;
        if (std::find(present.begin(), present.end(), ip.address) == present.end())
            throw Error(ErrorCode::invalid_config, "address " + ip.address.str() + " missing on " + ifname);
    }
    const auto routes = pod.routes(index);
    for (const auto& route : expected.routes) {
        const auto want = to_route_info(route, expected, iface, index);
        const bool found = std::any_of(routes.begin(), routes.end(), [&](const netns::RouteInfo& r) {
            return r.dst == want.dst && (!route.gw || r.gateway == want.gateway);
        });
        if (!found) throw Error(ErrorCode::invalid_config, "route " + route.dst.str() + " missing on " + ifname);
    }
}

}  // namespace rdmanet::cni
