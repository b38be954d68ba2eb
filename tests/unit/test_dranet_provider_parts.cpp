// DRANET profile provider, the pure parts: the HTTP request parser, DRANET's request JSON, profile
// parsing (the CNI path's parsers and policy), the per-node table choice and the answer planner.
#include <catch2/catch.hpp>

#include "rdmanet/cni/config/policy.hpp"
#include "rdmanet/cni/node/dranet/answer.hpp"
#include "rdmanet/cni/node/dranet/claim_records.hpp"
#include "rdmanet/cni/node/dranet/dranet_version.hpp"
#include "rdmanet/cni/node/dranet/profile.hpp"
#include "rdmanet/cni/node/dranet/wire.hpp"
#include "rdmanet/cni/node/http_request.hpp"
#include "rdmanet/cni/translate/dranet_profile.hpp"
#include "rdmanet/cni/translate/render.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;
using namespace rdmanet::cni::node;
using namespace rdmanet::cni::node::dranet;
using nlohmann::json;
namespace translate = rdmanet::cni::translate;

namespace {

int status_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ProviderError& e) {
        return e.status;
    }
    return 200;
}

Profile profile_of(const std::string& text, bool strict = true) {
    return parse_profile("rail", text, NodePolicy{}, "node-1", strict);
}

IpConfig ip(const std::string& cidr, const std::string& gw) {
    return IpConfig{*base::IpNetwork::parse(cidr), base::IpAddress::parse(gw), std::nullopt};
}

}  // namespace

TEST_CASE("http request parser: a request fed byte by byte, the body by Content-Length", "[dranet]") {
    const std::string raw =
        "POST /GetProfileConfig HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Content-Length: 7\r\n\r\n{\"a\":1}EXTRA";
    RequestParser p;
    for (char c : raw) p.feed(std::string_view(&c, 1));
    REQUIRE(p.state() == RequestParser::State::done);
    CHECK(p.request().method == "POST");
    CHECK(p.request().path == "/GetProfileConfig");
    CHECK(p.request().headers.at("content-type") == "application/json");
    CHECK(p.request().body == "{\"a\":1}");
}

TEST_CASE("http request parser: a GET without a body is done at the blank line, the query is cut", "[dranet]") {
    RequestParser p;
    p.feed("GET /health?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(p.state() == RequestParser::State::done);
    CHECK(p.request().path == "/health");
    CHECK(p.request().body.empty());
}

TEST_CASE("http request parser: bounds and malformed heads fail with the status to answer", "[dranet]") {
    auto failed = [](const std::string& raw, RequestLimits limits = {}) {
        RequestParser p(limits);
        p.feed(raw);
        REQUIRE(p.state() == RequestParser::State::failed);
        CHECK_FALSE(p.error_message().empty());
        return p.error_status();
    };
    CHECK(failed("POST / HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n") == 413);
    CHECK(failed("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n") == 400);
    CHECK(failed("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n") == 400);
    CHECK(failed("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") == 400);
    CHECK(failed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 501);
    CHECK(failed("GARBAGE\r\n\r\n") == 400);
    CHECK(failed("GET / HTTP/2.0\r\n\r\n") == 505);
    CHECK(failed("GET nopath HTTP/1.1\r\n\r\n") == 400);
    CHECK(failed("GET / HTTP/1.1\r\nno colon here\r\n\r\n") == 400);
    CHECK(failed("GET / HTTP/1.1\r\nX: " + std::string(20000, 'a'), RequestLimits{}) == 431);
    // The body limit is exact: 1 MiB passes the head check, one byte more does not.
    RequestParser at_limit;
    at_limit.feed("POST / HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n");
    CHECK(at_limit.state() == RequestParser::State::body);
}

TEST_CASE("http response: status line, length and close", "[dranet]") {
    const std::string r = format_response(409, "application/json", "{}");
    CHECK(r.rfind("HTTP/1.1 409 Conflict\r\n", 0) == 0);
    CHECK(r.find("Content-Length: 2\r\n") != std::string::npos);
    CHECK(r.find("Connection: close\r\n\r\n{}") != std::string::npos);
}

TEST_CASE("DRANET request: the JSON of pkg/apis and the webhook's ProfileRequest", "[dranet]") {
    const auto r = parse_profile_request(
        R"({"device":{"name":"eth1","pci_address":"0000:3b:00.1","mac_address":"aa:bb:cc:dd:ee:01"},
        "claim_uid":"5c2e9b9a-0a51-4a38-9f6d-3f0f4f8b1c11",
        "config":{"profile":"rail","interface":{"name":"net1","addresses":["10.9.0.7/24"]},"routes":[],"rules":null}})");
    CHECK(r.device.name == "eth1");
    CHECK(r.device.pci_address == "0000:3b:00.1");
    CHECK(r.claim_uid == "5c2e9b9a-0a51-4a38-9f6d-3f0f4f8b1c11");
    CHECK(r.profile == "rail");
    CHECK(r.static_addresses == std::vector<std::string>{"10.9.0.7/24"});
}

TEST_CASE("DRANET request: malformed or unsafe requests are 400", "[dranet]") {
    for (const std::string& body : std::vector<std::string>{
             R"({)", R"([])", R"({"claim_uid":"u1"})", R"({"device":{"name":"eth1"}})",
             R"({"device":{"name":"eth1"},"claim_uid":"../x"})", R"({"device":{"name":"../../etc"},"claim_uid":"u1"})",
             R"({"device":{"name":5},"claim_uid":"u1"})",
             R"({"device":{"name":"eth1"},"claim_uid":"u1","config":{"interface":{"addresses":"10.0.0.1/24"}}})",
             R"({"device":{"name":"eth1"},"claim_uid":"u1","config":{"interface":{"addresses":[7]}}})",
             std::string(5000, '[')}) {
        INFO(body.substr(0, 80));
        CHECK(status_of([&] { parse_profile_request(body); }) == 400);
    }
}

TEST_CASE("DRANET request: the claim UID from claim_uid or from the whole ResourceClaim", "[dranet]") {
    const std::string device = R"("device":{"name":"pci-0000-3b-00-1"},"config":{"profile":"rail"})";
    auto message = [](const std::string& body) {
        try {
            parse_profile_request(body);
        } catch (const ProviderError& e) {
            CHECK(e.status == 400);
            return std::string(e.what());
        }
        FAIL("accepted: " << body);
        return std::string();
    };
    // Today's shape.
    CHECK(parse_profile_request("{" + device + R"(,"claim_uid":"u-1"})").claim_uid == "u-1");
    // The whole claim, no claim_uid: its metadata.uid keys the claim; its other members are ignored.
    const std::string claim = R"("claim":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
        "metadata":{"name":"c","namespace":"ml","uid":"u-2"},"spec":{"devices":{}},"status":{}})";
    const auto whole = parse_profile_request("{" + device + "," + claim + "}");
    CHECK(whole.claim_uid == "u-2");
    CHECK(whole.profile == "rail");
    // Both, the same UID (an empty claim_uid counts as absent).
    CHECK(parse_profile_request("{" + device + "," + claim + R"(,"claim_uid":"u-2"})").claim_uid == "u-2");
    CHECK(parse_profile_request("{" + device + "," + claim + R"(,"claim_uid":""})").claim_uid == "u-2");
    // Both, different: neither is trusted, the message names both.
    const auto both = message("{" + device + "," + claim + R"(,"claim_uid":"u-1"})");
    CHECK_THAT(both,
               Catch::Contains("request.claim_uid \"u-1\"") && Catch::Contains("request.claim.metadata.uid \"u-2\""));
    // Neither: as before.
    CHECK_THAT(message("{" + device + "}"), Catch::StartsWith("request.claim_uid is missing"));
    CHECK_THAT(message("{" + device + R"(,"claim":{"metadata":{"name":"c"}}})"),
               Catch::StartsWith("request.claim_uid is missing"));
    // The nested UID is checked as the flat one, and named where it came from.
    CHECK_THAT(message("{" + device + R"(,"claim":{"metadata":{"uid":"../x"}}})"),
               Catch::Contains("request.claim.metadata.uid"));
    CHECK_THAT(message("{" + device + R"(,"claim":{"metadata":{"uid":7}}})"), Catch::Contains("claim.metadata.uid"));
    CHECK_THAT(message("{" + device + R"(,"claim":"u-2"})"), Catch::Contains("claim"));
}

TEST_CASE("profile names: only a file name inside the profiles directory", "[dranet]") {
    CHECK(is_valid_profile_name("rail-1"));
    CHECK(is_valid_profile_name("acme.com_rail"));
    CHECK_FALSE(is_valid_profile_name(""));
    CHECK_FALSE(is_valid_profile_name(".."));
    CHECK_FALSE(is_valid_profile_name(".hidden"));
    CHECK_FALSE(is_valid_profile_name("a/b"));
    CHECK_FALSE(is_valid_profile_name("acme.com/rail"));
    CHECK_FALSE(is_valid_profile_name(std::string(254, 'a')));
    CHECK(status_of([] { load_profile("/nonexistent", "../etc/passwd", NodePolicy{}, "", true); }) == 400);
    CHECK(status_of([] { load_profile("/nonexistent", "nothere", NodePolicy{}, "", true); }) == 404);
}

TEST_CASE("profile: parsed by the CNI path's parsers, ARP from policyRouting's defaults", "[dranet]") {
    const Profile p =
        profile_of(R"({"ipam":{"range":"10.9.0.0/24","gateway":"10.9.0.1"},"policyRouting":{"priority":1000}})");
    CHECK(p.network == "rail");
    REQUIRE(p.ipam.ranges.size() == 1);
    CHECK(p.ipam.ranges[0].cidr.str() == "10.9.0.0/24");
    CHECK(p.ipam.store.nodename == "node-1");
    REQUIRE(p.pod.policy_routing);
    CHECK(p.pod.policy_routing->priority == 1000u);
    CHECK(p.arp_ignore == 1);
    CHECK(p.arp_announce == 2);

    const Profile plain = profile_of(R"({"network":"blue","ipam":{"range":"10.9.0.0/24"}})");
    CHECK(plain.network == "blue");
    CHECK_FALSE(plain.pod.policy_routing);
    CHECK_FALSE(plain.arp_ignore);

    const Profile own = profile_of(R"({"ipam":{"range":"10.9.0.0/24"},"policyRouting":true,
                                       "sysctl":{"net.ipv4.conf.IFNAME.arp_ignore":"2"}})");
    CHECK(own.arp_ignore == 2);
    CHECK(own.arp_announce == 2);
}

TEST_CASE("profile: what the CNI path refuses, and what DRANET cannot apply, is 400 naming the key", "[dranet]") {
    auto message = [](const std::string& text) {
        try {
            profile_of(text);
        } catch (const ProviderError& e) {
            CHECK(e.status == 400);
            return std::string(e.what());
        }
        FAIL("accepted: " << text);
        return std::string();
    };
    CHECK_THAT(message("{"), Catch::Contains("not valid JSON"));
    CHECK_THAT(message(R"({"ipam":{"range":"10.9.0.0/24"},"policyRuoting":true})"), Catch::Contains("policyRuoting"));
    CHECK_THAT(message(R"({"policyRouting":true})"), Catch::Contains("ipam"));
    CHECK_THAT(message(R"({"ipam":{"range":"10.9.0.0/33"}})"), Catch::Contains("10.9.0.0/33"));
    CHECK_THAT(message(R"({"ipam":{"type":"whereabouts","range":"10.9.0.0/24"}})"), Catch::Contains("rdmanet-ipam"));
    CHECK_THAT(message(R"({"ipam":{"range":"10.9.0.0/24"},"policyRouting":{"priority":0}})"),
               Catch::Contains("priority"));
    CHECK_THAT(message(R"({"ipam":{"range":"10.9.0.0/24"},"sysctl":{"net.ipv4.conf.IFNAME.rp_filter":"2"}})"),
               Catch::Contains("arp_ignore and arp_announce"));
    CHECK_THAT(message(R"({"ipam":{"range":"10.9.0.0/24"},"sysctl":{"net.ipv4.conf.IFNAME.arp_ignore":"5"}})"),
               Catch::Contains("0-3 or 8"));
    CHECK_THAT(message(R"({"ipam":{"range":"10.9.0.0/24","data_dir":"/etc/evil"}})"), Catch::Contains("data_dir"));
}

TEST_CASE("tables: unique among the node's claims, skipping the kernel's reserved ones", "[dranet]") {
    CHECK(choose_tables({}, 100, 4) == std::vector<unsigned>{100, 101, 102, 103});
    CHECK(choose_tables({100, 102}, 100, 2) == std::vector<unsigned>{101, 103});
    CHECK(choose_tables({}, 252, 3) == std::vector<unsigned>{252, 256, 257});
    CHECK(choose_tables({}, 0, 1) == std::vector<unsigned>{1});
    CHECK(choose_tables({1, 2}, 100, 0).empty());
}

TEST_CASE("answer: a table per address, its gateway in it, a rule per address", "[dranet]") {
    const Profile p = profile_of(R"({"ipam":{"range":"10.9.0.0/24","gateway":"10.9.0.1"},"policyRouting":true})");
    const auto a = plan_answer(p, {ip("10.9.0.5/24", "10.9.0.1"), ip("fd00::5/64", "fd00::1")}, {}, {100, 101});
    CHECK(a.addresses == std::vector<std::string>{"10.9.0.5/24", "fd00::5/64"});
    CHECK(a.routes == std::vector<RouteConfig>{{"10.9.0.0/24", "", "10.9.0.5", kScopeLink, 100},
                                               {"0.0.0.0/0", "10.9.0.1", "", 0, 100},
                                               {"fd00::/64", "", "fd00::5", kScopeLink, 101},
                                               {"::/0", "fd00::1", "", 0, 101}});
    CHECK(a.rules == std::vector<RuleConfig>{{kDefaultRulePriority, "10.9.0.5/32", 100},
                                             {kDefaultRulePriority, "fd00::5/128", 101}});
    const json j = a.to_json();
    CHECK(j["interface"]["arpIgnore"] == 1);
    CHECK(j["routes"][1] == json::parse(R"({"destination":"0.0.0.0/0","gateway":"10.9.0.1","table":100})"));
    CHECK(j["rules"][0] == json::parse(R"({"priority":32765,"source":"10.9.0.5/32","table":100})"));
}

TEST_CASE("answer: without policyRouting the IPAM's routes go to the main table, no rules", "[dranet]") {
    const Profile p =
        profile_of(R"({"ipam":{"range":"10.9.0.0/24","gateway":"10.9.0.1","routes":[{"dst":"10.20.0.0/16"}]}})");
    base::Route r{*base::IpNetwork::parse("10.20.0.0/16"), std::nullopt, {}, {}, {}, {}, {}};
    const auto a = plan_answer(p, {ip("10.9.0.5/24", "10.9.0.1")}, {r}, {});
    CHECK(a.rules.empty());
    CHECK(a.routes == std::vector<RouteConfig>{{"10.20.0.0/16", "10.9.0.1", "", 0, 0}});
    CHECK_FALSE(a.to_json()["interface"].contains("arpIgnore"));
}

TEST_CASE("dranet-version flag: the releases with the profile-provider webhook, and main", "[dranet]") {
    for (const char* text : {"1.4", "1.4.0", "v1.4.0", "1.4.2-rc.1"}) {
        INFO(text);
        const auto v = parse_dranet_version(text);
        REQUIRE(v);
        CHECK(v->str() == "1.4");
        CHECK_FALSE(v->has_arp_fields());
    }
    for (const char* text : {"1.5", "v1.5.0", "2.0", "main"}) {
        INFO(text);
        const auto v = parse_dranet_version(text);
        REQUIRE(v);
        CHECK(v->has_arp_fields());
    }
    CHECK(parse_dranet_version("main")->str() == "main");
    // Before 1.4 there was no webhook to answer; anything else is a typo.
    for (const char* text : {"1.3.0", "0.9", "1", "", "v", "1.x", "1.4.0.1", "latest", "1.4 "}) {
        INFO(text);
        CHECK_FALSE(parse_dranet_version(text));
    }
    CHECK(kDefaultDranetVersion.str() == "1.4");
}

TEST_CASE("answer per DRANET release: 1.4 gets no ARP fields (it would drop them), later ones get them", "[dranet]") {
    const Profile p = profile_of(R"({"ipam":{"range":"10.9.0.0/24","gateway":"10.9.0.1"},"policyRouting":true})");
    const auto planned = plan_answer(p, {ip("10.9.0.5/24", "10.9.0.1")}, {}, {100});
    REQUIRE(planned.arp_ignore == 1);

    const auto v14 = answer_for(*parse_dranet_version("1.4.0"), planned);
    const json j14 = v14.to_json();
    CHECK(j14["interface"] == json::parse(R"({"addresses":["10.9.0.5/24"]})"));
    // Everything else is the same: routes and rules are fields of 1.4.0's NetworkConfig.
    CHECK(v14.routes == planned.routes);
    CHECK(v14.rules == planned.rules);

    const json j15 = answer_for(*parse_dranet_version("1.5"), planned).to_json();
    CHECK(j15["interface"] == json::parse(R"({"addresses":["10.9.0.5/24"],"arpIgnore":1,"arpAnnounce":2})"));
    CHECK(answer_for(*parse_dranet_version("main"), planned).to_json() == j15);
    CHECK(j15["routes"] == j14["routes"]);

    // The start log says what is assumed and, for 1.4, what is lost and the way around it.
    const auto lines14 = describe_dranet(*parse_dranet_version("1.4"));
    const std::string text14 = lines14.at(0) + "\n" + lines14.at(1);
    CHECK_THAT(text14, Catch::Contains("assuming DRANET 1.4"));
    CHECK_THAT(text14, Catch::Contains("lost with DRANET 1.4"));
    CHECK_THAT(text14, Catch::Contains("net.ipv4.conf.all.arp_ignore=1"));
    CHECK_THAT(text14, Catch::Contains("--allowed-unsafe-sysctls"));
    const auto lines15 = describe_dranet(*parse_dranet_version("1.5"));
    CHECK_THAT(lines15.at(0), Catch::Contains("arpIgnore/arpAnnounce, all applied"));
    for (const auto& line : lines15) CHECK_THAT(line, !Catch::Contains("lost"));
}

TEST_CASE("whereabouts' reconciler: claims in its IPPools are refused unless the profile says it does not run",
          "[dranet]") {
    // whereabouts IPPools (datastore kubernetes) and node slices' IPPools: refused by default.
    const Profile pools = profile_of(
        R"({"ipam":{"range":"10.9.0.0/24","datastore":"kubernetes","kubernetes":{"kubeconfig":"/etc/cni/net.d/k"}}})");
    const auto hazard = whereabouts_hazard(pools);
    REQUIRE(hazard);
    CHECK_THAT(*hazard, Catch::Contains("an IPPool") && Catch::Contains("ip-reconciler") &&
                            Catch::Contains("\"whereaboutsReconciler\": \"absent\"") && Catch::Contains("nv-ipam"));
    const Profile slices = profile_of(R"({"ipam":{"range":"10.9.0.0/24","datastore":"kubernetes",
        "kubernetes":{"kubeconfig":"/etc/cni/net.d/k"},"node_slice_size":"/28"}})");
    REQUIRE(whereabouts_hazard(slices));
    CHECK_THAT(*whereabouts_hazard(slices), Catch::Contains("slice IPPool"));

    // The admin's word: no whereabouts reconciler runs (rdmanet's reconcile keeps claim entries).
    const Profile acknowledged = profile_of(R"({"ipam":{"range":"10.9.0.0/24","datastore":"kubernetes",
        "kubernetes":{"kubeconfig":"/etc/cni/net.d/k"},"node_slice_size":"/28"},"whereaboutsReconciler":"absent"})");
    CHECK(acknowledged.whereabouts_reconciler_absent);
    CHECK_FALSE(whereabouts_hazard(acknowledged));

    // Never visited by whereabouts: the local store, nv-ipam's pools.
    CHECK_FALSE(whereabouts_hazard(profile_of(R"({"ipam":{"range":"10.9.0.0/24"}})")));
    CHECK_FALSE(whereabouts_hazard(
        profile_of(R"({"ipam":{"poolName":"rail0","kubernetes":{"kubeconfig":"/etc/cni/net.d/k"}}})")));

    // Only "absent" is a statement; anything else is a typo, refused like an unknown key.
    CHECK(status_of([] { profile_of(R"({"ipam":{"range":"10.9.0.0/24"},"whereaboutsReconciler":true})"); }) == 400);
    CHECK(status_of([] { profile_of(R"({"ipam":{"range":"10.9.0.0/24"},"whereaboutsReconciler":"gone"})"); }) == 400);
}

TEST_CASE("render -o profile: an RdmaNetwork and a HostDeviceNetwork become profiles the provider accepts",
          "[dranet]") {
    translate::RenderOptions options;
    options.ipam = "rdmanet";
    const auto rdma = translate::render_documents(R"(
apiVersion: rdmanet.dev/v1alpha1
kind: RdmaNetwork
metadata: {name: rail0}
spec:
  networkNamespace: ml
  resourceName: nvidia.com/rail0
  mode: hostdev
  policyRouting: {priority: 1000}
  sysctl: {net.ipv4.conf.IFNAME.arp_ignore: "2"}
  ipam: {type: rdmanet-ipam, range: 10.80.0.0/24, gateway: 10.80.0.1}
)",
                                                  options);
    REQUIRE(rdma.size() == 1);
    const json profile = translate::dranet_profile_of(rdma[0]);
    CHECK(profile["network"] == "rail0");
    CHECK(profile["ipam"] == json::parse(R"({"range":"10.80.0.0/24","gateway":"10.80.0.1"})"));
    const Profile p = parse_profile("rail0", profile.dump(), NodePolicy{}, "", true);
    CHECK(p.pod.policy_routing->priority == 1000u);
    CHECK(p.arp_ignore == 2);

    // network-operator's kind with whereabouts IPAM: --ipam rdmanet keeps the pool (same keys).
    const auto hostdev = translate::render_documents(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: hostdevice-net}
spec:
  resourceName: hostdev
  ipam: |
    {"type": "whereabouts", "range": "192.168.10.152/27", "exclude": ["192.168.10.151/32"]}
)",
                                                     options);
    const json hd = translate::dranet_profile_of(hostdev.at(0));
    CHECK(hd["network"] == "hostdevice-net");
    CHECK(hd["ipam"]["range"] == "192.168.10.152/27");
    CHECK(parse_profile("hostdevice-net", hd.dump(), NodePolicy{}, "", true).ipam.ranges.size() == 1);

    // Without rdmanet's IPAM there is nothing for the provider to allocate with.
    CHECK_THROWS_WITH(translate::dranet_profile_of(translate::render_documents(R"(
apiVersion: mellanox.com/v1alpha1
kind: HostDeviceNetwork
metadata: {name: hd}
spec:
  resourceName: hostdev
  ipam: |
    {"type": "whereabouts", "range": "192.168.10.152/27"}
)",
                                                                               translate::RenderOptions{})
                                                       .at(0)),
                      Catch::Contains("--ipam rdmanet"));
}
