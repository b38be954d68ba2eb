// Addresses and main-table routes through Rtnl, checked against the kernel and `ip`.
#include <catch2/catch.hpp>

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "netns_helpers.hpp"

using namespace rdmanet::netns;
using rdmanet::base::IpAddress;
using rdmanet::base::IpNetwork;
using rdmanet::test::errno_of;
using rdmanet::test::index_of;
using rdmanet::test::rtnl_in;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;

namespace {

IpNetwork cidr(const char* text) { return *IpNetwork::parse(text); }
IpAddress addr(const char* text) { return *IpAddress::parse(text); }

bool has_address(const std::vector<IpNetwork>& list, const char* text) {
    return std::find(list.begin(), list.end(), cidr(text)) != list.end();
}

const RouteInfo* find_route(const std::vector<RouteInfo>& routes, const std::optional<IpNetwork>& dst, int family) {
    for (const auto& r : routes)
        if (r.dst == dst && r.family == family) return &r;
    return nullptr;
}

// A namespace with a veth pair whose both ends are up, so carrier is on and routes work.
struct LinkedPair {
    ScopedNetns ns{"addr"};
    ScopedVeth veth{&ns, &ns};
    std::unique_ptr<Rtnl> rtnl = rtnl_in(ns);
    int a = index_of(*rtnl, veth.name_a());
    int b = index_of(*rtnl, veth.name_b());
    LinkedPair() {
        rtnl->set_up(a, true);
        rtnl->set_up(b, true);
    }
};

}  // namespace

TEST_CASE("Addresses", "[netns][rtnl][addr]") {
    LinkedPair t;
    Rtnl& rtnl = *t.rtnl;

    SECTION("IPv4 with its broadcast") {
        rtnl.add_address(t.a, cidr("10.20.0.5/24"));
        CHECK(has_address(rtnl.addresses(t.a), "10.20.0.5/24"));
        CHECK_FALSE(has_address(rtnl.addresses(t.b), "10.20.0.5/24"));
        CHECK_THAT(t.ns.ip({"-4", "addr", "show", "dev", t.veth.name_a()}),
                   Catch::Contains("inet 10.20.0.5/24 brd 10.20.0.255"));
        rtnl.add_address(t.a, cidr("10.21.0.1/31"));  // no broadcast on /31
        rtnl.add_address(t.a, cidr("10.22.0.1/32"));
        const auto list = rtnl.addresses(t.a);
        CHECK(has_address(list, "10.21.0.1/31"));
        CHECK(has_address(list, "10.22.0.1/32"));
        CHECK_THAT(t.ns.ip({"-4", "addr", "show", "dev", t.veth.name_a()}), Catch::Contains("inet 10.21.0.1/31 scope"));
    }
    SECTION("IPv6 with and without DAD") {
        rtnl.add_address(t.a, cidr("2001:db8:5::5/64"));  // nodad by default
        rtnl.add_address(t.b, cidr("2001:db8:5::6/64"), false);
        CHECK(has_address(rtnl.addresses(t.a), "2001:db8:5::5/64"));
        CHECK(has_address(rtnl.addresses(t.b), "2001:db8:5::6/64"));
        // `ip -o`: one line per address, flags on the same line.
        const std::string a_line =
            t.ns.ip({"-o", "-6", "addr", "show", "dev", t.veth.name_a(), "to", "2001:db8:5::5/128"});
        CHECK_THAT(a_line, Catch::Contains("2001:db8:5::5/64") && Catch::Contains("nodad"));
        CHECK_THAT(a_line, !Catch::Contains("tentative"));  // usable at once
        const std::string b_line =
            t.ns.ip({"-o", "-6", "addr", "show", "dev", t.veth.name_b(), "to", "2001:db8:5::6/128"});
        CHECK_THAT(b_line, Catch::Contains("2001:db8:5::6/64"));
        CHECK_THAT(b_line, !Catch::Contains("nodad"));
    }
    SECTION("the list covers both families and the link-local address") {
        rtnl.add_address(t.a, cidr("10.20.0.5/24"));
        rtnl.add_address(t.a, cidr("2001:db8:5::5/64"));
        // The kernel adds the link-local address once linkwatch has seen the carrier, which is
        // asynchronous (up to a second after both ends are up): poll for it.
        auto is_link_local = [](const IpNetwork& n) {
            return !n.address.is_v4() && n.prefix == 64 && cidr("fe80::/10").contains(n.address);
        };
        std::vector<IpNetwork> list;
        for (int i = 0; i < 50; ++i) {
            list = rtnl.addresses(t.a);
            if (std::any_of(list.begin(), list.end(), is_link_local)) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        CHECK(std::any_of(list.begin(), list.end(), is_link_local));
        CHECK(has_address(list, "10.20.0.5/24"));
        CHECK(has_address(list, "2001:db8:5::5/64"));
    }
    SECTION("errors") {
        rtnl.add_address(t.a, cidr("10.20.0.5/24"));
        CHECK(errno_of([&] { rtnl.add_address(t.a, cidr("10.20.0.5/24")); }) == EEXIST);
        CHECK(errno_of([&] { rtnl.add_address(999999, cidr("10.20.0.6/24")); }) == ENODEV);
        CHECK(rtnl.addresses(999999).empty());
    }
}

TEST_CASE("Routes of the main table", "[netns][rtnl][route]") {
    LinkedPair t;
    Rtnl& rtnl = *t.rtnl;
    rtnl.add_address(t.a, cidr("10.30.0.2/24"));
    rtnl.add_address(t.a, cidr("2001:db8:30::2/64"));

    SECTION("the kernel's prefix routes are listed") {
        const auto routes = rtnl.routes(t.a);
        const RouteInfo* prefix = find_route(routes, cidr("10.30.0.0/24"), AF_INET);
        REQUIRE(prefix);
        CHECK(prefix->ifindex == t.a);
        CHECK_FALSE(prefix->gateway);
        CHECK(prefix->scope == RT_SCOPE_LINK);
        CHECK(prefix->table == RT_TABLE_MAIN);
        CHECK(find_route(routes, cidr("2001:db8:30::/64"), AF_INET6));
    }
    SECTION("default routes via a gateway, both families") {
        RouteInfo v4;
        v4.gateway = addr("10.30.0.1");
        v4.ifindex = t.a;
        rtnl.add_route(v4);
        RouteInfo v6;
        v6.gateway = addr("2001:db8:30::1");
        v6.ifindex = t.a;
        rtnl.add_route(v6);

        const auto routes = rtnl.routes(t.a);
        const RouteInfo* d4 = find_route(routes, std::nullopt, AF_INET);
        REQUIRE(d4);
        CHECK(d4->gateway == addr("10.30.0.1"));
        CHECK(d4->ifindex == t.a);
        CHECK(d4->priority == 0);
        CHECK(d4->scope == RT_SCOPE_UNIVERSE);
        const RouteInfo* d6 = find_route(routes, std::nullopt, AF_INET6);
        REQUIRE(d6);
        CHECK(d6->gateway == addr("2001:db8:30::1"));
        CHECK(d6->priority == 1024);  // the kernel's IPv6 default metric
        CHECK_THAT(t.ns.ip({"-4", "route", "show", "default"}),
                   Catch::Contains("default via 10.30.0.1 dev " + t.veth.name_a()));
        CHECK(errno_of([&] { rtnl.add_route(v4); }) == EEXIST);
    }
    SECTION("prefix routes with metric, MTU and advmss; host bits masked") {
        RouteInfo r;
        r.dst = cidr("192.168.50.7/24");
        r.gateway = addr("10.30.0.1");
        r.ifindex = t.a;
        r.priority = 100;
        r.mtu = 1400;
        r.advmss = 1360;
        rtnl.add_route(r);
        RouteInfo r6;
        r6.dst = cidr("2001:db8:99::/48");
        r6.gateway = addr("2001:db8:30::1");
        r6.ifindex = t.a;
        r6.priority = 300;
        r6.mtu = 1300;
        rtnl.add_route(r6);

        const auto routes = rtnl.routes(t.a);
        const RouteInfo* got = find_route(routes, cidr("192.168.50.0/24"), AF_INET);
        REQUIRE(got);
        CHECK(got->gateway == addr("10.30.0.1"));
        CHECK(got->priority == 100);
        CHECK(got->mtu == 1400);
        CHECK(got->advmss == 1360);
        const RouteInfo* got6 = find_route(routes, cidr("2001:db8:99::/48"), AF_INET6);
        REQUIRE(got6);
        CHECK(got6->priority == 300);
        CHECK(got6->mtu == 1300);
        CHECK(got6->advmss == 0);
        CHECK_THAT(t.ns.ip({"-4", "route", "show", "192.168.50.0/24"}),
                   Catch::Contains("metric 100") && Catch::Contains("mtu 1400") && Catch::Contains("advmss 1360"));
    }
    SECTION("a link-scope route without gateway") {
        RouteInfo r;
        r.dst = cidr("172.16.0.0/16");
        r.ifindex = t.a;
        r.scope = RT_SCOPE_LINK;
        rtnl.add_route(r);
        const auto routes = rtnl.routes(t.a);
        const RouteInfo* got = find_route(routes, cidr("172.16.0.0/16"), AF_INET);
        REQUIRE(got);
        CHECK(got->scope == RT_SCOPE_LINK);
        CHECK_FALSE(got->gateway);
    }
    SECTION("filtering by link and by table") {
        rtnl.add_address(t.b, cidr("10.40.0.2/24"));
        t.ns.ip({"route", "add", "10.99.0.0/16", "dev", t.veth.name_a(), "table", "100"});
        const auto on_a = rtnl.routes(t.a);
        const auto on_b = rtnl.routes(t.b);
        const auto all = rtnl.routes(0);
        CHECK_FALSE(find_route(on_a, cidr("10.40.0.0/24"), AF_INET));
        CHECK(find_route(on_b, cidr("10.40.0.0/24"), AF_INET));
        CHECK(find_route(all, cidr("10.40.0.0/24"), AF_INET));
        CHECK(find_route(all, cidr("10.30.0.0/24"), AF_INET));
        for (const auto* list : {&on_a, &on_b, &all}) {
            CHECK_FALSE(find_route(*list, cidr("10.99.0.0/16"), AF_INET));  // table 100
            for (const auto& r : *list) CHECK(r.table == RT_TABLE_MAIN);
        }
        for (const auto& r : on_b) CHECK(r.ifindex == t.b);
    }
    SECTION("errors") {
        RouteInfo unreachable;
        unreachable.dst = cidr("192.168.60.0/24");
        unreachable.gateway = addr("10.77.0.1");  // not on any link's subnet
        unreachable.ifindex = t.a;
        CHECK(errno_of([&] { rtnl.add_route(unreachable); }) == ENETUNREACH);

        RouteInfo mixed;
        mixed.dst = cidr("192.168.61.0/24");
        mixed.gateway = addr("2001:db8:30::1");
        CHECK(errno_of([&] { rtnl.add_route(mixed); }) == EINVAL);

        RouteInfo nothing;  // no family to derive
        nothing.ifindex = t.a;
        CHECK(errno_of([&] { rtnl.add_route(nothing); }) == EINVAL);

        RouteInfo no_link;
        no_link.dst = cidr("192.168.62.0/24");
        no_link.ifindex = 999999;
        CHECK(errno_of([&] { rtnl.add_route(no_link); }) == ENODEV);
    }
}
