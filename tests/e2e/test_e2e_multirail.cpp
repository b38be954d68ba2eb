// Multi-rail pods on the real kernel: several rdmanet macvlan attachments in one pod netns with
// policyRouting, next to a cluster eth0 that holds the pod's default route. Traffic sourced from a
// rail's address leaves through that rail (route lookups and real pings counted on the far side),
// only the owning rail answers ARP for its address when the rails share one L2, concurrent ADDs
// get distinct tables, DEL removes exactly one attachment's rules, routes and sysctls, and an IPv6
// rail is usable when ADD returns even in a pod whose IPv6 is off by default.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <thread>

#include "e2e/e2e_fabric.hpp"
#include "e2e/e2e_helpers.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

TEST_CASE("4 rails in 4 subnets: sourced traffic leaves through its rail, the rest through eth0",
          "[e2e][macvlan][multirail]") {
    Workspace ws;
    Fabric fab;
    std::vector<Rail> rails;
    for (int i = 1; i <= 4; ++i) {
        const std::string net = "10.8" + std::to_string(i) + ".0";
        const auto& up = fab.uplink(net + ".1/24");
        rails.push_back(Rail{"rail" + std::to_string(i), "net" + std::to_string(i),
                             rail_plugin(ws, up.name_a(), net + ".0/24", net + ".1")});
    }
    for (auto& rail : rails) {
        rail.add_result = call(ws, "ADD", fab.pod, rail);
        INFO(rail.add_result.describe());
        REQUIRE(rail.add_result.ok());
    }

    // The main table keeps only the subnet routes and the cluster's default route.
    const json main_routes = ip_json(fab.pod, {"-4", "route", "show", "table", "main"});
    int defaults = 0;
    for (const auto& r : main_routes)
        if (r.value("dst", "") == "default") {
            ++defaults;
            CHECK(r.value("dev", "") == "eth0");
        }
    CHECK(defaults == 1);
    CHECK(route_get(fab.pod, kRemote).first == "eth0");
    REQUIRE(own_rules(fab.pod).size() == 4);

    for (std::size_t i = 0; i < rails.size(); ++i) {
        const auto& rail = rails[i];
        INFO(rail.ifname << " " << rail.address());
        const auto [dev, gw] = route_get(fab.pod, kRemote, rail.address());
        CHECK(dev == rail.ifname);
        CHECK(gw == "10.8" + std::to_string(i + 1) + ".0.1");
        // The policyRouting defaults on the interface.
        CHECK(sysctl(fab.pod, "net.ipv4.conf." + rail.ifname + ".arp_ignore") == "1");
        CHECK(sysctl(fab.pod, "net.ipv4.conf." + rail.ifname + ".arp_announce") == "2");
        CHECK(sysctl(fab.pod, "net.ipv4.conf." + rail.ifname + ".rp_filter") == "2");

        std::vector<unsigned long> before;
        for (const auto& up : fab.uplinks) before.push_back(rx_packets(fab.far, up->name_b()));
        // 20 echoes: far more than the stray IPv6 router solicitations and MLD reports any
        // link may carry meanwhile.
        const auto ping =
            in_ns(fab.pod, {"ping", "-q", "-c", "20", "-i", "0.01", "-W", "2", "-I", rail.address(), kRemote});
        INFO(ping.out << ping.err);
        CHECK(ping.exit_code == 0);
        for (std::size_t j = 0; j < fab.uplinks.size(); ++j) {
            const auto delta = rx_packets(fab.far, fab.uplinks[j]->name_b()) - before[j];
            INFO("uplink of rail " << j + 1 << " received " << delta);
            if (j == i)
                CHECK(delta >= 20);
            else
                CHECK(delta < 10);
        }
    }
    // Without a source address, traffic follows the cluster's default route.
    const auto cluster_before = rx_packets(fab.far, fab.cluster.name_b());
    CHECK(pod_ping(fab.pod, kRemote));
    CHECK(rx_packets(fab.far, fab.cluster.name_b()) > cluster_before);

    const auto check = [&] {
        json conf = plugin_stdin(rails[2].network, "1.0.0", rails[2].plugin);
        conf["prevResult"] = rails[2].add_result.json;
        return direct(ws, "CHECK", fab.pod.path(), rails[2].id, rails[2].ifname, conf);
    };
    CHECK(check().ok());
    fab.pod.ip({"rule", "del", "from", rails[2].address()});
    const auto broken = check();
    CHECK(broken.code() == 7);
    CHECK_THAT(broken.msg(), Catch::Matchers::Contains("rule from " + rails[2].address()));

    for (const auto& rail : rails) CHECK(call(ws, "DEL", fab.pod, rail).ok());
    CHECK(own_rules(fab.pod).empty());
    CHECK(table_routes(fab.pod).empty());
    CHECK(ws.state_files().empty());
}

TEST_CASE("4 rails in one subnet on one L2: only the owning rail answers ARP", "[e2e][macvlan][multirail]") {
    if (run_process({"sh", "-c", "command -v arping"}).exit_code != 0)
        skip_test("arping (Debian iputils-arping) is not installed");
    Workspace ws;
    Fabric fab;
    fab.far.ip({"link", "add", "br0", "type", "bridge"});
    fab.far.ip({"addr", "add", "10.90.0.1/24", "dev", "br0"});
    fab.far.ip({"link", "set", "br0", "up"});
    std::vector<Rail> rails;
    for (int i = 1; i <= 4; ++i) {
        const auto& up = fab.uplink("");
        fab.far.ip({"link", "set", up.name_b(), "master", "br0"});
        const std::string address = "10.90.0.1" + std::to_string(i);
        json ipam = embedded_ipam(ws, "10.90.0.0/24", "10.90.0.1");
        ipam["range_start"] = address;
        ipam["range_end"] = address;
        json plugin = macvlan_plugin(up.name_a(), ipam);
        plugin["policyRouting"] = true;
        rails.push_back(Rail{"flux" + std::to_string(i), "net" + std::to_string(i), plugin});
    }
    for (auto& rail : rails) {
        rail.add_result = call(ws, "ADD", fab.pod, rail);
        INFO(rail.add_result.describe());
        REQUIRE(rail.add_result.ok());
    }
    const auto replies = [&](const std::string& target) {
        const auto r = in_ns(fab.far, {"arping", "-c", "1", "-I", "br0", target});
        std::vector<std::string> macs;
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            const auto open = line.find('['), close = line.find(']');
            if (line.find("reply from") != std::string::npos && open != std::string::npos && close > open) {
                std::string mac = line.substr(open + 1, close - open - 1);
                std::transform(mac.begin(), mac.end(), mac.begin(), ::tolower);
                macs.push_back(mac);
            }
        }
        return macs;
    };
    const auto answered = replies(rails[1].address());
    INFO("replies for " << rails[1].address());
    CHECK(answered == std::vector<std::string>{rails[1].mac()});

    // Control: with the kernel's default arp_ignore=0 every rail answers (ARP flux), so the
    // assertion above can fail.
    for (const auto& rail : rails) in_ns(fab.pod, {"sysctl", "-qw", "net.ipv4.conf." + rail.ifname + ".arp_ignore=0"});
    CHECK(replies(rails[1].address()).size() > 1);

    for (const auto& rail : rails) CHECK(call(ws, "DEL", fab.pod, rail).ok());
    CHECK(own_rules(fab.pod).empty());
}

TEST_CASE("8 rails added concurrently get 8 tables, DEL removes exactly one rail's routing",
          "[e2e][macvlan][multirail]") {
    Workspace ws;
    Fabric fab;
    const std::vector<std::string> sysctls{"net.ipv4.conf.all.arp_ignore", "net.ipv4.conf.all.rp_filter",
                                           "net.ipv4.conf.default.arp_ignore", "net.ipv4.conf.default.rp_filter",
                                           "net.ipv4.conf.eth0.arp_ignore"};
    std::vector<std::string> sysctls_before;
    for (const auto& key : sysctls) sysctls_before.push_back(sysctl(fab.pod, key));

    const auto& up = fab.uplink("");
    for (int i = 1; i <= 8; ++i)
        fab.far.ip({"addr", "add", "10.7" + std::to_string(i) + ".0.1/24", "dev", up.name_b()});
    std::vector<Rail> rails;
    for (int i = 1; i <= 8; ++i) {
        const std::string net = "10.7" + std::to_string(i) + ".0";
        rails.push_back(Rail{"rail" + std::to_string(i), "net" + std::to_string(i),
                             rail_plugin(ws, up.name_a(), net + ".0/24", net + ".1")});
    }
    {
        std::vector<std::thread> threads;
        for (auto& rail : rails) threads.emplace_back([&] { rail.add_result = call(ws, "ADD", fab.pod, rail); });
        for (auto& t : threads) t.join();
    }
    for (const auto& rail : rails) {
        INFO(rail.add_result.describe());
        REQUIRE(rail.add_result.ok());
    }
    auto rules = own_rules(fab.pod);
    REQUIRE(rules.size() == 8);
    std::set<std::string> tables;
    for (const auto& r : rules) tables.insert(r["table"].dump());
    CHECK(tables.size() == 8);
    for (const auto& rail : rails) CHECK(route_get(fab.pod, kRemote, rail.address()).first == rail.ifname);

    REQUIRE(call(ws, "DEL", fab.pod, rails[1]).ok());
    rules = own_rules(fab.pod);
    CHECK(rules.size() == 7);
    for (const auto& r : rules) CHECK(r.value("src", "") != rails[1].address());
    for (std::size_t i = 0; i < rails.size(); ++i) {
        if (i == 1) continue;
        INFO(rails[i].ifname);
        CHECK(route_get(fab.pod, kRemote, rails[i].address()) ==
              std::make_pair(rails[i].ifname, "10.7" + std::to_string(i + 1) + ".0.1"));
    }
    CHECK(call(ws, "DEL", fab.pod, rails[1]).ok());  // idempotent

    {
        // The threads only record (Catch2's assertions are not thread-safe); checked below.
        std::vector<CniOutcome> del_results(rails.size());
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < rails.size(); ++i)
            if (i != 1) threads.emplace_back([&, i] { del_results[i] = call(ws, "DEL", fab.pod, rails[i]); });
        for (auto& t : threads) t.join();
        for (std::size_t i = 0; i < rails.size(); ++i) {
            if (i == 1) continue;
            INFO(rails[i].ifname << ": " << del_results[i].describe());
            CHECK(del_results[i].ok());
        }
    }
    CHECK(own_rules(fab.pod).empty());
    CHECK(table_routes(fab.pod).empty());
    for (std::size_t i = 0; i < sysctls.size(); ++i) CHECK(sysctl(fab.pod, sysctls[i]) == sysctls_before[i]);
    CHECK(ws.state_files().empty());
}

TEST_CASE("the sysctl map wins over the defaults and ADD records the originals first", "[e2e][macvlan][multirail]") {
    // What DEL writes back is the record checked here: the interface itself is gone after DEL
    // (a macvlan is deleted; a moved device gets the destination namespace's defaults from the
    // kernel), so the restore cannot be observed on it afterwards.
    Workspace ws;
    Fabric fab;
    const auto& up = fab.uplink("10.60.0.1/24");
    Rail rail{
        "restore", "net1",
        rail_plugin(
            ws, up.name_a(), "10.60.0.0/24", "10.60.0.1",
            {{"sysctl", {{"net.ipv4.conf.IFNAME.arp_ignore", "2"}, {"net.ipv4.neigh.IFNAME.ucast_solicit", "7"}}}})};
    rail.add_result = call(ws, "ADD", fab.pod, rail);
    INFO(rail.add_result.describe());
    REQUIRE(rail.add_result.ok());
    CHECK(sysctl(fab.pod, "net.ipv4.conf.net1.arp_ignore") == "2");  // the map wins over the default
    CHECK(sysctl(fab.pod, "net.ipv4.neigh.net1.ucast_solicit") == "7");
    CHECK(sysctl(fab.pod, "net.ipv4.conf.net1.rp_filter") == "2");
    REQUIRE(ws.state_files().size() == 1);
    const std::string file = ws.state_files()[0];
    std::ifstream in(file.front() == '/' ? file : ws.state_dir() + "/" + file);
    const json state = json::parse(in);
    const auto& recorded = state.at("podSetup").at("sysctls");
    std::map<std::string, std::string> originals;
    for (const auto& s : recorded) originals[s.at("path")] = s.at("original");
    CHECK(originals.at("net/ipv4/conf/net1/arp_ignore") == sysctl(fab.pod, "net.ipv4.conf.eth0.arp_ignore"));
    CHECK(originals.at("net/ipv4/neigh/net1/ucast_solicit") == sysctl(fab.pod, "net.ipv4.neigh.eth0.ucast_solicit"));
    CHECK(originals.count("net/ipv4/conf/net1/arp_announce") == 1);
    CHECK(call(ws, "DEL", fab.pod, rail).ok());
    CHECK(own_rules(fab.pod).empty());
}

TEST_CASE("an IPv6 rail in a pod with IPv6 off by default is usable when ADD returns",
          "[e2e][macvlan][multirail][ipv6]") {
    Workspace ws;
    Fabric fab;
    for (const char* key : {"net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"})
        REQUIRE(in_ns(fab.pod, {"sysctl", "-qw", key}).exit_code == 0);
    const auto& up = fab.uplink("");
    up.name_b();
    const auto no_tentative = [&](const std::string& ifname, const std::string& address) {
        const json j = ip_json(fab.pod, {"-6", "addr", "show", "dev", ifname});
        bool found = false;
        for (const auto& link : j)
            for (const auto& a : link.value("addr_info", json::array())) {
                INFO(a.dump());
                CHECK_FALSE(a.value("tentative", false));
                CHECK_FALSE(a.value("dadfailed", false));
                if (a.value("local", "") == address) found = true;
            }
        return found;
    };

    SECTION("embedded IPAM: DAD skipped") {
        Rail rail{"v6rail", "net1", rail_plugin(ws, up.name_a(), "fd00:77::/64", "fd00:77::1")};
        rail.add_result = call(ws, "ADD", fab.pod, rail);
        INFO(rail.add_result.describe());
        REQUIRE(rail.add_result.ok());
        CHECK(sysctl(fab.pod, "net.ipv6.conf.net1.disable_ipv6") == "0");
        CHECK(no_tentative("net1", rail.address()));
        REQUIRE(own_rules(fab.pod, "-6").size() == 1);
        CHECK(route_get(fab.pod, "fd00:99::1", rail.address()).first == "net1");
        CHECK(call(ws, "DEL", fab.pod, rail).ok());
        CHECK(own_rules(fab.pod, "-6").empty());
    }
    SECTION("ipv6.dad true: ADD waits for DAD") {
        Rail rail{"v6dad", "net1",
                  rail_plugin(ws, up.name_a(), "fd00:78::/64", "fd00:78::1", {{"ipv6", {{"dad", true}}}})};
        rail.add_result = call(ws, "ADD", fab.pod, rail);
        INFO(rail.add_result.describe());
        REQUIRE(rail.add_result.ok());
        CHECK(no_tentative("net1", rail.address()));
        CHECK(sysctl(fab.pod, "net.ipv6.conf.net1.accept_dad") != "0");
        CHECK(call(ws, "DEL", fab.pod, rail).ok());
    }
}

TEST_CASE("bad pod-side keys are code 7 naming the key, nothing changed", "[e2e][macvlan][multirail]") {
    Workspace ws;
    Fabric fab;
    const auto& up = fab.uplink("");
    const std::vector<std::pair<json, std::string>> cases{
        {{{"sysctl", {{"net.ipv4.conf.eth0.arp_ignore", "1"}}}}, "sysctl.net.ipv4.conf.eth0.arp_ignore"},
        {{{"sysctl", {{"net.ipv4.ip_forward", "1"}}}}, "sysctl.net.ipv4.ip_forward"},
        {{{"sysctl", {{"net.ipv4.conf.all.rp_filter", "0"}}}}, "sysctl.net.ipv4.conf.all.rp_filter"},
        {{{"policyRouting", {{"table", 254}}}}, "policyRouting.table"},
        {{{"policyRouting", {{"table", 0}}}}, "policyRouting.table"},
        {{{"policyRouting", {{"priority", 0}}}}, "policyRouting.priority"},
    };
    const auto links_before = link_names(&fab.pod);
    for (const auto& [extra, key] : cases) {
        INFO(extra.dump());
        Rail rail{"bad", "net1", rail_plugin(ws, up.name_a(), "10.61.0.0/24", "10.61.0.1", extra)};
        const auto r = call(ws, "ADD", fab.pod, rail);
        CHECK_FALSE(r.ok());
        CHECK(r.code() == 7);
        CHECK_THAT(r.msg(), Catch::Matchers::Contains(key));
        CHECK(link_names(&fab.pod) == links_before);
        CHECK(own_rules(fab.pod).empty());
        CHECK(ws.state_files().empty());
        CHECK(sysctl(fab.pod, "net.ipv4.conf.eth0.arp_ignore") == "0");
    }
}
