// rdmanetctl pool slices and doctor in node-slice mode (node_slice_size), after known ADDs and DELs
// through bin/rdmanet-ipam against the test API server: what each node holds, used and free
// addresses in the slice IPPools and the local store, the unpublished backlog during and after an
// API-server outage, and a slice the NodeSlicePool gives to another node (revoked).
#include "test_kube_util.hpp"

#include <filesystem>

using namespace kube_test;

namespace {

void add_ok(const Env& env, const std::string& node, const json& conf, const std::string& id) {
    const auto r = call_on(env, node, "ADD", conf, id);
    INFO(r.describe());
    REQUIRE(r.exit_code == 0);
}

// `rdmanetctl pool slices --json` of a node's data dir; with the API when `api`.
json slices_json(const Env& env, const std::string& node, bool api) {
    std::vector<std::string> args{"pool", "slices", "--json", "--data-dir", env.data_dir + "/" + node};
    if (api) args.insert(args.end(), {"--kubeconfig", env.kubeconfig});
    const auto r = env.ctl(args);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

// The slice line of `slice` in NodeSlicePool `pool` of a pool-slices report.
json slice_line(const json& report, const std::string& pool, const std::string& slice) {
    for (const auto& p : report["nodeSlicePools"]) {
        if (p["name"] != pool) continue;
        for (const auto& s : p["slices"]) {
            if (s["sliceRange"] == slice) return s;
        }
    }
    FAIL("no slice " << slice << " of " << pool << " in " << report.dump(2));
    return {};
}

// The doctor findings of `check` for a node's data dir (the machine's other findings ignored).
std::vector<json> doctor_findings(const Env& env, const std::string& node, const std::string& check, bool api) {
    std::vector<std::string> args{"doctor",       "--json",       "--ipam-data-dir",  env.data_dir + "/" + node,
                                  "--kubeconfig", env.kubeconfig, "--api-timeout-ms", "1500"};
    if (api) args.push_back("--check-api");
    const auto r = env.ctl(args);
    INFO(r.out << r.err);
    const json report = json::parse(r.out);
    std::vector<json> out;
    for (const auto& c : report["checks"]) {
        if (c["check"] == check) out.push_back(c);
    }
    return out;
}

}  // namespace

TEST_CASE(
    "rdmanetctl pool slices and doctor: slices held, used and free, the backlog through an outage, a revoked slice",
    "[kube][integration][slices][ctl][inrepo]") {
    TestApiServer server;
    Env env(server);
    const json conf = env.conf("10.76.0.0/24", {{"node_slice_size", "/26"}, {"network_name", "navy"}});
    add_ok(env, "node-a", conf, "a1");
    add_ok(env, "node-a", conf, "a2");
    add_ok(env, "node-b", conf, "b1");

    // Every node's slices from the API, this node's local store beside them.
    json r = slices_json(env, "node-a", true);
    CHECK(r["apiError"] == "");
    REQUIRE(r["nodeSlicePools"].size() == 1);
    CHECK(r["nodeSlicePools"][0]["node"] == "node-a");
    CHECK(r["nodeSlicePools"][0]["range"] == "10.76.0.0/24");
    CHECK(r["nodeSlicePools"][0]["sliceSize"] == "/26");
    json mine = slice_line(r, "navy", "10.76.0.0/26");
    CHECK(mine["nodeName"] == "node-a");
    CHECK(mine["state"] == "held");
    CHECK(mine["ipPool"] == "navy-node-a-10.76.0.0-26");
    CHECK(mine["used"] == 2);
    CHECK(mine["usable"] == "62");
    CHECK(mine["free"] == "60");
    CHECK(mine["localUsed"] == 2);
    CHECK(mine["pending"] == 0);
    json theirs = slice_line(r, "navy", "10.76.0.64/26");
    CHECK(theirs["nodeName"] == "node-b");
    CHECK(theirs["state"] == "other");
    CHECK(theirs["ipPool"] == "navy-node-b-10.76.0.64-26");
    CHECK(theirs["used"] == 1);
    CHECK(theirs["localUsed"].is_null());
    CHECK(r["backlog"]["changes"] == 0);

    // The text form: a header and one row per slice.
    auto text = env.ctl({"pool", "slices", "--data-dir", env.data_dir + "/node-a", "--kubeconfig", env.kubeconfig});
    INFO(text.out << text.err);
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("NodeSlicePool navy: range 10.76.0.0/24, slices /26, this node node-a"));
    CHECK_THAT(text.out, Catch::Matches(R"((.|\n)*SLICE +NODE +STATE +IPPOOL +USED +FREE +LOCAL +PENDING(.|\n)*)"));
    CHECK_THAT(
        text.out,
        Catch::Matches(R"((.|\n)*10\.76\.0\.0/26 +node-a +held +navy-node-a-10\.76\.0\.0-26 +2 +60 +2 +0\n(.|\n)*)"));
    CHECK_THAT(text.out,
               Catch::Matches(
                   R"((.|\n)*10\.76\.0\.64/26 +node-b +other +navy-node-b-10\.76\.0\.64-26 +1 +61 +- +-\n(.|\n)*)"));
    CHECK_THAT(text.out, Catch::Contains("backlog: 0 unpublished change(s)"));

    auto slices_check = doctor_findings(env, "node-a", "ipam.slices", true);
    REQUIRE(slices_check.size() == 1);
    CHECK(slices_check[0]["status"] == "ok");
    CHECK_THAT(slices_check[0]["message"].get<std::string>(), Catch::Contains("10.76.0.0/26 (2 used, 60 free)"));
    auto backlog_check = doctor_findings(env, "node-a", "ipam.slices.backlog", true);
    REQUIRE(backlog_check.size() == 1);
    CHECK(backlog_check[0]["status"] == "ok");

    // Outage: an ADD and a DEL go to the backlog.
    server.set_outage(TestApiServer::Outage::drop);
    add_ok(env, "node-a", conf, "a3");
    REQUIRE(call_on(env, "node-a", "DEL", conf, "a1").exit_code == 0);
    r = slices_json(env, "node-a", false);  // this node's own record: no API needed
    CHECK(r["apiRead"] == false);
    mine = slice_line(r, "navy", "10.76.0.0/26");
    CHECK(mine["state"] == "held");
    CHECK(mine["localUsed"] == 2);  // a2, a3
    CHECK(mine["used"].is_null());
    CHECK(mine["pending"] == 2);
    CHECK(r["backlog"]["changes"] == 2);
    CHECK(r["backlog"]["oldestAgeSeconds"].get<int>() >= 0);
    CHECK(r["backlog"]["oldestAgeSeconds"].get<int>() < 120);
    backlog_check = doctor_findings(env, "node-a", "ipam.slices.backlog", true);
    REQUIRE(backlog_check.size() == 1);
    CHECK(backlog_check[0]["status"] == "warn");
    CHECK_THAT(backlog_check[0]["message"].get<std::string>(),
               Catch::Contains("2 change(s) not published") && Catch::Contains("oldest") && Catch::Contains(" s ago"));
    // The API server is unreachable (ipam.kubeconfig fails): the node's own record is still judged.
    slices_check = doctor_findings(env, "node-a", "ipam.slices", true);
    REQUIRE(slices_check.size() == 1);
    CHECK(slices_check[0]["status"] == "ok");
    CHECK_THAT(slices_check[0]["message"].get<std::string>(),
               Catch::Contains("holds 10.76.0.0/26 (2 used, 60 free)") && Catch::Contains("API server not reachable"));

    // The API is back, no CNI call yet: the IPPool is stale (a1, a2), the store has a2, a3.
    server.set_outage(TestApiServer::Outage::off);
    r = slices_json(env, "node-a", true);
    mine = slice_line(r, "navy", "10.76.0.0/26");
    CHECK(mine["used"] == 2);
    CHECK(mine["localUsed"] == 2);
    CHECK(mine["pending"] == 2);
    // The next ADD publishes the backlog: the IPPool equals the store again.
    add_ok(env, "node-a", conf, "a4");
    r = slices_json(env, "node-a", true);
    mine = slice_line(r, "navy", "10.76.0.0/26");
    CHECK(mine["used"] == 3);
    CHECK(mine["localUsed"] == 3);
    CHECK(mine["pending"] == 0);
    CHECK(r["backlog"]["changes"] == 0);
    CHECK(r["backlog"]["oldestAgeSeconds"].is_null());
    CHECK(doctor_findings(env, "node-a", "ipam.slices.backlog", true)[0]["status"] == "ok");

    // Someone gives node-a's slice to node-z (a node deleted and its name re-used, a hand edit).
    auto nsp = server.request("GET", kApi + "/nodeslicepools/navy");
    REQUIRE(nsp.status == 200);
    json edited = nsp.body;
    for (auto& e : edited["status"]["allocations"]) {
        if (e["sliceRange"] == "10.76.0.0/26") e["nodeName"] = "node-z";
    }
    REQUIRE(server.request("PUT", kApi + "/nodeslicepools/navy", edited.dump()).status == 200);
    r = slices_json(env, "node-a", true);
    mine = slice_line(r, "navy", "10.76.0.0/26");
    CHECK(mine["state"] == "revoked");
    CHECK(mine["nodeName"] == "node-z");
    CHECK(mine["revokedLocally"] == false);
    slices_check = doctor_findings(env, "node-a", "ipam.slices", true);
    REQUIRE(slices_check.size() == 1);
    CHECK(slices_check[0]["status"] == "fail");
    CHECK_THAT(slices_check[0]["message"].get<std::string>(),
               Catch::Contains("10.76.0.0/26 is now node node-z's but this node still allocates from it (3 used)"));
    // Without the API, the node's own record does not know yet.
    CHECK(doctor_findings(env, "node-a", "ipam.slices", false)[0]["status"] == "ok");

    // The node finds out after its next published backlog: it stops allocating from the slice and
    // claims another; its own record says revoked from then on, also without the API.
    server.set_outage(TestApiServer::Outage::drop);
    add_ok(env, "node-a", conf, "a5");
    server.set_outage(TestApiServer::Outage::off);
    add_ok(env, "node-a", conf, "a6");
    r = slices_json(env, "node-a", false);
    mine = slice_line(r, "navy", "10.76.0.0/26");
    CHECK(mine["state"] == "revoked");
    CHECK(mine["revokedLocally"] == true);
    CHECK(mine["localUsed"] == 4);  // a2..a5
    json next = slice_line(r, "navy", "10.76.0.128/26");
    CHECK(next["state"] == "held");
    CHECK(next["localUsed"] == 1);  // a6
    slices_check = doctor_findings(env, "node-a", "ipam.slices", false);
    REQUIRE(slices_check.size() == 1);
    CHECK(slices_check[0]["status"] == "fail");
    CHECK_THAT(slices_check[0]["message"].get<std::string>(),
               Catch::Contains("10.76.0.0/26 is no longer this node's (this node stopped allocating from it, 4 used)"));
    // After those pods' DELs nothing of the revoked slice is used here: doctor passes again.
    for (const std::string id : {"a2", "a3", "a4", "a5"})
        REQUIRE(call_on(env, "node-a", "DEL", conf, id).exit_code == 0);
    slices_check = doctor_findings(env, "node-a", "ipam.slices", true);
    REQUIRE(slices_check.size() == 1);
    CHECK(slices_check[0]["status"] == "ok");
    CHECK_THAT(slices_check[0]["message"].get<std::string>(),
               Catch::Contains("holds 10.76.0.128/26 (1 used, 61 free)"));
}

TEST_CASE("rdmanetctl pool slices: a data dir without node slices reports none and creates nothing",
          "[kube][integration][slices][ctl]") {
    ServerUnderTest server;
    Env env(server);
    const std::string dir = server.dir() + "/empty-node";
    const auto r = env.ctl({"pool", "slices", "--data-dir", dir});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("no node slices held by this node") &&
                          Catch::Contains("backlog: 0 unpublished change(s)"));
    CHECK_FALSE(std::filesystem::exists(dir));
    // Nor does doctor report slices for it.
    CHECK(doctor_findings(env, "empty-node-none", "ipam.slices.backlog", false).empty());

    // IPv6: a /120 slice of a /64 (2^56 slices, only the held one listed).
    const json v6 = env.conf("fd77::/64", {{"node_slice_size", "/120"}, {"network_name", "six"}});
    add_ok(env, "node-six", v6, "s1");
    const json r6 = slices_json(env, "node-six", true);
    const json line6 = slice_line(r6, "six", "fd77::/120");
    CHECK(line6["state"] == "held");
    CHECK(line6["ipPool"] == "six-node-six-fd77---120");
    CHECK(line6["used"] == 1);
    CHECK(line6["usable"] == "254");
    CHECK(line6["free"] == "253");
    CHECK(line6["localUsed"] == 1);

    // A held file that is not JSON: a warning naming it, the backlog still judged, no crash.
    const std::string held = env.data_dir + "/broken-node/kubernetes/slices/held";
    std::filesystem::create_directories(held);
    std::ofstream(held + "/navy@broken-node.json") << "{not json";
    const auto warned = doctor_findings(env, "broken-node", "ipam.slices", false);
    REQUIRE(warned.size() == 1);
    CHECK(warned[0]["status"] == "warn");
    CHECK_THAT(warned[0]["message"].get<std::string>(), Catch::Contains("navy@broken-node.json is not a JSON object"));
    const auto listed = env.ctl({"pool", "slices", "--data-dir", env.data_dir + "/broken-node"});
    CHECK(listed.exit_code == 0);
    CHECK_THAT(listed.out, Catch::Contains("local store: not read"));
}
