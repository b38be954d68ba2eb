// Routes that ADD could install but not report and CHECK verify (two with the kernel's same key,
// the local table) are refused where routes enter: an IPAM result in the plugin, and the
// rdmanet-ipam config.
#include <catch2/catch.hpp>

#include "rdmanet/base/route.hpp"
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"

using rdmanet::base::IpAddress;
using rdmanet::base::IpNetwork;
using rdmanet::base::Route;
using rdmanet::base::routes_problem;

namespace {

Route route(const char* dst, const char* gw = nullptr) {
    Route r;
    r.dst = *IpNetwork::parse(dst);
    if (gw) r.gw = IpAddress::parse(gw);
    return r;
}

}  // namespace

TEST_CASE("routes_problem: one route per destination, table and metric", "[unit][routes]") {
    CHECK(routes_problem({route("10.0.0.0/8"), route("10.0.0.0/16"), route("fd00::/64")}).empty());
    // Another gateway to the same destination: the kernel refuses the second (EEXIST).
    CHECK(routes_problem({route("10.0.0.0/8", "192.168.1.1"), route("10.0.0.0/8", "192.168.1.2")}) ==
          "routes[1] (dst 10.0.0.0/8) has the destination, table and metric of routes[0]: the kernel holds one "
          "route for these, so the second could not be installed; give them different \"priority\" values or keep one");
    // Host bits do not make another destination; the list's name is the caller's.
    CHECK_THAT(
        routes_problem({route("10.1.2.3/8"), route("10.0.0.0/8", "192.168.1.2")}, "ipam.routes"),
        Catch::StartsWith("ipam.routes[1] (dst 10.0.0.0/8) has the destination, table and metric of ipam.routes[0]"));
    // The same route twice is harmless: the second add finds it in place, CHECK finds it.
    CHECK(routes_problem({route("10.0.0.0/8", "192.168.1.1"), route("10.0.0.0/8", "192.168.1.1")}).empty());
    // Another metric or table makes another route; IPv6 reads metric 0 as 1024.
    auto metric = route("10.0.0.0/8", "192.168.1.2");
    metric.priority = 100;
    CHECK(routes_problem({route("10.0.0.0/8", "192.168.1.1"), metric}).empty());
    auto table = route("10.0.0.0/8", "192.168.1.2");
    table.table = 100;
    CHECK(routes_problem({route("10.0.0.0/8", "192.168.1.1"), table}).empty());
    auto main_by_number = route("10.0.0.0/8", "192.168.1.2");
    main_by_number.table = 254;
    CHECK_FALSE(routes_problem({route("10.0.0.0/8", "192.168.1.1"), main_by_number}).empty());
    auto v6 = route("fd00::/64", "fd00::2");
    v6.priority = 1024;
    CHECK_FALSE(routes_problem({route("fd00::/64", "fd00::1"), v6}).empty());
}

TEST_CASE("routes_problem: the local table is refused", "[unit][routes]") {
    auto local = route("10.0.0.0/8");
    local.table = 255;
    CHECK_THAT(routes_problem({route("10.9.0.0/16"), local}),
               Catch::StartsWith("routes[1].table 255 is the kernel's local table"));
    for (unsigned ok : {1u, 252u, 253u, 256u, 1000u}) {
        local.table = ok;
        CHECK(routes_problem({local}).empty());
    }
}

TEST_CASE("rdmanet-ipam refuses two routes to one destination at config time", "[unit][routes][ipam]") {
    const nlohmann::json ipam = {
        {"type", "rdmanet-ipam"},
        {"range", "10.5.0.0/24"},
        {"routes", {{{"dst", "10.9.0.0/16"}, {"gw", "10.5.0.1"}}, {{"dst", "10.9.0.0/16"}, {"gw", "10.5.0.2"}}}}};
    try {
        rdmanet::ipam::parse_ipam_config(ipam);
        FAIL("two routes to 10.9.0.0/16 were accepted");
    } catch (const rdmanet::ipam::IpamError& e) {
        CHECK(e.code == 7);
        CHECK_THAT(e.msg,
                   Catch::StartsWith(
                       "ipam.routes[1] (dst 10.9.0.0/16) has the destination, table and metric of ipam.routes[0]"));
    }
}
