// bin/rdmanet-ipam through its CNI interface (real process, CNI environment + stdin), and
// bin/rdmanetctl pool list/show/verify reading the store it writes.
#include "test_ipam_plugin_util.hpp"

using namespace ipam_plugin_test;
using ipam_test::TempDir;

TEST_CASE("rdmanet-ipam VERSION lists the supported CNI versions", "[ipam]") {
    const auto v = ipam_call({"VERSION", "", "", ""}, json{{"cniVersion", "1.0.0"}});
    INFO(v.describe());
    REQUIRE(v.ok());
    CHECK(v.json.value("cniVersion", "") == "1.0.0");
    const auto versions = v.json["supportedVersions"].get<std::vector<std::string>>();
    for (const char* want : {"0.3.1", "0.4.0", "1.0.0", "1.1.0"})
        CHECK(std::find(versions.begin(), versions.end(), want) != versions.end());
}

TEST_CASE("rdmanet-ipam ADD prints the IPAM result shape, re-ADD is sticky, DEL releases", "[ipam]") {
    TempDir dir;
    const json conf = net_conf("plug-a", {{"range", "10.60.0.0/24"},
                                          {"gateway", "10.60.0.1"},
                                          {"exclude", {"10.60.0.2/31"}},
                                          {"routes", {{{"dst", "10.61.0.0/16"}}}},
                                          {"dns", {{"nameservers", {"10.60.0.53"}}}},
                                          {"data_dir", dir.sub("data")}});

    const auto a = add(conf, "ctr-a");
    INFO(a.describe());
    REQUIRE(a.ok());
    REQUIRE(a.json.is_object());
    // IPAM result: no interfaces, the address with the range's prefix and the gateway.
    CHECK_FALSE(a.json.contains("interfaces"));
    CHECK(a.json.value("cniVersion", "") == "1.0.0");
    REQUIRE(a.json["ips"].size() == 1);
    CHECK(a.json["ips"][0].value("address", "") == "10.60.0.4/24");  // .1 gateway, .2-.3 excluded
    CHECK(a.json["ips"][0].value("gateway", "") == "10.60.0.1");
    CHECK_FALSE(a.json["ips"][0].contains("interface"));
    REQUIRE(a.json["routes"].size() == 1);
    CHECK(a.json["routes"][0].value("dst", "") == "10.61.0.0/16");
    CHECK(a.json["dns"]["nameservers"] == json::array({"10.60.0.53"}));

    const auto b = add(conf, "ctr-b");
    INFO(b.describe());
    REQUIRE(b.ok());
    CHECK(first_ip(b) == "10.60.0.5");

    SECTION("re-ADD for the same podRef + ifname returns the same address") {
        // Same container: a retried ADD.
        const auto again = add(conf, "ctr-a");
        INFO(again.describe());
        REQUIRE(again.ok());
        CHECK(first_ip(again) == "10.60.0.4");
        // New sandbox (new container id) of the same pod: sticky too, and the id is rewritten.
        const auto sandbox = ipam_call({"ADD", "ctr-a-2", "net1", pod_args("ns", "ctr-a")}, conf);
        INFO(sandbox.describe());
        REQUIRE(sandbox.ok());
        CHECK(first_ip(sandbox) == "10.60.0.4");
        const auto allocs = allocations_of(pool_list_json(dir.sub("data")), "10.60.0.0-24");
        REQUIRE(allocs.size() == 2);
        CHECK(allocs.at("4") == json{{"id", "ctr-a-2"}, {"podref", "ns/ctr-a"}, {"ifname", "net1"}});
        CHECK(allocs.at("5") == json{{"id", "ctr-b"}, {"podref", "ns/ctr-b"}, {"ifname", "net1"}});
        // Another ifname of the same pod is another attachment.
        const auto second_if = add(conf, "ctr-a-2", "net2");
        INFO(second_if.describe());
        REQUIRE(second_if.ok());
        CHECK(first_ip(second_if) == "10.60.0.6");
    }

    SECTION("DEL releases by container id + ifname; the address is handed out again") {
        const auto d = del(conf, "ctr-a");
        INFO(d.describe());
        REQUIRE(d.ok());
        CHECK(d.out.empty());
        auto allocs = allocations_of(pool_list_json(dir.sub("data")), "10.60.0.0-24");
        CHECK(allocs.size() == 1);
        CHECK(allocs.count("5") == 1);
        // The lowest free address again.
        const auto c = add(conf, "ctr-c");
        INFO(c.describe());
        REQUIRE(c.ok());
        CHECK(first_ip(c) == "10.60.0.4");
        // A DEL of another ifname of ctr-b releases nothing.
        REQUIRE(del(conf, "ctr-b", "net9").ok());
        CHECK(allocations_of(pool_list_json(dir.sub("data")), "10.60.0.0-24").size() == 2);
    }

    SECTION("DEL is idempotent and succeeds when nothing is allocated") {
        REQUIRE(del(conf, "ctr-a").ok());
        const auto twice = del(conf, "ctr-a");
        INFO(twice.describe());
        CHECK(twice.ok());
        const auto never = del(conf, "never-added");
        INFO(never.describe());
        CHECK(never.ok());
        CHECK(allocations_of(pool_list_json(dir.sub("data")), "10.60.0.0-24").size() == 1);
    }

    SECTION("CHECK passes for a held address and fails after DEL") {
        const auto ok = ipam_call({"CHECK", "ctr-a", "net1", pod_args("ns", "ctr-a")}, conf);
        INFO(ok.describe());
        CHECK(ok.ok());
        REQUIRE(del(conf, "ctr-a").ok());
        const auto gone = ipam_call({"CHECK", "ctr-a", "net1", pod_args("ns", "ctr-a")}, conf);
        INFO(gone.describe());
        CHECK_FALSE(gone.ok());
        CHECK(gone.code() == 112);
        CHECK(gone.msg().find("10.60.0.0/24") != std::string::npos);
    }

    require_verify_clean(dir.sub("data"));
}

TEST_CASE("rdmanet-ipam on a fresh data dir needs no setup, and an empty one lists nothing", "[ipam]") {
    TempDir dir;
    // rdmanetctl on a directory without a store: empty, nothing created.
    CHECK(pool_list_json(dir.sub("data")).empty());
    const auto text = ctl({"pool", "list", "--data-dir", dir.sub("data")});
    CHECK(text.exit_code == 0);
    CHECK(text.out.empty());
    require_verify_clean(dir.sub("data"));
    CHECK_FALSE(std::filesystem::exists(dir.sub("data")));
    // DEL before any ADD ever happened on this node.
    const json conf = net_conf("plug-fresh", {{"range", "10.62.0.0/24"}, {"data_dir", dir.sub("data")}});
    const auto d = del(conf, "ctr-x");
    INFO(d.describe());
    CHECK(d.ok());
}

TEST_CASE("rdmanet-ipam dual stack, static requests and CNI 0.3.1 results", "[ipam]") {
    TempDir dir;
    const json ipam = {{"ipRanges", {{{"range", "10.63.0.0/24"}}, {{"range", "fd63::/64"}, {"exclude", {"fd63::1"}}}}},
                       {"gateway", "10.63.0.1"},
                       {"data_dir", dir.sub("data")}};

    SECTION("one address per ipRanges entry, each with its prefix") {
        const auto a = add(net_conf("plug-ds", ipam), "ds-1");
        INFO(a.describe());
        REQUIRE(a.ok());
        REQUIRE(a.json["ips"].size() == 2);
        CHECK(a.json["ips"][0].value("address", "") == "10.63.0.2/24");
        CHECK(a.json["ips"][0].value("gateway", "") == "10.63.0.1");
        CHECK(a.json["ips"][1].value("address", "") == "fd63::2/64");
        CHECK_FALSE(a.json["ips"][1].contains("gateway"));
        const auto pools = pool_list_json(dir.sub("data"));
        CHECK(allocations_of(pools, "10.63.0.0-24").count("2") == 1);
        CHECK(allocations_of(pools, "fd63---64").count("2") == 1);
        REQUIRE(del(net_conf("plug-ds", ipam), "ds-1").ok());
        CHECK(total_allocations(pool_list_json(dir.sub("data"))) == 0);
    }

    SECTION("CNI_ARGS IP= takes that address inside the range") {
        const auto a = ipam_call({"ADD", "ds-ip", "net1", pod_args("ns", "ds-ip") + ";IP=10.63.0.77,fd63::77"},
                                 net_conf("plug-ds", ipam));
        INFO(a.describe());
        REQUIRE(a.ok());
        REQUIRE(a.json["ips"].size() == 2);
        CHECK(a.json["ips"][0].value("address", "") == "10.63.0.77/24");
        CHECK(a.json["ips"][1].value("address", "") == "fd63::77/64");
        // runtimeConfig.ips wins over CNI_ARGS.
        json conf = net_conf("plug-ds", ipam);
        conf["runtimeConfig"] = {{"ips", {"10.63.0.88/24", "fd63::88/64"}}};
        const auto b = ipam_call({"ADD", "ds-rc", "net1", pod_args("ns", "ds-rc") + ";IP=10.63.0.99"}, conf);
        INFO(b.describe());
        REQUIRE(b.ok());
        CHECK(b.json["ips"][0].value("address", "") == "10.63.0.88/24");
        // Someone else's address: refused, nothing taken.
        const auto taken =
            ipam_call({"ADD", "ds-x", "net1", pod_args("ns", "ds-x") + ";IP=10.63.0.77"}, net_conf("plug-ds", ipam));
        INFO(taken.describe());
        CHECK_FALSE(taken.ok());
        CHECK(taken.code() == 111);
        CHECK(total_allocations(pool_list_json(dir.sub("data"))) == 4);
    }

    SECTION("a 0.3.1 config gets a 0.3.1 result with version fields") {
        const auto a = add(net_conf("plug-ds", ipam, "0.3.1"), "ds-old");
        INFO(a.describe());
        REQUIRE(a.ok());
        CHECK(a.json.value("cniVersion", "") == "0.3.1");
        REQUIRE(a.json["ips"].size() == 2);
        CHECK(a.json["ips"][0].value("version", "") == "4");
        CHECK(a.json["ips"][1].value("version", "") == "6");
    }
    require_verify_clean(dir.sub("data"));
}

TEST_CASE("rdmanet-ipam GC releases exactly the attachments not in cni.dev/valid-attachments", "[ipam]") {
    TempDir dir;
    const json ipam = {{"range", "10.64.0.0/24"}, {"data_dir", dir.sub("data")}};
    const json conf = net_conf("plug-gc", ipam, "1.1.0");
    // Another CNI network on the same node (and store), with its own pool.
    const json other = net_conf("plug-other", {{"range", "10.65.0.0/24"}, {"data_dir", dir.sub("data")}}, "1.1.0");
    for (const char* id : {"gc-a", "gc-b", "gc-c", "gc-d"}) REQUIRE(add(conf, id).ok());
    REQUIRE(add(conf, "gc-a", "net2").ok());
    REQUIRE(add(other, "gc-other").ok());
    REQUIRE(total_allocations(pool_list_json(dir.sub("data"))) == 6);

    SECTION("without the key GC releases nothing") {
        const auto gc = ipam_call({"GC", "", "", ""}, conf);
        INFO(gc.describe());
        REQUIRE(gc.ok());
        CHECK(total_allocations(pool_list_json(dir.sub("data"))) == 6);
    }

    SECTION("with cni.dev/valid-attachments") {
        json gc_conf = conf;
        gc_conf["cni.dev/valid-attachments"] = {{{"containerID", "gc-a"}, {"ifname", "net1"}},
                                                {{"containerID", "gc-c"}, {"ifname", "net1"}},
                                                {{"containerID", "unknown"}, {"ifname", "net1"}}};
        const auto gc = ipam_call({"GC", "", "", ""}, gc_conf);
        INFO(gc.describe());
        REQUIRE(gc.ok());
        const auto pools = pool_list_json(dir.sub("data"));
        std::set<std::pair<std::string, std::string>> held;
        for (const auto& [offset, owner] : allocations_of(pools, "10.64.0.0-24"))
            held.insert({owner.value("id", ""), owner.value("ifname", "")});
        CHECK(held == std::set<std::pair<std::string, std::string>>{{"gc-a", "net1"}, {"gc-c", "net1"}});
        // The other network's allocation is not this GC's business.
        CHECK(allocations_of(pools, "10.65.0.0-24").size() == 1);
        // The kept ones still CHECK.
        CHECK(ipam_call({"CHECK", "gc-a", "net1", pod_args("ns", "gc-a")}, conf).ok());
        CHECK(ipam_call({"CHECK", "gc-c", "net1", pod_args("ns", "gc-c")}, conf).ok());
    }

    SECTION("the legacy cni.dev/attachments key works too; an empty list releases all of this network") {
        json gc_conf = conf;
        gc_conf["cni.dev/attachments"] = json::array();
        const auto gc = ipam_call({"GC", "", "", ""}, gc_conf);
        INFO(gc.describe());
        REQUIRE(gc.ok());
        const auto pools = pool_list_json(dir.sub("data"));
        CHECK(allocations_of(pools, "10.64.0.0-24").empty());
        CHECK(allocations_of(pools, "10.65.0.0-24").size() == 1);
    }
    require_verify_clean(dir.sub("data"));
}

TEST_CASE("rdmanetctl pool list/show/verify", "[ipam]") {
    TempDir dir;
    const json conf =
        net_conf("plug-ctl", {{"range", "10.66.0.0/24"}, {"network_name", "blue"}, {"data_dir", dir.sub("data")}});
    const json conf6 = net_conf("plug-ctl6", {{"range", "fd66::/120"}, {"data_dir", dir.sub("data")}});
    REQUIRE(add(conf, "ctl-1").ok());
    REQUIRE(add(conf, "ctl-2").ok());
    REQUIRE(add(conf6, "ctl-3").ok());

    SECTION("list: one line per pool with name, range and count") {
        const auto r = ctl({"pool", "list", "--data-dir", dir.sub("data")});
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        std::istringstream lines(r.out);
        std::map<std::string, std::pair<std::string, int>> rows;
        std::string name, range;
        int count = 0;
        while (lines >> name >> range >> count) rows[name] = {range, count};
        CHECK(rows == std::map<std::string, std::pair<std::string, int>>{{"blue-10.66.0.0-24", {"10.66.0.0/24", 2}},
                                                                         {"fd66---120", {"fd66::/120", 1}}});
    }

    SECTION("list --json: whereabouts IPPool objects") {
        const auto pools = pool_list_json(dir.sub("data"));
        REQUIRE(pools.size() == 2);
        const json want = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                           {"kind", "IPPool"},
                           {"metadata", {{"name", "blue-10.66.0.0-24"}}},
                           {"spec",
                            {{"range", "10.66.0.0/24"},
                             {"allocations",
                              {{"1", {{"id", "ctl-1"}, {"podref", "ns/ctl-1"}, {"ifname", "net1"}}},
                               {"2", {{"id", "ctl-2"}, {"podref", "ns/ctl-2"}, {"ifname", "net1"}}}}}}}};
        // Ordered by (network_name, range): the unnamed network's pool first.
        CHECK(pools[0]["metadata"]["name"] == "fd66---120");
        CHECK(pools[0]["spec"]["range"] == "fd66::/120");
        CHECK(pools[0]["spec"]["allocations"].size() == 1);
        CHECK(pools[1] == want);
    }

    SECTION("show NAME prints that pool; the range works as a name when unambiguous") {
        const auto r = ctl({"pool", "show", "blue-10.66.0.0-24", "--data-dir", dir.sub("data")});
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        const json j = json::parse(r.out);
        CHECK(j["kind"] == "IPPool");
        CHECK(j["spec"]["allocations"].size() == 2);
        const auto by_range = ctl({"pool", "show", "fd66::/120", "--data-dir", dir.sub("data")});
        REQUIRE(by_range.exit_code == 0);
        CHECK(json::parse(by_range.out)["metadata"]["name"] == "fd66---120");
    }

    SECTION("show of an unknown name: message on stderr, exit 1, nothing on stdout") {
        const auto r = ctl({"pool", "show", "10.99.0.0-24", "--data-dir", dir.sub("data")});
        CHECK(r.exit_code == 1);
        CHECK(r.out.empty());
        CHECK(r.err.find("10.99.0.0-24") != std::string::npos);
    }

    SECTION("verify: consistent") {
        const auto r = ctl({"pool", "verify", "--data-dir", dir.sub("data")});
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("consistent") != std::string::npos);
    }

    SECTION("verify reports a tampered store and exits non-zero") {
        // Remove one allocation row behind the store's back: its run is left without allocation.
        const auto sql = rdmanet::test::run_process(
            {"sqlite3", dir.sub("data") + "/ipam.db", "DELETE FROM allocations WHERE container_id = 'ctl-2';"});
        if (sql.exit_code == 127) {
            WARN("sqlite3 CLI not installed: tamper check skipped");
        } else {
            REQUIRE(sql.exit_code == 0);
            const auto r = ctl({"pool", "verify", "--data-dir", dir.sub("data")});
            INFO(r.out << r.err);
            CHECK(r.exit_code != 0);
            CHECK(r.err.find("do not match") != std::string::npos);
        }
    }

    SECTION("--help on every subcommand; usage errors on stderr with a non-zero exit") {
        for (const auto& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                      {"pool", "--help"},
                                                                      {"pool", "list", "--help"},
                                                                      {"pool", "show", "--help"},
                                                                      {"pool", "verify", "--help"}}) {
            const auto r = ctl(args);
            INFO(args.back() << ": " << r.out << r.err);
            CHECK(r.exit_code == 0);
            CHECK(r.out.find("Usage") != std::string::npos);
        }
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {}, {"pool"}, {"pool", "show"}, {"pool", "bogus"}, {"pool", "list", "--no-such-flag"}}) {
            const auto r = ctl(args);
            INFO((args.empty() ? "(none)" : args.back()) << ": " << r.out << r.err);
            CHECK(r.exit_code == 2);
            CHECK_FALSE(r.err.empty());
        }
    }

    SECTION("an unreadable store is an error on stderr") {
        const std::string bad = dir.sub("bad");
        std::filesystem::create_directories(bad);
        std::ofstream(bad + "/ipam.db") << "this is not a database";
        const auto r = ctl({"pool", "list", "--data-dir", bad});
        CHECK(r.exit_code != 0);
        CHECK_FALSE(r.err.empty());
    }
}
