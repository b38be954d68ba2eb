// The test API server's faithfulness, checked with the real kubectl on the machine: what kubectl
// creates, lists and deletes is what rdmanet reads and writes, and the reverse. kubectl is part of
// the test environment (tests/run.sh); its absence is a failure, not a skip.
#include "test_kube_util.hpp"

#include <unistd.h>

using namespace kube_test;

namespace {

std::string kubectl_path() {
    for (const char* p : {"/usr/bin/kubectl", "/usr/local/bin/kubectl", "/snap/bin/kubectl"}) {
        if (::access(p, X_OK) == 0) return p;
    }
    return "";
}

rdmanet::test::ProcessResult kubectl(const Env& env, std::vector<std::string> args) {
    const std::string path = kubectl_path();
    REQUIRE_FALSE(path.empty());  // kubectl must be installed for this suite
    std::vector<std::string> argv{
        path, "--kubeconfig", env.kubeconfig, "--cache-dir", env.server.dir() + "/kubectl-cache", "--request-timeout",
        "20s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return rdmanet::test::run_process(argv, {{"HOME", env.server.dir()}}, "", std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("test API server: kubectl create/get/delete of IPPools, interoperating with rdmanet",
          "[kube][integration][kubectl]") {
    TestApiServer server;
    Env env(server);
    const std::string manifest = server.dir() + "/pool.yaml";
    std::ofstream(manifest)
        << "apiVersion: whereabouts.cni.cncf.io/v1alpha1\nkind: IPPool\nmetadata:\n"
           "  name: green-10.70.0.0-24\n  namespace: kube-system\nspec:\n  range: 10.70.0.0/24\n"
           "  allocations:\n    \"1\":\n      id: abc\n      podref: ml/made-by-kubectl\n      ifname: net1\n";

    auto create = kubectl(env, {"create", "-f", manifest, "--validate=false"});
    INFO("kubectl create: " << create.exit_code << " " << create.out << create.err);
    REQUIRE(create.exit_code == 0);
    CHECK_THAT(create.out, Catch::Contains("ippool.whereabouts.cni.cncf.io/green-10.70.0.0-24 created"));

    // Creating it again: kubectl reports AlreadyExists from our Status object.
    auto again = kubectl(env, {"create", "-f", manifest, "--validate=false"});
    CHECK(again.exit_code != 0);
    CHECK_THAT(again.err, Catch::Contains("AlreadyExists") || Catch::Contains("already exists"));

    // rdmanet respects kubectl's entry and adds its own next to it.
    auto add = env.call("ADD", env.conf("10.70.0.0/24", {{"network_name", "green"}}), "c1", "p1");
    INFO(add.describe());
    REQUIRE(add.exit_code == 0);
    CHECK(ipam_plugin_test::first_ip(add) == "10.70.0.2");

    auto get = kubectl(env, {"get", "ippools", "-n", "kube-system", "-o", "json"});
    INFO("kubectl get: " << get.out << get.err);
    REQUIRE(get.exit_code == 0);
    json list = json::parse(get.out);
    REQUIRE(list["items"].size() == 1);
    CHECK(list["items"][0]["spec"]["allocations"]["2"]["podref"] == "ns/p1");
    CHECK(list["items"][0]["spec"]["allocations"]["1"]["podref"] == "ml/made-by-kubectl");

    auto table = kubectl(env, {"get", "ippools.whereabouts.cni.cncf.io", "-n", "kube-system"});
    INFO(table.out << table.err);
    REQUIRE(table.exit_code == 0);
    CHECK_THAT(table.out, Catch::Contains("green-10.70.0.0-24"));

    auto reservations_out = kubectl(env, {"get", "overlappingrangeipreservations", "-n", "kube-system", "-o", "name"});
    REQUIRE(reservations_out.exit_code == 0);
    CHECK_THAT(reservations_out.out,
               Catch::Contains("overlappingrangeipreservation.whereabouts.cni.cncf.io/green-10.70.0.2"));

    auto one =
        kubectl(env, {"get", "ippool", "green-10.70.0.0-24", "-n", "kube-system", "-o", "jsonpath={.spec.range}"});
    REQUIRE(one.exit_code == 0);
    CHECK(one.out == "10.70.0.0/24");

    auto missing = kubectl(env, {"get", "ippool", "nope", "-n", "kube-system"});
    CHECK(missing.exit_code != 0);
    CHECK_THAT(missing.err, Catch::Contains("NotFound") || Catch::Contains("not found"));

    auto del = kubectl(env, {"delete", "ippool", "green-10.70.0.0-24", "-n", "kube-system"});
    INFO("kubectl delete: " << del.out << del.err);
    REQUIRE(del.exit_code == 0);
    CHECK_THAT(del.out, Catch::Contains("deleted"));
    CHECK(server.list("kube-system", "ippools").empty());

    // A wrong token: kubectl sees our 401.
    Env bad(server, apiserver_test::KubeconfigOptions{.token = "wrong"}, "bad-kubeconfig");
    auto unauthorized = kubectl(bad, {"get", "ippools", "-n", "kube-system"});
    CHECK(unauthorized.exit_code != 0);
    CHECK_THAT(unauthorized.err, Catch::Contains("Unauthorized") || Catch::Contains("credentials"));
}
