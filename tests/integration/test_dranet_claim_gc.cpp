// The node agent's claim GC for the DRANET provider (cni/node/dranet/claim_gc.hpp): a real provider
// process on the local datastore, ResourceClaims on the test API server (or a real kube-apiserver,
// as every [kube] suite), the agent as a real process and the GC round called directly (the
// faults that need the in-repo server carry [inrepo]). What is checked each time: which claims'
// addresses are free in the provider's store, what claims.json still records, and the metrics.
#include <chrono>
#include <regex>
#include <thread>

#include "dranet_client.hpp"
#include "rdmanet/cni/node/agent_metrics.hpp"
#include "rdmanet/cni/node/dranet/claim_gc.hpp"
#include "rdmanet/ipam/kube/kubeconfig.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "support/process.hpp"
#include "support/prometheus_parse.hpp"
#include "support/skip.hpp"
#include "test_kube_util.hpp"

using namespace kube_test;
using dranet_test::Device;
using dranet_test::ProviderProcess;
namespace dranet = rdmanet::cni::node::dranet;

namespace {

const std::string kClaimNs = "dra-gc";

// ResourceClaims in resource.k8s.io/v1 (GA in Kubernetes 1.34): always on the in-repo server; a
// real kube-apiserver older than that skips the case, saying so.
void require_resource_claims(const ServerUnderTest& server) {
    const int status = server.request("GET", "/apis/resource.k8s.io/v1").status;
    if (server.is_real() && status != 200)
        rdmanet::test::skip_test("the real kube-apiserver does not serve resource.k8s.io/v1 (needs >= 1.34)");
    REQUIRE(status == 200);
}

// The provider with a local-store profile "rail" (policyRouting: a table per address).
void start_provider(ProviderProcess& p, const std::string& range) {
    p.write_profile("rail", {{"ipam", {{"range", range}, {"data_dir", p.data_dir()}}}, {"policyRouting", true}});
    p.start();
}

void get_config(const ProviderProcess& p, const std::string& claim, const std::string& device) {
    const auto r = dranet_test::http(p.socket(), "POST", "/GetProfileConfig",
                                     dranet_test::profile_request(Device{device, "", ""}, claim, "rail"));
    INFO(r.body << p.log());
    REQUIRE(r.status == 200);
}

// Allocations in the provider's local store, every pool.
std::size_t allocations(const ProviderProcess& p) {
    rdmanet::ipam::SqliteStore store(p.data_dir());
    std::size_t n = 0;
    for (const auto& key : store.pools()) n += store.dump(key).allocations.size();
    return n;
}

// The claim UIDs claims.json records.
std::set<std::string> recorded(const ProviderProcess& p) {
    std::set<std::string> out;
    if (const auto records = dranet::read_claim_records(p.state_dir()))
        for (const auto& [key, r] : *records) out.insert(key.claim_uid);
    return out;
}

dranet::ClaimGcReport gc_round(const Env& env, const ProviderProcess& p) {
    dranet::ClaimGcOptions o;
    o.state_dir = p.state_dir();
    o.socket_path = p.socket();
    o.api_budget = std::chrono::seconds(3);  // a failing list is retried this long
    o.release_timeout = std::chrono::seconds(10);
    return dranet::collect_claims(rdmanet::ipam::kube::load_kubeconfig(env.kubeconfig), o);
}

// The metrics the agent would serve after `report`.
rdmanet::test::PromExposition metrics_after(const dranet::ClaimGcReport& report) {
    rdmanet::cni::node::AgentMetrics m;
    m.record_claim_gc(report);
    return rdmanet::test::parse_prometheus_text(m.render({}));
}

std::vector<std::string> agent_args(const ApiServer& server, const Env& env, const ProviderProcess& p,
                                    const std::string& kubeconfig) {
    (void)env;
    return {rdmanet::test::bin_dir() + "/rdmanetctl",
            "agent",
            "--passes",
            "1",
            "--kubeconfig",
            kubeconfig,
            "--node-name",
            "node-1",
            "--ipam-data-dir",
            server.dir() + "/agent-ipam",
            "--dranet-state-dir",
            p.state_dir(),
            "--dranet-socket",
            p.socket()};
}

// The agent's own attachment states in the test's directory, not the node's.
std::map<std::string, std::string> agent_env(const ApiServer& server) {
    const std::string policy = server.dir() + "/agent-policy.json";
    std::ofstream(policy)
        << json{{"version", 1}, {"logDir", server.dir()}, {"stateDir", server.dir() + "/state"}}.dump();
    return {{"RDMANET_POLICY_FILE", policy}};
}

}  // namespace

TEST_CASE("dranet claim GC: the agent keeps live claims and releases a deleted claim's addresses through the provider",
          "[kube][integration][dranet][claimgc]") {
    ServerUnderTest server;
    require_resource_claims(server);
    Env env(server);
    ProviderProcess p("gc");
    start_provider(p, "10.91.0.0/24");
    const std::string live = server.create_resource_claim(kClaimNs, "live");
    const std::string gone = server.create_resource_claim(kClaimNs, "gone");
    REQUIRE(!live.empty());
    REQUIRE(live != gone);
    get_config(p, live, "eth1");
    get_config(p, gone, "eth1");
    get_config(p, gone, "eth2");
    REQUIRE(allocations(p) == 3);

    // Both claims exist: nothing is released.
    auto first = rdmanet::test::run_process(agent_args(server, env, p, env.kubeconfig), agent_env(server));
    INFO(first.out << first.err << p.log());
    REQUIRE(first.exit_code == 0);
    CHECK_THAT(first.out, !Catch::Contains("released DRANET claim"));
    CHECK_THAT(first.err, !Catch::Contains("claim GC skipped"));
    CHECK(allocations(p) == 3);
    CHECK(recorded(p) == std::set<std::string>{live, gone});

    REQUIRE(server.delete_resource_claim(kClaimNs, "gone") == 200);
    auto second = rdmanet::test::run_process(agent_args(server, env, p, env.kubeconfig), agent_env(server));
    INFO(second.out << second.err << p.log());
    REQUIRE(second.exit_code == 0);
    CHECK_THAT(second.out, Catch::Contains("released DRANET claim " + gone + " device eth1"));
    CHECK_THAT(second.out, Catch::Contains("released DRANET claim " + gone + " device eth2"));
    CHECK_THAT(second.out, !Catch::Contains(live));
    CHECK(allocations(p) == 1);  // the live claim's address only
    CHECK(recorded(p) == std::set<std::string>{live});
    // The provider did the release (one writer of claims.json).
    CHECK_THAT(p.log(), Catch::Contains("released claim " + gone + " device eth2"));

    // A round with nothing gone releases nothing more; the metrics of a direct round.
    const auto again = gc_round(env, p);
    INFO(again.error);
    CHECK(again.skipped == dranet::GcSkip::none);
    CHECK(again.version == "v1");
    CHECK(again.released.empty());
    CHECK(again.held == 1);
    const auto m = metrics_after(again);
    CHECK(m.value("rdmanet_dranet_claims_held") == 1.0);
    CHECK(m.value("rdmanet_dranet_claims_released_total") == 0.0);
    CHECK(m.value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "list"}}) == 0.0);
    CHECK(allocations(p) == 1);
}

TEST_CASE("dranet claim GC: a refused credential (403) releases nothing, is logged as an error and counted",
          "[kube][integration][dranet][claimgc]") {
    ServerUnderTest server;
    require_resource_claims(server);
    Env env(server);
    ProviderProcess p("gc403");
    start_provider(p, "10.92.0.0/24");
    const std::string uid = server.create_resource_claim(kClaimNs, "c1");
    get_config(p, uid, "eth1");
    get_config(p, "11111111-2222-4333-8444-555555555555", "eth1");  // no such claim in the API
    REQUIRE(allocations(p) == 2);

    const std::string forbidden = server.write_kubeconfig("forbidden", {.token = server.forbidden_token()});
    auto r = rdmanet::test::run_process(agent_args(server, env, p, forbidden), agent_env(server));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("agent: error: DRANET claim GC skipped, the API server refused"));
    CHECK_THAT(r.err + r.out, !Catch::Contains(server.forbidden_token()));
    CHECK(allocations(p) == 2);
    CHECK(recorded(p).size() == 2);

    const Env denied(server, {.token = server.forbidden_token()}, "forbidden-direct");
    const auto report = gc_round(denied, p);
    CHECK(report.skipped == dranet::GcSkip::credentials);
    CHECK(report.released.empty());
    const auto m = metrics_after(report);
    CHECK(m.value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "credentials"}}) == 1.0);
    CHECK(m.value("rdmanet_dranet_claims_held") == 2.0);
    CHECK(allocations(p) == 2);
}

TEST_CASE("dranet claim GC: a failing list (5xx) or resource.k8s.io not served releases nothing, counted by reason",
          "[kube][integration][dranet][claimgc][inrepo]") {
    TestApiServer server;
    Env env(server);
    ProviderProcess p("gcfail");
    start_provider(p, "10.93.0.0/24");
    // Recorded by the provider, absent from the API: released as soon as a list succeeds.
    const std::string orphan = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
    get_config(p, orphan, "eth1");
    REQUIRE(allocations(p) == 1);

    SECTION("list 503") {
        server.set_faults({{"fail_resource", "resourceclaims"}, {"fail_status", 503}});
        const auto r = gc_round(env, p);
        INFO(r.error);
        CHECK(r.skipped == dranet::GcSkip::list);
        CHECK(metrics_after(r).value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "list"}}) == 1.0);
        CHECK(server.stats()["injected"].value("fail_resource", 0) >= 1);
    }
    SECTION("list 500") {
        server.set_faults({{"fail_resource", "resourceclaims"}, {"fail_status", 500}});
        const auto r = gc_round(env, p);
        CHECK(r.skipped == dranet::GcSkip::list);
    }
    SECTION("discovery 404") {
        server.set_faults({{"unserved_group", "resource.k8s.io"}});
        REQUIRE(server.request("GET", "/apis/resource.k8s.io").status == 404);
        const auto r = gc_round(env, p);
        INFO(r.error);
        CHECK(r.skipped == dranet::GcSkip::discovery);
        CHECK(metrics_after(r).value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "discovery"}}) == 1.0);
    }
    SECTION("the API server unreachable") {
        server.set_outage(TestApiServer::Outage::drop);
        const auto r = gc_round(env, p);
        CHECK(r.skipped == dranet::GcSkip::discovery);
        server.set_outage(TestApiServer::Outage::off);
    }
    SECTION("401") {
        server.set_outage(TestApiServer::Outage::unauthorized);
        const auto r = gc_round(env, p);
        CHECK(r.skipped == dranet::GcSkip::credentials);
        server.set_outage(TestApiServer::Outage::off);
    }
    CHECK(allocations(p) == 1);
    CHECK(recorded(p) == std::set<std::string>{orphan});

    // Served again: the next round releases the orphan.
    server.set_faults({{"fail_resource", ""}, {"unserved_group", ""}});
    const auto r = gc_round(env, p);
    INFO(r.error << p.log());
    CHECK(r.skipped == dranet::GcSkip::none);
    REQUIRE(r.released.size() == 1);
    CHECK(r.released[0].claim_uid == orphan);
    CHECK(allocations(p) == 0);
    CHECK(recorded(p).empty());
    CHECK(metrics_after(r).value("rdmanet_dranet_claims_released_total") == 1.0);
}

TEST_CASE("dranet claim GC: a claim recorded while a round runs is not released by that round",
          "[kube][integration][dranet][claimgc][inrepo]") {
    TestApiServer server;
    Env env(server);
    ProviderProcess p("gcrace");
    start_provider(p, "10.96.0.0/24");
    const std::string live = server.create_resource_claim(kClaimNs, "live");
    get_config(p, live, "eth1");
    // Every API request takes 1 s: the round reads the records, then discovers and lists. A claim
    // the provider records meanwhile is missing from that list (here: never created in the API at
    // all, the harshest case) and must still not be released: only records read before the list
    // was asked for are compared with it.
    server.set_faults({{"latency_ms", 1000}});
    dranet::ClaimGcReport report;
    std::thread round([&] { report = gc_round(env, p); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string newcomer = "77777777-8888-4999-8aaa-bbbbbbbbbbbb";
    get_config(p, newcomer, "eth1");
    round.join();
    INFO(report.error);
    CHECK(report.skipped == dranet::GcSkip::none);
    CHECK(report.released.empty());
    CHECK(recorded(p) == std::set<std::string>{live, newcomer});
    CHECK(allocations(p) == 2);
    // The next round reads it and, its claim not existing, releases it.
    server.set_faults({{"latency_ms", 0}});
    const auto next = gc_round(env, p);
    REQUIRE(next.released.size() == 1);
    CHECK(next.released[0].claim_uid == newcomer);
    CHECK(recorded(p) == std::set<std::string>{live});
}

TEST_CASE("dranet claim GC: the provider down skips the round, a later round releases",
          "[kube][integration][dranet][claimgc]") {
    ServerUnderTest server;
    require_resource_claims(server);
    Env env(server);
    ProviderProcess p("gcdown");
    start_provider(p, "10.94.0.0/24");
    const std::string orphan = "12345678-9abc-4def-8123-456789abcdef";
    get_config(p, orphan, "eth1");
    REQUIRE(p.stop() == 0);

    const auto down = gc_round(env, p);
    INFO(down.error);
    CHECK(down.skipped == dranet::GcSkip::provider);
    CHECK(down.released.empty());
    CHECK(metrics_after(down).value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "provider"}}) == 1.0);
    CHECK(allocations(p) == 1);
    CHECK(recorded(p) == std::set<std::string>{orphan});

    p.start();
    const auto up = gc_round(env, p);
    INFO(up.error << p.log());
    CHECK(up.skipped == dranet::GcSkip::none);
    CHECK(up.released.size() == 1);
    CHECK(allocations(p) == 0);
    CHECK(recorded(p).empty());
}

TEST_CASE("dranet claim GC: the agent's metrics endpoint counts released claims and held ones",
          "[kube][integration][dranet][claimgc]") {
    ServerUnderTest server;
    require_resource_claims(server);
    Env env(server);
    ProviderProcess p("gcmetrics");
    start_provider(p, "10.95.0.0/24");
    const std::string live = server.create_resource_claim(kClaimNs, "kept");
    get_config(p, live, "eth1");
    get_config(p, "0f0f0f0f-1111-4222-8333-444444444444", "eth1");  // not in the API

    // The agent serves metrics after its one pass until SIGTERM; env(1) hands it the policy.
    std::vector<std::string> argv{"/usr/bin/env", "RDMANET_POLICY_FILE=" + agent_env(server).at("RDMANET_POLICY_FILE")};
    for (const auto& a : agent_args(server, env, p, env.kubeconfig)) argv.push_back(a);
    argv.insert(argv.end(), {"--metrics-address", "127.0.0.1:0"});
    const std::string log = server.dir() + "/agent.log";
    const pid_t agent = apiserver_test::spawn_logged(argv, log);
    struct Stop {
        pid_t pid;
        ~Stop() { apiserver_test::stop_process(pid); }
    } stop{agent};

    int port = 0;
    std::optional<rdmanet::test::PromExposition> m;
    for (int i = 0; i < 300 && !m; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::smatch match;
        const std::string text = apiserver_test::read_text(log);
        static const std::regex re("metrics on 127\\.0\\.0\\.1:([0-9]+)");
        if (!port && std::regex_search(text, match, re)) port = std::stoi(match[1]);
        if (!port) continue;
        const auto r = rdmanet::test::http_get_local(port, "/metrics");
        if (r.status != 200) continue;
        auto parsed = rdmanet::test::parse_prometheus_text(r.body);
        if (parsed.value("rdmanet_agent_passes_total") == 1.0) m = parsed;
    }
    INFO(apiserver_test::read_text(log));
    REQUIRE(m);
    CHECK(m->value("rdmanet_dranet_claims_released_total") == 1.0);
    CHECK(m->value("rdmanet_dranet_claims_held") == 1.0);
    CHECK(m->value("rdmanet_dranet_claim_gc_rounds_total") == 1.0);
    for (const char* reason : {"discovery", "list", "credentials", "provider"})
        CHECK(m->value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", reason}}) == 0.0);
    CHECK(allocations(p) == 1);
    CHECK(recorded(p) == std::set<std::string>{live});
}
