// Bad ipam configuration through bin/rdmanet-ipam: a non-zero exit, the CNI error JSON on stdout
// with code 7 (invalid config) and a message that names the offending field; nothing is
// allocated.
#include "test_ipam_plugin_util.hpp"

using namespace ipam_plugin_test;
using ipam_test::TempDir;

namespace {

struct BadCase {
    const char* what;
    json ipam;                           // without data_dir
    std::vector<std::string> must_name;  // substrings of msg
};

}  // namespace

TEST_CASE("rdmanet-ipam rejects bad configuration with code 7 naming the field", "[ipam]") {
    TempDir dir;
    const std::vector<BadCase> cases = {
        // malformed CIDRs
        {"range not a CIDR", {{"range", "10.0.0.0"}}, {"ipam.range", "10.0.0.0"}},
        {"range prefix too long", {{"range", "10.0.0.0/33"}}, {"ipam.range", "10.0.0.0/33"}},
        {"range octet out of bounds", {{"range", "10.0.300.0/24"}}, {"ipam.range"}},
        {"range garbage", {{"range", "not-a-range"}}, {"ipam.range"}},
        {"range IPv6 prefix too long", {{"range", "fd00::/129"}}, {"ipam.range"}},
        {"range not a string", {{"range", 42}}, {"ipam.range"}},
        {"start-end form with a bad end", {{"range", "10.0.0.10-10.0.0.x/24"}}, {"ipam.range"}},
        {"start-end form outside the CIDR", {{"range", "10.0.1.10-10.0.1.20/24x"}}, {"ipam.range"}},
        // start > end, outside the range
        {"range_start after range_end",
         {{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.50"}, {"range_end", "10.0.0.10"}},
         {"range_start", "range_end"}},
        {"start-end form reversed", {{"range", "10.0.0.50-10.0.0.10/24"}}, {"ipam.range"}},
        {"range_start outside the range",
         {{"range", "10.0.0.0/24"}, {"range_start", "10.0.1.5"}},
         {"ipam.range_start", "10.0.1.5"}},
        {"range_end outside the range", {{"range", "10.0.0.0/24"}, {"range_end", "10.9.0.5"}}, {"ipam.range_end"}},
        {"range_start not an IP", {{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.256"}}, {"ipam.range_start"}},
        // exclusion syntax
        {"exclude not an address",
         {{"range", "10.0.0.0/24"}, {"exclude", {"10.0.0.5", "10.0.0.300"}}},
         {"ipam.exclude[1]", "10.0.0.300"}},
        {"exclude bad prefix", {{"range", "10.0.0.0/24"}, {"exclude", {"10.0.0.0/40"}}}, {"ipam.exclude[0]"}},
        {"exclude not a list", {{"range", "10.0.0.0/24"}, {"exclude", "10.0.0.5"}}, {"ipam.exclude"}},
        {"exclude entry not a string", {{"range", "10.0.0.0/24"}, {"exclude", {5}}}, {"ipam.exclude[0]"}},
        {"exclude with a range dash",
         {{"range", "10.0.0.0/24"}, {"exclude", {"10.0.0.5-10.0.0.9"}}},
         {"ipam.exclude[0]"}},
        // IPv4/IPv6 mixed in one range
        {"IPv6 range_start in an IPv4 range",
         {{"range", "10.0.0.0/24"}, {"range_start", "fd00::5"}},
         {"ipam.range_start", "IPv6", "IPv4"}},
        {"IPv4 range_end in an IPv6 range", {{"range", "fd00::/64"}, {"range_end", "10.0.0.5"}}, {"ipam.range_end"}},
        {"IPv6 exclude in an IPv4 range",
         {{"range", "10.0.0.0/24"}, {"exclude", {"fd00::/120"}}},
         {"ipam.exclude[0]", "IPv6"}},
        {"mixed start-end form", {{"range", "10.0.0.5-fd00::9/24"}}, {"ipam.range"}},
        {"IPv6 start in an IPv4 ipRanges entry",
         {{"ipRanges", {{{"range", "10.0.0.0/24"}, {"range_start", "fd00::1"}}}}},
         {"ipam.ipRanges[0].range_start"}},
        // bad ipRanges entries
        {"ipRanges not a list", {{"ipRanges", {{"range", "10.0.0.0/24"}}}}, {"ipam.ipRanges"}},
        {"ipRanges entry not an object", {{"ipRanges", {"10.0.0.0/24"}}}, {"ipam.ipRanges[0]"}},
        {"ipRanges entry without range", {{"ipRanges", {{{"range_start", "10.0.0.5"}}}}}, {"ipam.ipRanges[0].range"}},
        {"ipRanges entry with a bad range",
         {{"ipRanges", {{{"range", "10.0.0.0/24"}}, {{"range", "10.1.0.0/99"}}}}},
         {"ipam.ipRanges[1].range"}},
        {"ipRanges entry with a bad exclude",
         {{"ipRanges", {{{"range", "10.0.0.0/24"}, {"exclude", {"bogus"}}}}}},
         {"ipam.ipRanges[0].exclude[0]", "bogus"}},
        {"ipRanges entry with start > end",
         {{"ipRanges", {{{"range", "10.0.0.0/24"}, {"range_start", "10.0.0.9"}, {"range_end", "10.0.0.2"}}}}},
         {"ipam.ipRanges[0].range_start"}},
        {"ipRanges entry repeating the top-level range",
         {{"range", "10.0.0.0/24"}, {"ipRanges", {{{"range", "10.0.0.0/24"}}}}},
         {"ipam.ipRanges[0]"}},
        // other fields
        {"no range at all", json::object(), {"range"}},
        {"gateway not an IP", {{"range", "10.0.0.0/24"}, {"gateway", "10.0.0"}}, {"ipam.gateway"}},
        {"data_dir relative", {{"range", "10.0.0.0/24"}, {"data_dir", "relative/dir"}}, {"ipam.data_dir"}},
        {"routes entry without dst",
         {{"range", "10.0.0.0/24"}, {"routes", {{{"gw", "10.0.0.1"}}}}},
         {"ipam.routes[0].dst"}},
    };

    for (const auto& c : cases) {
        DYNAMIC_SECTION(c.what) {
            json ipam = c.ipam;
            if (!ipam.contains("data_dir")) ipam["data_dir"] = dir.sub("data");
            const auto r = add(net_conf("bad-net", ipam), "bad-1");
            INFO(c.what << "\nipam " << ipam.dump() << "\n" << r.describe());
            CHECK(r.exit_code != 0);
            REQUIRE(r.stdout_is_json());
            REQUIRE(r.json.is_object());
            CHECK(r.code() == 7);
            CHECK(r.json.value("cniVersion", "") == "1.0.0");
            const std::string text = r.msg() + " " + r.details();
            for (const auto& needle : c.must_name) CHECK_THAT(text, Catch::Contains(needle));
            // CHECK validates as strictly as ADD.
            const auto check =
                ipam_call({"CHECK", "bad-1", "net1", pod_args("ns", "bad-1")}, net_conf("bad-net", ipam));
            CHECK(check.code() == 7);
        }
    }
    // Nothing was allocated by any of them.
    CHECK(total_allocations(pool_list_json(dir.sub("data"))) == 0);
}

TEST_CASE("rdmanet-ipam bad static requests and stdin are refused without allocating", "[ipam]") {
    TempDir dir;
    const json conf = net_conf("bad-static", {{"range", "10.72.0.0/24"}, {"data_dir", dir.sub("data")}});

    SECTION("CNI_ARGS IP= that is not an address") {
        const auto r = ipam_call({"ADD", "s-1", "net1", pod_args("ns", "s-1") + ";IP=10.72.0.999"}, conf);
        INFO(r.describe());
        CHECK_FALSE(r.ok());
        CHECK(r.code() == 7);
        CHECK_THAT(r.msg(), Catch::Contains("10.72.0.999"));
    }
    SECTION("runtimeConfig.ips entry that is the network address") {
        json c = conf;
        c["runtimeConfig"] = {{"ips", {"10.72.0.0/24"}}};
        const auto r = ipam_call({"ADD", "s-2", "net1", pod_args("ns", "s-2")}, c);
        INFO(r.describe());
        CHECK_FALSE(r.ok());
        CHECK(r.code() == 7);
    }
    SECTION("stdin that is not JSON") {
        PluginRequest req;
        req.command = "ADD";
        req.container_id = "s-3";
        req.netns = "/var/run/netns/unused";
        req.ifname = "net1";
        req.path = rdmanet::test::bin_dir();
        req.stdin_data = "{\"cniVersion\": \"1.0.0\", \"name\": ";
        const auto r = rdmanet::test::invoke_plugin(ipam_plugin_path(), req);
        INFO(r.describe());
        CHECK_FALSE(r.ok());
        CHECK(r.code() == 6);
    }
    SECTION("no ipam object at all") {
        json c = conf;
        c.erase("ipam");
        const auto r = add(c, "s-4");
        INFO(r.describe());
        CHECK_FALSE(r.ok());
        CHECK(r.code() == 7);
        CHECK_THAT(r.msg() + r.details(), Catch::Contains("ipam"));
    }
    SECTION("DEL and GC with an invalid range still work (teardown must not be blocked)") {
        REQUIRE(add(conf, "s-5").ok());
        json broken = conf;
        broken["ipam"]["range"] = "10.72.0.0/99";
        const auto d = del(broken, "s-5");
        INFO(d.describe());
        CHECK(d.ok());
        CHECK(total_allocations(pool_list_json(dir.sub("data"))) == 0);
    }
    CHECK(total_allocations(pool_list_json(dir.sub("data"))) == 0);
}
