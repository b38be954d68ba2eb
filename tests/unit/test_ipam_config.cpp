// ipam configuration: whereabouts keys, defaults, validation errors naming the field, flat-file merge.
#include <catch2/catch.hpp>

#include <fstream>

#include "ipam_test_util.hpp"
#include "support/catch_ip.hpp"
#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/ipam.hpp"

using namespace rdmanet::ipam;
using nlohmann::json;
using rdmanet::base::IpAddress;

namespace {

uint128 u(unsigned long long v) { return v; }
const uint128 k2_63 = uint128{1} << 63;
const uint128 k2_64 = uint128{1} << 64;

// The IpamError a config throws (code and message), for REQUIRE on both.
IpamError error_of(const json& ipam) {
    try {
        parse_ipam_config(ipam);
    } catch (const IpamError& e) {
        return e;
    }
    FAIL("expected an IpamError for " << ipam.dump());
    return IpamError(0, "");
}

void require_config_error(const json& ipam, const std::string& fragment) {
    const IpamError e = error_of(ipam);
    INFO(e.msg);
    CHECK(e.code == codes::invalid_config);
    CHECK_THAT(e.msg, Catch::Contains(fragment));
}

}  // namespace

TEST_CASE("ipam config: minimal range and defaults", "[ipam]") {
    const IpamConfig c = parse_ipam_config(json{{"type", "rdmanet-ipam"}, {"range", "10.0.0.0/24"}});
    REQUIRE(c.ranges.size() == 1);
    const Range& r = c.ranges[0];
    CHECK(r.cidr.str() == "10.0.0.0/24");
    CHECK(r.first == 1);
    CHECK(r.last == 254);
    CHECK(r.excluded.empty());
    CHECK(r.field == "ipam.range");
    CHECK_FALSE(r.gateway);
    CHECK(c.enable_overlapping_ranges);
    CHECK(c.network_name.empty());
    CHECK(c.store.datastore == Datastore::local);
    CHECK(c.store.data_dir == "/var/lib/cni/rdmanet/ipam");
    CHECK(c.type == "rdmanet-ipam");
}

TEST_CASE("ipam config: range forms", "[ipam]") {
    SECTION("host bits are cleared, as whereabouts normalises") {
        auto c = ipam_test::config({{"range", "192.168.2.225/28"}});
        CHECK(c.ranges[0].cidr.str() == "192.168.2.224/28");
        CHECK(c.ranges[0].first == 1);
        CHECK(c.ranges[0].last == 14);
    }
    SECTION("start-end/prefix form") {
        auto c = ipam_test::config({{"range", "192.168.2.225-192.168.2.230/28"}});
        CHECK(c.ranges[0].cidr.str() == "192.168.2.224/28");
        CHECK(c.ranges[0].first == 1);
        CHECK(c.ranges[0].last == 6);
    }
    SECTION("start-end form agreeing with explicit keys") {
        auto c = ipam_test::config(
            {{"range", "10.0.0.10-10.0.0.20/24"}, {"range_start", "10.0.0.10"}, {"range_end", "10.0.0.20"}});
        CHECK(c.ranges[0].first == 10);
        CHECK(c.ranges[0].last == 20);
    }
    SECTION("range_start and range_end") {
        auto c =
            ipam_test::config({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.100"}, {"range_end", "10.0.0.110"}});
        CHECK(c.ranges[0].first == 100);
        CHECK(c.ranges[0].last == 110);
    }
    SECTION("start = end") {
        auto c = ipam_test::config({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.7"}, {"range_end", "10.0.0.7"}});
        CHECK(c.ranges[0].first == 7);
        CHECK(c.ranges[0].last == 7);
    }
    SECTION("network and broadcast stay out even when range_start/range_end name them") {
        auto c =
            ipam_test::config({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.0"}, {"range_end", "10.0.0.255"}});
        CHECK(c.ranges[0].first == 1);
        CHECK(c.ranges[0].last == 254);
    }
    SECTION("small prefixes: /30 /31 /32 /127 /128") {
        CHECK(ipam_test::config({{"range", "10.0.0.4/30"}}).ranges[0].first == 1);
        CHECK(ipam_test::config({{"range", "10.0.0.4/30"}}).ranges[0].last == 2);
        auto p31 = ipam_test::config({{"range", "10.0.0.4/31"}}).ranges[0];
        CHECK((p31.first == 0 && p31.last == 1));
        auto p32 = ipam_test::config({{"range", "10.0.0.4/32"}}).ranges[0];
        CHECK((p32.first == 0 && p32.last == 0));
        auto p127 = ipam_test::config({{"range", "fd00::4/127"}}).ranges[0];
        CHECK((p127.first == 0 && p127.last == 1));
        auto p128 = ipam_test::config({{"range", "fd00::4/128"}}).ranges[0];
        CHECK((p128.first == 0 && p128.last == 0));
        CHECK(p128.cidr.str() == "fd00::4/128");
    }
    SECTION("IPv6 of any size, with full 128-bit offsets") {
        auto p64 = ipam_test::config({{"range", "fd00:1:2:3::/64"}}).ranges[0];
        CHECK(p64.first == 1);
        CHECK(p64.last == k2_64 - 2);
        auto p0 = ipam_test::config({{"range", "::/0"}}).ranges[0];
        CHECK(p0.last == kU128Max - 1);
        auto high = ipam_test::config({{"range", "fd00::/64"}, {"range_start", "fd00::8000:0:0:5"}}).ranges[0];
        CHECK(high.first == k2_63 + 5);
    }
}

TEST_CASE("ipam config: exclusions", "[ipam]") {
    SECTION("bare IPs and CIDRs, merged and sorted") {
        auto r = ipam_test::config(
                     {{"range", "10.0.0.0/24"}, {"exclude", {"10.0.0.20/30", "10.0.0.5", "10.0.0.6", "10.0.0.24/29"}}})
                     .ranges[0];
        REQUIRE(r.excluded.size() == 2);
        CHECK(r.excluded[0] == Interval{u(5), u(6)});
        CHECK(r.excluded[1] == Interval{u(20), u(31)});
    }
    SECTION("a CIDR with host bits excludes the whole block, as whereabouts really does") {
        auto r = ipam_test::config({{"range", "192.168.2.224/28"}, {"exclude", {"192.168.2.229/30"}}}).ranges[0];
        REQUIRE(r.excluded.size() == 1);
        CHECK(r.excluded[0] == Interval{u(4), u(7)});
    }
    SECTION("outside the range: ignored; overlapping its edges: clipped to range_start..range_end") {
        auto r = ipam_test::config({{"range", "10.0.0.0/24"},
                                    {"range_start", "10.0.0.10"},
                                    {"exclude", {"10.1.0.0/16", "10.0.0.0/29", "10.0.0.0/8"}}})
                     .ranges[0];
        REQUIRE(r.excluded.size() == 1);
        CHECK(r.excluded[0] == Interval{u(10), u(254)});
    }
    SECTION("the gateway is excluded in the range that contains it") {
        auto c = ipam_test::config({{"range", "10.0.0.0/24"}, {"gateway", "10.0.0.1"}});
        REQUIRE(c.ranges[0].gateway);
        CHECK(c.ranges[0].gateway->str() == "10.0.0.1");
        REQUIRE(c.ranges[0].excluded.size() == 1);
        CHECK(c.ranges[0].excluded[0] == Interval{u(1), u(1)});
        CHECK_FALSE(c.ranges[0].allocatable(1));
        CHECK(c.ranges[0].allocatable(2));
    }
    SECTION("dual stack: the gateway goes with its family only") {
        auto c = ipam_test::config(
            {{"ipRanges", {{{"range", "10.0.0.0/24"}}, {{"range", "fd00::/64"}}}}, {"gateway", "fd00::1"}});
        CHECK_FALSE(c.ranges[0].gateway);
        REQUIRE(c.ranges[1].gateway);
        CHECK_FALSE(c.ranges[1].allocatable(1));
    }
}

TEST_CASE("ipam config: ipRanges and the top-level range", "[ipam]") {
    auto c = ipam_test::config({{"range", "10.0.0.0/24"},
                                {"exclude", {"10.0.0.1"}},
                                {"network_name", "blue"},
                                {"ipRanges",
                                 {{{"range", "10.1.0.0/16"}, {"exclude", {"10.1.0.0/24"}}},
                                  {{"range", "fd00::/120"}, {"range_start", "fd00::10"}}}}});
    REQUIRE(c.ranges.size() == 3);
    CHECK(c.ranges[0].field == "ipam.range");
    CHECK(c.ranges[0].excluded.size() == 1);
    CHECK(c.ranges[1].field == "ipam.ipRanges[0]");
    CHECK(c.ranges[1].cidr.str() == "10.1.0.0/16");
    CHECK(c.ranges[1].excluded[0] == Interval{u(1), u(255)});  // top-level exclude does not apply here
    CHECK(c.ranges[2].field == "ipam.ipRanges[1]");
    CHECK(c.ranges[2].first == 16);
    CHECK(c.network_name == "blue");
    const auto keys = pool_keys(c);
    REQUIRE(keys.size() == 3);
    CHECK(keys[0].name() == "blue-10.0.0.0-24");
    CHECK(keys[2].name() == "blue-fd00---120");
}

TEST_CASE("ipam config: other keys", "[ipam]") {
    auto c =
        ipam_test::config({{"range", "10.0.0.0/24"},
                           {"routes", {{{"dst", "0.0.0.0/0"}}, {{"dst", "10.9.0.0/16"}, {"gw", "10.0.0.254"}}}},
                           {"dns", {{"nameservers", {"10.0.0.53"}}, {"domain", "x.local"}, {"search", {"x.local"}}}},
                           {"addresses", {{{"address", "192.168.9.9/24"}, {"gateway", "192.168.9.1"}}}},
                           {"enable_overlapping_ranges", false},
                           {"log_file", "/tmp/ipam.log"},
                           {"log_level", "debug"},
                           {"datastore", "kubernetes"},
                           {"kubernetes", {{"kubeconfig", "/etc/k.conf"}, {"k8s_api_root", "x"}}},
                           {"data_dir", "/run/rdmanet-ipam"},
                           {"node_slice_size", "/26"},
                           {"leader_lease_duration", 1500},
                           {"etcd_host", "x"}});
    REQUIRE(c.routes.size() == 2);
    Route expected_route;
    expected_route.dst = rdmanet::test::ip_net("10.9.0.0/16");
    expected_route.gw = rdmanet::test::ip_addr("10.0.0.254");
    CHECK(c.routes[1] == expected_route);
    CHECK(c.dns.nameservers == std::vector<std::string>{"10.0.0.53"});
    CHECK(c.dns.domain == "x.local");
    REQUIRE(c.addresses.size() == 1);
    CHECK(c.addresses[0].address.str() == "192.168.9.9/24");
    CHECK_FALSE(c.enable_overlapping_ranges);
    CHECK(c.log_file == "/tmp/ipam.log");
    CHECK(c.log_level == "debug");
    CHECK(c.store.node_slice_prefix == 26);
    CHECK(c.store.datastore == Datastore::kubernetes);
    CHECK(c.store.kubeconfig == "/etc/k.conf");
    CHECK(c.store.data_dir == "/run/rdmanet-ipam");

    SECTION("the kubernetes datastore names a missing kubeconfig when opened") {
        try {
            open_store(c.store);
            FAIL("expected an error");
        } catch (const IpamError& e) {
            CHECK(e.code == codes::invalid_config);
            CHECK_THAT(e.msg, Catch::Contains("kubernetes.kubeconfig") && Catch::Contains("/etc/k.conf"));
        }
    }
}

TEST_CASE("ipam config: errors name the field", "[ipam]") {
    SECTION("malformed CIDRs") {
        for (const char* bad : {"10.0.0.0/33", "10.0.0/24", "banana", "10.0.0.0/", "10.0.0.0/-1", "fd00::/129",
                                "10.0.0.0/24x", "", "10.0.0.300/24"}) {
            INFO(bad);
            require_config_error({{"range", bad}}, "ipam.range \"" + std::string(bad) + "\"");
        }
    }
    SECTION("malformed start-end forms") {
        require_config_error({{"range", "10.0.0.5-10.0.0.9"}}, "ipam.range");
        require_config_error({{"range", "10.0.0.x-10.0.0.9/24"}}, "is neither a CIDR nor");
        require_config_error({{"range", "10.0.1.5-10.0.0.9/24"}}, "start 10.0.1.5 is outside 10.0.0.0/24");
        require_config_error({{"range", "10.0.0.9-10.0.0.5/24"}}, "is after");
        require_config_error({{"range", "fd00::1-10.0.0.5/24"}}, "mix");
        require_config_error({{"range", "10.0.0.5-10.0.0.9/24"}, {"range_start", "10.0.0.6"}}, "contradicts");
    }
    SECTION("range_start/range_end") {
        require_config_error({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.300"}},
                             "ipam.range_start \"10.0.0.300\" is not an IP address");
        require_config_error({{"range", "10.0.0.0/24"}, {"range_start", "10.0.1.1"}},
                             "ipam.range_start \"10.0.1.1\" is outside ipam.range 10.0.0.0/24");
        require_config_error({{"range", "10.0.0.0/24"}, {"range_end", "9.255.255.255"}}, "ipam.range_end");
        require_config_error({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.50"}, {"range_end", "10.0.0.40"}},
                             "ipam.range_start 10.0.0.50 is after ipam.range_end 10.0.0.40");
        require_config_error({{"range", "10.0.0.0/24"}, {"range_start", "fd00::1"}}, "one range cannot mix");
        require_config_error({{"range", "10.0.0.0/24"}, {"range_start", 5}}, "ipam.range_start must be a string");
        require_config_error({{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.255"}}, "no usable address");
        require_config_error({{"range_start", "10.0.0.5"}}, "ipam.range_start is set but ipam.range is not");
    }
    SECTION("exclusion syntax") {
        require_config_error({{"range", "10.0.0.0/24"}, {"exclude", {"10.0.0.1", "10.0.0.300"}}},
                             "ipam.exclude[1] \"10.0.0.300\" is neither an IP address nor a CIDR");
        require_config_error({{"range", "10.0.0.0/24"}, {"exclude", {"10.0.0.0/40"}}}, "ipam.exclude[0]");
        require_config_error({{"range", "10.0.0.0/24"}, {"exclude", {"fd00::1"}}}, "ipam.exclude[0] fd00::1 is IPv6");
        require_config_error({{"range", "10.0.0.0/24"}, {"exclude", "10.0.0.1"}},
                             "ipam.exclude must be a JSON list, got \"10.0.0.1\"");
        require_config_error({{"range", "10.0.0.0/24"}, {"exclude", {1}}}, "ipam.exclude[0] must be a string");
    }
    SECTION("ipRanges entries") {
        require_config_error(
            {{"ipRanges", {{{"range", "10.0.0.0/24"}}, {{"range", "10.1.0.0/24"}, {"range_start", "10.0.0.300"}}}}},
            "ipam.ipRanges[1].range_start \"10.0.0.300\" is not an IP address");
        require_config_error({{"ipRanges", {{{"range", "10.0.0.0/24"}}, "10.1.0.0/24"}}},
                             "ipam.ipRanges[1] must be an object");
        require_config_error({{"ipRanges", {{{"range_start", "10.0.0.1"}}}}}, "ipam.ipRanges[0].range is missing");
        require_config_error({{"ipRanges", {{{"range", "10.0.0.0/24"}, {"exclude", {"x"}}}}}},
                             "ipam.ipRanges[0].exclude[0] \"x\"");
        require_config_error({{"ipRanges", {{{"range", "10.0.0.0/24"}, {"exclude", {"fd00::/64"}}}}}},
                             "ipam.ipRanges[0].exclude[0]");
        require_config_error({{"ipRanges", {{{"range", 10}}}}}, "ipam.ipRanges[0].range must be a string");
        require_config_error({{"ipRanges", {{"range", "10.0.0.0/24"}}}}, "ipam.ipRanges must be a JSON list, got {");
        require_config_error({{"range", "10.0.0.0/24"}, {"ipRanges", {{{"range", "10.0.0.0/24"}}}}},
                             "ipam.ipRanges[0] 10.0.0.0/24 is the same pool as ipam.range");
    }
    SECTION("other keys") {
        require_config_error(json::object(), "ipam has no range");
        require_config_error({{"ipRanges", json::array()}}, "ipam has no range");
        require_config_error({{"range", "10.0.0.0/24"}, {"gateway", "10.0.0"}}, "ipam.gateway \"10.0.0\"");
        require_config_error({{"range", "10.0.0.0/24"}, {"gateway", "fd00::1"}},
                             "ipam.gateway fd00::1 is IPv6 but no range is");
        require_config_error({{"range", "10.0.0.0/24"}, {"routes", {{{"dst", "x"}}}}}, "ipam.routes[0].dst \"x\"");
        require_config_error({{"range", "10.0.0.0/24"}, {"routes", {{{"gw", "10.0.0.1"}}}}},
                             "ipam.routes[0].dst is missing");
        require_config_error({{"range", "10.0.0.0/24"}, {"routes", {{{"dst", "0.0.0.0/0"}, {"gw", "x"}}}}},
                             "ipam.routes[0].gw");
        require_config_error({{"range", "10.0.0.0/24"}, {"dns", {{"nameservers", "1.1.1.1"}}}}, "ipam.dns.nameservers");
        require_config_error({{"range", "10.0.0.0/24"}, {"addresses", {{{"address", "10.0.0.5"}}}}},
                             "ipam.addresses[0].address");
        require_config_error({{"range", "10.0.0.0/24"}, {"enable_overlapping_ranges", "yes"}},
                             "ipam.enable_overlapping_ranges");
        require_config_error({{"range", "10.0.0.0/24"}, {"datastore", "etcd"}},
                             "ipam.datastore \"etcd\" is not supported");
        require_config_error({{"range", "10.0.0.0/24"}, {"data_dir", "relative/dir"}}, "ipam.data_dir");
        require_config_error({{"range", "10.0.0.0/24"}, {"kubernetes", "x"}},
                             "ipam.kubernetes must be a JSON object, got \"x\"");
        require_config_error({{"range", "10.0.0.0/24"}, {"network_name", 3}}, "ipam.network_name");
        require_config_error(json::array(), "ipam must be a JSON object, got []");
    }
}

TEST_CASE("ipam config: lenient parsing for DEL drops what no longer parses", "[ipam]") {
    const json ipam = {{"ipRanges", {{{"range", "10.0.0.0/33"}}, {{"range", "10.1.0.0/24"}}}},
                       {"gateway", "x"},
                       {"data_dir", "/run/x"}};
    CHECK_THROWS_AS(parse_ipam_config(ipam), IpamError);
    const IpamConfig c = parse_ipam_config(ipam, Strictness::lenient);
    REQUIRE(c.ranges.size() == 1);
    CHECK(c.ranges[0].cidr.str() == "10.1.0.0/24");
    CHECK(c.store.data_dir == "/run/x");
    CHECK(parse_ipam_config(json::object(), Strictness::lenient).ranges.empty());
    // The store must still be found: its errors stay fatal.
    CHECK_THROWS_AS(parse_ipam_config(json{{"data_dir", "rel"}}, Strictness::lenient), IpamError);
}

TEST_CASE("ipam config: whereabouts flat file merge", "[ipam]") {
    const json nad = {{"type", "rdmanet-ipam"},
                      {"range", "10.0.0.0/24"},
                      {"log_level", nullptr},
                      {"kubernetes", {{"k8s_api_root", "x"}}},
                      {"configuration_path", "/etc/x.conf"}};
    const json flat = {{"range", "10.9.0.0/16"},
                       {"datastore", "kubernetes"},
                       {"log_level", "error"},
                       {"enable_overlapping_ranges", false},
                       {"configuration_path", "/etc/cni/net.d/whereabouts.d"},
                       {"kubernetes", {{"kubeconfig", "/etc/k"}, {"k8s_api_root", "y"}}}};
    const json merged = merge_flat_file(nad, flat);
    CHECK(merged["range"] == "10.0.0.0/24");     // NAD wins
    CHECK(merged["datastore"] == "kubernetes");  // unset in the NAD: filled
    CHECK(merged["log_level"] == "error");       // null counts as unset
    CHECK_FALSE(merged.contains("enable_overlapping_ranges"));
    CHECK(merged["configuration_path"] == "/etc/x.conf");
    CHECK(merged["kubernetes"]["kubeconfig"] == "/etc/k");
    CHECK(merged["kubernetes"]["k8s_api_root"] == "x");
    CHECK(merge_flat_file(nad, json::array()) == nad);

    SECTION("load_ipam_config reads the file named by configuration_path") {
        ipam_test::TempDir dir;
        const std::string path = dir.sub("whereabouts.conf");
        std::ofstream(path) << json{{"gateway", "10.0.0.1"}, {"network_name", "blue"}}.dump();
        const IpamConfig c = load_ipam_config({{"range", "10.0.0.0/24"}, {"configuration_path", path}});
        CHECK(c.network_name == "blue");
        REQUIRE(c.gateway);
        CHECK(c.ranges[0].gateway->str() == "10.0.0.1");

        std::ofstream(dir.sub("bad.conf")) << "{not json";
        try {
            load_ipam_config({{"range", "10.0.0.0/24"}, {"configuration_path", dir.sub("bad.conf")}});
            FAIL("expected an error");
        } catch (const IpamError& e) {
            CHECK(e.code == codes::invalid_config);
            CHECK_THAT(e.msg, Catch::Contains("bad.conf") && Catch::Contains("not a JSON object"));
        }
        try {
            load_ipam_config({{"range", "10.0.0.0/24"}, {"configuration_path", dir.sub("missing.conf")}});
            FAIL("expected an error");
        } catch (const IpamError& e) {
            CHECK(e.code == codes::invalid_config);
            CHECK_THAT(e.msg, Catch::Contains("ipam.configuration_path") && Catch::Contains("cannot be read"));
        }
    }
}
