// The pod side's whole plan as data: what it asks the kernel (and whether under the pod's lock),
// and what it decides from the request and the kernel's answer, in the order ADD applies it.
#include <catch2/catch.hpp>

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/pod/pod_plan.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;

namespace {

IpConfig ip(const std::string& cidr, const std::string& gw = "") {
    IpConfig c;
    c.address = *base::IpNetwork::parse(cidr);
    if (!gw.empty()) c.gateway = base::IpAddress::parse(gw);
    return c;
}

Route route(const std::string& dst, const std::string& gw = "") {
    Route r;
    r.dst = *base::IpNetwork::parse(dst);
    if (!gw.empty()) r.gw = base::IpAddress::parse(gw);
    return r;
}

PodSetupInput input(std::vector<IpConfig> ips, std::vector<Route> routes = {}) {
    PodSetupInput in;
    in.ifname = "net1";
    in.index = 7;
    in.ips = std::move(ips);
    in.routes = std::move(routes);
    in.embedded_ipam = true;
    return in;
}

// The kernel's answer to `query` for a pod where every sysctl reads "0".
PodFacts facts_for(const PodQuery& query) {
    PodFacts facts;
    facts.route_tables = {254, 255};
    for (const auto& path : query.sysctls) facts.sysctls.push_back({path, std::string("0"), ""});
    return facts;
}

netns::RuleInfo rule_to(unsigned table) {
    netns::RuleInfo r;
    r.table = table;
    return r;
}

}  // namespace

TEST_CASE("pod_query: the lock only when another ADD can change the answer", "[cni][pod]") {
    // Addresses and a non-default route: nothing another ADD changes, no lock, no tables.
    auto in = input({ip("10.1.0.5/24", "10.1.0.1")}, {route("10.50.0.0/16")});
    auto q = pod_query(in);
    CHECK_FALSE(q.lock);
    CHECK_FALSE(q.tables_in_use);
    CHECK_FALSE(q.fixed_table);
    CHECK_FALSE(q.main_defaults);
    CHECK(q.sysctls.empty());

    // A default route for the main table: whether the main table has one is read under the lock.
    in.routes.push_back(route("0.0.0.0/0", "10.1.0.1"));
    q = pod_query(in);
    CHECK(q.lock);
    CHECK(q.main_defaults);
    CHECK_FALSE(q.tables_in_use);

    // A default route for a table of its own is not the main table's.
    in.routes.back().table = 300;
    CHECK_FALSE(pod_query(in).lock);

    // policyRouting: free tables to choose (or a fixed one's users), its sysctls recorded first.
    in = input({ip("10.1.0.5/24", "10.1.0.1")});
    in.settings.policy_routing = PolicyRouting{};
    q = pod_query(in);
    CHECK(q.lock);
    CHECK(q.tables_in_use);
    CHECK_FALSE(q.fixed_table);
    CHECK_FALSE(q.main_defaults);
    CHECK(q.sysctls == std::vector<std::string>{"net/ipv4/conf/net1/arp_ignore", "net/ipv4/conf/net1/arp_announce",
                                                "net/ipv4/conf/net1/rp_filter"});
    in.settings.policy_routing->table = 500;
    q = pod_query(in);
    CHECK_FALSE(q.tables_in_use);
    CHECK(q.fixed_table == 500u);
}

TEST_CASE("plan_pod_setup: without policyRouting, addresses and the IPAM's routes in the main table", "[cni][pod]") {
    auto in = input({ip("10.1.0.5/24", "10.1.0.1"), ip("fd00::5/64", "fd00::1")},
                    {route("10.50.0.0/16"), route("0.0.0.0/0", "10.1.0.1"), route("::/0", "fd00::1")});
    const auto q = pod_query(in);
    // IPv6 with the embedded IPAM: DAD skipped, IPv6 turned on, both recorded before they change.
    CHECK(q.sysctls == std::vector<std::string>{"net/ipv6/conf/net1/accept_dad", "net/ipv6/conf/net1/disable_ipv6"});
    auto facts = facts_for(q);
    facts.main_default_families = {AF_INET};  // the cluster network's default route

    const auto plan = plan_pod_setup(in, facts);
    CHECK_FALSE(plan.policy_routing);
    CHECK_FALSE(plan.record.table);
    CHECK(plan.record.rules.empty());
    REQUIRE(plan.record.sysctls.size() == 2);
    CHECK(plan.record.sysctls[0].path == "net/ipv6/conf/net1/accept_dad");
    CHECK(plan.record.sysctls[0].original == "0");
    CHECK(plan.notify_sysctls ==
          std::vector<std::string>{"net/ipv4/conf/net1/arp_notify", "net/ipv6/conf/net1/ndisc_notify"});
    REQUIRE(plan.addresses.size() == 2);
    CHECK(plan.addresses[1].str() == "fd00::5/64");
    CHECK(plan.nodad);
    CHECK_FALSE(plan.wait_for_dad);
    CHECK(plan.table_routes.empty());
    CHECK(plan.source_hints.empty());
    // The IPv4 default is left out (the main table has one), the IPv6 one goes in.
    REQUIRE(plan.main_routes.size() == 2);
    CHECK(plan.main_routes[0].dst->str() == "10.50.0.0/16");
    CHECK(plan.main_routes[0].gateway->str() == "10.1.0.1");  // the family's gateway
    CHECK(plan.main_routes[0].ifindex == 7);
    CHECK_FALSE(plan.main_routes[1].dst);
    CHECK(plan.main_routes[1].family == AF_INET6);
    REQUIRE(plan.main_defaults_left_out.size() == 1);
    CHECK(plan.main_defaults_left_out[0].family == AF_INET);
}

TEST_CASE("plan_pod_setup: a second default route of one family is left out as after the first", "[cni][pod]") {
    const auto in = input({ip("10.1.0.5/24", "10.1.0.1"), ip("10.2.0.5/24", "10.2.0.1")},
                          {route("0.0.0.0/0", "10.1.0.1"), route("0.0.0.0/0", "10.2.0.1")});
    const auto plan = plan_pod_setup(in, facts_for(pod_query(in)));
    REQUIRE(plan.main_routes.size() == 1);
    CHECK(plan.main_routes[0].gateway->str() == "10.1.0.1");
    REQUIRE(plan.main_defaults_left_out.size() == 1);
    CHECK(plan.main_defaults_left_out[0].gateway->str() == "10.2.0.1");
}

TEST_CASE("plan_pod_setup: DAD runs for another IPAM's IPv6 addresses", "[cni][pod]") {
    auto in = input({ip("fd00::5/64")});
    in.embedded_ipam = false;
    const auto plan = plan_pod_setup(in, facts_for(pod_query(in)));
    CHECK_FALSE(plan.nodad);
    CHECK(plan.wait_for_dad);
    // accept_dad is left alone: only IPv6 is turned on.
    REQUIRE(plan.record.sysctls.size() == 1);
    CHECK(plan.record.sysctls[0].path == "net/ipv6/conf/net1/disable_ipv6");
}

TEST_CASE("plan_pod_setup: policyRouting takes free tables from what the pod uses", "[cni][pod]") {
    auto in = input({ip("10.1.0.5/24", "10.1.0.1"), ip("fd00::5/64", "fd00::1")},
                    {route("10.50.0.0/16"), route("0.0.0.0/0", "10.1.0.1")});
    in.settings.policy_routing = PolicyRouting{std::nullopt, 1000u, true};
    const auto q = pod_query(in);
    auto facts = facts_for(q);
    facts.route_tables = {100, 254, 255};
    facts.rules = {rule_to(101)};
    facts.main_default_families = {AF_INET};

    const auto plan = plan_pod_setup(in, facts);
    CHECK(plan.policy_routing);
    // One table per address, the first two free ones; one rule per address, recorded.
    CHECK(plan.record.table == 102u);
    REQUIRE(plan.record.rules.size() == 2);
    CHECK(plan.record.rules[0].table == 102u);
    CHECK(plan.record.rules[0].src->str() == "10.1.0.5/32");
    CHECK(plan.record.rules[0].priority == 1000u);
    CHECK(plan.record.rules[1].table == 103u);
    CHECK(plan.record.rules[1].src->str() == "fd00::5/128");
    // Every sysctl written is recorded with its original, in write order.
    REQUIRE(plan.record.sysctls.size() == plan.sysctls.size());
    for (std::size_t i = 0; i < plan.sysctls.size(); ++i) CHECK(plan.record.sysctls[i].path == plan.sysctls[i].path);
    CHECK(plan.sysctls.front().path == "net/ipv4/conf/net1/arp_ignore");
    // The tables' routes are the planner's, with source hints.
    const auto expected = plan_table_routes(in.ips, {102, 103}, in.routes, 7, true);
    REQUIRE(plan.table_routes.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(plan.table_routes[i].dst == expected[i].dst);
        CHECK(plan.table_routes[i].gateway == expected[i].gateway);
        CHECK(plan.table_routes[i].table == expected[i].table);
        CHECK(plan.table_routes[i].prefsrc == expected[i].prefsrc);
    }
    // The IPv6 subnet route of the main table gets the source hint (the kernel's prefix route
    // metric, replaced).
    REQUIRE(plan.source_hints.size() == 1);
    CHECK(plan.source_hints[0].dst->str() == "fd00::/64");
    CHECK(plan.source_hints[0].priority == 256u);
    CHECK(plan.source_hints[0].prefsrc->str() == "fd00::5");
    // The main table gets only defaults, and not one of a family it has.
    CHECK(plan.main_routes.empty());
    CHECK(plan.main_defaults_left_out.size() == 1);
}

TEST_CASE("plan_pod_setup: the refusals, before anything changes", "[cni][pod]") {
    auto in = input({ip("10.1.0.5/24", "10.1.0.1"), ip("10.2.0.5/24", "10.2.0.1")});
    in.settings.policy_routing = PolicyRouting{};

    SECTION("a fixed table another interface uses") {
        in.settings.policy_routing->table = 500;
        auto facts = facts_for(pod_query(in));
        facts.fixed_table_user = "net2 (rule from 10.9.0.5/32)";
        REQUIRE_CNI_ERROR(plan_pod_setup(in, facts), ErrorCode::invalid_config,
                          "policyRouting.table 500 is already used in this pod by net2");
    }
    SECTION("a fixed table with two gateways of one family") {
        in.settings.policy_routing->table = 500;
        REQUIRE_CNI_ERROR(plan_pod_setup(in, facts_for(pod_query(in))), ErrorCode::invalid_config,
                          "cannot route addresses 10.1.0.5/24 (gateway 10.1.0.1)");
    }
    SECTION("a sysctl the interface does not have") {
        auto facts = facts_for(pod_query(in));
        facts.sysctls[1].value.reset();
        facts.sysctls[1].error = "No such file or directory";
        REQUIRE_CNI_ERROR(plan_pod_setup(in, facts), ErrorCode::invalid_config,
                          "policyRouting default: net/ipv4/conf/net1/arp_announce cannot be set on net1: No such file");
    }
    SECTION("a sysctl the kernel was not asked for") {
        auto facts = facts_for(pod_query(in));
        facts.sysctls.pop_back();
        REQUIRE_CNI_ERROR(plan_pod_setup(in, facts), ErrorCode::invalid_config, "rp_filter cannot be set");
    }
}
