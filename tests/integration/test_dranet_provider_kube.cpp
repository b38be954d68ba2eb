// rdmanetctl dranet-provider on the Kubernetes datastore (whereabouts IPPools) of the test API
// server (or a real kube-apiserver, as every [kube] suite): the claim owns the pool entry, a
// repeat allocates nothing, rdmanet's pod reconciler keeps the claim's entry, release frees it.
#include "dranet_client.hpp"
#include "test_kube_util.hpp"

using namespace kube_test;
using dranet_test::Device;
using dranet_test::kNoWhereaboutsReconciler;
using dranet_test::ProviderProcess;

TEST_CASE("dranet provider, kube datastore: the pool entry is the claim's, repeat-safe, kept by reconcile, released",
          "[kube][integration][dranet]") {
    ServerUnderTest server;
    Env env(server);
    ProviderProcess p("kube");
    p.extra_env = env.env();
    json ipam = env.profile_ipam("10.47.0.0/24");
    p.write_profile("rail",
                    {{"network", "kubenet"}, {"ipam", ipam}, {"policyRouting", true}, kNoWhereaboutsReconciler});
    p.start();

    const std::string claim = "3f2e1d0c-0000-4000-8000-00000000abcd";
    auto get = [&] {
        return dranet_test::http(p.socket(), "POST", "/GetProfileConfig",
                                 dranet_test::profile_request(Device{"eth1", "", ""}, claim, "rail"));
    };
    const auto first = get();
    INFO(first.body << p.log());
    REQUIRE(first.status == 200);
    CHECK(first.j()["interface"]["addresses"] == json::array({"10.47.0.1/24"}));
    json allocs = allocations(server, "10.47.0.0-24");
    REQUIRE(allocs.size() == 1);
    CHECK(allocs["1"] == json{{"id", claim}, {"podref", "dranet:" + claim}, {"ifname", "eth1"}});

    // The kubelet's retry: the same answer and still one entry.
    CHECK(get().j() == first.j());
    CHECK(allocations(server, "10.47.0.0-24").size() == 1);

    // rdmanet's reconciler releases entries of pods that do not exist; a claim's entry names no pod.
    const auto r = env.ctl({"reconcile", "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(allocations(server, "10.47.0.0-24").size() == 1);

    const auto released = dranet_test::http(p.socket(), "POST", "/ReleaseProfileConfig",
                                            dranet_test::profile_request(Device{"eth1", "", ""}, claim, "rail"));
    CHECK(released.status == 200);
    CHECK(allocations(server, "10.47.0.0-24").empty());
    CHECK(consistency_problems(server, "10.47.0.0-24", (10u << 24) | (47u << 16)).empty());
}

TEST_CASE(
    "dranet provider, node slices: the claim's address comes from this node's slice, no API request per claim "
    "once the slice is claimed, published by the node agent",
    "[kube][integration][dranet][slices]") {
    ServerUnderTest server;
    Env env(server);
    ProviderProcess p("slices");
    p.extra_env = env.env();
    json ipam = env.profile_ipam("10.71.0.0/16", {{"node_slice_size", "/25"}, {"network_name", "blue"}});
    p.write_profile("blue", {{"ipam", ipam}, {"policyRouting", true}, kNoWhereaboutsReconciler});
    p.start();  // --node-name node-1
    const std::string pool = "/ippools/blue-node-1-10.71.0.0-25";
    auto published = [&] {
        const auto r = server.request("GET", kApi + pool);
        return r.status == 200 ? r.body["spec"].value("allocations", json::object()) : json::object();
    };
    auto patches = [&] { return server.stats()["by_method"].value("PATCH", std::uint64_t{0}); };
    auto requests = [&] { return server.stats()["requests"].get<std::uint64_t>(); };
    // The node agent's pass (the DaemonSet's rdmanetctl agent, on its interval) with its own
    // attachment states in the test's directory.
    const std::string agent_policy = server.dir() + "/agent-policy.json";
    std::ofstream(agent_policy)
        << json{{"version", 1}, {"logDir", server.dir()}, {"stateDir", server.dir() + "/state"}}.dump();
    auto agent_pass = [&] {
        const auto r = rdmanet::test::run_process(
            {rdmanet::test::bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--kubeconfig", env.kubeconfig,
             "--node-name", "node-1", "--ipam-data-dir", env.data_dir},
            {{"RDMANET_POLICY_FILE", agent_policy}});
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        return r.out;
    };
    auto call = [&](const std::string& verb, const std::string& claim) {
        return dranet_test::http(p.socket(), "POST", verb,
                                 dranet_test::profile_request(Device{"eth3", "", ""}, claim, "blue"));
    };
    const std::string a = "3f2e1d0c-0000-4000-8000-00000000beef", b = "3f2e1d0c-0000-4000-8000-00000000bee2";
    const json entry_a = {{"id", a}, {"podref", "dranet:" + a}, {"ifname", "eth3"}};
    const json entry_b = {{"id", b}, {"podref", "dranet:" + b}, {"ifname", "eth3"}};

    // The first claim on the node claims a slice (that talks to the API server during the call).
    const auto first = call("/GetProfileConfig", a);
    INFO(first.body << p.log());
    REQUIRE(first.status == 200);
    CHECK(first.j()["interface"]["addresses"] == json::array({"10.71.0.1/16"}));
    CHECK(get(server, "/nodeslicepools/blue")["status"]["allocations"] ==
          json::parse(R"([{"nodeName":"node-1","sliceRange":"10.71.0.0/25"}])"));

    // Steady state: a repeat and a second claim make no API request; publication is the agent's.
    const auto before = requests();
    CHECK(call("/GetProfileConfig", a).j() == first.j());
    const auto second = call("/GetProfileConfig", b);
    REQUIRE(second.status == 200);
    CHECK(second.j()["interface"]["addresses"] == json::array({"10.71.0.2/16"}));
    CHECK(requests() == before);
    CHECK_FALSE(published().contains("1"));
    CHECK_FALSE(published().contains("2"));

    // The agent's next pass publishes both claims' entries (the repeat recorded its change again),
    // in one PATCH of the slice pool.
    auto patched = patches();
    CHECK_THAT(agent_pass(), Catch::Contains("published 3 node-slice change(s)"));
    CHECK(patches() - patched == 1);
    CHECK(published() == json({{"1", entry_a}, {"2", entry_b}}));

    // Releases are deferred likewise: no API request, the entries gone after the agent's pass.
    const auto before_release = requests();
    CHECK(call("/ReleaseProfileConfig", a).status == 200);
    CHECK(call("/ReleaseProfileConfig", b).status == 200);
    CHECK(requests() == before_release);
    CHECK(published() == json({{"1", entry_a}, {"2", entry_b}}));
    patched = patches();
    CHECK_THAT(agent_pass(), Catch::Contains("published 2 node-slice change(s)"));
    CHECK(patches() - patched == 1);
    CHECK(published().empty());

    // A claim made and released between two passes: nothing of it is ever published.
    const std::string c = "3f2e1d0c-0000-4000-8000-00000000bee3";
    const auto before_churn = requests();
    REQUIRE(call("/GetProfileConfig", c).status == 200);
    CHECK(call("/ReleaseProfileConfig", c).status == 200);
    CHECK(requests() == before_churn);
    CHECK_THAT(agent_pass(), Catch::Contains("published 2 node-slice change(s)"));
    CHECK(published().empty());
    // ... and the count does see a request (the equalities above could fail).
    const auto seen = requests();
    (void)published();
    CHECK(requests() > seen);
}

TEST_CASE(
    "dranet provider, nv-ipam CIDRPool: the node's subnet and gateway in the claim's table, no API request "
    "once the block is known",
    "[kube][integration][dranet][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    create_nv_pool(server, "cidrpools", "rail1",
                   {{"cidr", "10.12.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}},
                   {{{"nodeName", "node-1"}, {"prefix", "10.12.7.0/24"}, {"gateway", "10.12.7.1"}}});

    ProviderProcess p("nvipam");
    p.extra_env = env.env();
    p.write_profile("rail1", {{"ipam",
                               {{"poolName", "rail1"},
                                {"poolType", "cidrpool"},
                                {"kubernetes", {{"kubeconfig", env.kubeconfig}}},
                                {"data_dir", env.data_dir}}},
                              {"policyRouting", true}});
    p.start();  // --node-name node-1
    auto get = [&](const std::string& claim) {
        return dranet_test::http(p.socket(), "POST", "/GetProfileConfig",
                                 dranet_test::profile_request(Device{"eth1", "", ""}, claim, "rail1"));
    };
    const auto a = get("claim-nv-a");
    INFO(a.body << p.log());
    REQUIRE(a.status == 200);
    CHECK(a.j()["interface"]["addresses"] == json::array({"10.12.7.2/24"}));
    const unsigned table = a.j()["rules"][0]["table"];
    CHECK(a.j()["routes"][1] == json({{"destination", "0.0.0.0/0"}, {"gateway", "10.12.7.1"}, {"table", table}}));

    const auto before = server.stats()["requests"].get<std::uint64_t>();
    const auto b = get("claim-nv-b");
    REQUIRE(b.status == 200);
    CHECK(b.j()["interface"]["addresses"] == json::array({"10.12.7.3/24"}));
    CHECK(server.stats()["requests"].get<std::uint64_t>() == before);  // the node's block is cached locally
    // ... and the count does see a read of the pool (the comparison above could fail).
    REQUIRE(server.request("GET", kNvApi + "/cidrpools/rail1").status == 200);
    CHECK(server.stats()["requests"].get<std::uint64_t>() > before);
}

TEST_CASE(
    "dranet provider, --kubeconfig: a profile without a kubeconfig uses the provider's access and --namespace, "
    "a profile's own kubeconfig wins",
    "[kube][integration][dranet]") {
    ServerUnderTest server;
    Env env(server);
    const std::string flag_ns = "rdma-pools";
    server.ensure_namespace(flag_ns);
    auto pool_in = [&](const std::string& ns, const std::string& pool) {
        return server.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/" + ns + "/ippools/" + pool);
    };

    ProviderProcess p("kubeflag");
    p.extra_env = env.env();
    json bare = env.profile_ipam("10.48.0.0/24");
    bare.erase("kubernetes");
    p.write_profile("bare", {{"network", "kubenet"}, {"ipam", bare}, kNoWhereaboutsReconciler});
    json own = env.profile_ipam("10.49.0.0/24");
    p.write_profile("own", {{"network", "kubenet"}, {"ipam", own}, kNoWhereaboutsReconciler});
    p.extra_args = {"--kubeconfig", env.kubeconfig, "--namespace", flag_ns};
    p.start();

    const auto bare_req = dranet_test::profile_request(Device{"eth1", "", ""}, "claim-flag-a", "bare");
    const auto a = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", bare_req);
    INFO(a.body << p.log());
    REQUIRE(a.status == 200);
    CHECK(a.j()["interface"]["addresses"] == json::array({"10.48.0.1/24"}));
    // The provider's access with its --namespace: the pool is in that namespace, not the context's.
    const auto flagged = pool_in(flag_ns, "10.48.0.0-24");
    REQUIRE(flagged.status == 200);
    CHECK(flagged.body["spec"]["allocations"]["1"]["podref"] == "dranet:claim-flag-a");
    CHECK(pool_in(kNs, "10.48.0.0-24").status == 404);

    // A profile naming its own kubeconfig keeps it (and that kubeconfig's namespace).
    const auto own_req = dranet_test::profile_request(Device{"eth1", "", ""}, "claim-flag-b", "own");
    const auto b = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", own_req);
    REQUIRE(b.status == 200);
    CHECK(b.j()["interface"]["addresses"] == json::array({"10.49.0.1/24"}));
    CHECK(allocations(server, "10.49.0.0-24").size() == 1);
    CHECK(pool_in(flag_ns, "10.49.0.0-24").status == 404);

    CHECK(dranet_test::http(p.socket(), "POST", "/ReleaseProfileConfig", bare_req).status == 200);
    CHECK(pool_in(flag_ns, "10.48.0.0-24").body["spec"].value("allocations", json::object()).empty());
    CHECK(dranet_test::http(p.socket(), "POST", "/ReleaseProfileConfig", own_req).status == 200);
    CHECK(allocations(server, "10.49.0.0-24").empty());

    // Without the flags the same profile is refused with what to set, and nothing is allocated.
    ProviderProcess q("kubeflag-off");
    q.extra_env = env.env();
    q.write_profile("bare", {{"network", "kubenet"}, {"ipam", bare}, kNoWhereaboutsReconciler});
    q.start();
    const auto refused =
        dranet_test::http(q.socket(), "POST", "/GetProfileConfig",
                          dranet_test::profile_request(Device{"eth1", "", ""}, "claim-flag-c", "bare"));
    CHECK(refused.status == 400);
    CHECK_THAT(refused.body, Catch::Contains("--kubeconfig or --in-cluster"));
    CHECK(pool_in(flag_ns, "10.48.0.0-24").body["spec"].value("allocations", json::object()).empty());
}

TEST_CASE("dranet provider: conflicting or unusable Kubernetes flags stop it at start with what to fix",
          "[integration][dranet]") {
    ProviderProcess p("kubeflag-bad");
    auto run = [&](const std::vector<std::string>& extra) {
        std::vector<std::string> argv{rdmanet::test::bin_dir() + "/rdmanetctl",
                                      "dranet-provider",
                                      "--socket",
                                      p.socket(),
                                      "--profiles",
                                      p.profiles(),
                                      "--state-dir",
                                      p.state_dir()};
        argv.insert(argv.end(), extra.begin(), extra.end());
        // Not in a pod, whatever runs the tests: no API server address for --in-cluster.
        return rdmanet::test::run_process(argv, {{"KUBERNETES_SERVICE_HOST", ""}}, "", std::chrono::seconds(20));
    };
    auto r = run({"--kubeconfig", p.dir() + "/kubeconfig", "--in-cluster"});
    CHECK(r.exit_code == 2);  // a usage error
    CHECK_THAT(r.err, Catch::Contains("--kubeconfig excludes --in-cluster"));
    r = run({"--namespace", "kube-system"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--namespace: only with --kubeconfig or --in-cluster"));
    r = run({"--in-cluster"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("--in-cluster: not running in a pod"));
    r = run({"--kubeconfig", p.dir() + "/missing-kubeconfig"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(p.dir() + "/missing-kubeconfig"));
    CHECK_FALSE(r.timed_out);
    CHECK_FALSE(std::filesystem::exists(p.socket()));  // never served
}

TEST_CASE(
    "dranet provider, nv-ipam IPPool: the node's block from the pool's status, the pool's gateway and routes "
    "in the claim's table, repeat-safe, released",
    "[kube][integration][dranet][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    // nv-ipam's controller's blocks: node-1 (the provider's node) holds the second one.
    create_nv_pool(server, "ippools", "rail2",
                   {{"subnet", "192.168.0.0/24"},
                    {"perNodeBlockSize", 100},
                    {"gateway", "192.168.0.1"},
                    {"routes", {{{"dst", "10.200.0.0/16"}}}}},
                   {{{"nodeName", "node-2"}, {"startIP", "192.168.0.1"}, {"endIP", "192.168.0.100"}},
                    {{"nodeName", "node-1"}, {"startIP", "192.168.0.101"}, {"endIP", "192.168.0.200"}}});
    const std::string api = kNvApi + "/ippools";
    const json status_before = server.request("GET", api + "/rail2").body["status"];

    ProviderProcess p("nvippool");
    p.extra_env = env.env();
    // poolType left out: nv-ipam's default, the IPPool kind.
    p.write_profile(
        "rail2",
        {{"ipam",
          {{"poolName", "rail2"}, {"kubernetes", {{"kubeconfig", env.kubeconfig}}}, {"data_dir", env.data_dir}}},
         {"policyRouting", true}});
    p.start();  // --node-name node-1
    auto call = [&](const std::string& path, const std::string& claim) {
        return dranet_test::http(p.socket(), "POST", path,
                                 dranet_test::profile_request(Device{"eth2", "", ""}, claim, "rail2"));
    };
    const auto a = call("/GetProfileConfig", "claim-ipp-a");
    INFO(a.body << p.log());
    REQUIRE(a.status == 200);
    CHECK(a.j()["interface"]["addresses"] == json::array({"192.168.0.101/24"}));
    REQUIRE(a.j()["rules"].size() == 1);
    const unsigned table = a.j()["rules"][0]["table"];
    CHECK(a.j()["rules"][0]["source"] == "192.168.0.101/32");
    const json routes = a.j()["routes"];
    auto has = [&](const json& route) { return std::find(routes.begin(), routes.end(), route) != routes.end(); };
    CHECK(has({{"destination", "0.0.0.0/0"}, {"gateway", "192.168.0.1"}, {"table", table}}));
    CHECK(has({{"destination", "10.200.0.0/16"}, {"gateway", "192.168.0.1"}, {"table", table}}));
    for (const auto& r : routes) CHECK(r["table"] == table);

    // The kubelet's retry: the same answer, nothing allocated and no API request (the block is known).
    const auto requests = server.stats()["requests"].get<std::uint64_t>();
    CHECK(call("/GetProfileConfig", "claim-ipp-a").j() == a.j());
    const auto b = call("/GetProfileConfig", "claim-ipp-b");
    REQUIRE(b.status == 200);
    CHECK(b.j()["interface"]["addresses"] == json::array({"192.168.0.102/24"}));  // .101 is still a's
    CHECK(b.j()["rules"][0]["table"] != table);
    CHECK(server.stats()["requests"].get<std::uint64_t>() == requests);

    // Release: a's address is free again (the lowest free one goes to the next claim), twice is fine.
    CHECK(call("/ReleaseProfileConfig", "claim-ipp-a").status == 200);
    CHECK(call("/ReleaseProfileConfig", "claim-ipp-a").status == 200);
    const auto c = call("/GetProfileConfig", "claim-ipp-c");
    REQUIRE(c.status == 200);
    CHECK(c.j()["interface"]["addresses"] == json::array({"192.168.0.101/24"}));
    // The controller's status is nv-ipam's: never written by a claim.
    CHECK(server.request("GET", api + "/rail2").body["status"] == status_before);
}
