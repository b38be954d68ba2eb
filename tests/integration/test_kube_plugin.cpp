// Kubernetes datastore through bin/rdmanet-ipam against the test API server: ADD/DEL/re-ADD,
// pools pre-filled by whereabouts, GC, rdmanetctl pool and reconcile.
#include "test_kube_util.hpp"

using namespace kube_test;
using ipam_plugin_test::first_ip;

TEST_CASE("kube datastore: ADD records pool entry and reservation, re-ADD keeps the address, DEL removes both",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.40.0.0/24");

    auto a = env.call("ADD", conf, "ctr-a", "pod-a");
    INFO(a.describe());
    REQUIRE(a.exit_code == 0);
    CHECK(first_ip(a) == "10.40.0.1");
    CHECK(a.json["ips"][0]["address"] == "10.40.0.1/24");

    json allocs = allocations(server, "10.40.0.0-24");
    REQUIRE(allocs.size() == 1);
    CHECK(allocs["1"] == json{{"id", "ctr-a"}, {"podref", "ns/pod-a"}, {"ifname", "net1"}});
    auto res = reservations(server);
    REQUIRE(res.count("10.40.0.1"));
    CHECK(res["10.40.0.1"]["podref"] == "ns/pod-a");

    auto b = env.call("ADD", conf, "ctr-b", "pod-b");
    REQUIRE(b.exit_code == 0);
    CHECK(first_ip(b) == "10.40.0.2");

    // Sandbox re-created: same pod + ifname, new container id -> same address, id updated.
    auto again = env.call("ADD", conf, "ctr-a2", "pod-a");
    INFO(again.describe());
    REQUIRE(again.exit_code == 0);
    CHECK(first_ip(again) == "10.40.0.1");
    CHECK(allocations(server, "10.40.0.0-24")["1"]["id"] == "ctr-a2");

    // DEL is by container id + ifname: the old id holds nothing any more.
    REQUIRE(env.call("DEL", conf, "ctr-a", "pod-a").exit_code == 0);
    CHECK(allocations(server, "10.40.0.0-24").size() == 2);
    REQUIRE(env.call("DEL", conf, "ctr-a2", "pod-a").exit_code == 0);
    REQUIRE(env.call("DEL", conf, "ctr-b", "pod-b").exit_code == 0);
    CHECK(allocations(server, "10.40.0.0-24").empty());
    CHECK(reservations(server).empty());
    // DEL of nothing is success.
    CHECK(env.call("DEL", conf, "ctr-b", "pod-b").exit_code == 0);
    CHECK(consistency_problems(server, "10.40.0.0-24", (10u << 24) | (40u << 16)).empty());
}

TEST_CASE("kube datastore: the pool object lives in the kubeconfig context's namespace, named with network_name",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server, apiserver_test::KubeconfigOptions{.ns = "rdma"});
    const json conf = env.conf("10.41.0.0/24", {{"network_name", "blue"}});
    auto a = env.call("ADD", conf, "c1", "p1");
    INFO(a.describe());
    REQUIRE(a.exit_code == 0);
    auto r = server.request("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/rdma/ippools/blue-10.41.0.0-24");
    REQUIRE(r.status == 200);
    CHECK(r.body["spec"]["range"] == "10.41.0.0/24");
    CHECK(
        server
            .request(
                "GET",
                "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/rdma/overlappingrangeipreservations/blue-10.41.0.1")
            .status == 200);
    CHECK(server.list(kNs, "ippools").empty());
}

TEST_CASE("kube datastore: enable_overlapping_ranges false writes no reservation (2 requests per ADD)",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.42.0.0/24", {{"enable_overlapping_ranges", false}});
    REQUIRE(env.call("ADD", conf, "c1", "p1").exit_code == 0);  // creates the pool
    const auto before = server.stats()["requests"].get<int>();
    REQUIRE(env.call("ADD", conf, "c2", "p2").exit_code == 0);
    CHECK(server.stats()["requests"].get<int>() - before == 2);  // GET + PATCH
    CHECK(reservations(server).empty());
    CHECK(allocations(server, "10.42.0.0-24").size() == 2);
}

TEST_CASE("kube datastore: uncontended ADD with reservations = GET + PATCH + reservation create",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.43.0.0/24");
    REQUIRE(env.call("ADD", conf, "c1", "p1").exit_code == 0);
    const auto before = server.stats()["by_method"];
    REQUIRE(env.call("ADD", conf, "c2", "p2").exit_code == 0);
    const auto after = server.stats()["by_method"];
    CHECK(after["GET"].get<int>() - before["GET"].get<int>() == 1);
    CHECK(after["PATCH"].get<int>() - before["PATCH"].get<int>() == 1);
    CHECK(after["POST"].get<int>() - before["POST"].get<int>() == 1);
}

TEST_CASE("kube datastore: a pool pre-filled by whereabouts is respected, its entries re-ADDed and DELed",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    // Exactly what whereabouts v0.9.4 writes, including an entry without ifname.
    const json pool = json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
        "metadata":{"name":"blue-10.10.0.0-16","namespace":"kube-system"},
        "spec":{"range":"10.10.0.0/16","allocations":{
          "1":{"id":"3f9ac1","podref":"ml/trainer-0","ifname":"net1"},
          "2":{"id":"77aa01","podref":"ml/trainer-1","ifname":"net1"},
          "4":{"id":"old","podref":"ml/legacy"}}}})");
    REQUIRE(server.request("POST", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools", pool.dump())
                .status == 201);
    for (const auto& [ip, pod] :
         std::map<std::string, std::string>{{"blue-10.10.0.1", "ml/trainer-0"}, {"blue-10.10.0.2", "ml/trainer-1"}}) {
        json orip = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                     {"kind", "OverlappingRangeIPReservation"},
                     {"metadata", {{"name", ip}, {"namespace", "kube-system"}}},
                     {"spec", {{"podref", pod}, {"ifname", "net1"}}}};
        REQUIRE(
            server
                .request("POST",
                         "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/overlappingrangeipreservations",
                         orip.dump())
                .status == 201);
    }
    const json conf = env.conf("10.10.0.0/16", {{"network_name", "blue"}});
    auto a = env.call("ADD", conf, "new-1", "new-pod");
    INFO(a.describe());
    REQUIRE(a.exit_code == 0);
    CHECK(first_ip(a) == "10.10.0.3");

    // whereabouts' pod re-ADDed by rdmanet: its address, its entry updated.
    rdmanet::test::PluginRequest req;
    req.command = "ADD";
    req.container_id = "3f9ac2";
    req.netns = "/var/run/netns/unused";
    req.ifname = "net1";
    req.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0";
    req.path = rdmanet::test::bin_dir();
    req.stdin_data = conf.dump();
    auto re = rdmanet::test::invoke_plugin(ipam_plugin_test::ipam_plugin_path(), req, env.env());
    INFO(re.describe());
    REQUIRE(re.exit_code == 0);
    CHECK(first_ip(re) == "10.10.0.1");
    json allocs = allocations(server, "blue-10.10.0.0-16");
    CHECK(allocs["1"]["id"] == "3f9ac2");
    CHECK(allocs["4"] == json{{"id", "old"}, {"podref", "ml/legacy"}});  // untouched

    // DEL of whereabouts' other allocation by its container id removes entry and reservation.
    req.command = "DEL";
    req.container_id = "77aa01";
    req.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-1";
    REQUIRE(rdmanet::test::invoke_plugin(ipam_plugin_test::ipam_plugin_path(), req, env.env()).exit_code == 0);
    allocs = allocations(server, "blue-10.10.0.0-16");
    CHECK_FALSE(allocs.contains("2"));
    CHECK(reservations(server).count("blue-10.10.0.2") == 0);
    CHECK(reservations(server).count("blue-10.10.0.1") == 1);

    // The next ADD takes the lowest free: .2 again.
    auto b = env.call("ADD", conf, "new-2", "new-pod-2");
    REQUIRE(b.exit_code == 0);
    CHECK(first_ip(b) == "10.10.0.2");
}

TEST_CASE("kube datastore: an address reserved by an overlapping pool is skipped, nothing left behind",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    // Another pool of the same network_name (a /24 inside this /16) holds .1 with its reservation.
    const json wide = env.conf("10.44.0.0/16"), narrow = env.conf("10.44.0.0/24");
    auto n = env.call("ADD", narrow, "n1", "narrow-pod");
    REQUIRE(n.exit_code == 0);
    REQUIRE(first_ip(n) == "10.44.0.1");
    auto w = env.call("ADD", wide, "w1", "wide-pod");
    INFO(w.describe());
    REQUIRE(w.exit_code == 0);
    CHECK(first_ip(w) == "10.44.0.2");
    json allocs = allocations(server, "10.44.0.0-16");
    CHECK(allocs.size() == 1);
    CHECK(allocs.contains("2"));
    CHECK(reservations(server).at("10.44.0.2")["podref"] == "ns/wide-pod");
}

TEST_CASE("kube datastore: GC releases what this node allocated that is not in the valid attachments",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    json conf = env.conf("10.45.0.0/24");
    REQUIRE(env.call("ADD", conf, "keep", "p-keep").exit_code == 0);
    REQUIRE(env.call("ADD", conf, "stale", "p-stale").exit_code == 0);
    conf["cniVersion"] = "1.1.0";
    conf["cni.dev/valid-attachments"] = json::array({{{"containerID", "keep"}, {"ifname", "net1"}}});
    rdmanet::test::PluginRequest req;
    req.command = "GC";
    req.path = rdmanet::test::bin_dir();
    req.stdin_data = conf.dump();
    auto gc = rdmanet::test::invoke_plugin(ipam_plugin_test::ipam_plugin_path(), req, env.env());
    INFO(gc.describe());
    REQUIRE(gc.exit_code == 0);
    json allocs = allocations(server, "10.45.0.0-24");
    CHECK(allocs.size() == 1);
    CHECK(allocs["1"]["id"] == "keep");
    CHECK(reservations(server).size() == 1);
}

TEST_CASE("kube datastore: rdmanetctl pool list/show --kubeconfig", "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    REQUIRE(env.call("ADD", env.conf("10.46.0.0/24", {{"network_name", "red"}}), "c1", "p1").exit_code == 0);
    auto list = env.ctl({"pool", "list", "--kubeconfig", env.kubeconfig});
    INFO(list.out << list.err);
    REQUIRE(list.exit_code == 0);
    CHECK_THAT(list.out,
               Catch::Contains("red-10.46.0.0-24") && Catch::Contains("10.46.0.0/24") && Catch::Contains("1"));
    auto show = env.ctl({"pool", "show", "red-10.46.0.0-24", "--kubeconfig", env.kubeconfig});
    REQUIRE(show.exit_code == 0);
    json j = json::parse(show.out);
    CHECK(j["spec"]["allocations"]["1"]["podref"] == "ns/p1");
    auto missing = env.ctl({"pool", "show", "nope", "--kubeconfig", env.kubeconfig});
    CHECK(missing.exit_code == 1);
    CHECK_THAT(missing.err, Catch::Contains("no pool named \"nope\""));
}

TEST_CASE("kube datastore: rdmanetctl reconcile releases allocations of pods that are gone, keeps live ones",
          "[kube][integration]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.47.0.0/24");
    server.create_pod("ns", "live");
    server.create_pod("ns", "doomed");
    REQUIRE(env.call("ADD", conf, "c-live", "live").exit_code == 0);
    REQUIRE(env.call("ADD", conf, "c-doomed", "doomed").exit_code == 0);
    REQUIRE(env.call("ADD", conf, "c-never", "never-existed").exit_code == 0);
    server.delete_pod("ns", "doomed");
    // A stray reservation (a killed whereabouts DEL) is deleted too.
    json orip = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                 {"kind", "OverlappingRangeIPReservation"},
                 {"metadata", {{"name", "10.47.0.200"}}},
                 {"spec", {{"podref", "ns/ghost"}, {"ifname", "net1"}}}};
    REQUIRE(server
                .request("POST",
                         "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/overlappingrangeipreservations",
                         orip.dump())
                .status == 201);

    auto dry = env.ctl({"reconcile", "--kubeconfig", env.kubeconfig, "--dry-run"});
    INFO(dry.out << dry.err);
    REQUIRE(dry.exit_code == 0);
    CHECK_THAT(dry.out, Catch::Contains("would release 10.47.0.0-24 10.47.0.2 ns/doomed"));
    CHECK(allocations(server, "10.47.0.0-24").size() == 3);

    auto r = env.ctl({"reconcile", "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("released 10.47.0.0-24 10.47.0.2 ns/doomed net1"));
    CHECK_THAT(r.out, Catch::Contains("released 10.47.0.0-24 10.47.0.3 ns/never-existed net1"));
    CHECK_THAT(r.out, Catch::Contains("deleted reservation 10.47.0.200"));
    // The dry run's summary predicts the real run's, line for line.
    auto summary = [](const std::string& out) { return out.substr(out.rfind("reconcile ")); };
    CHECK(summary(dry.out) == summary(r.out));
    CHECK_THAT(summary(r.out), Catch::Contains("1 allocations kept, 2 released, 1 reservations deleted"));
    json allocs = allocations(server, "10.47.0.0-24");
    CHECK(allocs.size() == 1);
    CHECK(allocs["1"]["podref"] == "ns/live");
    CHECK(consistency_problems(server, "10.47.0.0-24", (10u << 24) | (47u << 16)).empty());

    // Without credentials source it refuses with a usage error.
    CHECK(env.ctl({"reconcile"}).exit_code == 2);
}
