// Kubernetes datastore and nv-ipam pools against a hostile or broken API server (the in-repo
// server's misbehaving modes, hence [inrepo]) and hostile credentials: every case ends in bounded
// time with a CNI error naming what to fix, never in bad_alloc, a masked refusal or a block
// another node holds.
#include "test_kube_util.hpp"

#include <filesystem>

#include "rdmanet/ipam/kube/kube_store.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/kube/slice_publisher.hpp"

using namespace kube_test;

namespace {

json nv_conf(const Env& env, const std::string& pool, const std::string& type) {
    const json ipam = {{"type", "rdmanet-ipam"},
                       {"poolName", pool},
                       {"poolType", type},
                       {"kubernetes", {{"kubeconfig", env.kubeconfig}}},
                       {"data_dir", env.data_dir}};
    return ipam_plugin_test::net_conf("railnet", ipam);
}

std::uint64_t api_requests(const TestApiServer& s) { return s.stats()["requests"].get<std::uint64_t>(); }

}  // namespace

TEST_CASE("kube hostile: an endless answer ends in a bounded error, not bad_alloc",
          "[kube][integration][hostile][inrepo]") {
    TestApiServer server;
    Env env(server);
    server.set_outage(TestApiServer::Outage::endless);
    const auto start = std::chrono::steady_clock::now();
    auto r = call_on(env, "node-a", "ADD", env.conf("10.70.0.0/24"), "e1", std::chrono::seconds(60));
    const auto took = std::chrono::steady_clock::now() - start;
    server.set_outage(TestApiServer::Outage::off);
    INFO(r.describe());
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code != 0);
    CHECK(r.code() == 5);
    CHECK_THAT(r.msg(), Catch::Contains("larger than 4 MiB") && !Catch::Contains("bad_alloc"));
    CHECK(took < std::chrono::seconds(20));
    // The same for an nv-ipam pool read.
    server.set_outage(TestApiServer::Outage::endless);
    auto n = call_on(env, "node-a", "ADD", nv_conf(env, "rail", "cidrpool"), "e2", std::chrono::seconds(60));
    server.set_outage(TestApiServer::Outage::off);
    INFO(n.describe());
    CHECK(n.code() == 5);
    CHECK_THAT(n.msg(), Catch::Contains("larger than 4 MiB"));
}

TEST_CASE("kube hostile: refused credentials are never masked by the nv-ipam block cache",
          "[kube][integration][hostile][nvipam][inrepo]") {
    TestApiServer server;
    Env env(server);
    create_nv_pool(server, "cidrpools", "rail",
                   {{"cidr", "10.71.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}});
    const json conf = nv_conf(env, "rail", "cidrpool");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    // A stale copy: the next ADD re-reads the pool.
    const std::string block_file = env.data_dir + "/node-a/nvipam/blocks/cidrpool.kube-system.rail.json";
    auto make_stale = [&] {
        json cached = json::parse(std::ifstream(block_file));
        cached["read_at"] = 0;
        std::ofstream(block_file) << cached.dump();
    };
    for (auto mode : {TestApiServer::Outage::unauthorized, TestApiServer::Outage::forbidden}) {
        const bool unauthorized = mode == TestApiServer::Outage::unauthorized;
        make_stale();
        server.set_outage(mode);
        auto r = call_on(env, "node-a", "ADD", conf, unauthorized ? "a2" : "a3");
        server.set_outage(TestApiServer::Outage::off);
        INFO(r.describe());
        CHECK(r.exit_code != 0);
        CHECK(r.code() == 5);
        CHECK_THAT(r.msg(), Catch::Contains(unauthorized ? "401" : "403"));
    }
    // An outage (no answer) is still ridden out from the copy.
    make_stale();
    server.set_outage(TestApiServer::Outage::drop);
    auto o = call_on(env, "node-a", "ADD", conf, "a4");
    server.set_outage(TestApiServer::Outage::off);
    INFO(o.describe());
    CHECK(o.exit_code == 0);
}

TEST_CASE("kube hostile: a token that would inject a header is refused before any request",
          "[kube][integration][hostile][inrepo]") {
    TestApiServer server;
    Env env(server,
            apiserver_test::KubeconfigOptions{.token = server.token() + "\r\nX-Injected: 1", .token_file = true});
    const auto before = api_requests(server);
    auto r = call_on(env, "node-a", "ADD", env.conf("10.72.0.0/24"), "h1");
    INFO(r.describe());
    CHECK(r.exit_code != 0);
    CHECK(r.code() == 7);
    CHECK_THAT(r.msg(), Catch::Contains("tokenFile") && Catch::Contains("control character"));
    CHECK(r.out.find("X-Injected") == std::string::npos);
    CHECK(api_requests(server) == before);
}

TEST_CASE("kube hostile: nv-ipam pools with another node's block or no usable address are code 7",
          "[kube][integration][hostile][nvipam][inrepo]") {
    TestApiServer server;
    Env env(server);
    // node-a's block is node-b's too.
    create_nv_pool(server, "ippools", "shared", {{"subnet", "10.73.0.0/24"}, {"perNodeBlockSize", 10}},
                   {{{"nodeName", "node-a"}, {"startIP", "10.73.0.1"}, {"endIP", "10.73.0.10"}},
                    {{"nodeName", "node-b"}, {"startIP", "10.73.0.1"}, {"endIP", "10.73.0.10"}}});
    auto r = call_on(env, "node-a", "ADD", nv_conf(env, "shared", "ippool"), "o1");
    INFO(r.describe());
    CHECK(r.code() == 7);
    CHECK_THAT(r.msg(), Catch::Contains("IPPool kube-system/shared") && Catch::Contains("status.allocations") &&
                            Catch::Contains("node-b"));
    // A /0 pool would hand out 0.0.0.0/32.
    create_nv_pool(server, "cidrpools", "everything", {{"cidr", "0.0.0.0/0"}, {"perNodeNetworkPrefix", 32}});
    auto z = call_on(env, "node-a", "ADD", nv_conf(env, "everything", "cidrpool"), "z1");
    INFO(z.describe());
    CHECK(z.code() == 7);
    CHECK_THAT(z.msg(), Catch::Contains("CIDRPool kube-system/everything") && Catch::Contains("spec.cidr"));
    CHECK(z.exit_code != 0);
    CHECK(z.out.find("0.0.0.0/32") == std::string::npos);
}

// Single-pool (whereabouts) DEL while the API server refuses or answers garbage: DEL ends at once
// with success, the release is recorded for the node agent, which finishes it once the server
// answers; an ADD of the same attachment in between takes the entry over instead.
TEST_CASE("kube hostile: single-pool DEL never wedges on the API server, the agent finishes the release",
          "[kube][integration][hostile][inrepo]") {
    TestApiServer server;
    Env env(server);
    const json conf = env.conf("10.74.0.0/24");
    const std::string node_dir = env.data_dir + "/node-a";
    const std::string backlog = rdmanet::ipam::kube::deferred_releases_dir(node_dir);
    auto entries = [&] { return get(server, "/ippools/10.74.0.0-24")["spec"]["allocations"].size(); };
    auto markers = [&] {
        std::size_t n = 0;
        std::error_code ec;
        for (auto it = std::filesystem::directory_iterator(backlog, ec);
             !ec && it != std::filesystem::directory_iterator(); ++it)
            ++n;
        return n;
    };
    REQUIRE(call_on(env, "node-a", "ADD", conf, "d1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "ADD", conf, "d2").exit_code == 0);
    REQUIRE(entries() == 2);
    for (auto mode : {TestApiServer::Outage::unauthorized, TestApiServer::Outage::endless}) {
        server.set_outage(mode);
        const auto start = std::chrono::steady_clock::now();
        auto r = call_on(env, "node-a", "DEL", conf, "d1");
        const auto took = std::chrono::steady_clock::now() - start;
        server.set_outage(TestApiServer::Outage::off);
        INFO(r.describe());
        CHECK(r.exit_code == 0);
        CHECK(took < std::chrono::seconds(10));
    }
    CHECK(markers() == 1);  // one record per attachment, however often DEL ran
    CHECK(entries() == 2);  // nothing reached the server
    // An ADD of d2 then a refused DEL of d2, and a new ADD of d2 (same attachment) before the
    // agent ran: the ADD owns the entry again, the record is dropped.
    server.set_outage(TestApiServer::Outage::forbidden);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "d2").exit_code == 0);
    server.set_outage(TestApiServer::Outage::off);
    CHECK(markers() == 2);
    REQUIRE(call_on(env, "node-a", "ADD", conf, "d2").exit_code == 0);
    CHECK(markers() == 1);
    // The agent's pass, while the server still refuses: nothing finished, the record stays.
    const auto kc = rdmanet::ipam::kube::load_kubeconfig(env.kubeconfig, {}, {});
    server.set_outage(TestApiServer::Outage::unauthorized);
    auto refused = rdmanet::ipam::kube::finish_deferred_releases(kc, node_dir, std::chrono::seconds(5));
    server.set_outage(TestApiServer::Outage::off);
    CHECK(refused.published == 0);
    CHECK(refused.remaining == 1);
    CHECK(refused.access_denied == 401);
    // Once it answers, the pass finishes d1's release: d2 keeps its address.
    auto done = rdmanet::ipam::kube::finish_deferred_releases(kc, node_dir, std::chrono::seconds(10));
    CHECK(done.published == 1);
    CHECK(done.remaining == 0);
    CHECK(markers() == 0);
    const json allocations = get(server, "/ippools/10.74.0.0-24")["spec"]["allocations"];
    REQUIRE(allocations.size() == 1);
    CHECK(allocations.begin().value()["podref"] == "ns/pod-d2");
}
