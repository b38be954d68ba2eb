// The Kubernetes datastore at etcd's value limit (1.5 MiB = 1,572,864 bytes per object by
// default): the test API server refuses a larger object as the kube-apiserver relays etcd's
// refusal (500, "etcdserver: request is too large") and stores nothing; rdmanet-ipam treats that
// as permanent - the ADD fails at once with code 5 and a message naming the pool and the fix,
// instead of retrying a 500 until the runtime's timeout.
#include <chrono>

#include "test_kube_util.hpp"
#include "resource_store.hpp"

using namespace kube_test;

namespace {

const std::string kPoolsPath = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/" + kNs + "/ippools";
// The largest JSON text of IPPool 10.60.0.0-16 in kNs that the in-repo server stores: etcd's
// 1,572,864 bytes less the key and framing of the kube-apiserver's write (resource_store.hpp).
const std::size_t kLimit =
    apiserver::ResourceStore::kMaxObjectBytes -
    (3 * std::string("/registry/whereabouts.cni.cncf.io/ippools/" + kNs + "/10.60.0.0-16").size() +
     apiserver::ResourceStore::kTxnFraming);

// An IPPool for 10.60.0.0/16 whose serialized size is exactly `size` bytes: entries with 64-hex
// container ids (as runtimes make them) from offset 1 up, and an annotation padding the rest.
json pool_of_size(std::size_t size) {
    json pool = {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
                 {"kind", "IPPool"},
                 {"metadata", {{"name", "10.60.0.0-16"}, {"namespace", kNs}, {"annotations", {{"pad", ""}}}}},
                 {"spec", {{"range", "10.60.0.0/16"}, {"allocations", json::object()}}}};
    // Room for what the server adds (uid, resourceVersion, creationTimestamp).
    const std::size_t target = size - 200;
    std::size_t text = pool.dump().size();
    for (int i = 1;; ++i) {
        char id[65];
        std::snprintf(id, sizeof id, "%064x", i);
        const json entry = {{"id", id}, {"podref", "ns/pod-" + std::to_string(i)}, {"ifname", "net1"}};
        const std::size_t grows = std::to_string(i).size() + 4 + entry.dump().size();  // "i": entry ,
        if (text + grows > target) break;
        pool["spec"]["allocations"][std::to_string(i)] = entry;
        text += grows;
    }
    return pool;
}

// Pads the stored pool (via merge patch) so that it serializes to exactly `size` bytes.
void pad_to(const ApiServer& server, std::size_t size) {
    for (int round = 0; round < 3; ++round) {
        auto r = server.request("GET", kPoolsPath + "/10.60.0.0-16");
        REQUIRE(r.status == 200);
        const std::size_t now = r.text.size();
        if (now == size) return;
        std::string pad = r.body["metadata"]["annotations"]["pad"];
        REQUIRE(size > now - pad.size());
        pad.assign(pad.size() + size - now, 'x');  // resourceVersion digits may shift: re-check
        auto p = server.request("PATCH", kPoolsPath + "/10.60.0.0-16",
                                json{{"metadata", {{"annotations", {{"pad", pad}}}}}}.dump(),
                                "application/merge-patch+json");
        REQUIRE(p.status == 200);
    }
    REQUIRE(server.request("GET", kPoolsPath + "/10.60.0.0-16").text.size() == size);
}

}  // namespace

TEST_CASE(
    "test API server: an object above etcd's 1,572,864 bytes (with its key) is refused with etcd's 500, nothing stored",
    "[kube][integration][size_limit][inrepo]") {
    TestApiServer server;
    auto created = server.request("POST", kPoolsPath, pool_of_size(kLimit).dump());
    REQUIRE(created.status == 201);
    pad_to(server, kLimit);  // exactly at the limit: still stored
    auto before = server.request("GET", kPoolsPath + "/10.60.0.0-16");
    REQUIRE(before.text.size() == kLimit);

    // One byte more through each write verb: refused, object unchanged.
    auto patch = server.request("PATCH", kPoolsPath + "/10.60.0.0-16",
                                json::array({{{"op", "add"},
                                              {"path", "/spec/allocations/65000"},
                                              {"value", {{"id", "c"}, {"podref", "ns/p"}, {"ifname", "net1"}}}}})
                                    .dump(),
                                "application/json-patch+json");
    CHECK(patch.status == 500);
    CHECK(patch.body["kind"] == "Status");
    CHECK_FALSE(patch.body.contains("reason"));  // the kube-apiserver relays etcd's error without one
    CHECK(patch.body["message"] == "etcdserver: request is too large");
    json bigger = before.body;
    bigger["metadata"]["annotations"]["pad2"] = "y";
    auto put = server.request("PUT", kPoolsPath + "/10.60.0.0-16", bigger.dump());
    CHECK(put.status == 500);
    CHECK(put.body["message"] == "etcdserver: request is too large");
    json other = pool_of_size(kLimit + 4096);
    other["metadata"]["name"] = "10.61.0.0-16";
    other["spec"]["range"] = "10.61.0.0/16";
    auto create = server.request("POST", kPoolsPath, other.dump());
    CHECK(create.status == 500);
    CHECK(server.request("GET", kPoolsPath + "/10.61.0.0-16").status == 404);

    auto after = server.request("GET", kPoolsPath + "/10.60.0.0-16");
    CHECK(after.text == before.text);  // same content and resourceVersion
    CHECK(server.stats()["largest_object"] == kLimit);
}

TEST_CASE("kube datastore: an ADD refused as too large fails within 2 s with code 5 naming the pool and the fix",
          "[kube][integration][size_limit][inrepo]") {
    TestApiServer server;
    Env env(server);
    REQUIRE(server.request("POST", kPoolsPath, pool_of_size(kLimit).dump()).status == 201);
    pad_to(server, kLimit - 30);  // the next entry (~70 bytes) does not fit
    const std::string before = server.request("GET", kPoolsPath + "/10.60.0.0-16").text;
    const auto patches_before = server.stats()["by_method"].value("PATCH", 0);

    const auto start = std::chrono::steady_clock::now();
    auto a = env.call("ADD", env.conf("10.60.0.0/16"), "ctr-over", "pod-over");
    const auto took = std::chrono::steady_clock::now() - start;
    INFO(a.describe());
    CHECK(a.exit_code != 0);
    CHECK(a.code() == 5);
    const std::string msg = a.msg();
    CHECK(msg.find("IPPool 10.60.0.0-16") != std::string::npos);
    CHECK(msg.find("node_slice_size") != std::string::npos);
    CHECK(msg.find("split the range") != std::string::npos);
    CHECK(took < std::chrono::seconds(2));
    // Not retried, and nothing half-written: the pool as it was, no reservation.
    CHECK(server.stats()["by_method"].value("PATCH", 0) - patches_before == 1);
    CHECK(server.request("GET", kPoolsPath + "/10.60.0.0-16").text == before);
    CHECK(reservations(server).empty());
    // DEL after the failed ADD (what the runtime does) succeeds.
    CHECK(env.call("DEL", env.conf("10.60.0.0/16"), "ctr-over", "pod-over").exit_code == 0);
}

namespace {

// whereabouts' entry shape: a 64-hex container id, podref "default/pod-<n>", ifname net1.
json whereabouts_pool(const std::string& ns, int entries) {
    json allocs = json::object();
    for (int i = 1; i <= entries; ++i) {
        char id[65];
        std::snprintf(id, sizeof id, "%064x", i);
        allocs[std::to_string(i)] = {{"id", id}, {"podref", "default/pod-" + std::to_string(i)}, {"ifname", "net1"}};
    }
    return {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
            {"kind", "IPPool"},
            {"metadata", {{"name", "10.60.0.0-16"}, {"namespace", ns}}},
            {"spec", {{"range", "10.60.0.0/16"}, {"allocations", allocs}}}};
}

// One rdmanet-ipam call for pod default/<pod> (the entry then has whereabouts' shape too).
CniOutcome call_default_ns(const Env& env, const std::string& command, const std::string& id, const std::string& pod) {
    rdmanet::test::PluginRequest req;
    req.command = command;
    req.container_id = id;
    req.netns = "/var/run/netns/unused";
    req.ifname = "net1";
    req.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + pod;
    req.path = rdmanet::test::bin_dir();
    req.stdin_data = env.conf("10.60.0.0/16").dump();
    return rdmanet::test::invoke_plugin(ipam_plugin_test::ipam_plugin_path(), req, env.env());
}

}  // namespace

TEST_CASE(
    "kube datastore: an IPPool holds at most 12,556 allocations of whereabouts' shape, the next ADD fails at "
    "once with code 5 and writes nothing",
    "[kube][integration][size_limit]") {
    ServerUnderTest server;
    INFO("against the " << server.name());
    Env env(server, apiserver_test::KubeconfigOptions{.ns = "default"});
    const std::string pools = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/default/ippools";
    // 12,557 entries: refused as etcd refuses them (500, the kube-apiserver's Status without a reason).
    auto over = server.request("POST", pools, whereabouts_pool("default", 12557).dump());
    CHECK(over.status == 500);
    CHECK(over.body["kind"] == "Status");
    CHECK(over.body["message"] == "etcdserver: request is too large");
    CHECK_FALSE(over.body.contains("reason"));
    CHECK(server.request("GET", pools + "/10.60.0.0-16").status == 404);
    // 12,556: stored.
    REQUIRE(server.request("POST", pools, whereabouts_pool("default", 12556).dump()).status == 201);
    const std::string before = server.request("GET", pools + "/10.60.0.0-16").text;

    // The 12,557th through the plugin, with a runtime's 64-hex container id: code 5 at once.
    const std::string id(64, 'f');
    const auto start = std::chrono::steady_clock::now();
    auto a = call_default_ns(env, "ADD", id, "pod-12557");
    INFO(a.describe());
    CHECK(a.code() == 5);
    CHECK_THAT(a.msg(), Catch::Contains("IPPool 10.60.0.0-16") && Catch::Contains("node_slice_size"));
    // At once, not retried until the ADD's 60 s budget (a GET and a PATCH of 1.5 MiB each).
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(server.request("GET", pools + "/10.60.0.0-16").text == before);
    CHECK(server.list("default", "overlappingrangeipreservations").empty());
    CHECK(call_default_ns(env, "DEL", id, "pod-12557").exit_code == 0);
}
