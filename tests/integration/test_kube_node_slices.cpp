// Node slices (node_slice_size) through bin/rdmanet-ipam against the test API server: each
// simulated node is a process with its own $NODENAME. Wire format, fill and exhaustion, the claim
// race, bad input.
#include "test_kube_util.hpp"
#include "rdmanet/ipam/kube/slice_store.hpp"
#include "rdmanet/ipam/local/sqlite_store.hpp"
#include "rdmanet/ipam/core/u128.hpp"

#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

using namespace kube_test;
using ipam_plugin_test::first_ip;

namespace {

// nodeName -> sliceRange of every listed entry with a node.
std::multimap<std::string, std::string> holders(const ApiServer& s, const std::string& pool) {
    std::multimap<std::string, std::string> out;
    const json nsp = get(s, "/nodeslicepools/" + pool);
    for (const auto& e : nsp["status"]["allocations"]) {
        if (e["nodeName"] != "") out.emplace(e["nodeName"], e["sliceRange"]);
    }
    return out;
}

}  // namespace

TEST_CASE("node slices: ADD claims a slice per node and allocates from it, in whereabouts v0.9's shape",
          "[kube][integration][slices]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.70.0.0/16", {{"node_slice_size", "/25"}, {"network_name", "blue"}});

    auto a = call_on(env, "node-a", "ADD", conf, "a1");
    INFO(a.describe());
    REQUIRE(a.exit_code == 0);
    CHECK(first_ip(a) == "10.70.0.1");
    CHECK(a.json["ips"][0]["address"] == "10.70.0.1/16");  // the network's prefix, not the slice's
    auto b = call_on(env, "node-b", "ADD", conf, "b1");
    REQUIRE(b.exit_code == 0);
    CHECK(first_ip(b) == "10.70.0.129");
    auto a2 = call_on(env, "node-a", "ADD", conf, "a2");
    REQUIRE(a2.exit_code == 0);
    CHECK(first_ip(a2) == "10.70.0.2");

    const json nsp = get(server, "/nodeslicepools/blue");
    CHECK(nsp["spec"] == json({{"range", "10.70.0.0/16"}, {"sliceSize", "/25"}}));
    CHECK(nsp["status"]["allocations"] == json::parse(R"([{"nodeName":"node-a","sliceRange":"10.70.0.0/25"},
                                                          {"nodeName":"node-b","sliceRange":"10.70.0.128/25"}])"));
    const json pa = get(server, "/ippools/blue-node-a-10.70.0.0-25");
    CHECK(pa["spec"]["range"] == "10.70.0.0/25");
    CHECK(pa["spec"]["allocations"] == json::parse(R"({"1":{"id":"a1","podref":"ns/pod-a1","ifname":"net1"},
                                                       "2":{"id":"a2","podref":"ns/pod-a2","ifname":"net1"}})"));
    CHECK(get(server, "/ippools/blue-node-b-10.70.0.128-25")["spec"]["allocations"].size() == 1);
    // No whole-range IPPool and no reservations: slices are disjoint by construction.
    CHECK(server.request("GET", kApi + "/ippools/blue-10.70.0.0-16").status == 404);
    CHECK(reservations(server).empty());

    // CHECK and DEL find the entry in the node's slice; DEL is idempotent.
    CHECK(call_on(env, "node-a", "CHECK", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    CHECK(get(server, "/ippools/blue-node-a-10.70.0.0-25")["spec"]["allocations"].size() == 1);
}

TEST_CASE("node slices: a full slice makes the node claim another, an exhausted range is a clear error",
          "[kube][integration][slices]") {
    ServerUnderTest server;
    Env env(server);
    // 10.71.0.0/26 in /28 slices: 4 slices of 14 usable addresses.
    const json conf = env.conf("10.71.0.0/26", {{"node_slice_size", "/28"}});
    std::set<std::string> ips;
    for (int i = 0; i < 15; ++i) {
        auto r = call_on(env, "node-a", "ADD", conf, "a" + std::to_string(i));
        INFO(r.describe());
        REQUIRE(r.exit_code == 0);
        ips.insert(first_ip(r));
    }
    CHECK(ips.size() == 15);
    CHECK(ips.count("10.71.0.17"));  // the 15th: first address of the second slice
    CHECK(holders(server, "kubenet") ==
          std::multimap<std::string, std::string>{{"node-a", "10.71.0.0/28"}, {"node-a", "10.71.0.16/28"}});
    REQUIRE(call_on(env, "node-b", "ADD", conf, "b0").exit_code == 0);
    REQUIRE(call_on(env, "node-c", "ADD", conf, "c0").exit_code == 0);
    auto d = call_on(env, "node-d", "ADD", conf, "d0");
    INFO(d.describe());
    CHECK(d.exit_code != 0);
    CHECK(d.code() == 110);
    CHECK_THAT(d.msg(), Catch::Contains("network kubenet") && Catch::Contains("10.71.0.0/26") &&
                            Catch::Contains("/28") && Catch::Contains("node-d"));
    // Nothing written for node-d.
    CHECK(holders(server, "kubenet").count("node-d") == 0);
}

TEST_CASE("node slices: 32 nodes claiming at once get distinct slices, one owner each", "[kube][integration][slices]") {
    ServerUnderTest server({.extra_args = {"--latency-ms", "2"}});
    Env env(server);
    const json conf = env.conf("10.72.0.0/16", {{"node_slice_size", "/24"}});
    constexpr int kNodes = 32;
    auto [ip_of, failures] = in_parallel(kNodes, 1, [&](int n, int) {
        const std::string node = "node-" + std::to_string(n);
        return std::pair{node, call_on(env, node, "ADD", conf, "c" + std::to_string(n))};
    });
    for (const auto& f : failures) UNSCOPED_INFO(f);
    REQUIRE(failures.empty());
    const auto held = holders(server, "kubenet");
    CHECK(held.size() == kNodes);
    std::set<std::string> nodes, slices;
    for (const auto& [node, slice] : held) {
        nodes.insert(node);
        slices.insert(slice);
    }
    CHECK(nodes.size() == kNodes);   // one slice per node
    CHECK(slices.size() == kNodes);  // no slice twice
    // Each node's address is the first of its own slice.
    for (const auto& [node, slice] : held) {
        const std::string third = slice.substr(6, slice.find(".0/24") - 6);  // "10.72.<k>.0/24"
        CHECK(ip_of[node] == "10.72." + third + ".1");
    }
}

TEST_CASE("node slices bad input: a NodeSlicePool of another range or size, no node name",
          "[kube][integration][slices]") {
    ServerUnderTest server;
    Env env(server);
    const json theirs = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                         {"kind", "NodeSlicePool"},
                         {"metadata", {{"name", "kubenet"}}},
                         {"spec", {{"range", "10.73.0.0/16"}, {"sliceSize", "24"}}},
                         {"status", {{"allocations", json::array()}}}};
    REQUIRE(server.request("POST", kApi + "/nodeslicepools", theirs.dump()).status == 201);
    auto r = call_on(env, "node-a", "ADD", env.conf("10.73.0.0/16", {{"node_slice_size", "/25"}}), "x");
    CHECK(r.code() == 7);
    CHECK_THAT(r.msg(), Catch::Contains("NodeSlicePool kubenet") && Catch::Contains("spec.sliceSize \"24\""));
    // A bad size never reaches the API.
    const auto before = server.stats()["requests"].get<int>();
    r = call_on(env, "node-a", "ADD", env.conf("10.73.0.0/16", {{"node_slice_size", "/8"}}), "y");
    CHECK(r.code() == 7);
    CHECK_THAT(r.msg(), Catch::Contains("larger than"));
    r = call_on(env, "Bad_Node", "ADD", env.conf("10.73.0.0/16", {{"node_slice_size", "/24"}}), "z");
    CHECK(r.code() == 7);
    CHECK_THAT(r.msg(), Catch::Contains("$NODENAME"));
    CHECK(server.stats()["requests"].get<int>() == before);
}

TEST_CASE(
    "node slices through an API-server outage: ADD/DEL keep working, SIGKILLs leave no duplicate, the backlog "
    "is published in order once the API answers",
    "[kube][integration][slices][outage][inrepo]") {
    TestApiServer server;
    Env env(server);
    const json conf = env.conf("10.74.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "red"}});
    const std::string pool = "red-node-a-10.74.0.0-26";
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a0").exit_code == 0);
    CHECK(get(server, "/ippools/" + pool)["spec"]["allocations"].size() == 1);
    const auto writes_before = server.stats()["by_method"].value("PATCH", 0);

    server.set_outage(TestApiServer::Outage::drop);
    std::mt19937 rng(1717);
    std::set<std::string> ips;
    int killed = 0;
    for (int i = 1; i <= 12; ++i) {
        const std::string id = "a" + std::to_string(i);
        // Every third one killed part-way (SIGKILL: an OOM kill, a node reboot).
        const bool kill = i % 3 == 0;
        const auto budget = kill ? std::chrono::milliseconds(std::uniform_int_distribution<int>(2, 25)(rng))
                                 : std::chrono::milliseconds(10000);
        const auto start = std::chrono::steady_clock::now();
        auto r = call_on(env, "node-a", "ADD", conf, id, budget);
        if (r.timed_out) {
            ++killed;
            continue;
        }
        INFO(r.describe());
        REQUIRE(r.exit_code == 0);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
        CHECK(ips.insert(first_ip(r)).second);  // never handed out twice
    }
    CHECK(killed > 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a0").exit_code == 0);  // DEL works too
    const std::string slices = env.data_dir + "/node-a/kubernetes/slices";
    CHECK_FALSE(std::filesystem::is_empty(slices + "/backlog"));
    // A node without a slice cannot claim one now: code 11, saying why.
    const auto start = std::chrono::steady_clock::now();
    auto b = call_on(env, "node-b", "ADD", conf, "b0");
    CHECK(b.code() == 11);
    CHECK_THAT(b.msg(), Catch::Contains("unreachable"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));

    server.set_outage(TestApiServer::Outage::off);
    // The next CNI call on the node publishes the backlog, oldest first, then its own change.
    auto last = call_on(env, "node-a", "ADD", conf, "a-last");
    REQUIRE(last.exit_code == 0);
    CHECK(ips.insert(first_ip(last)).second);
    CHECK(std::filesystem::is_empty(slices + "/backlog"));
    // The slice IPPool now equals the node's local store, entry for entry.
    rdmanet::ipam::SqliteStore local(slices);
    const auto key = rdmanet::ipam::PoolKey{"red-node-a", *rdmanet::base::IpNetwork::parse("10.74.0.0/26")};
    json expected = json::object();
    for (const auto& [offset, owner] : local.dump(key).allocations) {
        expected[rdmanet::ipam::to_decimal(offset)] = {
            {"id", owner.container_id}, {"podref", owner.podref}, {"ifname", owner.ifname}};
    }
    CHECK(get(server, "/ippools/" + pool)["spec"]["allocations"] == expected);
    for (const auto& [offset, entry] : expected.items()) CHECK(entry["id"] != "a0");  // a0's DEL was published
    CHECK(server.stats()["by_method"].value("PATCH", 0) > writes_before);
}

TEST_CASE("node slices: after an outage the node agent publishes the backlog, with no CNI call on the node",
          "[kube][integration][slices][outage][agent][inrepo]") {
    TestApiServer server;
    Env env(server);
    const json conf = env.conf("10.75.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "teal"}});
    const std::string pool = "teal-node-a-10.75.0.0-26";
    REQUIRE(call_on(env, "node-a", "ADD", conf, "t0").exit_code == 0);

    server.set_outage(TestApiServer::Outage::drop);
    for (const std::string id : {"t1", "t2"}) {
        const auto r = call_on(env, "node-a", "ADD", conf, id);
        INFO(r.describe());
        REQUIRE(r.exit_code == 0);
    }
    REQUIRE(call_on(env, "node-a", "DEL", conf, "t0").exit_code == 0);
    server.set_outage(TestApiServer::Outage::off);
    const std::string node_dir = env.data_dir + "/node-a";
    const std::string backlog = node_dir + "/kubernetes/slices/backlog";
    REQUIRE_FALSE(std::filesystem::is_empty(backlog));
    CHECK(get(server, "/ippools/" + pool)["spec"]["allocations"].size() == 1);  // t0 only: stale

    // The agent's own attachment states in the test's directory, not the node's.
    const std::string agent_policy = server.dir() + "/agent-policy.json";
    std::ofstream(agent_policy)
        << json{{"version", 1}, {"logDir", server.dir()}, {"stateDir", server.dir() + "/state"}}.dump();
    const auto r =
        rdmanet::test::run_process({rdmanet::test::bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--kubeconfig",
                                    env.kubeconfig, "--node-name", "node-a", "--ipam-data-dir", node_dir},
                                   {{"RDMANET_POLICY_FILE", agent_policy}});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("published 3 node-slice change(s)"));
    CHECK(std::filesystem::is_empty(backlog));
    // The slice IPPool now equals the node's local store: t1 and t2, t0 released.
    rdmanet::ipam::SqliteStore local(node_dir + "/kubernetes/slices");
    const auto key = rdmanet::ipam::PoolKey{"teal-node-a", *rdmanet::base::IpNetwork::parse("10.75.0.0/26")};
    json expected = json::object();
    for (const auto& [offset, owner] : local.dump(key).allocations)
        expected[rdmanet::ipam::to_decimal(offset)] = {
            {"id", owner.container_id}, {"podref", owner.podref}, {"ifname", owner.ifname}};
    CHECK(expected.size() == 2);
    CHECK(get(server, "/ippools/" + pool)["spec"]["allocations"] == expected);
}

// ---- Reclaim: the cluster's reconciler releases the slices of deleted nodes (slice_reclaim.hpp).

namespace {

int ippool_status(const ApiServer& s, const std::string& pool) {
    return s.request("GET", kApi + "/ippools/" + pool).status;
}

rdmanet::test::ProcessResult reconcile_cluster(const Env& env, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"reconcile", "--kubeconfig", env.kubeconfig};
    args.insert(args.end(), extra.begin(), extra.end());
    return env.ctl(args);
}

}  // namespace

TEST_CASE("Reclaim: a NodeSlicePool entry whose node name no Node can have is left alone",
          "[kube][integration][slices][reclaim]") {
    ServerUnderTest server;
    Env env(server);
    // Written by hand or by a compromised node: the name would reach GET/DELETE paths.
    const std::string bad = "../../namespaces/" + kNs + "/ippools/victim";
    const json pool = {
        {"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
        {"kind", "NodeSlicePool"},
        {"metadata", {{"name", "gold"}}},
        {"spec", {{"range", "10.79.0.0/24"}, {"sliceSize", "/26"}}},
        {"status", {{"allocations", json::array({{{"nodeName", bad}, {"sliceRange", "10.79.0.0/26"}}})}}}};
    REQUIRE(server.request("POST", kApi + "/nodeslicepools", pool.dump()).status == 201);
    const auto gets_and_deletes = [&] {
        const json m = server.stats()["by_method"];
        return std::pair{m.value("GET", 0), m.value("DELETE", 0) + m.value("PATCH", 0)};
    };
    const auto before = gets_and_deletes();
    auto r = reconcile_cluster(env);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);  // a problem for a human
    CHECK_THAT(r.err, Catch::Contains("lists slice 10.79.0.0/26 for node \"" + bad +
                                      "\", which is not a valid node name: left alone"));
    const auto after = gets_and_deletes();
    CHECK(after.second == before.second);  // nothing patched or deleted
    CHECK(holders(server, "gold") == std::multimap<std::string, std::string>{{bad, "10.79.0.0/26"}});
}

TEST_CASE("Reclaim: a deleted Node's empty slice is released, a slice with a live pod is kept",
          "[kube][integration][slices][reclaim]") {
    ServerUnderTest server;
    Env env(server);
    // 10.76.0.0/24 in /26 slices: 4 slices.
    const json conf = env.conf("10.76.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "gold"}});
    for (const std::string n : {"node-a", "node-b", "node-c", "node-d"}) server.create_node(n);
    // node-a: a live pod. node-b: its only pod's DEL came, the slice is empty. node-c: a pod that
    // is gone without a DEL (the node died with it). node-d: stays, with a dead pod's entry.
    server.create_pod("ns", "pod-a1");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-b", "ADD", conf, "b1").exit_code == 0);
    REQUIRE(call_on(env, "node-b", "DEL", conf, "b1").exit_code == 0);
    REQUIRE(call_on(env, "node-c", "ADD", conf, "c1").exit_code == 0);
    REQUIRE(call_on(env, "node-d", "ADD", conf, "d1").exit_code == 0);
    REQUIRE(holders(server, "gold") == std::multimap<std::string, std::string>{{"node-a", "10.76.0.0/26"},
                                                                               {"node-b", "10.76.0.64/26"},
                                                                               {"node-c", "10.76.0.128/26"},
                                                                               {"node-d", "10.76.0.192/26"}});
    for (const std::string n : {"node-a", "node-b", "node-c"}) REQUIRE(server.delete_node(n) == 200);

    // The dry run says what the run will do and writes nothing.
    const auto writes = [&] {
        const json m = server.stats()["by_method"];
        return m.value("PATCH", 0) + m.value("DELETE", 0) + m.value("POST", 0) + m.value("PUT", 0);
    };
    const auto writes_before_dry = writes();
    auto dry = reconcile_cluster(env, {"--dry-run"});
    INFO(dry.out << dry.err);
    REQUIRE(dry.exit_code == 0);
    CHECK_THAT(dry.out, Catch::Contains("would release slice gold 10.76.0.64/26 node-b") &&
                            Catch::Contains("would release slice gold 10.76.0.128/26 node-c"));
    CHECK(writes() == writes_before_dry);
    CHECK(holders(server, "gold").size() == 4);

    auto r = reconcile_cluster(env);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("released slice gold 10.76.0.64/26 node-b"));
    // node-c's dead pod is released by the same run first, and then its slice.
    CHECK_THAT(r.out, Catch::Contains("released gold-node-c-10.76.0.128-26 10.76.0.129 ns/pod-c1 net1"));
    CHECK_THAT(r.out, Catch::Contains("released slice gold 10.76.0.128/26 node-c"));
    CHECK_THAT(r.out, Catch::Contains("kept slice gold 10.76.0.0/26 node-a: IPPool gold-node-a-10.76.0.0-26 holds an "
                                      "allocation of live pod ns/pod-a1"));
    CHECK_THAT(r.out, Catch::Contains("2 slices of deleted nodes released, 1 kept in use, 1 nodes"));
    // Existing nodes keep their slices, deleted nodes keep slices in use.
    CHECK(holders(server, "gold") ==
          std::multimap<std::string, std::string>{{"node-a", "10.76.0.0/26"}, {"node-d", "10.76.0.192/26"}});
    CHECK(ippool_status(server, "gold-node-b-10.76.0.64-26") == 404);
    CHECK(ippool_status(server, "gold-node-c-10.76.0.128-26") == 404);
    CHECK(allocations(server, "gold-node-a-10.76.0.0-26").size() == 1);
    CHECK(ippool_status(server, "gold-node-d-10.76.0.192-26") == 200);
    CHECK(allocations(server, "gold-node-d-10.76.0.192-26").empty());  // its dead pod's entry is gone, the slice is not

    // Idempotent: a second run releases nothing and writes nothing.
    const auto writes_before = writes();
    auto again = reconcile_cluster(env);
    INFO(again.out << again.err);
    REQUIRE(again.exit_code == 0);
    CHECK_THAT(again.out, !Catch::Contains("released slice"));
    CHECK_THAT(again.out, Catch::Contains("0 slices of deleted nodes released, 1 kept in use"));
    CHECK(writes() == writes_before);
    CHECK(holders(server, "gold").size() == 2);

    // A released slice is free again: the next node claims the lowest one, node-b's.
    server.create_node("node-e");
    auto e = call_on(env, "node-e", "ADD", conf, "e1");
    INFO(e.describe());
    REQUIRE(e.exit_code == 0);
    CHECK(first_ip(e) == "10.76.0.65");
    CHECK(holders(server, "gold").count("node-e") == 1);
    CHECK(get(server, "/ippools/gold-node-e-10.76.0.64-26")["spec"]["allocations"].size() == 1);

    // Once the live pod is gone too, node-a's slice goes in one run.
    server.delete_pod("ns", "pod-a1");
    auto last = reconcile_cluster(env);
    INFO(last.out << last.err);
    REQUIRE(last.exit_code == 0);
    CHECK_THAT(last.out, Catch::Contains("released slice gold 10.76.0.0/26 node-a"));
    CHECK(holders(server, "gold") ==
          std::multimap<std::string, std::string>{{"node-d", "10.76.0.192/26"}, {"node-e", "10.76.0.64/26"}});
}

TEST_CASE("Reclaim: a node whose slice was released while it was alive stops allocating from it",
          "[kube][integration][slices][reclaim]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.77.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "jade"}});
    server.create_node("node-a");
    server.create_node("node-b");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    // node-a's Node object is deleted and re-created (its kubelet re-registers) while the node runs on.
    REQUIRE(server.delete_node("node-a") == 200);
    auto r = reconcile_cluster(env);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains("released slice jade 10.77.0.0/26 node-a"));
    server.create_node("node-a");
    // node-b claims the lowest free slice: the one node-a held.
    auto b = call_on(env, "node-b", "ADD", conf, "b1");
    REQUIRE(b.exit_code == 0);
    REQUIRE(first_ip(b) == "10.77.0.1");

    // node-a still lists 10.77.0.0/26 as its own; its ADD's publication finds the slice IPPool
    // deleted and the slice node-b's: the address is taken back and another slice claimed.
    auto a2 = call_on(env, "node-a", "ADD", conf, "a2");
    INFO(a2.describe());
    REQUIRE(a2.exit_code == 0);
    CHECK(first_ip(a2) == "10.77.0.65");
    CHECK(ippool_status(server, "jade-node-a-10.77.0.0-26") == 404);  // not created again
    CHECK(holders(server, "jade") ==
          std::multimap<std::string, std::string>{{"node-a", "10.77.0.64/26"}, {"node-b", "10.77.0.0/26"}});
    const auto states = rdmanet::ipam::kube::held_slices(env.data_dir + "/node-a");
    REQUIRE(states.size() == 1);
    CHECK(states[0].pool_name == "jade");
    CHECK(states[0].node == "node-a");
    CHECK(states[0].revoked == std::vector{*rdmanet::base::IpNetwork::parse("10.77.0.0/26")});
    CHECK(states[0].held == std::vector{*rdmanet::base::IpNetwork::parse("10.77.0.64/26")});
    // Nothing of a2 stays in the revoked slice locally.
    rdmanet::ipam::SqliteStore local(env.data_dir + "/node-a/kubernetes/slices");
    CHECK(local.dump(rdmanet::ipam::PoolKey{"jade-node-a", *rdmanet::base::IpNetwork::parse("10.77.0.0/26")})
              .allocations.empty());
}

TEST_CASE("Reclaim: the node agent finds a released slice revoked before any ADD",
          "[kube][integration][slices][reclaim][agent]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.78.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "onyx"}});
    server.create_node("node-a");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a2").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a2").exit_code == 0);
    const std::string node_dir = env.data_dir + "/node-a";
    const auto agent = [&] {
        const std::string agent_policy = server.dir() + "/agent-policy.json";
        std::ofstream(agent_policy)
            << json{{"version", 1}, {"logDir", server.dir()}, {"stateDir", server.dir() + "/state"}}.dump();
        return rdmanet::test::run_process(
            {rdmanet::test::bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--kubeconfig", env.kubeconfig,
             "--node-name", "node-a", "--ipam-data-dir", node_dir},
            {{"RDMANET_POLICY_FILE", agent_policy}});
    };
    // While the node holds it, the agent's re-check changes nothing.
    auto quiet = agent();
    INFO(quiet.out << quiet.err);
    CHECK(quiet.exit_code == 0);
    CHECK_THAT(quiet.err, !Catch::Contains("no longer this node's"));
    REQUIRE(rdmanet::ipam::kube::held_slices(node_dir).at(0).revoked.empty());

    REQUIRE(server.delete_node("node-a") == 200);
    auto rec = reconcile_cluster(env);
    INFO(rec.out << rec.err);
    REQUIRE(rec.exit_code == 0);
    REQUIRE_THAT(rec.out, Catch::Contains("released slice onyx 10.78.0.0/26 node-a"));
    server.create_node("node-a");
    auto r = agent();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("node slice onyx 10.78.0.0/26 node-a is no longer this node's"));
    const auto states = rdmanet::ipam::kube::held_slices(node_dir);
    REQUIRE(states.size() == 1);
    CHECK(states[0].held.empty());
    CHECK(states[0].revoked == std::vector{*rdmanet::base::IpNetwork::parse("10.78.0.0/26")});
    // The next ADD does not use the revoked slice: it claims another and publishes into it.
    auto a3 = call_on(env, "node-a", "ADD", conf, "a3");
    INFO(a3.describe());
    REQUIRE(a3.exit_code == 0);
    CHECK(first_ip(a3) == "10.78.0.65");
    CHECK(holders(server, "onyx") == std::multimap<std::string, std::string>{{"node-a", "10.78.0.64/26"}});
    CHECK(ippool_status(server, "onyx-node-a-10.78.0.0-26") == 404);
}

TEST_CASE("Reclaim racing a node that is alive: its address published during the release gives the slice back",
          "[kube][integration][slices][reclaim][inrepo]") {
    TestApiServer server;
    Env env(server);
    const json conf = env.conf("10.79.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "ruby"}});
    server.create_node("node-a");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    REQUIRE(server.delete_node("node-a") == 200);  // the Node object goes, the node runs on
    server.create_pod("ns", "pod-a2");

    // Every API request takes 700 ms (within the 1 s a CNI call gives publication), so that the
    // node's ADD can land between the reconciler's release of the slice (its only PATCH) and its
    // deletion of the slice IPPool (two requests later).
    server.set_faults({{"latency_ms", 700}});
    const auto patches = [&] { return server.stats()["by_method"].value("PATCH", 0); };
    const int patches_before = patches();
    rdmanet::test::ProcessResult rec;
    std::thread reconciler([&] { rec = reconcile_cluster(env); });
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (patches() == patches_before && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    auto a2 = call_on(env, "node-a", "ADD", conf, "a2");
    reconciler.join();
    server.set_faults({{"latency_ms", 0}});
    INFO(rec.out << rec.err);
    INFO(a2.describe());
    REQUIRE(a2.exit_code == 0);
    REQUIRE(rec.exit_code == 0);

    // Either way the address is node-a's alone and published where node-a's slice is listed.
    const auto held = holders(server, "ruby");
    if (rec.out.find("gave back slice ruby 10.79.0.0/26 node-a") != std::string::npos) {
        // The ADD was published before the deletion: the deletion's precondition failed, the
        // live pod's entry was seen and the slice given back.
        CHECK_THAT(rec.out, Catch::Contains("holds an allocation of live pod ns/pod-a2"));
        CHECK(first_ip(a2) == "10.79.0.1");
        CHECK(held == std::multimap<std::string, std::string>{{"node-a", "10.79.0.0/26"}});
        CHECK(allocations(server, "ruby-node-a-10.79.0.0-26").size() == 1);
        CHECK(rdmanet::ipam::kube::held_slices(env.data_dir + "/node-a").at(0).revoked.empty());
    } else {
        // The ADD came after the deletion: publication found the slice released, took the
        // address back and served it from a newly claimed slice.
        CHECK_THAT(rec.out, Catch::Contains("released slice ruby 10.79.0.0/26 node-a"));
        CHECK(first_ip(a2) == "10.79.0.65");
        CHECK(held == std::multimap<std::string, std::string>{{"node-a", "10.79.0.64/26"}});
        CHECK(ippool_status(server, "ruby-node-a-10.79.0.0-26") == 404);
    }
    WARN("reclaim race took the " << (rec.out.find("gave back") != std::string::npos ? "give-back" : "revoked")
                                  << " path");
}

TEST_CASE("Reclaim: a pod of the same name on another node does not keep a deleted node's slice",
          "[kube][integration][slices][reclaim]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.80.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "opal"}});
    server.create_node("node-a");
    server.create_node("node-b");
    server.create_pod_on("ns", "pod-a1", "node-a");
    REQUIRE(call_on(env, "node-a", "ADD", conf, "a1").exit_code == 0);
    REQUIRE(server.delete_node("node-a") == 200);

    // The pod still bound to node-a (its node is being replaced): the slice is kept.
    auto kept = reconcile_cluster(env);
    INFO(kept.out << kept.err);
    REQUIRE(kept.exit_code == 0);
    CHECK_THAT(kept.out,
               Catch::Contains("kept slice opal 10.80.0.0/26 node-a: IPPool opal-node-a-10.80.0.0-26 holds an "
                               "allocation of live pod ns/pod-a1"));
    CHECK(holders(server, "opal").count("node-a") == 1);

    // The pod is re-created under the same name on node-b (a StatefulSet pod rescheduled): the
    // general pass keeps the entry (whereabouts' podref has no UID), the slice pass knows that an
    // address in node-a's slice was never node-b's pod's, and releases the slice with it.
    server.delete_pod("ns", "pod-a1");
    server.create_pod_on("ns", "pod-a1", "node-b");
    auto released = reconcile_cluster(env);
    INFO(released.out << released.err);
    REQUIRE(released.exit_code == 0);
    CHECK_THAT(released.out, Catch::Contains("released slice opal 10.80.0.0/26 node-a"));
    CHECK(holders(server, "opal").count("node-a") == 0);
    CHECK(ippool_status(server, "opal-node-a-10.80.0.0-26") == 404);
}
