// Kubernetes datastore: request building (whereabouts wire format), Status mapping, retry policy.
#include <catch2/catch.hpp>

#include "rdmanet/base/ip.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/retry.hpp"
#include "rdmanet/ipam/kube/status.hpp"
#include "rdmanet/ipam/kube/wire.hpp"
#include "rdmanet/ipam/kube/reconcile.hpp"

using namespace rdmanet::ipam;
using namespace rdmanet::ipam::kube;
namespace base = rdmanet::base;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {
base::IpNetwork net(const char* s) { return *base::IpNetwork::parse(s); }
base::IpAddress ip(const char* s) { return *base::IpAddress::parse(s); }

json pool_json(const std::string& name, const std::string& range, json allocations) {
    return {
        {"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
        {"kind", "IPPool"},
        {"metadata",
         {{"name", name}, {"namespace", "kube-system"}, {"resourceVersion", "48213"}, {"labels", {{"keep", "me"}}}}},
        {"spec", {{"range", range}, {"allocations", allocations}}}};
}
}  // namespace

TEST_CASE("wire: paths in the whereabouts group and the context namespace", "[kube][wire]") {
    CHECK(collection_path("kube-system", kPools) ==
          "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools");
    CHECK(object_path("rdma", kReservations, "blue-10.0.0.5") ==
          "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/rdma/overlappingrangeipreservations/blue-10.0.0.5");
}

TEST_CASE("wire: a new pool and a reservation are whereabouts objects", "[kube][wire]") {
    const json p = new_pool("kube-system", PoolKey{"blue", net("10.10.0.0/16")});
    CHECK(p == json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
        "metadata":{"name":"blue-10.10.0.0-16","namespace":"kube-system"},
        "spec":{"range":"10.10.0.0/16","allocations":{}}})"));
    const json r = new_reservation("kube-system", "", ip("fd00::5"), Owner{"c1", "ml/trainer-0", "net1"});
    CHECK(r["metadata"]["name"] == "fd00--5");
    CHECK(r["kind"] == "OverlappingRangeIPReservation");
    CHECK(r["spec"] == json{{"containerid", "c1"}, {"podref", "ml/trainer-0"}, {"ifname", "net1"}});
    CHECK(reservation_held_by(r, Owner{"other-container", "ml/trainer-0", "net1"}));  // keyed by pod + ifname
    CHECK_FALSE(reservation_held_by(r, Owner{"c1", "ml/trainer-1", "net1"}));
    CHECK_FALSE(reservation_held_by(r, Owner{"c1", "ml/trainer-0", "net2"}));
}

TEST_CASE("wire: the patch tests resourceVersion, then adds / removes by decimal offset", "[kube][wire]") {
    const json object =
        pool_json("10.10.0.0-16", "10.10.0.0/16", {{"5", {{"id", "a"}, {"podref", "ml/x"}, {"ifname", "net1"}}}});
    const PoolObject p = parse_pool(object, "");
    CHECK(p.resource_version == "48213");
    REQUIRE(p.dump.allocations.size() == 1);
    CHECK(p.dump.allocations.at(5) == Owner{"a", "ml/x", "net1"});
    const json patch = pool_patch(
        p, {{5, std::nullopt, Owner{"a", "ml/x", "net1"}}, {65536 + 6, Owner{"b", "ml/y", "net1"}, std::nullopt}});
    CHECK(patch == json::parse(R"([
        {"op":"test","path":"/spec/allocations/5","value":{"id":"a","podref":"ml/x","ifname":"net1"}},
        {"op":"test","path":"/spec/allocations/65542","value":null},
        {"op":"remove","path":"/spec/allocations/5"},
        {"op":"add","path":"/spec/allocations/65542","value":{"id":"b","podref":"ml/y","ifname":"net1"}}])"));
    // Reconcile also pins the whole pool.
    CHECK(pool_patch(p, {{5, std::nullopt, Owner{"a", "ml/x", "net1"}}}, true)[0] ==
          json{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "48213"}});
    // Applying it (without the absent-test, which nlohmann's patch does not model) keeps every
    // other field (labels) untouched.
    json applicable = patch;
    applicable.erase(1);
    const json after = object.patch(applicable);
    CHECK(after["metadata"]["labels"]["keep"] == "me");
    CHECK(after["spec"]["allocations"].size() == 1);
    CHECK(after["spec"]["allocations"]["65542"]["podref"] == "ml/y");
}

TEST_CASE("wire: a pool without allocations map gets one added first", "[kube][wire]") {
    json obj = pool_json("10.0.0.0-24", "10.0.0.0/24", json::object());
    obj["spec"].erase("allocations");
    const PoolObject p = parse_pool(obj, "");
    CHECK_FALSE(p.has_allocations_map);
    json patch = pool_patch(p, {{1, Owner{"a", "n/p", "net1"}, std::nullopt}});
    CHECK(patch[0]["path"] == "/metadata/resourceVersion");
    CHECK(patch[1] == json{{"op", "add"}, {"path", "/spec/allocations"}, {"value", json::object()}});
    patch.erase(2);  // the absent-test (see above)
    CHECK(obj.patch(patch)["spec"]["allocations"]["1"]["id"] == "a");
}

TEST_CASE("wire: malformed pools are refused loudly", "[kube][wire]") {
    CHECK_THROWS_WITH(parse_pool(pool_json("x", "10.0.0.0/24", {{"-1", {{"id", "a"}, {"podref", "b"}}}}), ""),
                      Catch::Contains("IPPool x is malformed") && Catch::Contains("decimal offset"));
    CHECK_THROWS_WITH(parse_pool(pool_json("x", "10.0.0.0/24", {{"256", {{"id", "a"}, {"podref", "b"}}}}), ""),
                      Catch::Contains("outside"));
    CHECK_THROWS_WITH(parse_pool(pool_json("x", "not-a-cidr", json::object()), ""), Catch::Contains("malformed"));
    json no_rv = pool_json("x", "10.0.0.0/24", json::object());
    no_rv["metadata"].erase("resourceVersion");
    CHECK_THROWS_WITH(parse_pool(no_rv, ""), Catch::Contains("no resourceVersion"));
}

TEST_CASE("wire: network_name from the pool name", "[kube][wire]") {
    CHECK(network_name_of("blue-10.10.0.0-16", net("10.10.0.0/16")) == "blue");
    CHECK(network_name_of("10.10.0.0-16", net("10.10.0.0/16")) == "");
    CHECK(network_name_of("a-b-fd00---64", net("fd00::/64")) == "a-b");
    CHECK_FALSE(network_name_of("10.10.0.0-24", net("10.10.0.0/16")).has_value());
    CHECK_FALSE(network_name_of("blue10.10.0.0-16", net("10.10.0.0/16")).has_value());
}

TEST_CASE("wire: delete preconditions carry uid and resourceVersion", "[kube][wire]") {
    const json o = {{"metadata", {{"uid", "u-1"}, {"resourceVersion", "7"}}}};
    CHECK(delete_preconditions(o)["preconditions"] == json{{"uid", "u-1"}, {"resourceVersion", "7"}});
}

TEST_CASE("reconcile: orphans are allocations of pods that are gone, no pod identity is kept", "[kube][reconcile]") {
    const PoolObject p = parse_pool(pool_json("10.0.0.0-24", "10.0.0.0/24",
                                              {{"1", {{"id", "a"}, {"podref", "ns/live"}, {"ifname", "net1"}}},
                                               {"2", {{"id", "b"}, {"podref", "ns/gone"}, {"ifname", "net1"}}},
                                               {"3", {{"id", "c"}, {"podref", "c"}, {"ifname", "net1"}}}}),
                                    "");
    CHECK(orphaned_offsets(p, {"ns/live", "other/x"}) == std::vector<uint128>{2});
    CHECK(orphaned_offsets(p, {"ns/gone", "ns/live"}).empty());
}

TEST_CASE("status: Kubernetes Status bodies become errors that say what to fix", "[kube][status]") {
    const std::string server = "https://127.0.0.1:6443", source = "kubeconfig /etc/kc";
    auto err = [&](long code, const std::string& body) {
        return status_error("GET ippools/x", parse_status(code, body), server, source);
    };

    auto e401 =
        err(401, R"({"kind":"Status","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})");
    CHECK(e401.code == codes::io_failure);
    CHECK_THAT(e401.msg, Catch::Contains("401") && Catch::Contains("kubeconfig /etc/kc") && Catch::Contains("expired"));

    auto e403 = err(
        403,
        R"({"kind":"Status","message":"ippools is forbidden: User \"x\" cannot get","reason":"Forbidden","code":403})");
    CHECK_THAT(e403.msg, Catch::Contains("403") && Catch::Contains("cannot get") &&
                             Catch::Contains("overlappingrangeipreservations"));

    const auto missing_crd = parse_status(
        404,
        R"({"kind":"Status","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404})");
    CHECK(resource_missing(missing_crd));
    CHECK_FALSE(object_not_found(missing_crd));
    CHECK_THAT(err(404, "404 page not found\n").msg, Catch::Contains("CRDs") && Catch::Contains("not installed"));

    const auto gone = parse_status(
        404,
        R"({"kind":"Status","message":"ippools.whereabouts.cni.cncf.io \"x\" not found","reason":"NotFound","details":{"name":"x","group":"whereabouts.cni.cncf.io","kind":"ippools"},"code":404})");
    CHECK(object_not_found(gone));
    CHECK(gone.details_kind == "ippools");

    CHECK(err(503, R"({"kind":"Status","message":"etcd is down","reason":"ServiceUnavailable","code":503})").code ==
          codes::try_again);
    CHECK(err(429, "").code == codes::try_again);
    auto e422 = err(
        422,
        R"({"kind":"Status","message":"IPPool \"x\" is invalid: spec.range: Required value","reason":"Invalid","code":422})");
    CHECK(e422.code == codes::io_failure);
    CHECK_THAT(e422.msg, Catch::Contains("422 Invalid") && Catch::Contains("spec.range: Required value"));
}

TEST_CASE("retry: which statuses are retried", "[kube][retry]") {
    for (long s : {429L, 500L, 502L, 503L, 504L}) CHECK(retryable_status(s));
    for (long s : {200L, 201L, 400L, 401L, 403L, 404L, 409L, 422L, 501L}) CHECK_FALSE(retryable_status(s));
}

TEST_CASE("retry: jittered exponential backoff, bounded, Retry-After honoured", "[kube][retry]") {
    const Backoff b{milliseconds(4), milliseconds(400)};
    // Ceiling doubles per attempt; delay lies in [ceiling/2, ceiling].
    for (std::uint64_t r : {0ULL, 1ULL, 7ULL, 12345ULL, ~0ULL}) {
        CHECK(backoff_delay(b, 0, r) >= milliseconds(2));
        CHECK(backoff_delay(b, 0, r) <= milliseconds(4));
        CHECK(backoff_delay(b, 3, r) >= milliseconds(16));
        CHECK(backoff_delay(b, 3, r) <= milliseconds(32));
        CHECK(backoff_delay(b, 60, r) <= milliseconds(400));  // no overflow, capped
        CHECK(backoff_delay(b, 60, r) >= milliseconds(200));
    }
    // Different random values spread callers out.
    CHECK(backoff_delay(b, 5, 0) != backoff_delay(b, 5, 50));

    // A failing server: 10 sends of a request, the 9 waits between them growing from 100 ms to
    // the 2 s ceiling (docs/security.md states these figures).
    const RetryPolicy p;
    CHECK(p.max_attempts == 10);
    const long long ceilings[] = {100, 200, 400, 800, 1600, 2000, 2000, 2000, 2000};
    long long total = 0;
    for (int attempt = 0; attempt + 1 < p.max_attempts; ++attempt) {
        const milliseconds c{ceilings[attempt]};
        total += c.count();
        for (std::uint64_t r : {0ULL, 1ULL, 7ULL, 12345ULL, ~0ULL}) {
            CHECK(retry_delay(p, attempt, std::nullopt, r) >= c / 2);
            CHECK(retry_delay(p, attempt, std::nullopt, r) <= c);
        }
        CHECK(retry_delay(p, attempt, std::nullopt, 0) == c / 2);
    }
    CHECK(total == 11100);  // the longest a request retries (without Retry-After)
    // The store's re-reads after a lost race stay short.
    CHECK(backoff_delay(p.conflict, 60, ~0ULL) <= milliseconds(400));
    // Retry-After wins when longer, capped.
    CHECK(retry_delay(p, 0, milliseconds(3000), 1) == milliseconds(3000));
    CHECK(retry_delay(p, 0, milliseconds(60000), 1) == milliseconds(10000));  // capped
    CHECK(parse_retry_after("3") == milliseconds(3000));
    CHECK(parse_retry_after(" 0\r\n") == milliseconds(0));
    CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT").has_value());
    CHECK_FALSE(parse_retry_after("-1").has_value());
    CHECK_FALSE(parse_retry_after("").has_value());
}

TEST_CASE("wire: the IPPool body is read without a JSON tree, as the tree would read it", "[kube][wire]") {
    json allocs = {{"7", {{"id", "c\"7\u00e9"}, {"podref", "ml/p\\7"}, {"ifname", "net1"}, {"extra", {{"x", {1, 2}}}}}},
                   {"9", {{"id", "c9"}, {"podref", "ml/p9"}}}};
    json object = pool_json("10.0.0.0-24", "10.0.0.0/24", allocs);
    object["status"] = {{"note", "\u2603 \U0001F600"}, {"list", {true, false, nullptr, 1.5e3}}};
    const std::string text = object.dump(2);
    const PoolObject p = parse_pool_body(text, "blue");
    CHECK(p.resource_version == "48213");
    CHECK(p.has_allocations_map);
    CHECK(p.dump.pool.network_name == "blue");
    CHECK(p.dump.pool.range == net("10.0.0.0/24"));
    REQUIRE(p.dump.allocations.size() == 2);
    CHECK(p.dump.allocations.at(7) == Owner{"c\"7\u00e9", "ml/p\\7", "net1"});
    CHECK(p.dump.allocations.at(9) == Owner{"c9", "ml/p9", ""});  // a missing ifname reads as ""
    // The same through a JSON tree (reconcile's list items) and with \u escapes in the text.
    CHECK(parse_pool(object, "blue").dump.allocations == p.dump.allocations);
    CHECK(parse_pool_body(object.dump(-1, ' ', true), "blue").dump.allocations == p.dump.allocations);

    json null_allocs = object;
    null_allocs["spec"]["allocations"] = nullptr;
    CHECK_FALSE(parse_pool_body(null_allocs.dump(), "").has_allocations_map);

    // Malformed text and malformed pools are refused, naming the problem.
    for (const std::string& bad :
         {text.substr(0, text.size() - 1), std::string("[") + text + "]", text + "x", std::string("\"x\""),
          std::string("{\"a\":\"\x01\"}"), std::string("{\"a\":\"\xc3\"}")}) {
        CHECK_THROWS_WITH(parse_pool_body(bad, ""),
                          Catch::Contains("not a JSON object") || Catch::Contains("malformed"));
    }
    json entry_array = object;
    entry_array["spec"]["allocations"]["7"] = json::array();
    CHECK_THROWS_WITH(parse_pool_body(entry_array.dump(), ""), Catch::Contains("must be an object"));
    json allocs_array = object;
    allocs_array["spec"]["allocations"] = json::array();
    CHECK_THROWS_WITH(parse_pool_body(allocs_array.dump(), ""), Catch::Contains("spec.allocations must be an object"));
    json range_number = object;
    range_number["spec"]["range"] = 5;
    CHECK_THROWS_WITH(parse_pool_body(range_number.dump(), ""), Catch::Contains("spec.range is missing"));
    json no_spec = object;
    no_spec.erase("spec");
    CHECK_THROWS_WITH(parse_pool_body(no_spec.dump(), ""), Catch::Contains("IPPool 10.0.0.0-24 is malformed"));
}
