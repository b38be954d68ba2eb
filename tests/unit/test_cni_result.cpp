#include <catch2/catch.hpp>

#include "cni_test_helpers.hpp"
#include "support/catch_ip.hpp"
#include "rdmanet/cni/protocol/result.hpp"

using namespace rdmanet::cni;
using nlohmann::json;
using rdmanet::test::ip_addr;
using rdmanet::test::ip_net;

namespace {

// Every field set, two interfaces (pod + host side), both address families.
Result full_result() {
    Result r;
    r.cni_version = "1.1.0";
    r.interfaces = {
        Interface{"net1", "0a:58:0a:01:00:05", 9000u, "/var/run/netns/cni-1234", "/run/dev.sock", "0000:af:06.0"},
        Interface{"ens1f0", "", std::nullopt, "", "", ""},
    };
    r.ips = {
        IpConfig{ip_net("10.1.0.5/24"), ip_addr("10.1.0.1"), 0},
        IpConfig{ip_net("fd00::5/64"), std::nullopt, 0},
    };
    Route extras{ip_net("10.2.0.0/16"), ip_addr("10.1.0.1"), 1400u, 1360u, 10u, 100u, 0u};
    r.routes = {extras, Route{ip_net("::/0"), std::nullopt, {}, {}, {}, {}, {}}};
    r.dns = Dns{{"10.0.0.10"}, "cluster.local", {"svc.cluster.local"}, {"ndots:5"}};
    return r;
}

const char* kDnsJson = R"({"nameservers":["10.0.0.10"],"domain":"cluster.local",
                           "search":["svc.cluster.local"],"options":["ndots:5"]})";

json expected_0x(const std::string& version) {
    json j = json::parse(R"({
      "interfaces":[{"name":"net1","mac":"0a:58:0a:01:00:05","sandbox":"/var/run/netns/cni-1234"},
                    {"name":"ens1f0"}],
      "ips":[{"version":"4","address":"10.1.0.5/24","gateway":"10.1.0.1","interface":0},
             {"version":"6","address":"fd00::5/64","interface":0}],
      "routes":[{"dst":"10.2.0.0/16","gw":"10.1.0.1"},{"dst":"::/0"}]})");
    j["cniVersion"] = version;
    j["dns"] = json::parse(kDnsJson);
    return j;
}

}  // namespace

TEST_CASE("result JSON for 0.3.0, 0.3.1 and 0.4.0", "[cni][result]") {
    for (std::string version : {"0.3.0", "0.3.1", "0.4.0"}) {
        INFO(version);
        CHECK(result_to_json(full_result(), version) == expected_0x(version));
    }
}

TEST_CASE("result JSON for 1.0.0 has no ips[].version and no 1.1.0 fields", "[cni][result]") {
    json expected = json::parse(R"({"cniVersion":"1.0.0",
      "interfaces":[{"name":"net1","mac":"0a:58:0a:01:00:05","sandbox":"/var/run/netns/cni-1234"},
                    {"name":"ens1f0"}],
      "ips":[{"address":"10.1.0.5/24","gateway":"10.1.0.1","interface":0},
             {"address":"fd00::5/64","interface":0}],
      "routes":[{"dst":"10.2.0.0/16","gw":"10.1.0.1"},{"dst":"::/0"}]})");
    expected["dns"] = json::parse(kDnsJson);
    CHECK(result_to_json(full_result(), "1.0.0") == expected);
}

TEST_CASE("result JSON for 1.1.0 adds interface and route extras", "[cni][result]") {
    json expected = json::parse(R"({"cniVersion":"1.1.0",
      "interfaces":[{"name":"net1","mac":"0a:58:0a:01:00:05","sandbox":"/var/run/netns/cni-1234",
                     "mtu":9000,"socketPath":"/run/dev.sock","pciID":"0000:af:06.0"},
                    {"name":"ens1f0"}],
      "ips":[{"address":"10.1.0.5/24","gateway":"10.1.0.1","interface":0},
             {"address":"fd00::5/64","interface":0}],
      "routes":[{"dst":"10.2.0.0/16","gw":"10.1.0.1","mtu":1400,"advmss":1360,"priority":10,
                 "table":100,"scope":0},
                {"dst":"::/0"}]})");
    expected["dns"] = json::parse(kDnsJson);
    CHECK(result_to_json(full_result(), "1.1.0") == expected);
}

TEST_CASE("empty dns: always {} in 0.x, omitted in 1.x, empty lists omitted", "[cni][result]") {
    Result minimal;
    CHECK(result_to_json(minimal, "0.3.1") == json::parse(R"({"cniVersion":"0.3.1","dns":{}})"));
    CHECK(result_to_json(minimal, "0.4.0") == json::parse(R"({"cniVersion":"0.4.0","dns":{}})"));
    CHECK(result_to_json(minimal, "1.0.0") == json::parse(R"({"cniVersion":"1.0.0"})"));
    CHECK(result_to_json(minimal, "1.1.0") == json::parse(R"({"cniVersion":"1.1.0"})"));
}

TEST_CASE("result of an IPAM plugin: no interfaces, no ips[].interface", "[cni][result]") {
    Result ipam;
    ipam.ips = {IpConfig{ip_net("192.168.100.7/24"), std::nullopt, std::nullopt}};
    CHECK(result_to_json(ipam, "0.4.0") ==
          json::parse(R"({"cniVersion":"0.4.0","ips":[{"version":"4","address":"192.168.100.7/24"}],"dns":{}})"));
}

TEST_CASE("result to an unsupported version is code 1", "[cni][result]") {
    REQUIRE_CNI_ERROR(result_to_json(full_result(), "0.2.0"), ErrorCode::incompatible_version,
                      "incompatible CNI versions");
    REQUIRE_CNI_ERROR(result_to_json(full_result(), "2.0.0"), ErrorCode::incompatible_version, "");
}

TEST_CASE("results round-trip through every version", "[cni][result]") {
    for (std::string version : {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
        INFO(version);
        json printed = result_to_json(full_result(), version);
        Result back = result_from_json(printed);
        CHECK(back.cni_version == version);
        CHECK(result_to_json(back, version) == printed);
        // Converting up to 1.1.0 keeps everything the older version could carry.
        CHECK(back.ips.size() == 2);
        CHECK(back.ips[1].address == ip_net("fd00::5/64"));
        CHECK(back.ips[1].interface == 0);
        CHECK(back.dns.nameservers == std::vector<std::string>{"10.0.0.10"});
    }
    Result full = result_from_json(result_to_json(full_result(), "1.1.0"));
    CHECK(full.interfaces[0].mtu == 9000u);
    CHECK(full.interfaces[0].pci_id == "0000:af:06.0");
    CHECK(full.routes[0].scope == 0u);
    CHECK(full.routes[0].table == 100u);
    CHECK_FALSE(full.routes[1].scope);
}

TEST_CASE("0.x to 1.x conversion drops version, 1.x to 0.x derives it", "[cni][result]") {
    Result from_1x = result_from_json(
        json::parse(R"({"cniVersion":"1.0.0","ips":[{"address":"fd00::1/64"},{"address":"10.0.0.1/8"}]})"));
    json as_040 = result_to_json(from_1x, "0.4.0");
    CHECK(as_040["ips"][0]["version"] == "6");
    CHECK(as_040["ips"][1]["version"] == "4");
    // A wrong version in the input is ignored: the address decides.
    Result lying =
        result_from_json(json::parse(R"({"cniVersion":"0.4.0","ips":[{"version":"6","address":"10.0.0.1/8"}]})"));
    CHECK(result_to_json(lying, "0.4.0")["ips"][0]["version"] == "4");
    CHECK_FALSE(result_to_json(lying, "1.0.0")["ips"][0].contains("version"));
}

TEST_CASE("0.3.0's \"ip\" spelling is accepted when \"ips\" is absent", "[cni][result]") {
    Result r =
        result_from_json(json::parse(R"({"cniVersion":"0.3.0","ip":[{"version":"4","address":"10.1.0.5/24"}]})"));
    REQUIRE(r.ips.size() == 1);
    CHECK(r.ips[0].address == ip_net("10.1.0.5/24"));
    CHECK(result_to_json(r, "0.3.0").contains("ips"));  // emitted as libcni does
    CHECK_FALSE(result_to_json(r, "0.3.0").contains("ip"));
}

TEST_CASE("result without cniVersion is accepted (libcni fills it in)", "[cni][result]") {
    Result r = result_from_json(json::parse(R"({"ips":[{"address":"10.1.0.5/24"}],"dns":null})"));
    CHECK(r.cni_version.empty());
    CHECK(r.dns.empty());
}

TEST_CASE("malformed results name the field (decode failure)", "[cni][result]") {
    auto bad = [](const char* text) { return json::parse(text); };
    REQUIRE_CNI_ERROR(result_from_json(bad("[]")), ErrorCode::decode_failure, "result must be a JSON object");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"cniVersion":"0.2.0"})")), ErrorCode::decode_failure,
                      "result.cniVersion \"0.2.0\" is not a supported result version");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"cniVersion":5})")), ErrorCode::decode_failure,
                      "result.cniVersion must be a string, got 5");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"ips":{}})")), ErrorCode::decode_failure,
                      "result.ips must be a JSON list");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"ips":["10.0.0.1/8"]})")), ErrorCode::decode_failure,
                      "result.ips[0] must be a JSON object");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"ips":[{"gateway":"10.0.0.1"}]})")), ErrorCode::decode_failure,
                      "result.ips[0].address is required");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"ips":[{"address":"10.0.0.1"}]})")), ErrorCode::decode_failure,
                      "result.ips[0].address \"10.0.0.1\" is not an address in CIDR");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"ips":[{"address":"10.0.0.1/8","gateway":"gw"}]})")),
                      ErrorCode::decode_failure, "result.ips[0].gateway \"gw\" is not an IP address");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"ips":[{"address":"10.0.0.1/8","interface":-1}]})")),
                      ErrorCode::decode_failure, "result.ips[0].interface must be a non-negative integer");
    REQUIRE_CNI_ERROR(
        result_from_json(bad(R"({"interfaces":[{"name":"a"}],"ips":[{"address":"10.0.0.1/8","interface":1}]})")),
        ErrorCode::decode_failure, "1 is not an index into interfaces");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"interfaces":[{"name":7}]})")), ErrorCode::decode_failure,
                      "result.interfaces[0].name must be a string");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"interfaces":[{"name":"a","mtu":"9000"}]})")), ErrorCode::decode_failure,
                      "result.interfaces[0].mtu must be a non-negative integer");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"routes":[{"gw":"10.0.0.1"}]})")), ErrorCode::decode_failure,
                      "result.routes[0].dst is required");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"routes":[{"dst":"default"}]})")), ErrorCode::decode_failure,
                      "result.routes[0].dst \"default\"");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"routes":[{"dst":"0.0.0.0/0","scope":256}]})")),
                      ErrorCode::decode_failure, "result.routes[0].scope 256 is too large");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"dns":{"nameservers":"10.0.0.10"}})")), ErrorCode::decode_failure,
                      "result.dns.nameservers must be a JSON list");
    REQUIRE_CNI_ERROR(result_from_json(bad(R"({"dns":{"search":[1]}})")), ErrorCode::decode_failure,
                      "result.dns.search[0] must be a string, got 1");
}

TEST_CASE("dns to and from JSON", "[cni][result]") {
    Dns dns = dns_from_json(json::parse(kDnsJson));
    CHECK(dns.domain == "cluster.local");
    CHECK(dns.options == std::vector<std::string>{"ndots:5"});
    CHECK(dns_to_json(dns) == json::parse(kDnsJson));
    CHECK(dns_to_json(Dns{}) == json::object());
    CHECK(dns_from_json(json::object()).empty());
    REQUIRE_CNI_ERROR(dns_from_json(json::parse("[]")), ErrorCode::decode_failure, "dns must be a JSON object");
}
