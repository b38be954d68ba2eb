// Routes: RTM_NEWROUTE/RTM_DELROUTE through libnl's rtnl_route, and dumps of both families
// filtered by table and outgoing link.
#include <linux/rtnetlink.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>

#include <algorithm>

#include "rtnl_impl.hpp"

namespace rdmanet::netns {
namespace {

using detail::NlMsgPtr;
using detail::NlObjPtr;

struct NexthopFree {
    void operator()(rtnl_nexthop* nh) const { rtnl_route_nh_free(nh); }
};

std::string describe(const RouteInfo& r) {
    std::string s = r.dst ? r.dst->str() : std::string("default");
    if (r.gateway) s += " via " + r.gateway->str();
    if (r.ifindex) s += " dev #" + std::to_string(r.ifindex);
    return s;
}

int family_of(const RouteInfo& r) {
    if (r.family) return r.family;
    if (r.dst) return r.dst->address.af();
    if (r.gateway) return r.gateway->af();
    return 0;
}

std::optional<RouteInfo> to_route_info(rtnl_route* route, int ifindex, unsigned table) {
    const int family = rtnl_route_get_family(route);
    if (rtnl_route_get_table(route) != table) return std::nullopt;
    if (family != AF_INET && family != AF_INET6) return std::nullopt;
    // Only forwarding routes: blackhole, unreachable, prohibit ... have no link to report.
    if (rtnl_route_get_type(route) != RTN_UNICAST) return std::nullopt;

    RouteInfo info;
    info.family = family;
    info.table = rtnl_route_get_table(route);
    info.scope = rtnl_route_get_scope(route);
    info.priority = rtnl_route_get_priority(route);
    uint32_t metric = 0;
    if (rtnl_route_get_metric(route, RTAX_MTU, &metric) == 0) info.mtu = metric;
    if (rtnl_route_get_metric(route, RTAX_ADVMSS, &metric) == 0) info.advmss = metric;
    nl_addr* dst = rtnl_route_get_dst(route);
    if (dst && nl_addr_get_prefixlen(dst) > 0) {
        auto ip = detail::ip_from_nl_addr(dst);
        if (!ip) return std::nullopt;
        info.dst = base::IpNetwork{*ip, static_cast<int>(nl_addr_get_prefixlen(dst))};
    }
    info.prefsrc = detail::ip_from_nl_addr(rtnl_route_get_pref_src(route));
    // The first nexthop on the requested link (a multipath route may have several).
    bool on_link = false;
    for (int i = 0; i < rtnl_route_get_nnexthops(route); ++i) {
        rtnl_nexthop* nh = rtnl_route_nexthop_n(route, i);
        if (ifindex > 0 && rtnl_route_nh_get_ifindex(nh) != ifindex) continue;
        info.ifindex = rtnl_route_nh_get_ifindex(nh);
        info.gateway = detail::ip_from_nl_addr(rtnl_route_nh_get_gateway(nh));
        on_link = true;
        break;
    }
    if (ifindex > 0 && !on_link) return std::nullopt;
    return info;
}

enum class RouteOp { add, replace, remove };

// The request for `op` on `r`; `what` names it for errors.
NlMsgPtr route_request(const RouteInfo& r, RouteOp op, std::string& what) {
    what = std::string(op == RouteOp::add       ? "add"
                       : op == RouteOp::replace ? "replace"
                                                : "delete") +
           " route " + describe(r) + (r.table != RT_TABLE_MAIN ? " table " + std::to_string(r.table) : "");
    const int family = family_of(r);
    if (family != AF_INET && family != AF_INET6) throw KernelError(EINVAL, what + ": no address family");
    if ((r.dst && r.dst->address.af() != family) || (r.gateway && r.gateway->af() != family))
        throw KernelError(EINVAL, what + ": mixed address families");

    NlObjPtr<rtnl_route> route(rtnl_route_alloc());
    if (!route) throw KernelError(ENOMEM, what);
    rtnl_route_set_family(route.get(), static_cast<uint8_t>(family));
    rtnl_route_set_table(route.get(), r.table);
    rtnl_route_set_scope(route.get(), static_cast<uint8_t>(r.scope));
    // RTPROT_BOOT and RTN_UNICAST: what `ip route add` and the reference plugins send.
    rtnl_route_set_protocol(route.get(), RTPROT_BOOT);
    rtnl_route_set_type(route.get(), RTN_UNICAST);
    rtnl_route_set_priority(route.get(), r.priority);

    // The kernel rejects a destination with host bits set (10.1.0.5/24); Go's ParseCIDR, which
    // produced the reference plugins' routes, masks them, and so do we.
    detail::NlAddrPtr dst;
    if (r.dst) {
        const base::IpNetwork net = r.dst->masked();
        dst = detail::nl_addr_from_ip(net.address, net.prefix);
    } else {
        // A default route: a zero-length destination with prefix 0 (no RTA_DST is sent).
        dst.reset(nl_addr_alloc(0));
        if (!dst) throw KernelError(ENOMEM, what);
        nl_addr_set_family(dst.get(), family);
        nl_addr_set_prefixlen(dst.get(), 0);
    }
    if (int err = rtnl_route_set_dst(route.get(), dst.get()); err < 0)
        throw KernelError(detail::errno_from_nlerr(err), what);

    std::unique_ptr<rtnl_nexthop, NexthopFree> nh(rtnl_route_nh_alloc());
    if (!nh) throw KernelError(ENOMEM, what);
    if (r.ifindex > 0) rtnl_route_nh_set_ifindex(nh.get(), r.ifindex);
    detail::NlAddrPtr gateway;
    if (r.gateway) {
        gateway = detail::nl_addr_from_ip(*r.gateway, r.gateway->bits());
        rtnl_route_nh_set_gateway(nh.get(), gateway.get());  // takes its own reference
    }
    rtnl_route_add_nexthop(route.get(), nh.release());  // the route owns it now

    if (r.mtu) rtnl_route_set_metric(route.get(), RTAX_MTU, r.mtu);
    if (r.advmss) rtnl_route_set_metric(route.get(), RTAX_ADVMSS, r.advmss);
    detail::NlAddrPtr prefsrc;
    if (r.prefsrc) {
        prefsrc = detail::nl_addr_from_ip(*r.prefsrc, r.prefsrc->bits());
        rtnl_route_set_pref_src(route.get(), prefsrc.get());
    }

    nl_msg* raw = nullptr;
    int err = 0;
    if (op == RouteOp::remove) {
        // A delete matches on what it carries: no protocol, so that a kernel-made route matches too.
        rtnl_route_set_protocol(route.get(), RTPROT_UNSPEC);
        err = rtnl_route_build_del_request(route.get(), 0, &raw);
    } else {
        err = rtnl_route_build_add_request(route.get(),
                                           NLM_F_CREATE | (op == RouteOp::add ? NLM_F_EXCL : NLM_F_REPLACE), &raw);
    }
    if (err < 0) throw KernelError(detail::errno_from_nlerr(err), what);
    return NlMsgPtr(raw);
}

}  // namespace

void Rtnl::add_route(const RouteInfo& r) {
    std::string what;
    NlMsgPtr msg = route_request(r, RouteOp::add, what);
    impl_->run(msg.get(), what);
}

void Rtnl::replace_route(const RouteInfo& r) {
    std::string what;
    NlMsgPtr msg = route_request(r, RouteOp::replace, what);
    impl_->run(msg.get(), what);
}

void Rtnl::delete_route(const RouteInfo& r) {
    std::string what;
    NlMsgPtr msg = route_request(r, RouteOp::remove, what);
    impl_->run(msg.get(), what);
}

std::vector<RouteInfo> Rtnl::routes(int ifindex) { return routes_in_table(ifindex, RT_TABLE_MAIN); }

std::vector<RouteInfo> Rtnl::routes_in_table(int ifindex, unsigned table) {
    std::vector<RouteInfo> result;
    impl_->dump(
        "dump routes" + (ifindex > 0 ? " of link #" + std::to_string(ifindex) : std::string()),
        [] {
            rtmsg rtm{};
            rtm.rtm_family = AF_UNSPEC;  // both families in one dump
            return detail::new_message(RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof rtm);
        },
        [&] { result.clear(); },
        [&](nl_msg* reply) {
            if (nlmsg_hdr(reply)->nlmsg_type != RTM_NEWROUTE) return;
            rtnl_route* parsed = nullptr;
            if (int err = rtnl_route_parse(nlmsg_hdr(reply), &parsed); err < 0)
                throw KernelError(detail::errno_from_nlerr(err), "parse RTM_NEWROUTE");
            NlObjPtr<rtnl_route> route(parsed);
            if (auto info = to_route_info(route.get(), ifindex, table)) result.push_back(std::move(*info));
        });
    return result;
}

std::vector<unsigned> Rtnl::route_tables() {
    std::vector<unsigned> result;
    impl_->dump(
        "dump route tables",
        [] {
            rtmsg rtm{};
            rtm.rtm_family = AF_UNSPEC;
            return detail::new_message(RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof rtm);
        },
        [&] { result.clear(); },
        [&](nl_msg* reply) {
            nlmsghdr* hdr = nlmsg_hdr(reply);
            if (hdr->nlmsg_type != RTM_NEWROUTE) return;
            const auto* rtm = static_cast<const rtmsg*>(nlmsg_data(hdr));
            unsigned table = rtm->rtm_table;
            nlattr* tb[RTA_MAX + 1] = {};
            if (nlmsg_parse(hdr, sizeof(rtmsg), tb, RTA_MAX, nullptr) == 0 && tb[RTA_TABLE])
                table = nla_get_u32(tb[RTA_TABLE]);
            if (std::find(result.begin(), result.end(), table) == result.end()) result.push_back(table);
        });
    return result;
}

}  // namespace rdmanet::netns
