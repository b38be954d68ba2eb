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
