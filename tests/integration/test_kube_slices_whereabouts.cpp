// Node slices next to whereabouts v0.9: rdmanet reads the objects whereabouts' node controller and
// plugin wrote (tests/fixtures/whereabouts/) - a NodeSlicePool listing every slice, free ones with
// nodeName "", and slice IPPools with whereabouts' entries - claims a free entry in place,
// allocates in an existing slice IPPool without overwriting or re-using whereabouts' entries, and
// every object it writes passes the CRDs' schemas (deploy/crds/).
#include "test_kube_util.hpp"

#include <fstream>
#include <iterator>

#include "support/crd_schema.hpp"
#include "support/build_paths.hpp"

using namespace kube_test;
using ipam_plugin_test::first_ip;

namespace {

json fixture(const std::string& name) {
    const std::string path = rdmanet::test::source_dir() + "/tests/fixtures/whereabouts/" + name;
    std::ifstream in(path);
    REQUIRE(in);
    return json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

// The object as stored minus what the API server adds (resourceVersion, uid, ...).
json without_server_fields(json o) {
    for (const char* k : {"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"})
        o["metadata"].erase(k);
    return o;
}

void require_valid(const json& schema, const json& object) {
    const auto problems = rdmanet::test::schema_problems(schema, object);
    for (const auto& p : problems)
        UNSCOPED_INFO(object.value("kind", "?") << " " << object["metadata"].value("name", "?") << ": " << p);
    CHECK(problems.empty());
}

}  // namespace

TEST_CASE("CRD schema check: catches what the API server would refuse or prune", "[kube][integration][slices][crd]") {
    const json pool_schema = rdmanet::test::crd_schema("whereabouts.cni.cncf.io_ippools.yaml");
    const json nsp_schema = rdmanet::test::crd_schema("whereabouts.cni.cncf.io_nodeslicepools.yaml");
    // whereabouts' own objects pass.
    CHECK(rdmanet::test::schema_problems(nsp_schema, fixture("nodeslicepool-green.json")).empty());
    CHECK(rdmanet::test::schema_problems(pool_schema, fixture("ippool-green-node-a-10.77.0.0-26.json")).empty());
    // A missing required field, a wrong type, an undeclared field.
    json bad = fixture("ippool-green-node-a-10.77.0.0-26.json");
    bad["spec"]["allocations"]["1"].erase("podref");
    bad["spec"]["allocations"]["2"]["id"] = 7;
    bad["spec"]["owner"] = "x";
    CHECK(rdmanet::test::schema_problems(pool_schema, bad) ==
          std::vector<std::string>{"spec.allocations.1.podref: required",
                                   "spec.allocations.2.id: number where the schema wants string",
                                   "spec.owner: not in the schema (the API server prunes it)"});
    json nsp = fixture("nodeslicepool-green.json");
    nsp["status"]["allocations"][1].erase("nodeName");
    nsp["spec"].erase("sliceSize");
    CHECK(rdmanet::test::schema_problems(nsp_schema, nsp) ==
          std::vector<std::string>{"spec.sliceSize: required", "status.allocations.1.nodeName: required"});
}

TEST_CASE(
    "node slices with whereabouts v0.9's objects: a listed free slice is claimed in place, whereabouts' entries "
    "are kept and never handed out again, rdmanet's objects pass the CRD schemas",
    "[kube][integration][slices][whereabouts]") {
    ServerUnderTest server;
    Env env(server);
    const json nsp_in = fixture("nodeslicepool-green.json");
    const json pool_a_in = fixture("ippool-green-node-a-10.77.0.0-26.json");
    const json pool_w_in = fixture("ippool-green-node-w1-10.77.0.64-26.json");
    REQUIRE(server.request("POST", kApi + "/nodeslicepools", nsp_in.dump()).status == 201);
    REQUIRE(server.request("POST", kApi + "/ippools", pool_a_in.dump()).status == 201);
    REQUIRE(server.request("POST", kApi + "/ippools", pool_w_in.dump()).status == 201);
    const json conf = env.conf("10.77.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "green"}});

    // node-a: whereabouts' controller gave it 10.77.0.0/26 and whereabouts' plugin allocated .1
    // and .2 there. rdmanet takes over the node: it uses that slice and hands out .3.
    auto a1 = call_on(env, "node-a", "ADD", conf, "a1");
    INFO(a1.describe());
    REQUIRE(a1.exit_code == 0);
    CHECK(first_ip(a1) == "10.77.0.3");
    auto a2 = call_on(env, "node-a", "ADD", conf, "a2");
    REQUIRE(a2.exit_code == 0);
    CHECK(first_ip(a2) == "10.77.0.4");
    json pool_a = get(server, "/ippools/green-node-a-10.77.0.0-26");
    CHECK(pool_a["spec"]["range"] == "10.77.0.0/26");
    json expected = pool_a_in["spec"]["allocations"];
    expected["3"] = {{"id", "a1"}, {"podref", "ns/pod-a1"}, {"ifname", "net1"}};
    expected["4"] = {{"id", "a2"}, {"podref", "ns/pod-a2"}, {"ifname", "net1"}};
    CHECK(pool_a["spec"]["allocations"] == expected);
    // The NodeSlicePool is unchanged: node-a already held its slice.
    CHECK(get(server, "/nodeslicepools/green")["status"] == nsp_in["status"]);

    // node-b holds nothing: it claims the first free entry in place (nodeName "" -> node-b), the
    // list keeps every slice in its order.
    auto b1 = call_on(env, "node-b", "ADD", conf, "b1");
    INFO(b1.describe());
    REQUIRE(b1.exit_code == 0);
    CHECK(first_ip(b1) == "10.77.0.129");
    const json nsp = get(server, "/nodeslicepools/green");
    json want_status = nsp_in["status"];
    want_status["allocations"][2]["nodeName"] = "node-b";
    CHECK(nsp["status"] == want_status);
    CHECK(nsp["spec"] == nsp_in["spec"]);
    CHECK(nsp["metadata"]["ownerReferences"] == nsp_in["metadata"]["ownerReferences"]);
    CHECK(get(server, "/ippools/green-node-b-10.77.0.128-26")["spec"]["allocations"] ==
          json::parse(R"({"1":{"id":"b1","podref":"ns/pod-b1","ifname":"net1"}})"));
    // Another node's whereabouts IPPool is not touched.
    CHECK(without_server_fields(get(server, "/ippools/green-node-w1-10.77.0.64-26")) == pool_w_in);

    // DEL removes rdmanet's entry only; whereabouts' stay, and their addresses are still not
    // handed out (the next ADD gets .3 again, not .1).
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    expected.erase("3");
    CHECK(get(server, "/ippools/green-node-a-10.77.0.0-26")["spec"]["allocations"] == expected);
    auto a3 = call_on(env, "node-a", "ADD", conf, "a3");
    REQUIRE(a3.exit_code == 0);
    CHECK(first_ip(a3) == "10.77.0.3");

    // Every object rdmanet wrote passes the CRD schemas, as does one it created from scratch.
    const json pool_schema = rdmanet::test::crd_schema("whereabouts.cni.cncf.io_ippools.yaml");
    const json nsp_schema = rdmanet::test::crd_schema("whereabouts.cni.cncf.io_nodeslicepools.yaml");
    const json fresh = env.conf("10.78.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "fresh"}});
    REQUIRE(call_on(env, "node-a", "ADD", fresh, "f1").exit_code == 0);
    REQUIRE(call_on(env, "node-b", "ADD", fresh, "f2").exit_code == 0);
    const auto nsps = server.list(kNs, "nodeslicepools");
    CHECK(nsps.size() == 2);
    for (const auto& o : nsps) require_valid(nsp_schema, o);
    const auto pools = server.list(kNs, "ippools");
    CHECK(pools.size() == 5);  // green: node-a, node-w1, node-b; fresh: node-a, node-b
    for (const auto& o : pools) require_valid(pool_schema, o);
}
