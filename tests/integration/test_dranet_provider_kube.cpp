// rdmanetctl dranet-provider on the Kubernetes datastore (whereabouts IPPools) of the test API
// server (or a real kube-apiserver, as every [kube] suite): the claim owns the pool entry, a
// repeat allocates nothing, rdmanet's pod reconciler keeps the claim's entry, release frees it.
#include "dranet_client.hpp"
#include "test_kube_util.hpp"

using namespace kube_test;
using dranet_test::Device;
using dranet_test::ProviderProcess;

TEST_CASE("dranet provider, kube datastore: the pool entry is the claim's, repeat-safe, kept by reconcile, released",
          "[kube][integration][dranet]") {
    ServerUnderTest server;
    Env env(server);
    ProviderProcess p("kube");
    p.extra_env = env.env();
    json ipam = env.conf("10.47.0.0/24")["ipam"];
    ipam.erase("type");
    p.write_profile("rail", {{"network", "kubenet"}, {"ipam", ipam}, {"policyRouting", true}});
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

TEST_CASE("dranet provider, node slices: the claim's address comes from this node's slice, released with the claim",
          "[kube][integration][dranet][slices]") {
    ServerUnderTest server;
    Env env(server);
    ProviderProcess p("slices");
    p.extra_env = env.env();
    json ipam = env.conf("10.71.0.0/16", {{"node_slice_size", "/25"}, {"network_name", "blue"}})["ipam"];
    ipam.erase("type");
    p.write_profile("blue", {{"ipam", ipam}, {"policyRouting", true}});
    p.start();   // --node-name node-1

    const std::string claim = "3f2e1d0c-0000-4000-8000-00000000beef";
    const auto req = dranet_test::profile_request(Device{"eth3", "", ""}, claim, "blue");
    const auto first = dranet_test::http(p.socket(), "POST", "/GetProfileConfig", req);
    INFO(first.body << p.log());
    REQUIRE(first.status == 200);
    CHECK(first.j()["interface"]["addresses"] == json::array({"10.71.0.1/16"}));
    CHECK(get(server, "/nodeslicepools/blue")["status"]["allocations"] ==
          json::parse(R"([{"nodeName":"node-1","sliceRange":"10.71.0.0/25"}])"));
    CHECK(get(server, "/ippools/blue-node-1-10.71.0.0-25")["spec"]["allocations"] ==
          json({{"1", {{"id", claim}, {"podref", "dranet:" + claim}, {"ifname", "eth3"}}}}));
    CHECK(dranet_test::http(p.socket(), "POST", "/GetProfileConfig", req).j() == first.j());

    CHECK(dranet_test::http(p.socket(), "POST", "/ReleaseProfileConfig", req).status == 200);
    CHECK(get(server, "/ippools/blue-node-1-10.71.0.0-25")["spec"].value("allocations", json::object()).empty());
}

TEST_CASE("dranet provider, nv-ipam CIDRPool: the node's subnet and gateway in the claim's table, no API request "
          "once the block is known",
          "[kube][integration][dranet][nvipam]") {
    ServerUnderTest server;
    Env env(server);
    const std::string api = "/apis/nv-ipam.nvidia.com/v1alpha1/namespaces/" + kNs + "/cidrpools";
    const json pool = {{"apiVersion", "nv-ipam.nvidia.com/v1alpha1"}, {"kind", "CIDRPool"},
                       {"metadata", {{"name", "rail1"}, {"namespace", kNs}}},
                       {"spec", {{"cidr", "10.12.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}}}};
    auto created = server.request("POST", api, pool.dump());
    REQUIRE(created.status == 201);
    json with_status = created.body;
    with_status["status"] = {{"allocations", {{{"nodeName", "node-1"}, {"prefix", "10.12.7.0/24"}, {"gateway", "10.12.7.1"}}}}};
    REQUIRE(server.request("PUT", api + "/rail1/status", with_status.dump()).status == 200);

    ProviderProcess p("nvipam");
    p.extra_env = env.env();
    p.write_profile("rail1", {{"ipam", {{"poolName", "rail1"}, {"poolType", "cidrpool"},
                                        {"kubernetes", {{"kubeconfig", env.kubeconfig}}}, {"data_dir", env.data_dir}}},
                              {"policyRouting", true}});
    p.start();   // --node-name node-1
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
    CHECK(server.stats()["requests"].get<std::uint64_t>() == before);   // the node's block is cached locally
    // ... and the count does see a read of the pool (the comparison above could fail).
    REQUIRE(server.request("GET", api + "/rail1").status == 200);
    CHECK(server.stats()["requests"].get<std::uint64_t>() > before);
}
