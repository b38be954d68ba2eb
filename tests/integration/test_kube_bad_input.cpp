// Kubernetes datastore, bad input: each failure is a CNI error naming the cause, fast, no hang.
#include "test_kube_util.hpp"

#include <filesystem>

using namespace kube_test;

namespace {

// ADD expected to fail quickly with `code` and a message containing `needle`.
void expect_error(const Env& env, const json& conf, int code, const std::string& needle) {
    const auto start = std::chrono::steady_clock::now();
    auto r = env.call("ADD", conf, "bad", "bad-pod", "net1", std::chrono::seconds(30));
    const auto took = std::chrono::steady_clock::now() - start;
    INFO(r.describe());
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code != 0);
    CHECK(r.code() == code);
    CHECK_THAT(r.msg(), Catch::Contains(needle));
    CHECK(took < std::chrono::seconds(5));
    // The token never shows up in what the plugin prints.
    CHECK(r.out.find(env.server.token()) == std::string::npos);
    CHECK(r.err.find(env.server.token()) == std::string::npos);
}

}  // namespace

TEST_CASE("kube datastore bad input: missing, unreadable and invalid kubeconfig", "[kube][integration][bad]") {
    ServerUnderTest server;
    Env env(server);
    expect_error(env, env.conf("10.60.0.0/24", {}, server.dir() + "/does-not-exist"), 7, "does-not-exist");
    const std::string garbage = server.dir() + "/garbage.kubeconfig";
    std::ofstream(garbage) << "clusters: [\n  - {name: x\n";
    expect_error(env, env.conf("10.60.0.0/24", {}, garbage), 7, "not valid YAML");
    const std::string no_ctx = server.dir() + "/noctx.kubeconfig";
    std::ofstream(no_ctx) << "apiVersion: v1\nkind: Config\nclusters: []\n";
    expect_error(env, env.conf("10.60.0.0/24", {}, no_ctx), 7, "no current-context");
    json no_key = env.conf("10.60.0.0/24");
    no_key["ipam"]["kubernetes"] = json::object();
    auto r = env.call("ADD", no_key, "bad", "bad-pod");
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.msg(), Catch::Contains("kubeconfig"));
}

TEST_CASE("kube datastore bad input: a server certificate from another CA is refused", "[kube][integration][bad]") {
    ServerUnderTest server;
    apiserver_test::make_test_pki(server.dir(), "other-");
    Env env(server, apiserver_test::KubeconfigOptions{.ca_file = server.dir() + "/other-ca.crt"});
    expect_error(env, env.conf("10.61.0.0/24"), 5, "TLS verification");
    // The same with the right CA works (and a CA from a file, not embedded, next to the kubeconfig
    // where the node policy allows it).
    std::filesystem::copy_file(server.ca_file(), server.dir() + "/right-ca.crt");
    const std::string good = server.write_kubeconfig(
        "good", apiserver_test::KubeconfigOptions{.embed_ca = false, .ca_file = server.dir() + "/right-ca.crt"});
    auto ok = env.call("ADD", env.conf("10.61.0.0/24", {}, good), "c1", "p1");
    INFO(ok.describe());
    CHECK(ok.exit_code == 0);
}

TEST_CASE("kube datastore bad input: an expired/unknown token gets 401, named", "[kube][integration][bad]") {
    ServerUnderTest server;
    Env env(server, apiserver_test::KubeconfigOptions{.token = "expired-token"});
    expect_error(env, env.conf("10.62.0.0/24"), 5, "401");
    auto r = env.call("ADD", env.conf("10.62.0.0/24"), "bad", "bad-pod");
    CHECK_THAT(r.msg(), Catch::Contains("rejected the credentials") && Catch::Contains(env.kubeconfig));
    CHECK(r.msg().find("expired-token") == std::string::npos);
}

TEST_CASE("kube datastore bad input: whereabouts CRDs not installed (404 on the group)", "[kube][integration][bad]") {
    ServerUnderTest server({.crds = false});
    Env env(server);
    expect_error(env, env.conf("10.63.0.0/24"), 5, "CRDs");
}

TEST_CASE("kube datastore bad input: tokenFile and insecure-skip-tls-verify work", "[kube][integration]") {
    ServerUnderTest server;
    Env env(server, apiserver_test::KubeconfigOptions{.insecure = true, .token_file = true});
    auto r = env.call("ADD", env.conf("10.64.0.0/24"), "c1", "p1");
    INFO(r.describe());
    CHECK(r.exit_code == 0);
}
