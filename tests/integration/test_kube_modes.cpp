// The Kubernetes datastore where a network's configuration or credentials change under it, on both
// servers: refused credentials in node-slice mode are never an outage (ADD fails with code 5, DEL
// releases on the node and says so at error level, doctor and the agent report it); a range used
// in one mode is refused in the other (code 7) until the first mode holds nothing; reconcile
// summarises, in one line, the slice IPPools' entries that by design have no reservation.
#include "test_kube_util.hpp"

#include <filesystem>

using namespace kube_test;
using ipam_plugin_test::first_ip;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

// The doctor findings of `check` for a node's data dir.
std::vector<json> doctor_findings(const Env& env, const std::string& node, const std::string& check) {
    const auto r =
        env.ctl({"doctor", "--json", "--ipam-data-dir", env.data_dir + "/" + node, "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    const json report = json::parse(r.out);
    std::vector<json> out;
    for (const auto& c : report["checks"])
        if (c["check"] == check) out.push_back(c);
    return out;
}

}  // namespace

TEST_CASE(
    "node slices: a 401 or 403 is no outage - ADD fails with code 5, DEL releases locally with an error, "
    "doctor and the agent report it until the credentials work",
    "[kube][integration][slices][credentials]") {
    ServerUnderTest server;
    Env env(server);
    INFO("against the " << server.name());
    const std::string log = server.dir() + "/ipam.log";
    const json conf =
        env.conf("10.91.0.0/24",
                 {{"node_slice_size", "/26"}, {"network_name", "cred"}, {"log_file", log}, {"log_level", "verbose"}});
    const std::string pool = "cred-node-a-10.91.0.0-26";
    auto a1 = call_on(env, "node-a", "ADD", conf, "a1");
    INFO(a1.describe());
    REQUIRE(a1.exit_code == 0);
    REQUIRE(first_ip(a1) == "10.91.0.1");

    // The node's credentials expire (401): the node still holds a slice with free addresses, but
    // ADD hands out nothing and says why, naming the kubeconfig.
    Env revoked(server, apiserver_test::KubeconfigOptions{.token = "revoked-token"}, "revoked-kubeconfig");
    json bad_conf = conf;
    bad_conf["ipam"]["kubernetes"]["kubeconfig"] = revoked.kubeconfig;
    auto a2 = call_on(env, "node-a", "ADD", bad_conf, "a2");
    INFO(a2.describe());
    CHECK(a2.exit_code != 0);
    CHECK(a2.code() == 5);
    CHECK_THAT(a2.msg(), Catch::Contains("401") && Catch::Contains(revoked.kubeconfig) &&
                             Catch::Contains("hands out no address it cannot publish"));
    CHECK(a2.msg().find("revoked-token") == std::string::npos);
    CHECK_THAT(slurp(log), Catch::Contains("[error]") && Catch::Contains("401"));

    // DEL with them: released on the node (the runtime's retries would not fix the token), an
    // error in the log, the release kept for publication.
    auto d1 = call_on(env, "node-a", "DEL", bad_conf, "a1");
    INFO(d1.describe());
    CHECK(d1.exit_code == 0);
    CHECK(get(server, "/ippools/" + pool)["spec"]["allocations"].contains("1"));  // not published
    const std::string backlog = env.data_dir + "/node-a/kubernetes/slices/backlog";
    CHECK_FALSE(std::filesystem::is_empty(backlog));
    const std::string log_text = slurp(log);
    CHECK_THAT(log_text, Catch::Contains("released a1 net1 on this node, but the API server refused"));

    // doctor says so, from the node's own record (no API request needed).
    auto found = doctor_findings(env, "node-a", "ipam.kube.credentials");
    REQUIRE(found.size() == 1);
    CHECK(found[0]["status"] == "fail");
    CHECK_THAT(found[0]["message"].get<std::string>(),
               Catch::Contains("refused this node's credentials") && Catch::Contains(revoked.kubeconfig));

    // The agent, with the same credentials: an error line per refused step.
    const std::string agent_policy = server.dir() + "/agent-policy.json";
    std::ofstream(agent_policy)
        << json{{"version", 1}, {"logDir", server.dir()}, {"stateDir", server.dir() + "/state"}}.dump();
    const auto agent = rdmanet::test::run_process(
        {rdmanet::test::bin_dir() + "/rdmanetctl", "agent", "--passes", "1", "--kubeconfig", revoked.kubeconfig,
         "--node-name", "node-a", "--ipam-data-dir", env.data_dir + "/node-a"},
        {{"RDMANET_POLICY_FILE", agent_policy}});
    INFO(agent.out << agent.err);
    CHECK_THAT(agent.err, Catch::Contains("agent: error:") && Catch::Contains("refused the credentials"));

    // RBAC that grants nothing (403): the same, naming the identity's missing permission.
    Env forbidden(server, apiserver_test::KubeconfigOptions{.token = server.forbidden_token()}, "forbidden-kubeconfig");
    json forbidden_conf = conf;
    forbidden_conf["ipam"]["kubernetes"]["kubeconfig"] = forbidden.kubeconfig;
    auto a3 = call_on(env, "node-a", "ADD", forbidden_conf, "a3");
    INFO(a3.describe());
    CHECK(a3.code() == 5);
    CHECK_THAT(a3.msg(),
               Catch::Contains("403 Forbidden") && Catch::Contains(forbidden.kubeconfig) && Catch::Contains("cannot"));

    // Credentials fixed: the next ADD publishes the backlog first and gets the lowest free
    // address (the refused ADDs took none); the record is gone, doctor is quiet.
    auto a4 = call_on(env, "node-a", "ADD", conf, "a4");
    INFO(a4.describe());
    REQUIRE(a4.exit_code == 0);
    CHECK(first_ip(a4) == "10.91.0.1");
    CHECK(std::filesystem::is_empty(backlog));
    CHECK(get(server, "/ippools/" + pool)["spec"]["allocations"] ==
          json::parse(R"({"1":{"id":"a4","podref":"ns/pod-a4","ifname":"net1"}})"));
    CHECK(doctor_findings(env, "node-a", "ipam.kube.credentials").empty());
}

TEST_CASE(
    "switching a range between single-pool mode and node slices: refused with code 7 while the other mode "
    "holds addresses, allowed once it holds none",
    "[kube][integration][slices][modes]") {
    ServerUnderTest server;
    Env env(server);
    INFO("against the " << server.name());
    const json single = env.conf("10.90.0.0/24");
    const json sliced = env.conf("10.90.0.0/24", {{"node_slice_size", "/26"}});
    auto s1 = call_on(env, "node-a", "ADD", single, "s1");
    INFO(s1.describe());
    REQUIRE(s1.exit_code == 0);
    REQUIRE(first_ip(s1) == "10.90.0.1");

    // Single pool -> node slices with a live allocation: refused, nothing claimed, how-to named.
    auto n1 = call_on(env, "node-b", "ADD", sliced, "n1");
    INFO(n1.describe());
    CHECK(n1.exit_code != 0);
    CHECK(n1.code() == 7);
    CHECK_THAT(n1.msg(), Catch::Contains("single-pool mode") && Catch::Contains("IPPool 10.90.0.0-24") &&
                             Catch::Contains("10.90.0.1 for ns/pod-s1") && Catch::Contains("rdmanetctl pool show"));
    CHECK(server.request("GET", kApi + "/nodeslicepools/kubenet").status == 404);

    // Once the single pool is empty the switch goes through, and the empty IPPool is removed ...
    REQUIRE(call_on(env, "node-a", "DEL", single, "s1").exit_code == 0);
    auto n2 = call_on(env, "node-b", "ADD", sliced, "n2");
    INFO(n2.describe());
    REQUIRE(n2.exit_code == 0);
    CHECK(first_ip(n2) == "10.90.0.1");
    CHECK(server.request("GET", kApi + "/ippools/10.90.0.0-24").status == 404);

    // ... so that a node still in single-pool mode cannot hand out the slices' addresses.
    auto s2 = call_on(env, "node-a", "ADD", single, "s2");
    INFO(s2.describe());
    CHECK(s2.exit_code != 0);
    CHECK(s2.code() == 7);
    CHECK_THAT(s2.msg(), Catch::Contains("divided into node slices") && Catch::Contains("NodeSlicePool kubenet"));
    CHECK(server.request("GET", kApi + "/ippools/10.90.0.0-24").status == 404);
    // Steady state in slice mode is unchanged: the node's next ADD is one request.
    const auto before = server.stats()["requests"].get<long>();
    auto n3 = call_on(env, "node-b", "ADD", sliced, "n3");
    REQUIRE(n3.exit_code == 0);
    CHECK(first_ip(n3) == "10.90.0.2");
    CHECK(server.stats()["requests"].get<long>() - before == 1);
}

TEST_CASE("rdmanetctl reconcile: entries of slice IPPools are summarised in one line, not listed as unreserved",
          "[kube][integration][slices][reconcile]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.92.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "quiet"}});
    for (int i = 0; i < 5; ++i) {
        server.create_pod_on("ns", "pod-q" + std::to_string(i), "node-a");
        REQUIRE(call_on(env, "node-a", "ADD", conf, "q" + std::to_string(i)).exit_code == 0);
    }
    server.create_node("node-a");
    const auto r = env.ctl({"reconcile", "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("no reservation (left alone)") == std::string::npos);
    CHECK_THAT(r.out, Catch::Contains("5 entries of node-slice IPPools have no reservation"));
    CHECK_THAT(r.out, Catch::Contains("5 allocations kept, 0 released"));
}

// Without network_name the NodeSlicePool carries the network's name ("kubenet") while the slice
// IPPools are named "<node>-<slice>" alone; a node whose own name has dashes ("rn-node-b") must
// not make them look like an unrelated pool of another network.
TEST_CASE("rdmanetctl reconcile --dry-run: slice IPPools without network_name are recognised",
          "[kube][integration][slices][reconcile]") {
    ServerUnderTest server;
    Env env(server);
    const json conf = env.conf("10.94.0.0/24", {{"node_slice_size", "/26"}});
    for (int i = 0; i < 3; ++i) {
        server.create_pod_on("ns", "pod-r" + std::to_string(i), "rn-node-b");
        REQUIRE(call_on(env, "rn-node-b", "ADD", conf, "r" + std::to_string(i)).exit_code == 0);
    }
    server.create_node("rn-node-b");
    REQUIRE(server.request("GET", kApi + "/ippools/rn-node-b-10.94.0.0-26").status == 200);
    const auto r = env.ctl({"reconcile", "--dry-run", "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("no reservation (left alone)") == std::string::npos);
    CHECK_THAT(r.out, Catch::Contains("3 entries of node-slice IPPools have no reservation"));
}

// NodeSlicePool "rn" (10.94.0.0/24 in /26 slices, node-b holding 10.94.0.0/26) and its slice IPPool
// rn-node-b-10.94.0.0-26 with two entries: the dry run counts the two entries in the summary line
// and lists neither as unreserved, on the real kube-apiserver as on the in-repo one; once their
// pods are gone it would release them, still without listing them as unreserved (an entry that is
// released is not left alone).
TEST_CASE(
    "rdmanetctl reconcile --dry-run: the two entries of node-b's slice of NodeSlicePool rn are counted, not "
    "listed",
    "[kube][integration][slices][reconcile]") {
    ServerUnderTest server;
    Env env(server);
    INFO("against the " << server.name());
    const json conf = env.conf("10.94.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "rn"}});
    for (int i = 1; i <= 2; ++i) {
        server.create_pod_on("ns", "pod-rn" + std::to_string(i), "node-b");
        auto a = call_on(env, "node-b", "ADD", conf, "rn" + std::to_string(i));
        INFO(a.describe());
        REQUIRE(a.exit_code == 0);
        CHECK(first_ip(a) == "10.94.0." + std::to_string(i));
    }
    server.create_node("node-b");
    const json nsp = get(server, "/nodeslicepools/rn");
    INFO(nsp.dump());
    REQUIRE(nsp["spec"]["range"] == "10.94.0.0/24");
    REQUIRE(nsp["status"]["allocations"] == json::array({{{"nodeName", "node-b"}, {"sliceRange", "10.94.0.0/26"}}}));
    REQUIRE(get(server, "/ippools/rn-node-b-10.94.0.0-26")["spec"]["allocations"].size() == 2);
    REQUIRE(server.list(kNs, "overlappingrangeipreservations").empty());

    const auto r = env.ctl({"reconcile", "--dry-run", "--kubeconfig", env.kubeconfig});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("no reservation (left alone)") == std::string::npos);
    CHECK_THAT(r.out, Catch::Contains("2 entries of node-slice IPPools have no reservation"));
    CHECK_THAT(r.out, Catch::Contains("2 allocations kept, 0 released, 0 reservations deleted"));

    // The pods gone: both would be released, and neither is listed as left alone.
    server.delete_pod("ns", "pod-rn1");
    server.delete_pod("ns", "pod-rn2");
    const auto g = env.ctl({"reconcile", "--dry-run", "--kubeconfig", env.kubeconfig});
    INFO(g.out << g.err);
    REQUIRE(g.exit_code == 0);
    CHECK_THAT(g.out, Catch::Contains("would release rn-node-b-10.94.0.0-26 10.94.0.1 ns/pod-rn1 net1") &&
                          Catch::Contains("would release rn-node-b-10.94.0.0-26 10.94.0.2 ns/pod-rn2 net1"));
    CHECK(g.out.find("no reservation (left alone)") == std::string::npos);
    CHECK(g.out.find("entries of node-slice IPPools") == std::string::npos);
    CHECK_THAT(g.out, Catch::Contains("0 allocations kept, 2 released"));
    // A dry run changes nothing.
    CHECK(get(server, "/ippools/rn-node-b-10.94.0.0-26")["spec"]["allocations"].size() == 2);
}
