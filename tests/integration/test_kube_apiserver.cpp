// Run against both servers (test_kube_util.hpp): what the in-repo server answers is what the real
// kube-apiserver answers. The test API server's shortcuts (resource_store.hpp) give what the straightforward way gives:
// a JSON patch that changes only IPPool allocation entries is schema-checked on those entries and
// re-serializes only them, yet every answer is the text a whole-object serialization makes and a
// bad entry is refused as the whole-object check refuses it; and the PartialObjectMetadata
// transform (which rdmanet's pool PATCH asks for) answers with the object's metadata only.
#include "test_kube_util.hpp"

using namespace kube_test;

namespace {

const std::string kPools = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools";
const std::string kPool = kPools + "/blue-10.60.0.0-24";
const std::string kMetadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

json entry(const std::string& id, const std::string& podref) {
    return {{"id", id}, {"podref", podref}, {"ifname", "net1"}};
}

// The stored object, checked to be sent exactly as a whole-object serialization writes it.
json get_pool(const ApiServer& s) {
    auto r = s.request("GET", kPool);
    REQUIRE(r.status == 200);
    // The in-repo server's text is exactly a whole-object serialization (compact, keys sorted);
    // the real one adds metadata.managedFields and a newline.
    if (!s.is_real()) CHECK(r.text == r.body.dump());
    return r.body;
}

apiserver_test::HttpResult patch(const ApiServer& s, const json& ops, const std::string& accept = "") {
    return s.request("PATCH", kPool, ops.dump(), "application/json-patch+json", accept);
}

}  // namespace

TEST_CASE("test API server: per-entry patches answer and validate as whole-object writes would",
          "[kube][integration][apiserver]") {
    ServerUnderTest server;
    json allocs = json::object();
    for (int i = 1; i <= 40; ++i)
        allocs[std::to_string(i)] = entry("c" + std::to_string(i), "ns/p" + std::to_string(i));
    allocs["41"] = entry("esc\"\\\n\u00e9\U0001F600", "ns/\u2603");  // text that needs escapes and UTF-8
    json pool = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                 {"kind", "IPPool"},
                 {"metadata", {{"name", "blue-10.60.0.0-24"}, {"namespace", "kube-system"}}},
                 {"spec", {{"range", "10.60.0.0/24"}, {"allocations", allocs}}}};
    REQUIRE(server.request("POST", kPools, pool.dump()).status == 201);
    json expected = get_pool(server)["spec"]["allocations"];
    CHECK(expected == allocs);

    // Entry-level patches: add, replace, remove (and a nested field), each answered with the
    // whole object whose text is a whole-object serialization of the new state.
    auto r =
        patch(server, json::array({{{"op", "test"}, {"path", "/spec/allocations/50"}, {"value", nullptr}},
                                   {{"op", "add"}, {"path", "/spec/allocations/50"}, {"value", entry("c50", "ns/p50")}},
                                   {{"op", "remove"}, {"path", "/spec/allocations/3"}},
                                   {{"op", "replace"}, {"path", "/spec/allocations/7/podref"}, {"value", "ns/q7"}}}));
    REQUIRE(r.status == 200);
    if (!server.is_real()) CHECK(r.text == r.body.dump());
    expected["50"] = entry("c50", "ns/p50");
    expected.erase("3");
    expected["7"]["podref"] = "ns/q7";
    CHECK(r.body["spec"]["allocations"] == expected);
    CHECK(get_pool(server)["spec"]["allocations"] == expected);

    // What the CRD schema rejects in a changed entry is still rejected (422 Invalid naming the
    // field), and the object is left as it was.
    const std::string rv = get_pool(server)["metadata"]["resourceVersion"];
    r = patch(server, json::array({{{"op", "add"}, {"path", "/spec/allocations/60"}, {"value", {{"id", "c60"}}}}}));
    CHECK(r.status == 422);
    CHECK(r.body["reason"] == "Invalid");
    CHECK_THAT(r.body["message"].get<std::string>(), Catch::Contains("spec.allocations.60.podref: Required value"));
    r = patch(server, json::array({{{"op", "remove"}, {"path", "/spec/allocations/7/id"}}}));
    CHECK(r.status == 422);
    CHECK_THAT(r.body["message"].get<std::string>(), Catch::Contains("spec.allocations.7.id: Required value"));
    r = patch(server, json::array({{{"op", "replace"}, {"path", "/spec/allocations/8"}, {"value", "not-an-object"}}}));
    CHECK(r.status == 422);
    json unchanged = get_pool(server);
    CHECK(unchanged["spec"]["allocations"] == expected);
    CHECK(unchanged["metadata"]["resourceVersion"] == rv);

    // A patch of something else (metadata), a merge patch and a failed test in between: the
    // entries written afterwards still come out right.
    REQUIRE(
        patch(server, json::array({{{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"a", "b"}}}}})).status ==
        200);
    REQUIRE(patch(server,
                  json::array({{{"op", "add"}, {"path", "/spec/allocations/61"}, {"value", entry("c61", "ns/p61")}}}))
                .status == 200);
    expected["61"] = entry("c61", "ns/p61");
    CHECK(patch(server, json::array({{{"op", "test"}, {"path", "/spec/allocations/61"}, {"value", nullptr}},
                                     {{"op", "add"}, {"path", "/spec/allocations/61"}, {"value", entry("x", "ns/x")}}}))
              .status == 422);
    auto merge = server.request(
        "PATCH", kPool, json{{"spec", {{"allocations", {{"62", entry("c62", "ns/p62")}, {"1", nullptr}}}}}}.dump(),
        "application/merge-patch+json");
    REQUIRE(merge.status == 200);
    expected["62"] = entry("c62", "ns/p62");
    expected.erase("1");
    REQUIRE(patch(server,
                  json::array({{{"op", "remove"}, {"path", "/spec/allocations/62"}},
                               {{"op", "add"}, {"path", "/spec/allocations/63"}, {"value", entry("c63", "ns/p63")}}}))
                .status == 200);
    expected.erase("62");
    expected["63"] = entry("c63", "ns/p63");
    json now = get_pool(server);
    CHECK(now["spec"]["allocations"] == expected);
    CHECK(now["metadata"]["labels"] == json{{"a", "b"}});

    // A patch that replaces the whole map is checked as a whole: a bad entry in it is refused.
    CHECK(patch(server,
                json::array({{{"op", "replace"}, {"path", "/spec/allocations"}, {"value", {{"1", {{"id", "x"}}}}}}}))
              .status == 422);
    CHECK(get_pool(server)["spec"]["allocations"] == expected);
}

TEST_CASE("test API server: Accept as=PartialObjectMetadata answers a single object with its metadata only",
          "[kube][integration][apiserver]") {
    ServerUnderTest server;
    json pool = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                 {"kind", "IPPool"},
                 {"metadata", {{"name", "blue-10.60.0.0-24"}, {"namespace", "kube-system"}}},
                 {"spec", {{"range", "10.60.0.0/24"}, {"allocations", {{"1", entry("c1", "ns/p1")}}}}}};
    REQUIRE(server.request("POST", kPools, pool.dump()).status == 201);

    auto r =
        patch(server, json::array({{{"op", "add"}, {"path", "/spec/allocations/2"}, {"value", entry("c2", "ns/p2")}}}),
              kMetadataOnly);
    REQUIRE(r.status == 200);
    CHECK(r.body["kind"] == "PartialObjectMetadata");
    CHECK(r.body["apiVersion"] == "meta.k8s.io/v1");
    CHECK_FALSE(r.body.contains("spec"));
    const json full = get_pool(server);
    CHECK(r.body["metadata"] == full["metadata"]);  // the new resourceVersion, uid, name ...
    CHECK(full["spec"]["allocations"].contains("2"));

    auto g = server.request("GET", kPool, "", "application/json", kMetadataOnly);
    REQUIRE(g.status == 200);
    CHECK(g.body ==
          json{{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", full["metadata"]}});

    // Errors stay Status objects; kubectl's Table request (not served) falls back to plain JSON.
    auto failed = patch(server, json::array({{{"op", "test"}, {"path", "/spec/allocations/2"}, {"value", nullptr}}}),
                        kMetadataOnly);
    CHECK(failed.status == 422);
    CHECK(failed.body["kind"] == "Status");
    auto table = server.request(
        "GET", kPool, "", "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
    CHECK(table.status == 200);
    // The real server answers a Table; the in-repo one falls back to the object, which kubectl
    // accepts as well.
    if (server.is_real())
        CHECK(table.body["kind"] == "Table");
    else
        CHECK(table.body == full);
}

TEST_CASE("test API server: core/v1 nodes are cluster-scoped objects with the kube-apiserver's answers",
          "[kube][integration][apiserver][reclaim]") {
    ServerUnderTest server;
    // A missing node: 404 with a NotFound Status naming it, as kubectl and client-go expect.
    auto missing = server.request("GET", "/api/v1/nodes/node-x");
    CHECK(missing.status == 404);
    CHECK(missing.body["kind"] == "Status");
    CHECK(missing.body["reason"] == "NotFound");
    CHECK(missing.body["details"]["name"] == "node-x");
    CHECK(missing.body["details"]["kind"] == "nodes");
    const auto requests_before = server.stats()["requests"].get<int>();

    const std::string uid = server.create_node("node-x");
    CHECK_FALSE(uid.empty());
    auto got = server.request("GET", "/api/v1/nodes/node-x");
    REQUIRE(got.status == 200);
    CHECK(got.body["kind"] == "Node");
    CHECK(got.body["apiVersion"] == "v1");
    CHECK(got.body["metadata"]["uid"] == uid);
    CHECK_FALSE(got.body["metadata"].contains("namespace"));
    server.create_node("node-y");
    auto list = server.request("GET", "/api/v1/nodes");
    REQUIRE(list.status == 200);
    CHECK(list.body["kind"] == "NodeList");
    std::set<std::string> names;
    for (const auto& n : list.body["items"]) names.insert(n["metadata"]["name"]);
    CHECK(names == std::set<std::string>{"node-x", "node-y"});
    // A second node of the same name: 409 AlreadyExists.
    CHECK(server.request("POST", "/api/v1/nodes", json{{"metadata", {{"name", "node-x"}}}}.dump()).status == 409);
    // Nodes have no namespace: a namespaced path does not exist.
    CHECK(server.request("GET", "/api/v1/namespaces/default/nodes/node-x").status == 404);
    CHECK(server.request("GET", "/api/v1/namespaces/default/nodes").status == 404);
    // Discovery says so, as kubectl reads it.
    bool seen = false;
    const auto discovery = server.request("GET", "/api/v1");
    REQUIRE(discovery.status == 200);
    for (const auto& r : discovery.body["resources"]) {
        if (r["name"] != "nodes") continue;
        seen = true;
        CHECK(r["namespaced"] == false);
        CHECK(r["kind"] == "Node");
    }
    CHECK(seen);

    // DELETE with a stale uid precondition: 409, kept. Then deleted; again: 404.
    CHECK(server.request("DELETE", "/api/v1/nodes/node-x", json{{"preconditions", {{"uid", "other"}}}}.dump()).status ==
          409);
    CHECK(server.delete_node("node-x") == 200);
    CHECK(server.request("GET", "/api/v1/nodes/node-x").status == 404);
    CHECK(server.delete_node("node-x") == 404);
    auto after = server.request("GET", "/api/v1/nodes");
    REQUIRE(after.body["items"].size() == 1);
    CHECK(after.body["items"][0]["metadata"]["name"] == "node-y");
    // The request counters count node requests like any other (the real server's count only the
    // 10 that reached the nodes resource: not discovery, not the namespaced paths that do not exist).
    CHECK(server.stats()["requests"].get<int>() - requests_before == (server.is_real() ? 10 : 13));
}
