// Kubernetes datastore under load and faults: 16 processes x 50 ADDs on one pool with 2 ms latency
// and injected 409/500/429/dropped connections; processes SIGKILLed at random points.
#include "test_kube_util.hpp"

#include <random>
#include <thread>

using namespace kube_test;

namespace {

constexpr std::uint32_t kBase = (10u << 24) | (50u << 16);  // 10.50.0.0/16

}  // namespace

TEST_CASE(
    "kube datastore: 16 processes x 50 ADDs with latency and injected faults -> unique, consistent, DELs empty both",
    "[kube][integration][concurrency]") {
    TestApiServer server({.extra_args = {"--seed", "4242"}});
    Env env(server);
    const json conf = env.conf("10.50.0.0/16");
    server.set_faults({{"latency_ms", 2},
                       {"conflict_rate", 0.03},
                       {"error_rate", 0.03},
                       {"throttle_rate", 0.01},
                       {"retry_after", 1},
                       {"drop_rate", 0.02},
                       {"drop_after_rate", 0.02}});
    constexpr int kWorkers = 16, kPer = 50;
    auto call = [&](const std::string& command) {
        return [&env, &conf, command](int w, int i) {
            const std::string id = "w" + std::to_string(w) + "-" + std::to_string(i);
            return std::pair{id, env.call(command, conf, id, "pod-" + id)};
        };
    };
    auto [ip_of, failures] = in_parallel(kWorkers, kPer, call("ADD"));  // container id -> ip
    const json stats = server.stats();
    INFO("server stats: " << stats.dump());
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
    // Faults were really injected.
    CHECK(stats["injected"].value("conflict", 0) > 0);
    CHECK(stats["injected"].value("error", 0) > 0);
    CHECK(stats["injected"].value("drop", 0) > 0);
    CHECK(stats["injected"].value("drop_after", 0) > 0);
    CHECK(stats["injected"].value("throttle", 0) > 0);

    std::set<std::string> unique;
    for (const auto& [id, ip] : ip_of) unique.insert(ip);
    CHECK(unique.size() == ip_of.size());
    CHECK(ip_of.size() == kWorkers * kPer);

    server.set_faults({{"latency_ms", 0},
                       {"conflict_rate", 0},
                       {"error_rate", 0},
                       {"throttle_rate", 0},
                       {"drop_rate", 0},
                       {"drop_after_rate", 0}});
    json allocs = allocations(server, "10.50.0.0-16");
    CHECK(allocs.size() == ip_of.size());
    for (const auto& [offset, owner] : allocs.items()) {
        const std::string id = owner["id"];
        REQUIRE(ip_of.count(id));
        const std::uint32_t v = kBase + static_cast<std::uint32_t>(std::stoul(offset));
        CHECK(ip_of[id] == "10.50." + std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255));
    }
    auto problems = consistency_problems(server, "10.50.0.0-16", kBase);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());

    // All DELs, again under faults, leave both empty.
    server.set_faults({{"latency_ms", 2},
                       {"conflict_rate", 0.03},
                       {"error_rate", 0.03},
                       {"throttle_rate", 0.01},
                       {"drop_rate", 0.02},
                       {"drop_after_rate", 0.02}});
    const auto dels = in_parallel(kWorkers, kPer, call("DEL"));
    for (const auto& f : dels.failures) UNSCOPED_INFO(f);
    CHECK(dels.failures.empty());
    server.set_faults({{"latency_ms", 0},
                       {"conflict_rate", 0},
                       {"error_rate", 0},
                       {"throttle_rate", 0},
                       {"drop_rate", 0},
                       {"drop_after_rate", 0}});
    CHECK(allocations(server, "10.50.0.0-16").empty());
    CHECK(reservations(server).empty());
}

TEST_CASE("kube datastore: SIGKILL at random points of ADD and DEL, then DEL + reconcile -> consistent, nothing leaked",
          "[kube][integration][crash]") {
    TestApiServer server({.extra_args = {"--latency-ms", "3"}});
    Env env(server);
    const json conf = env.conf("10.51.0.0/24");
    std::mt19937 rng(12345);
    constexpr int kPods = 40;
    std::vector<std::string> ids;
    int killed = 0;
    for (int i = 0; i < kPods; ++i) {
        const std::string id = "k" + std::to_string(i);
        ids.push_back(id);
        // Between 0 and ~40 ms: covers start-up, TLS handshake, GET, PATCH and reservation create.
        const auto budget = std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 45)(rng));
        auto r = env.call("ADD", conf, id, "pod-" + id, "net1", budget);
        if (r.timed_out) ++killed;
        if (i % 3 == 0) {  // and kill some DELs of completed ADDs part-way
            auto d = env.call("DEL", conf, id, "pod-" + id, "net1",
                              std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 30)(rng)));
            if (d.timed_out) ++killed;
        }
    }
    INFO("killed " << killed << " of " << kPods + kPods / 3 + 1 << " processes");
    CHECK(killed > 5);  // the test did kill processes part-way

    // What a runtime does after a failed/killed ADD: DEL it. Then reconcile (no pod exists).
    for (const auto& id : ids) {
        auto d = env.call("DEL", conf, id, "pod-" + id);
        INFO(d.describe());
        REQUIRE(d.exit_code == 0);
    }
    auto r = env.ctl({"reconcile", "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(allocations(server, "10.51.0.0-24").empty());
    CHECK(reservations(server).empty());

    // Kills in the middle of ADDs for pods that exist, then reconcile only: live pods keep a
    // consistent entry after their (re-)ADD; nothing half-written survives.
    for (int i = 0; i < 10; ++i) {
        const std::string id = "live" + std::to_string(i);
        server.create_pod("ns", "pod-" + id);
        env.call("ADD", conf, id, "pod-" + id, "net1",
                 std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 45)(rng)));
        auto ok = env.call("ADD", conf, id, "pod-" + id);  // kubelet retries the ADD
        INFO(ok.describe());
        REQUIRE(ok.exit_code == 0);
    }
    REQUIRE(env.ctl({"reconcile", "--kubeconfig", env.kubeconfig}).exit_code == 0);
    CHECK(allocations(server, "10.51.0.0-24").size() == 10);
    auto problems = consistency_problems(server, "10.51.0.0-24", (10u << 24) | (51u << 16));
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
}
