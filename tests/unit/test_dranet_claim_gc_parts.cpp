// The claim GC's pure parts (cni/node/dranet/claim_gc.hpp): which resource.k8s.io version is
// listed, what counts as a complete ResourceClaim list, which recorded claims are released, the
// release request's JSON as the provider parses it, and the metrics a round leaves.
#include <catch2/catch.hpp>

#include "rdmanet/cni/node/agent_metrics.hpp"
#include "rdmanet/cni/node/dranet/claim_gc.hpp"
#include "rdmanet/cni/node/dranet/wire.hpp"
#include "support/prometheus_parse.hpp"

using namespace rdmanet::cni::node::dranet;
using nlohmann::json;

namespace {

json group(std::initializer_list<const char*> versions, const char* preferred) {
    json j = {{"kind", "APIGroup"}, {"name", "resource.k8s.io"}, {"versions", json::array()}};
    for (const char* v : versions)
        j["versions"].push_back({{"groupVersion", std::string("resource.k8s.io/") + v}, {"version", v}});
    if (preferred) j["preferredVersion"] = {{"version", preferred}};
    return j;
}

}  // namespace

TEST_CASE("claim GC: v1 is listed when served, then v1beta2, v1beta1, else the preferred version", "[unit][dranet]") {
    CHECK(choose_resource_version(group({"v1", "v1beta2", "v1beta1"}, "v1")) == "v1");
    CHECK(choose_resource_version(group({"v1beta1", "v1beta2"}, "v1beta1")) == "v1beta2");
    CHECK(choose_resource_version(group({"v1beta1", "v1alpha3"}, "v1alpha3")) == "v1beta1");
    CHECK(choose_resource_version(group({"v1alpha3"}, "v1alpha3")) == "v1alpha3");
    CHECK(choose_resource_version(group({}, nullptr)) == std::nullopt);
    CHECK(choose_resource_version(json("not a group")) == std::nullopt);
}

TEST_CASE("claim GC: only a complete ResourceClaim list with a uid per item is taken", "[unit][dranet]") {
    CHECK(parse_claim_uids(R"({"kind":"ResourceClaimList","metadata":{},"items":[]})").empty());
    CHECK(parse_claim_uids(R"({"items":[{"metadata":{"uid":"a"}},{"metadata":{"uid":"b"}}]})") ==
          std::set<std::string>{"a", "b"});
    // Anything less than certain is an error: the round must then release nothing.
    CHECK_THROWS(parse_claim_uids("{"));
    CHECK_THROWS(parse_claim_uids(R"({"kind":"Status"})"));
    CHECK_THROWS(parse_claim_uids(R"({"items":{}})"));
    CHECK_THROWS(parse_claim_uids(R"({"items":[{"metadata":{"name":"x"}}]})"));
    CHECK_THROWS(parse_claim_uids(R"({"items":[{"metadata":{"uid":""}}]})"));
    CHECK_THROWS(parse_claim_uids(R"({"metadata":{"continue":"abc"},"items":[{"metadata":{"uid":"a"}}]})"));
}

TEST_CASE("claim GC: every device of a claim missing from the list is released, nothing else", "[unit][dranet]") {
    const std::map<ClaimKey, ClaimRecord> recorded{
        {{"a", "eth1"}, {"rail", {100}}}, {{"b", "eth1"}, {"rail", {101}}}, {{"b", "eth2"}, {"rail", {102}}}};
    CHECK(claims_to_release(recorded, {"a", "b"}).empty());
    CHECK(claims_to_release(recorded, {"a"}) == std::vector<ClaimKey>{{"b", "eth1"}, {"b", "eth2"}});
    CHECK(claims_to_release(recorded, {}).size() == 3);
}

TEST_CASE("claim GC: the release request is what the provider parses", "[unit][dranet]") {
    ProfileRequest r;
    r.claim_uid = "0b6c9d1e-2f3a-4b5c-8d7e-9f0a1b2c3d4e";
    r.device.name = "eth1";
    r.profile = "rail";
    const ProfileRequest back = parse_profile_request(profile_request_json(r));
    CHECK(back.claim_uid == r.claim_uid);
    CHECK(back.device.name == "eth1");
    CHECK(back.profile == "rail");
    CHECK(back.static_addresses.empty());
}

TEST_CASE("claim GC: the metrics of rounds", "[unit][dranet][agent]") {
    rdmanet::cni::node::AgentMetrics m;
    auto scrape = [&] { return rdmanet::test::parse_prometheus_text(m.render({})); };
    CHECK(scrape().value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "list"}}) == 0.0);
    ClaimGcReport released;
    released.ran = true;
    released.released = {{"b", "eth1"}, {"b", "eth2"}};
    released.held = 1;
    m.record_claim_gc(released);
    ClaimGcReport skipped;
    skipped.ran = true;
    skipped.skipped = GcSkip::credentials;
    skipped.held = 1;
    m.record_claim_gc(skipped);
    const auto s = scrape();
    CHECK(s.value("rdmanet_dranet_claims_released_total") == 2.0);
    CHECK(s.value("rdmanet_dranet_claims_held") == 1.0);
    CHECK(s.value("rdmanet_dranet_claim_gc_rounds_total") == 2.0);
    CHECK(s.value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "credentials"}}) == 1.0);
    CHECK(s.value("rdmanet_dranet_claim_gc_skipped_total", {{"reason", "discovery"}}) == 0.0);
    CHECK(s.types.at("rdmanet_dranet_claims_held") == "gauge");
    // DRANET released the last claim itself: no record left, the gauge drops, no round counted.
    m.record_claim_gc(ClaimGcReport{});
    CHECK(scrape().value("rdmanet_dranet_claims_held") == 0.0);
    CHECK(scrape().value("rdmanet_dranet_claim_gc_rounds_total") == 2.0);
}
