// The pod-side keys (policyRouting, sysctl, ipv6) and the pure decisions built on them: sysctl
// key checks, the sysctls an attachment writes, table choice, rules and table routes, the record.
#include <catch2/catch.hpp>

#include <linux/rtnetlink.h>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/pod/pod_plan.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;
using nlohmann::json;

namespace {

json base_config() {
    return json::parse(R"({"cniVersion":"1.0.0","name":"rail","type":"rdmanet","mode":"macvlan","master":"ens1f0",
                           "ipam":{"type":"rdmanet-ipam","range":"10.1.0.0/24"}})");
}

NetConf parse_with(const std::string& key, const json& value, Command command = Command::add) {
    json j = base_config();
    j[key] = value;
    return parse_net_conf(j.dump(), command);
}

IpConfig ip(const std::string& cidr, const std::string& gw = "") {
    IpConfig c;
    c.address = *base::IpNetwork::parse(cidr);
    if (!gw.empty()) c.gateway = base::IpAddress::parse(gw);
    return c;
}

}  // namespace

TEST_CASE("policyRouting: true, false and the object form", "[cni][config][pod]") {
    CHECK_FALSE(parse_net_conf(base_config().dump(), Command::add).pod.policy_routing);
    CHECK_FALSE(parse_with("policyRouting", false).pod.policy_routing);
    const auto on = parse_with("policyRouting", true).pod.policy_routing;
    REQUIRE(on);
    CHECK_FALSE(on->table);
    CHECK_FALSE(on->priority);
    CHECK_FALSE(on->add_source_hints);

    const auto full =
        parse_with("policyRouting", json{{"table", 4000000000u}, {"priority", 100}, {"addSourceHints", true}})
            .pod.policy_routing;
    REQUIRE(full);
    CHECK(full->table == 4000000000u);
    CHECK(full->priority == 100u);
    CHECK(full->add_source_hints);
    CHECK(parse_with("policyRouting", json{{"table", 252}}).pod.policy_routing->table == 252u);
    CHECK(parse_with("policyRouting", json{{"table", 256}}).pod.policy_routing->table == 256u);
}

TEST_CASE("policyRouting: bad tables and priorities are code 7 naming the key", "[cni][config][pod]") {
    for (unsigned reserved : {0u, 253u, 254u, 255u})
        REQUIRE_CNI_ERROR(parse_with("policyRouting", json{{"table", reserved}}), ErrorCode::invalid_config,
                          "policyRouting.table");
    REQUIRE_CNI_ERROR(parse_with("policyRouting", json{{"table", 4294967296ull}}), ErrorCode::invalid_config,
                      "policyRouting.table");
    REQUIRE_CNI_ERROR(parse_with("policyRouting", json{{"table", -1}}), ErrorCode::invalid_config,
                      "policyRouting.table");
    REQUIRE_CNI_ERROR(parse_with("policyRouting", json{{"table", "100"}}), ErrorCode::invalid_config,
                      "policyRouting.table");
    for (long long prio : {0LL, 32766LL, 40000LL, -5LL})
        REQUIRE_CNI_ERROR(parse_with("policyRouting", json{{"priority", prio}}), ErrorCode::invalid_config,
                          "policyRouting.priority");
    REQUIRE_CNI_ERROR(parse_with("policyRouting", "yes"), ErrorCode::invalid_config, "policyRouting");
    REQUIRE_CNI_ERROR(parse_with("policyRouting", json{{"addSourceHints", 1}}), ErrorCode::invalid_config,
                      "policyRouting.addSourceHints");
    // DEL must still tear down under a config ADD would refuse.
    CHECK_NOTHROW(parse_with("policyRouting", json{{"table", 254}}, Command::del));
}

TEST_CASE("sysctl: per-interface keys of the four trees are accepted", "[cni][config][pod]") {
    const auto conf = parse_with("sysctl", json{{"net.ipv4.conf.IFNAME.arp_ignore", "1"},
                                                {"net.ipv6.neigh.IFNAME.base_reachable_time_ms", "30000"},
                                                {"net/ipv4/neigh/IFNAME/gc_stale_time", "60"},
                                                {"net.ipv6.conf.net1.accept_ra", "0"}});
    REQUIRE(conf.pod.sysctl.size() == 4);
    std::string why;
    auto entry = parse_sysctl_key("net.ipv4.conf.IFNAME.arp_ignore", why);
    REQUIRE(entry);
    CHECK(entry->tree == "net.ipv4.conf");
    CHECK(entry->iface == "IFNAME");
    CHECK(entry->leaf == "arp_ignore");
    CHECK(sysctl_path(*entry, "net3") == "net/ipv4/conf/net3/arp_ignore");
    CHECK(sysctl_key_for(*entry, "net3") == "net.ipv4.conf.net3.arp_ignore");
    // An interface name with a dot (a VLAN) keeps it: the setting name is the last part.
    auto vlan = parse_sysctl_key("net.ipv4.conf.net1.100.rp_filter", why);
    REQUIRE(vlan);
    CHECK(vlan->iface == "net1.100");
    CHECK(sysctl_path(*vlan, "x") == "net/ipv4/conf/net1.100/rp_filter");
}

TEST_CASE("sysctl: keys outside the interface's own settings are code 7 naming the key", "[cni][config][pod]") {
    for (const char* key :
         {"net.ipv4.ip_forward", "kernel.core_pattern", "net.ipv4.conf.all.rp_filter",
          "net.ipv4.conf.default.arp_ignore", "net.core.somaxconn", "net.ipv4.conf.IFNAME", "net.ipv4.conf.IFNAME.",
          "net.ipv4.conf...arp_ignore", "net.ipv4.conf.IFNAME.../x", "net/ipv4/conf/../../kernel/core_pattern",
          "net.ipv4.conf.IFNAME.ARP", "net.ipv4.route.IFNAME.x", "net.ipv4.conf.IFNAME.a b",
          "net.ipv4.confX.IFNAME.arp_ignore", "", "net.ipv4.conf.a..b.arp_ignore", "net/ipv4/conf/IFNAME/x/y",
          "net.ipv4/conf/IFNAME/x"}) {
        INFO(key);
        REQUIRE_CNI_ERROR(parse_with("sysctl", json{{key, "1"}}), ErrorCode::invalid_config,
                          std::string("sysctl.") + key);
    }
    for (const char* value : {"", "1/2", "a\nb", "\x01"}) {
        INFO(value);
        REQUIRE_CNI_ERROR(parse_with("sysctl", json{{"net.ipv4.conf.IFNAME.arp_ignore", value}}),
                          ErrorCode::invalid_config, "sysctl.net.ipv4.conf.IFNAME.arp_ignore");
    }
    REQUIRE_CNI_ERROR(parse_with("sysctl", json{{"net.ipv4.conf.IFNAME.arp_ignore", 1}}), ErrorCode::invalid_config,
                      "sysctl.net.ipv4.conf.IFNAME.arp_ignore");
    REQUIRE_CNI_ERROR(parse_with("sysctl", json::array()), ErrorCode::invalid_config, "sysctl");
}

TEST_CASE("sysctl: another interface's name, and keys the node policy does not allow", "[cni][pod]") {
    const NodePolicy open;
    const auto own = parse_with("sysctl", json{{"net.ipv4.conf.net2.arp_ignore", "1"}});
    CHECK_NOTHROW(check_pod_settings(own.pod, "net2", open));
    REQUIRE_CNI_ERROR(check_pod_settings(own.pod, "net1", open), ErrorCode::invalid_config,
                      "sysctl.net.ipv4.conf.net2.arp_ignore");

    NodePolicy narrow;
    narrow.audit_log = "";
    narrow.sysctls = std::vector<std::string>{"net.ipv4.conf.IFNAME.arp_*"};
    const auto arp = parse_with("sysctl", json{{"net.ipv4.conf.IFNAME.arp_announce", "2"}});
    CHECK_NOTHROW(check_pod_settings(arp.pod, "net1", narrow));
    const auto ra = parse_with("sysctl", json{{"net.ipv6.conf.IFNAME.accept_ra", "2"}});
    REQUIRE_CNI_ERROR(check_pod_settings(ra.pod, "net1", narrow), ErrorCode::invalid_config,
                      "sysctl.net.ipv6.conf.IFNAME.accept_ra");
}

TEST_CASE("node policy: sysctls is a list, absent means every per-interface key", "[cni][policy][pod]") {
    CHECK_FALSE(parse_node_policy("{}", "p", {}).sysctls);
    const auto p = parse_node_policy(R"({"sysctls":["net.ipv4.conf.IFNAME.*"]})", "p", {});
    REQUIRE(p.sysctls);
    CHECK(*p.sysctls == std::vector<std::string>{"net.ipv4.conf.IFNAME.*"});
    REQUIRE_CNI_ERROR(parse_node_policy(R"({"sysctls":"x"})", "p", {}), ErrorCode::invalid_environment, "sysctls");
    // The file `rdmanetctl install` writes parses back.
    CHECK_NOTHROW(parse_node_policy(default_policy_file_content({}), "p", {}));
}

TEST_CASE("plan_sysctls: policyRouting defaults, IPv6, and the sysctl map winning", "[cni][pod]") {
    PodSettings s;
    CHECK(plan_sysctls(s, "net1", false, true).empty());
    s.policy_routing = PolicyRouting{};
    auto w = plan_sysctls(s, "net1", false, true);
    REQUIRE(w.size() == 3);
    CHECK(w[0].path == "net/ipv4/conf/net1/arp_ignore");
    CHECK(w[0].value == "1");
    CHECK(w[1].path == "net/ipv4/conf/net1/arp_announce");
    CHECK(w[1].value == "2");
    CHECK(w[2].path == "net/ipv4/conf/net1/rp_filter");
    CHECK(w[2].value == "2");

    std::string why;
    auto entry = *parse_sysctl_key("net.ipv4.conf.IFNAME.rp_filter", why);
    entry.value = "0";
    s.sysctl.push_back(entry);
    w = plan_sysctls(s, "net1", true, true);
    REQUIRE(w.size() == 5);
    CHECK(w[2].path == "net/ipv4/conf/net1/rp_filter");
    CHECK(w[2].value == "0");  // the map wins, in the default's place: written once
    CHECK(w[3].path == "net/ipv6/conf/net1/accept_dad");
    CHECK(w[4].path == "net/ipv6/conf/net1/disable_ipv6");
    CHECK(w[4].value == "0");
    // With DAD kept, accept_dad is the pod's.
    CHECK(plan_sysctls(s, "net1", true, false).size() == 4);
}

TEST_CASE("ipv6.dad: skipped for the embedded IPAM only, unless the key says", "[cni][config][pod]") {
    PodSettings s;
    CHECK(skip_dad(s, true));
    CHECK_FALSE(skip_dad(s, false));
    s.ipv6_dad = true;
    CHECK_FALSE(skip_dad(s, true));
    s.ipv6_dad = false;
    CHECK(skip_dad(s, false));
    CHECK(parse_with("ipv6", json{{"dad", true}}).pod.ipv6_dad == true);
    REQUIRE_CNI_ERROR(parse_with("ipv6", json{{"dad", "yes"}}), ErrorCode::invalid_config, "ipv6.dad");
}

TEST_CASE("choose_free_table: first table from 100 up that no rule or route uses", "[cni][pod]") {
    CHECK(choose_free_table({254, 255}, {}) == 100u);
    netns::RuleInfo r100;
    r100.table = 100;
    CHECK(choose_free_table({254, 255, 101}, {r100}) == 102u);
    std::vector<unsigned> used{254, 255};
    for (unsigned t = 100; t <= 252; ++t) used.push_back(t);
    CHECK(choose_free_table(used, {}) == 256u);  // 253-255 are reserved, never chosen
}

TEST_CASE("plan_rules and plan_table_routes: one rule per address, subnet, gateway and IPAM routes", "[cni][pod]") {
    const std::vector<IpConfig> ips{ip("10.1.0.5/24", "10.1.0.1"), ip("fd00:1::5/64", "fd00:1::1")};
    const auto rules = plan_rules(ips, 101, 1000u);
    REQUIRE(rules.size() == 2);
    CHECK(rules[0].src->str() == "10.1.0.5/32");
    CHECK(rules[0].table == 101u);
    CHECK(rules[0].priority == 1000u);
    CHECK(rules[1].src->str() == "fd00:1::5/128");

    Route extra;
    extra.dst = *base::IpNetwork::parse("10.200.0.0/16");
    const auto routes = plan_table_routes(ips, {extra}, 101, 7, true);
    REQUIRE(routes.size() == 5);
    CHECK(routes[0].dst->str() == "10.1.0.0/24");
    CHECK(routes[0].scope == RT_SCOPE_LINK);
    CHECK(routes[0].prefsrc->str() == "10.1.0.5");
    CHECK(routes[1].dst->str() == "fd00:1::/64");
    CHECK_FALSE(routes[2].dst);  // default via the v4 gateway
    CHECK(routes[2].gateway->str() == "10.1.0.1");
    CHECK(routes[2].prefsrc->str() == "10.1.0.5");  // addSourceHints
    CHECK_FALSE(routes[3].dst);
    CHECK(routes[3].gateway->str() == "fd00:1::1");
    CHECK(routes[4].dst->str() == "10.200.0.0/16");
    CHECK(routes[4].gateway->str() == "10.1.0.1");  // a route without gw takes its family's gateway
    for (const auto& r : routes) {
        CHECK(r.table == 101u);
        CHECK(r.ifindex == 7);
    }
    // An explicit default route from the IPAM is the same as the gateway's: planned once.
    Route def;
    def.dst = *base::IpNetwork::parse("0.0.0.0/0");
    CHECK(plan_table_routes({ip("10.1.0.5/24", "10.1.0.1")}, {def}, 101, 7, false).size() == 2);
}

TEST_CASE("choose_free_tables: one distinct free table per address", "[cni][pod]") {
    netns::RuleInfo r101;
    r101.table = 101;
    CHECK(choose_free_tables({254, 255, 100}, {r101}, 3) == std::vector<unsigned>{102, 103, 104});
    CHECK(choose_free_tables({254, 255}, {}, 1) == std::vector<unsigned>{100});
}

TEST_CASE("plan_table_routes with a table per address: each address routes through its own gateway (sbr)",
          "[cni][pod]") {
    // sbr's "Works with multiple IPs": 192.168.1.209/24 via .1.1 in table 100, 192.168.101.209/24
    // via .101.1 in table 101.
    const std::vector<IpConfig> ips{ip("192.168.1.209/24", "192.168.1.1"), ip("192.168.101.209/24", "192.168.101.1")};
    const std::vector<unsigned> tables{100, 101};
    const auto rules = plan_rules(ips, tables, std::nullopt);
    REQUIRE(rules.size() == 2);
    CHECK(rules[0].table == 100u);
    CHECK(rules[1].src->str() == "192.168.101.209/32");
    CHECK(rules[1].table == 101u);

    Route via_second;  // through the second address's gateway: only in its table
    via_second.dst = *base::IpNetwork::parse("10.50.0.0/16");
    via_second.gw = base::IpAddress::parse("192.168.101.254");
    Route no_gw;  // without a gateway: in every table, via that table's gateway
    no_gw.dst = *base::IpNetwork::parse("10.60.0.0/16");
    const auto routes = plan_table_routes(ips, tables, {via_second, no_gw}, 7, false);
    auto find = [&](unsigned table, const std::string& dst) -> const netns::RouteInfo* {
        for (const auto& r : routes)
            if (r.table == table && (r.dst ? r.dst->str() : std::string("default")) == dst) return &r;
        return nullptr;
    };
    REQUIRE(find(100, "default"));
    CHECK(find(100, "default")->gateway->str() == "192.168.1.1");
    REQUIRE(find(101, "default"));
    CHECK(find(101, "default")->gateway->str() == "192.168.101.1");
    CHECK(find(100, "192.168.1.0/24"));
    CHECK_FALSE(find(100, "192.168.101.0/24"));
    CHECK(find(101, "192.168.101.0/24"));
    CHECK_FALSE(find(100, "10.50.0.0/16"));
    REQUIRE(find(101, "10.50.0.0/16"));
    CHECK(find(101, "10.50.0.0/16")->gateway->str() == "192.168.101.254");
    REQUIRE(find(100, "10.60.0.0/16"));
    CHECK(find(100, "10.60.0.0/16")->gateway->str() == "192.168.1.1");
    REQUIRE(find(101, "10.60.0.0/16"));
    CHECK(find(101, "10.60.0.0/16")->gateway->str() == "192.168.101.1");
    CHECK(routes.size() == 7);

    // What ADD recorded gives the same tables back, for DEL and CHECK.
    PodSetupRecord record;
    record.table = 100;
    record.rules = rules;
    CHECK(tables_of(ips, record) == tables);
    CHECK(record.tables() == tables);
    // A record from before one table per address: its one table for every address.
    PodSetupRecord old;
    old.table = 103;
    old.rules = plan_rules(ips, 103, std::nullopt);
    CHECK(tables_of(ips, old) == std::vector<unsigned>{103, 103});
}

TEST_CASE("fixed_table_gateway_conflict: two gateways of one family cannot share a fixed table", "[cni][pod]") {
    CHECK_FALSE(fixed_table_gateway_conflict({ip("10.1.0.5/24", "10.1.0.1"), ip("fd00::5/64", "fd00::1")}));
    CHECK_FALSE(fixed_table_gateway_conflict({ip("10.1.0.5/24", "10.1.0.1"), ip("10.1.0.6/24", "10.1.0.1")}));
    const auto c = fixed_table_gateway_conflict({ip("10.1.0.5/24", "10.1.0.1"), ip("10.2.0.5/24", "10.2.0.1")});
    REQUIRE(c);
    CHECK(c->find("10.1.0.1") != std::string::npos);
    CHECK(c->find("10.2.0.1") != std::string::npos);
}

TEST_CASE("PodSetupRecord: JSON round trip, malformed parts skipped", "[cni][pod]") {
    PodSetupRecord r;
    r.table = 103;
    r.rules = plan_rules({ip("10.1.0.5/24")}, 103, std::nullopt);
    r.sysctls.push_back({"net/ipv4/conf/net1/arp_ignore", "0"});
    const auto back = PodSetupRecord::from_json(r.to_json());
    CHECK(back.table == 103u);
    REQUIRE(back.rules.size() == 1);
    CHECK(back.rules[0].src->str() == "10.1.0.5/32");
    CHECK_FALSE(back.rules[0].priority);
    REQUIRE(back.sysctls.size() == 1);
    CHECK(back.sysctls[0].original == "0");
    CHECK(PodSetupRecord::from_json(json::parse(R"({"rules":[{"src":"bad","table":1},7],"sysctls":[{"path":1}]})"))
              .empty());
    CHECK(PodSetupRecord::from_json(nullptr).empty());
}
