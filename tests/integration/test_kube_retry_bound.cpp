// The retry bound of the Kubernetes datastore: against an API server that answers 500 to every
// request, one ADD sends at most kMaxAttempts requests per API call (not as many as fit into its
// 60 s budget), fails with a CNI error that names the server's error, and leaves nothing behind.
// Counted in requests, never timed. Twice: the in-repo server answering 500 through its fault
// switch (error_rate 1, hence [inrepo]), and a fault proxy (tests/apiserver/fault_proxy.hpp) in
// front of the server under test - a real kube-apiserver in the `kubereal` run, which cannot be
// made to answer 500 itself.
#include "test_kube_util.hpp"

#include <filesystem>

#include "fault_proxy.hpp"

#include "rdmanet/ipam/kube/retry.hpp"

using namespace kube_test;

namespace {

std::uint64_t api_requests(const TestApiServer& s) { return s.stats()["requests"].get<std::uint64_t>(); }

constexpr int kAttempts = rdmanet::ipam::kube::RetryPolicy{}.max_attempts;

// The files of a node's IPAM data directory that record something (a journal entry, a held slice,
// a backlog record), without its lock files and the node's slice database (made on first use,
// whether anything is allocated or not): an ADD that failed must leave none.
std::vector<std::string> records_under(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) return out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (!e.is_regular_file(ec) || name.ends_with(".lock") || name.starts_with("ipam.db")) continue;
        out.push_back(e.path().string());
    }
    return out;
}

// What one ADD against a server failing everything must show: at most kAttempts requests (exactly
// that many when nothing but the attempts bounds it), a CNI error with code 11 naming the server's
// answer, nothing written.
void check_failed_add(const ApiServer& server, const Env& env, const CniOutcome& r, std::uint64_t sent,
                      bool single_pool, const std::string& server_said) {
    INFO(r.describe());
    INFO("requests sent by one ADD: " << sent);
    // The first API call of the ADD gives up after kAttempts requests and the ADD ends there: what
    // was sent is one call's attempts (docs/security.md states the figure). In node-slice mode the
    // claim of a slice has a budget of its own (8 s), which may end the attempts a little earlier.
    CHECK(sent <= static_cast<std::uint64_t>(kAttempts));
    CHECK(sent >= 2);
    if (single_pool) CHECK(sent == static_cast<std::uint64_t>(kAttempts));
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code != 0);
    REQUIRE(r.stdout_is_json());
    CHECK(r.code() == 11);  // try again later
    CHECK_THAT(r.msg(), Catch::Contains("HTTP 500") && Catch::Contains(server_said) && Catch::Contains("attempts"));
    if (single_pool) CHECK_THAT(r.msg(), Catch::Contains("after " + std::to_string(kAttempts) + " attempts"));

    // Nothing was written: no pool, no reservation, no slice claimed, nothing recorded on the node.
    CHECK(server.list(kNs, "ippools").empty());
    CHECK(server.list(kNs, "overlappingrangeipreservations").empty());
    CHECK(server.list(kNs, "nodeslicepools").empty());
    const auto left = records_under(env.data_dir + "/node-a");
    for (const auto& f : left) UNSCOPED_INFO("left on the node: " << f);
    CHECK(left.empty());
}

}  // namespace

TEST_CASE("kube retry bound: an API server answering 500 to everything gets a bounded number of requests per ADD",
          "[kube][integration][hostile][retry][inrepo]") {
    STATIC_REQUIRE(kAttempts == 10);
    TestApiServer server;
    Env env(server);
    json conf;
    SECTION("single pool") { conf = env.conf("10.96.0.0/24"); }
    SECTION("node slices") { conf = env.conf("10.96.1.0/24", {{"node_slice_size", "/26"}, {"network_name", "rb"}}); }

    server.set_faults({{"error_rate", 1.0}});
    const auto before = api_requests(server);
    const auto r = call_on(env, "node-a", "ADD", conf, "b1");
    const auto sent = api_requests(server) - before;
    server.set_faults({{"error_rate", 0.0}});
    check_failed_add(server, env, r, sent, !conf["ipam"].contains("node_slice_size"),
                     "Internal error occurred: injected");

    // The same server, healthy again, serves the next ADD of that pod with the first address.
    const auto ok = call_on(env, "node-a", "ADD", conf, "b1");
    INFO(ok.describe());
    CHECK(ok.exit_code == 0);
    CHECK(ipam_plugin_test::first_ip(ok) == (conf["ipam"].contains("node_slice_size") ? "10.96.1.1" : "10.96.0.1"));
}

TEST_CASE("kube retry bound: behind a proxy answering 500 to everything, one ADD sends a bounded number of requests",
          "[kube][integration][hostile][retry]") {
    ServerUnderTest server;
    apiserver_test::FaultProxy proxy(server);
    Env env(server);
    env.kubeconfig = proxy.write_kubeconfig("kubeconfig-proxied");
    INFO("behind the proxy: the " << server.name());
    json conf;
    SECTION("single pool") { conf = env.conf("10.97.0.0/24"); }
    SECTION("node slices") { conf = env.conf("10.97.1.0/24", {{"node_slice_size", "/26"}, {"network_name", "rp"}}); }

    proxy.fail_all(500);
    const auto before = proxy.requests();
    const auto r = call_on(env, "node-a", "ADD", conf, "p1");
    const auto sent = proxy.requests() - before;
    proxy.fail_all(0);
    check_failed_add(server, env, r, sent, !conf["ipam"].contains("node_slice_size"), "injected by the fault proxy");

    // Forwarding again: the same ADD goes through the proxy to the server.
    const auto ok = call_on(env, "node-a", "ADD", conf, "p1");
    INFO(ok.describe());
    CHECK(ok.exit_code == 0);
    CHECK(ipam_plugin_test::first_ip(ok) == (conf["ipam"].contains("node_slice_size") ? "10.97.1.1" : "10.97.0.1"));
    CHECK(proxy.requests() > before + sent);
}
