// nv-ipam's IPPool and CIDRPool as the datastore, through bin/rdmanet-ipam against the server
// under test (the in-repo API server, or with RDMANET_TEST_APISERVER=real a real kube-apiserver
// with nv-ipam's CRDs from deploy/crds/): each simulated node is a process with its own $NODENAME
// and local store. Pools are created in nv-ipam's exact shape; the controller's status is written
// through the status subresource (PUT .../status) as nv-ipam's controller writes it, the only way
// a real server takes it. The outage test needs the in-repo server's fault injection: [inrepo].
#include "test_kube_util.hpp"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

using namespace kube_test;
using ipam_plugin_test::first_ip;

namespace {

json pool_status(const ApiServer& s, const std::string& plural, const std::string& name) {
    auto r = s.request("GET", kNvApi + "/" + plural + "/" + name);
    REQUIRE(r.status == 200);
    return r.body.contains("status") ? r.body["status"].value("allocations", json::array()) : json::array();
}

void create_node(const ApiServer& s, const std::string& name, const json& labels) {
    const json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", labels}}}};
    auto r = s.request("POST", "/api/v1/nodes", node.dump());
    INFO(r.text);
    REQUIRE(r.status == 201);
}

json nv_conf(const Env& env, const std::string& pool, const std::string& type, json extra = json::object()) {
    json ipam = {{"type", "rdmanet-ipam"},
                 {"poolName", pool},
                 {"poolType", type},
                 {"kubernetes", {{"kubeconfig", env.kubeconfig}}},
                 {"data_dir", env.data_dir}};
    for (auto& [k, v] : extra.items()) ipam[k] = v;
    return ipam_plugin_test::net_conf("railnet", ipam);
}

std::uint64_t api_requests(const ServerUnderTest& s) { return s.stats()["requests"].get<std::uint64_t>(); }

CniOutcome add_with_ip(const Env& env, const std::string& node, const json& conf, const std::string& id,
                       const std::string& ip) {
    json c = conf;
    c["runtimeConfig"] = {{"ips", {ip}}};
    return call_on(env, node, "ADD", c, id);
}

}  // namespace

TEST_CASE("nv-ipam IPPool: the controller's block for the node, the pool gateway, routes, no API request once known",
          "[kube][integration][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    create_nv_pool(server, "ippools", "pool1",
                   {{"subnet", "192.168.0.0/24"},
                    {"perNodeBlockSize", 100},
                    {"gateway", "192.168.0.1"},
                    {"routes", {{{"dst", "10.200.0.0/16"}}}},
                    {"defaultGateway", true}},
                   {{{"nodeName", "node-b"}, {"startIP", "192.168.0.1"}, {"endIP", "192.168.0.100"}},
                    {{"nodeName", "node-a"}, {"startIP", "192.168.0.101"}, {"endIP", "192.168.0.200"}}});
    const json before = pool_status(server, "ippools", "pool1");
    const json conf = nv_conf(env, "pool1", "ippool");
    auto a = call_on(env, "node-a", "ADD", conf, "a1");
    INFO(a.describe());
    REQUIRE(a.exit_code == 0);
    CHECK(a.json["ips"][0]["address"] == "192.168.0.101/24");
    CHECK(a.json["ips"][0]["gateway"] == "192.168.0.1");
    CHECK(a.json["routes"] == json::parse(R"([{"dst":"10.200.0.0/16","gw":"192.168.0.1"},
                                              {"dst":"0.0.0.0/0","gw":"192.168.0.1"}])"));
    auto b = call_on(env, "node-b", "ADD", conf, "b1");
    REQUIRE(b.exit_code == 0);
    CHECK(first_ip(b) == "192.168.0.2");                       // node-b's block holds the gateway: one address less
    CHECK(pool_status(server, "ippools", "pool1") == before);  // the controller's status untouched

    // Steady state: no API request on ADD, DEL, CHECK once the node knows its block (counted on
    // nv-ipam's pools, whereabouts' resources, pods and nodes; on a real server from its /metrics).
    INFO("server: " << server.name());
    const auto requests = api_requests(server);
    for (int i = 2; i <= 6; ++i) REQUIRE(call_on(env, "node-a", "ADD", conf, "a" + std::to_string(i)).exit_code == 0);
    CHECK(call_on(env, "node-a", "CHECK", conf, "a2").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a3").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a3").exit_code == 0);  // idempotent
    REQUIRE(call_on(env, "node-a", "DEL", conf, "never-added").exit_code == 0);
    CHECK(api_requests(server) == requests);
    // ... and the count does see a read of the pool (the comparison above could fail).
    REQUIRE(server.request("GET", kNvApi + "/ippools/pool1").status == 200);
    CHECK(api_requests(server) > requests);

    // Static addresses: inside the node's block; outside is code 7 naming it.
    auto s = add_with_ip(env, "node-a", conf, "s1", "192.168.0.150/24");
    INFO(s.describe());
    REQUIRE(s.exit_code == 0);
    CHECK(first_ip(s) == "192.168.0.150");
    auto outside = add_with_ip(env, "node-a", conf, "s2", "192.168.0.50/24");
    CHECK(outside.exit_code != 0);
    CHECK(outside.code() == 7);
    CHECK_THAT(outside.msg(), Catch::Contains("192.168.0.50"));
}

TEST_CASE("nv-ipam CIDRPool /24 gatewayIndex 1: x.y.z.2/24, gateway .1, routes and the default route",
          "[kube][integration][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    create_nv_pool(server, "cidrpools", "rail1",
                   {{"cidr", "10.10.0.0/16"},
                    {"perNodeNetworkPrefix", 24},
                    {"gatewayIndex", 1},
                    {"routes", {{{"dst", "10.10.0.0/16"}}}},
                    {"defaultGateway", true}},
                   {{{"nodeName", "node-a"}, {"prefix", "10.10.7.0/24"}, {"gateway", "10.10.7.1"}}});
    const json conf = nv_conf(env, "rail1", "cidrpool");
    auto a = call_on(env, "node-a", "ADD", conf, "a1");
    INFO(a.describe());
    REQUIRE(a.exit_code == 0);
    CHECK(a.json["ips"][0]["address"] == "10.10.7.2/24");
    CHECK(a.json["ips"][0]["gateway"] == "10.10.7.1");
    CHECK(a.json["routes"] ==
          json::parse(R"([{"dst":"10.10.0.0/16","gw":"10.10.7.1"},{"dst":"0.0.0.0/0","gw":"10.10.7.1"}])"));
    // A node without an entry claims the first free subnet in the controller's order.
    auto b = call_on(env, "node-b", "ADD", conf, "b1");
    INFO(b.describe());
    REQUIRE(b.exit_code == 0);
    CHECK(b.json["ips"][0]["address"] == "10.10.0.2/24");
    CHECK(pool_status(server, "cidrpools", "rail1") ==
          json::parse(R"([{"nodeName":"node-a","prefix":"10.10.7.0/24","gateway":"10.10.7.1"},
                          {"nodeName":"node-b","prefix":"10.10.0.0/24","gateway":"10.10.0.1"}])"));
    // The node's subnet and source as rdmanetctl pool shows them.
    auto shown = env.ctl({"pool", "blocks", "--data-dir", env.data_dir + "/node-b"});
    INFO(shown.out << shown.err);
    CHECK(shown.exit_code == 0);
    CHECK_THAT(shown.out, Catch::Contains("CIDRPool kube-system/rail1") && Catch::Contains("10.10.0.0/24") &&
                              Catch::Contains("gateway 10.10.0.1") && Catch::Contains("rdmanet") &&
                              Catch::Contains("used 1"));
}

TEST_CASE("nv-ipam CIDRPool /31 (peer as gateway, and both addresses without one), IPv6 /120, dual stack",
          "[kube][integration][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    create_nv_pool(server, "cidrpools", "p2p",
                   {{"cidr", "172.20.0.0/24"}, {"perNodeNetworkPrefix", 31}, {"gatewayIndex", 0}});
    create_nv_pool(server, "cidrpools", "p2p-nogw", {{"cidr", "172.21.0.0/24"}, {"perNodeNetworkPrefix", 31}});
    create_nv_pool(server, "cidrpools", "v6",
                   {{"cidr", "fd00:10::/112"}, {"perNodeNetworkPrefix", 120}, {"gatewayIndex", 1}});
    create_nv_pool(server, "cidrpools", "v4",
                   {{"cidr", "10.30.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}});

    auto p = call_on(env, "node-a", "ADD", nv_conf(env, "p2p", "cidrpool"), "p1");
    INFO(p.describe());
    REQUIRE(p.exit_code == 0);
    CHECK(p.json["ips"][0]["address"] == "172.20.0.1/31");
    CHECK(p.json["ips"][0]["gateway"] == "172.20.0.0");
    auto full = call_on(env, "node-a", "ADD", nv_conf(env, "p2p", "cidrpool"), "p2");
    CHECK(full.code() == 110);

    const json nogw = nv_conf(env, "p2p-nogw", "cidrpool");
    auto n1 = call_on(env, "node-a", "ADD", nogw, "n1");
    auto n2 = call_on(env, "node-a", "ADD", nogw, "n2");
    REQUIRE(n1.exit_code == 0);
    REQUIRE(n2.exit_code == 0);
    CHECK(n1.json["ips"][0]["address"] == "172.21.0.0/31");
    CHECK(n2.json["ips"][0]["address"] == "172.21.0.1/31");
    CHECK_FALSE(n1.json["ips"][0].contains("gateway"));

    auto v6 = call_on(env, "node-a", "ADD", nv_conf(env, "v6", "cidrpool"), "v6a");
    INFO(v6.describe());
    REQUIRE(v6.exit_code == 0);
    CHECK(v6.json["ips"][0]["address"] == "fd00:10::2/120");
    CHECK(v6.json["ips"][0]["gateway"] == "fd00:10::1");

    auto ds = call_on(env, "node-b", "ADD", nv_conf(env, "v4,v6", "cidrpool"), "ds1");
    INFO(ds.describe());
    REQUIRE(ds.exit_code == 0);
    REQUIRE(ds.json["ips"].size() == 2);
    CHECK(ds.json["ips"][0]["address"] == "10.30.0.2/24");
    CHECK(ds.json["ips"][1]["address"] == "fd00:10::102/120");  // node-b: the second /120
    REQUIRE(call_on(env, "node-b", "DEL", nv_conf(env, "v4,v6", "cidrpool"), "ds1").exit_code == 0);
    auto again = call_on(env, "node-b", "ADD", nv_conf(env, "v4,v6", "cidrpool"), "ds2");
    REQUIRE(again.exit_code == 0);
    CHECK(again.json["ips"][0]["address"] == "10.30.0.2/24");  // released by the DEL
}

TEST_CASE("nv-ipam: exclusions and perNodeExclusions are never handed out, a full block is a clear error",
          "[kube][integration][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    create_nv_pool(server, "cidrpools", "small",
                   {{"cidr", "10.40.0.0/24"},
                    {"perNodeNetworkPrefix", 28},
                    {"gatewayIndex", 1},
                    {"perNodeExclusions", {{{"startIndex", 2}, {"endIndex", 3}}}},
                    {"exclusions", {{{"startIP", "10.40.0.8"}, {"endIP", "10.40.0.9"}}}}});
    const json conf = nv_conf(env, "small", "cidrpool");
    std::vector<std::string> got;
    for (int i = 0;; ++i) {
        auto r = call_on(env, "node-a", "ADD", conf, "c" + std::to_string(i));
        if (r.exit_code != 0) {
            INFO(r.describe());
            CHECK(r.code() == 110);
            CHECK_THAT(r.msg(), Catch::Contains("10.40.0.0/28"));
            break;
        }
        got.push_back(first_ip(r));
        REQUIRE(i < 16);
    }
    CHECK(got == std::vector<std::string>{"10.40.0.4", "10.40.0.5", "10.40.0.6", "10.40.0.7", "10.40.0.10",
                                          "10.40.0.11", "10.40.0.12", "10.40.0.13", "10.40.0.14"});
}

TEST_CASE("nv-ipam: an API outage does not stop a node that knows its block", "[kube][integration][nvipam][inrepo]") {
    TestApiServer server;
    Env env(server);
    create_nv_pool(server, "cidrpools", "rail2",
                   {{"cidr", "10.50.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}});
    const json conf = nv_conf(env, "rail2", "cidrpool");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    server.set_outage(TestApiServer::Outage::drop);
    auto a2 = call_on(env, "node-a", "ADD", conf, "a2");
    INFO(a2.describe());
    REQUIRE(a2.exit_code == 0);
    CHECK(first_ip(a2) == "10.50.0.3");
    // Even a copy past its re-read age is served when the API server does not answer.
    const std::string block_file = env.data_dir + "/node-a/nvipam/blocks/cidrpool.kube-system.rail2.json";
    json cached = json::parse(std::ifstream(block_file));
    cached["read_at"] = 0;
    std::ofstream(block_file) << cached.dump();
    auto a3 = call_on(env, "node-a", "ADD", conf, "a3");
    INFO(a3.describe());
    REQUIRE(a3.exit_code == 0);
    CHECK(first_ip(a3) == "10.50.0.4");
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a2").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a2").exit_code == 0);
    // A node that never knew its block cannot answer without the API server.
    auto b = call_on(env, "node-b", "ADD", conf, "b1", std::chrono::seconds(60));
    CHECK(b.exit_code != 0);
    CHECK((b.code() == 11 || b.code() == 5));
    server.set_outage(TestApiServer::Outage::off);
}

TEST_CASE("nv-ipam claim without a controller: 16 nodes racing, static allocations and nodeSelector honoured",
          "[kube][integration][nvipam]") {
    // The in-repo server's latency widens the race windows; a real server has its own (and
    // ServerUnderTest does not pass in-repo switches to it).
    ServerUnderTest server({.extra_args = {"--latency-ms", "2"}});
    Env env(server);
    constexpr int kNodes = 16;
    for (int n = 0; n < kNodes; ++n) create_node(server, "node-" + std::to_string(n), {{"rail", "1"}});
    create_node(server, "other", {{"rail", "2"}});
    create_nv_pool(server, "cidrpools", "race",
                   {{"cidr", "10.60.0.0/16"},
                    {"perNodeNetworkPrefix", 24},
                    {"gatewayIndex", 1},
                    {"staticAllocations",
                     {{{"nodeName", "node-7"}, {"prefix", "10.60.200.0/24"}, {"gateway", "10.60.200.254"}},
                      {{"prefix", "10.60.3.0/24"}}}},
                    {"nodeSelector",
                     {{"nodeSelectorTerms",
                       {{{"matchExpressions", {{{"key", "rail"}, {"operator", "In"}, {"values", {"1"}}}}}}}}}}});
    const json conf = nv_conf(env, "race", "cidrpool");
    auto [ip_of, failures] = in_parallel(kNodes, 1, [&](int n, int) {
        const std::string node = "node-" + std::to_string(n);
        return std::pair{node, call_on(env, node, "ADD", conf, "c" + std::to_string(n))};
    });
    for (const auto& f : failures) UNSCOPED_INFO(f);
    REQUIRE(failures.empty());
    const json status = pool_status(server, "cidrpools", "race");
    REQUIRE(status.size() == kNodes);
    std::set<std::string> prefixes, nodes;
    for (const auto& e : status) {
        prefixes.insert(e["prefix"].get<std::string>());
        nodes.insert(e["nodeName"].get<std::string>());
    }
    CHECK(prefixes.size() == kNodes);             // distinct subnets
    CHECK(nodes.size() == kNodes);                // one entry per node
    CHECK_FALSE(prefixes.count("10.60.3.0/24"));  // held back
    CHECK(ip_of["node-7"] == "10.60.200.1");      // pinned; .254 is its gateway
    for (const auto& [node, ip] : ip_of) {
        const std::string prefix = ip.substr(0, ip.rfind('.')) + ".0/24";
        CHECK(prefixes.count(prefix));
    }
    // Order: without node-7 and the held-back .3, the 15 others took .0-.2 and .4-.15.
    CHECK(prefixes.count("10.60.15.0/24"));
    CHECK_FALSE(prefixes.count("10.60.16.0/24"));
    // A node the nodeSelector does not match is refused, nothing written.
    auto other = call_on(env, "other", "ADD", conf, "o1");
    CHECK(other.code() == 7);
    CHECK_THAT(other.msg(), Catch::Contains("other") && Catch::Contains("nodeSelector"));
    CHECK(pool_status(server, "cidrpools", "race").size() == kNodes);
}

TEST_CASE("nv-ipam: nv-ipam's controller writing at the same time as claiming nodes: one owner per subnet",
          "[kube][integration][nvipam]") {
    // The in-repo server's latency widens the race windows; a real server has its own (and
    // ServerUnderTest does not pass in-repo switches to it).
    ServerUnderTest server({.extra_args = {"--latency-ms", "2"}});
    Env env(server);
    constexpr int kNodes = 12;
    create_nv_pool(server, "cidrpools", "both",
                   {{"cidr", "10.61.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}});
    const std::string path = kNvApi + "/cidrpools/both";
    // A stand-in for nv-ipam's controller: it reconciles the odd-numbered nodes, each a moment
    // before that node's ADD starts, keeping valid entries and writing the status with the
    // resourceVersion it read (409: read again). The even-numbered nodes always claim for
    // themselves, so both sides write for certain, interleaved, whatever the machine's load
    // (a controller reconciling every node as fast as it can wrote all of them first on a busy
    // machine, and the test then raced nothing).
    const auto start = std::chrono::steady_clock::now();
    const auto start_of = [&](int n) { return start + std::chrono::milliseconds(150 * n); };
    std::atomic<bool> stop{false};
    std::atomic<int> controller_writes{0};
    std::string last_refusal;
    std::thread controller([&] {
        for (int n = 1; n < kNodes && !stop; n += 2) {
            std::this_thread::sleep_until(start_of(n) - std::chrono::milliseconds(75));
            const std::string node = "node-" + std::to_string(n);
            for (int attempt = 0; attempt < 50; ++attempt) {
                auto r = server.request("GET", path);
                if (r.status != 200) {
                    last_refusal = "GET " + std::to_string(r.status);
                    continue;
                }
                json o = r.body;
                json allocs = o.contains("status") ? o["status"].value("allocations", json::array()) : json::array();
                std::set<std::string> have_node, have_prefix;
                for (const auto& e : allocs) {
                    have_node.insert(e["nodeName"].get<std::string>());
                    have_prefix.insert(e["prefix"].get<std::string>());
                }
                if (have_node.count(node)) break;  // the node claimed first
                int k = 0;
                while (have_prefix.count("10.61." + std::to_string(k) + ".0/24")) ++k;
                allocs.push_back({{"nodeName", node},
                                  {"prefix", "10.61." + std::to_string(k) + ".0/24"},
                                  {"gateway", "10.61." + std::to_string(k) + ".1"}});
                o["status"] = {{"allocations", allocs}};
                const auto w = server.request("PUT", path + "/status", o.dump());
                if (w.status == 200) {
                    ++controller_writes;
                    break;
                }
                last_refusal = std::to_string(w.status) + " " + w.text.substr(0, 300);
            }
        }
    });
    auto [ip_of, failures] = in_parallel(kNodes, 1, [&](int n, int) {
        // Staggered starts, so that the controller's and the nodes' writes interleave.
        std::this_thread::sleep_until(start_of(n));
        const std::string node = "node-" + std::to_string(n);
        return std::pair{node, call_on(env, node, "ADD", nv_conf(env, "both", "cidrpool"), "c" + std::to_string(n))};
    });
    controller.join();
    stop = true;
    for (const auto& f : failures) UNSCOPED_INFO(f);
    REQUIRE(failures.empty());
    const json status = pool_status(server, "cidrpools", "both");
    std::map<std::string, std::string> prefix_of;
    std::set<std::string> prefixes;
    for (const auto& e : status) {
        CHECK(prefix_of.emplace(e["nodeName"].get<std::string>(), e["prefix"].get<std::string>()).second);
        CHECK(prefixes.insert(e["prefix"].get<std::string>()).second);
    }
    CHECK(prefix_of.size() == kNodes);
    for (const auto& [node, ip] : ip_of) CHECK(prefix_of[node] == ip.substr(0, ip.rfind('.')) + ".0/24");
    INFO(last_refusal);
    CHECK(controller_writes > 0);  // both wrote: the controller some entries, the nodes others
    CHECK(controller_writes <= kNodes / 2);
}

TEST_CASE("nv-ipam bad input: unknown pool, refused spec, no free block, poolType typo",
          "[kube][integration][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    auto unknown = call_on(env, "node-a", "ADD", nv_conf(env, "nope", "cidrpool"), "u1");
    CHECK(unknown.code() == 5);
    CHECK_THAT(unknown.msg(), Catch::Contains("no CIDRPool nope in namespace kube-system"));
    auto unknown_ns = call_on(env, "node-a", "ADD",
                              nv_conf(env, "nope", "ippool", {{"poolNamespace", "nvidia-network-operator"}}), "u2");
    CHECK_THAT(unknown_ns.msg(), Catch::Contains("no IPPool nope in namespace nvidia-network-operator"));

    create_nv_pool(server, "cidrpools", "bad", {{"cidr", "10.70.0.0/16"}, {"perNodeNetworkPrefix", 8}});
    auto bad = call_on(env, "node-a", "ADD", nv_conf(env, "bad", "cidrpool"), "b1");
    CHECK(bad.code() == 7);
    CHECK_THAT(bad.msg(), Catch::Contains("CIDRPool kube-system/bad") && Catch::Contains("spec.perNodeNetworkPrefix"));

    // One block of 8 fits in a /28 (a second would end on the broadcast address).
    create_nv_pool(server, "ippools", "tiny", {{"subnet", "10.71.0.0/28"}, {"perNodeBlockSize", 8}},
                   {{{"nodeName", "node-x"}, {"startIP", "10.71.0.1"}, {"endIP", "10.71.0.8"}}});
    auto none = call_on(env, "node-a", "ADD", nv_conf(env, "tiny", "ippool"), "t1");
    INFO(none.describe());
    CHECK(none.code() == 5);
    CHECK_THAT(none.msg(), Catch::Contains("IPPool kube-system/tiny") && Catch::Contains("node-a") &&
                               Catch::Contains("no free block"));

    auto typo = call_on(env, "node-a", "ADD", nv_conf(env, "tiny", "cidrpol"), "t2");
    CHECK(typo.code() == 7);
    CHECK_THAT(typo.msg(), Catch::Contains("poolType") && Catch::Contains("cidrpol"));
    // Nothing half-done: no block files for the failures.
    CHECK_FALSE(std::filesystem::exists(env.data_dir + "/node-a/nvipam/blocks/ippool.kube-system.tiny.json"));
}
