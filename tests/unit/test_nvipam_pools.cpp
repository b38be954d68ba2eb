// nv-ipam's IPPool and CIDRPool, pure part: the spec as nv-ipam's webhook validates it (code 7
// naming the field), the controller's block/subnet order (static allocations, held-back prefixes,
// what a later controller keeps), the node's allocatable range (gateway, /31, /32, IPv6,
// exclusions, perNodeExclusions) and routes, node selectors. Fixtures in nv-ipam's shape.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "rdmanet/ipam/core/config.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/nvipam/blocks.hpp"
#include "rdmanet/ipam/nvipam/pool.hpp"
#include "fuzz/nvipam_pool_check.hpp"
#include "support/build_paths.hpp"

using namespace rdmanet::ipam;
using namespace rdmanet::ipam::nvipam;
using nlohmann::json;
using rdmanet::base::IpAddress;
using rdmanet::base::IpNetwork;

namespace {

IpAddress ip(const char* t) { return *IpAddress::parse(t); }
IpNetwork net(const char* t) { return *IpNetwork::parse(t); }

json object(const char* kind, json spec, json allocations = json::array(), const char* name = "pool1") {
    return {{"apiVersion", "nv-ipam.nvidia.com/v1alpha1"},
            {"kind", kind},
            {"metadata", {{"name", name}, {"namespace", "kube-system"}, {"resourceVersion", "12"}}},
            {"spec", spec},
            {"status", {{"allocations", allocations}}}};
}

json ippool(json spec, json allocations = json::array()) { return object("IPPool", spec, allocations); }
json cidrpool(json spec, json allocations = json::array()) { return object("CIDRPool", spec, allocations); }

std::pair<int, std::string> refusal(const json& o, PoolType type) {
    try {
        parse_pool(o, type);
    } catch (const IpamError& e) {
        return {e.code, e.msg};
    }
    return {0, ""};
}

// Every address the range hands out, in order (small ranges only).
std::vector<std::string> addresses(const Range& r) {
    std::vector<std::string> out;
    for (uint128 o = r.first; o <= r.last; ++o)
        if (r.allocatable(o)) out.push_back(r.address_at(o).str());
    return out;
}

}  // namespace

TEST_CASE("nv-ipam IPPool: spec and status in nv-ipam's shape", "[nvipam]") {
    const Pool p =
        parse_pool(ippool({{"subnet", "192.168.0.0/16"},
                           {"perNodeBlockSize", 100},
                           {"gateway", "192.168.0.1"},
                           {"exclusions", {{{"startIP", "192.168.0.5"}, {"endIP", "192.168.0.7"}}}},
                           {"perNodeExclusions", {{{"startIndex", 0}, {"endIndex", 1}}}},
                           {"routes", {{{"dst", "10.10.0.0/16"}}}},
                           {"defaultGateway", true}},
                          {{{"nodeName", "host-a"}, {"startIP", "192.168.0.1"}, {"endIP", "192.168.0.100"}},
                           {{"nodeName", "host-b"}, {"startIP", "192.168.0.101"}, {"endIP", "192.168.0.200"}}}),
                   PoolType::ippool);
    CHECK(p.where() == "IPPool kube-system/pool1");
    CHECK(p.resource_version == "12");
    CHECK(p.subnet == net("192.168.0.0/16"));
    CHECK(p.block_size == 100);
    CHECK(p.gateway == ip("192.168.0.1"));
    REQUIRE(p.allocations.size() == 2);
    REQUIRE(p.allocation_of("host-b"));
    CHECK(p.allocation_of("host-b")->start == ip("192.168.0.101"));
    CHECK_FALSE(p.allocation_of("host-c"));
    CHECK(p.default_gateway);
    REQUIRE(p.routes.size() == 1);
}

TEST_CASE("nv-ipam IPPool: what the webhook refuses is code 7 naming the field", "[nvipam]") {
    struct Case {
        json spec;
        const char* field;
    };
    const std::vector<Case> cases{
        {{{"subnet", "192.168.0.0/33"}, {"perNodeBlockSize", 10}}, "spec.subnet"},
        {{{"subnet", "192.168.0.1/24"}, {"perNodeBlockSize", 10}}, "host bits"},
        {{{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 1}}, "spec.perNodeBlockSize"},
        {{{"subnet", "192.168.0.0/24"}}, "spec.perNodeBlockSize"},
        {{{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 255}}, "spec.perNodeBlockSize"},
        {{{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 10}, {"gateway", "10.0.0.1"}}, "spec.gateway"},
        {{{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 10}, {"gateway", "nope"}}, "spec.gateway"},
        {{{"subnet", "192.168.0.0/24"},
          {"perNodeBlockSize", 10},
          {"exclusions", {{{"startIP", "192.168.0.9"}, {"endIP", "192.168.0.3"}}}}},
         "spec.exclusions[0]"},
        {{{"subnet", "192.168.0.0/24"},
          {"perNodeBlockSize", 10},
          {"exclusions", {{{"startIP", "192.168.1.9"}, {"endIP", "192.168.0.3"}}}}},
         "spec.exclusions[0].startIP"},
        {{{"subnet", "192.168.0.0/24"},
          {"perNodeBlockSize", 10},
          {"perNodeExclusions", {{{"startIndex", 2}, {"endIndex", 10}}}}},
         "spec.perNodeExclusions[0].endIndex"},
        {{{"subnet", "192.168.0.0/24"},
          {"perNodeBlockSize", 10},
          {"perNodeExclusions", {{{"startIndex", 3}, {"endIndex", 2}}}}},
         "spec.perNodeExclusions[0]"},
        {{{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 10}, {"defaultGateway", true}}, "spec.defaultGateway"},
        {{{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 10}, {"routes", {{{"dst", "fd00::/64"}}}}},
         "spec.routes[0].dst"},
        {{{"subnet", "192.168.0.0/24"},
          {"perNodeBlockSize", 10},
          {"nodeSelector", {{"nodeSelectorTerms", {{{"matchExpressions", {{{"key", "a"}, {"operator", "Maybe"}}}}}}}}}},
         "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator"},
    };
    for (const auto& c : cases) {
        INFO(c.spec.dump());
        const auto [code, msg] = refusal(ippool(c.spec), PoolType::ippool);
        CHECK(code == 7);
        CHECK_THAT(msg, Catch::Contains("IPPool kube-system/pool1") && Catch::Contains(c.field));
    }
    json bad_name = ippool({{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 10}});
    bad_name["metadata"]["name"] = "Pool/1";
    CHECK_THAT(refusal(bad_name, PoolType::ippool).second, Catch::Contains("metadata.name"));
}

TEST_CASE("nv-ipam CIDRPool: what the webhook refuses is code 7 naming the field", "[nvipam]") {
    struct Case {
        json spec;
        const char* field;
    };
    const json base = {{"cidr", "10.0.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}};
    auto with = [&](json extra) {
        json s = base;
        s.update(extra);
        return s;
    };
    const std::vector<Case> cases{
        {with({{"cidr", "10.0.0.1/16"}}), "spec.cidr"},
        {with({{"perNodeNetworkPrefix", 8}}), "spec.perNodeNetworkPrefix"},
        {with({{"perNodeNetworkPrefix", 33}}), "spec.perNodeNetworkPrefix"},
        {with({{"perNodeNetworkPrefix", nullptr}}), "spec.perNodeNetworkPrefix"},
        {with({{"gatewayIndex", -1}}), "spec.gatewayIndex"},
        {with({{"gatewayIndex", 0}}), "spec.gatewayIndex"},
        {with({{"gatewayIndex", 255}}), "spec.gatewayIndex"},
        {with({{"gatewayIndex", nullptr}, {"defaultGateway", true}}), "spec.defaultGateway"},
        {with({{"gatewayIndex", nullptr}, {"routes", {{{"dst", "1.0.0.0/8"}}}}}), "spec.routes"},
        {with({{"defaultGateway", true}, {"routes", {{{"dst", "0.0.0.0/0"}}}}}), "spec.routes[0].dst"},
        {with({{"perNodeExclusions", {{{"startIndex", 0}, {"endIndex", 256}}}}}), "spec.perNodeExclusions[0].endIndex"},
        {with({{"staticAllocations", {{{"nodeName", "a"}, {"prefix", "10.1.0.0/24"}}}}}),
         "spec.staticAllocations[0].prefix"},
        {with({{"staticAllocations", {{{"nodeName", "a"}, {"prefix", "10.0.0.0/25"}}}}}),
         "spec.staticAllocations[0].prefix"},
        {with({{"staticAllocations", {{{"nodeName", "a"}, {"prefix", "10.0.0.1/24"}}}}}),
         "spec.staticAllocations[0].prefix"},
        {with({{"staticAllocations", {{{"nodeName", "a"}, {"prefix", "10.0.0.0/24"}, {"gateway", "10.0.1.1"}}}}}),
         "spec.staticAllocations[0].gateway"},
        {with({{"staticAllocations",
                {{{"nodeName", "a"}, {"prefix", "10.0.0.0/24"}}, {{"nodeName", "a"}, {"prefix", "10.0.1.0/24"}}}}}),
         "multiple entries for node a"},
        {with({{"staticAllocations", {{{"nodeName", "a"}, {"prefix", "10.0.0.0/24"}}, {{"prefix", "10.0.0.0/24"}}}}}),
         "multiple entries for prefix"},
    };
    for (const auto& c : cases) {
        INFO(c.spec.dump());
        const auto [code, msg] = refusal(cidrpool(c.spec), PoolType::cidrpool);
        CHECK(code == 7);
        CHECK_THAT(msg, Catch::Contains("CIDRPool kube-system/pool1") && Catch::Contains(c.field));
    }
}

TEST_CASE("nv-ipam poolType: ippool, cidrpool, default ippool, a typo is code 7", "[nvipam]") {
    CHECK(parse_pool_type("ippool", "ipam.poolType") == PoolType::ippool);
    CHECK(parse_pool_type("cidrpool", "ipam.poolType") == PoolType::cidrpool);
    CHECK(parse_pool_type("", "ipam.poolType") == PoolType::ippool);
    try {
        parse_pool_type("cidrpol", "ipam.poolType");
        FAIL("accepted");
    } catch (const IpamError& e) {
        CHECK(e.code == 7);
        CHECK_THAT(e.msg,
                   Catch::Contains("ipam.poolType") && Catch::Contains("cidrpol") && Catch::Contains("\"cidrpool\""));
    }
}

TEST_CASE("nv-ipam gatewayIndex: nv-ipam's rule for every subnet size", "[nvipam]") {
    CHECK(gateway_at(net("192.168.1.0/24"), 1) == ip("192.168.1.1"));
    CHECK(gateway_at(net("192.168.1.0/24"), 10) == ip("192.168.1.10"));
    CHECK_FALSE(gateway_at(net("192.168.1.0/24"), 0));  // the network address is no gateway
    CHECK(gateway_at(net("192.168.1.0/24"), 254) == ip("192.168.1.254"));
    CHECK_FALSE(gateway_at(net("192.168.1.0/24"), 255));  // broadcast
    CHECK(gateway_at(net("192.168.1.2/31"), 0) == ip("192.168.1.2"));
    CHECK(gateway_at(net("192.168.1.2/31"), 1) == ip("192.168.1.3"));
    CHECK_FALSE(gateway_at(net("192.168.1.2/31"), 2));
    CHECK(gateway_at(net("192.168.1.2/32"), 0) == ip("192.168.1.2"));
    CHECK_FALSE(gateway_at(net("192.168.1.2/32"), 1));
    CHECK(gateway_at(net("fd00::/120"), 255) == ip("fd00::ff"));  // IPv6: no broadcast
    CHECK_FALSE(gateway_at(net("fd00::/120"), 256));
}

TEST_CASE("nv-ipam IPPool order: blocks from network+1, holes refilled, never the broadcast", "[nvipam]") {
    const json spec = {{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 100}};
    Pool p = parse_pool(ippool(spec), PoolType::ippool);
    auto a = next_allocation(p, "n1");
    REQUIRE(a);
    CHECK(a->start == ip("192.168.0.1"));
    CHECK(a->end == ip("192.168.0.100"));
    p.allocations.push_back(*a);
    CHECK(next_allocation(p, "n1") == a);  // its own block again
    auto b = next_allocation(p, "n2");
    REQUIRE(b);
    CHECK(b->start == ip("192.168.0.101"));
    CHECK(b->end == ip("192.168.0.200"));
    p.allocations.push_back(*b);
    CHECK_FALSE(next_allocation(p, "n3"));  // .201-.300 leaves the subnet
    p.allocations.erase(p.allocations.begin());
    CHECK(next_allocation(p, "n3")->start == ip("192.168.0.1"));  // the freed hole first
    // 2 blocks of 127 would need .255 (broadcast): only one fits.
    Pool q = parse_pool(ippool({{"subnet", "10.0.0.0/24"}, {"perNodeBlockSize", 127}}), PoolType::ippool);
    q.allocations.push_back(*next_allocation(q, "x"));
    CHECK(next_allocation(q, "y")->end == ip("10.0.0.254"));
    // A misaligned entry of the node itself is not kept (the controller would drop it).
    Pool r = parse_pool(ippool(spec, {{{"nodeName", "n1"}, {"startIP", "192.168.0.5"}, {"endIP", "192.168.0.104"}}}),
                        PoolType::ippool);
    CHECK_FALSE(valid_allocation(r, r.allocations[0]));
    CHECK(next_allocation(r, "n1")->start == ip("192.168.0.1"));
    // Another node's entry is never overlapped, even a misaligned one: .5-.104 blocks both blocks.
    CHECK_FALSE(next_allocation(r, "n2"));
}

TEST_CASE("nv-ipam CIDRPool order: subnets in order, static allocations pinned and held back", "[nvipam]") {
    const json spec = {{"cidr", "10.0.0.0/22"},
                       {"perNodeNetworkPrefix", 24},
                       {"gatewayIndex", 1},
                       {"staticAllocations",
                        {{{"nodeName", "pinned"}, {"prefix", "10.0.2.0/24"}, {"gateway", "10.0.2.254"}},
                         {{"prefix", "10.0.0.0/24"}}}}};
    Pool p = parse_pool(cidrpool(spec), PoolType::cidrpool);
    auto a = next_allocation(p, "n1");
    REQUIRE(a);
    CHECK(a->prefix == net("10.0.1.0/24"));  // .0 held back, .2 pinned
    CHECK(a->gateway == ip("10.0.1.1"));
    p.allocations.push_back(*a);
    auto pinned = next_allocation(p, "pinned");
    CHECK(pinned->prefix == net("10.0.2.0/24"));
    CHECK(pinned->gateway == ip("10.0.2.254"));
    auto b = next_allocation(p, "n2");
    CHECK(b->prefix == net("10.0.3.0/24"));
    p.allocations.push_back(*b);
    CHECK_FALSE(next_allocation(p, "n3"));
    // The controller's validation: a wrong gateway, a size mismatch, another node's static prefix.
    CHECK(valid_allocation(p, *a));
    NodeAllocation wrong_gw = *a;
    wrong_gw.gateway = ip("10.0.1.2");
    CHECK_FALSE(valid_allocation(p, wrong_gw));
    NodeAllocation stolen{"n9", ip("10.0.2.0"), ip("10.0.2.255"), net("10.0.2.0/24"), ip("10.0.2.1")};
    CHECK_FALSE(valid_allocation(p, stolen));
    NodeAllocation pinned_elsewhere{"pinned", ip("10.0.3.0"), ip("10.0.3.255"), net("10.0.3.0/24"), ip("10.0.3.1")};
    CHECK_FALSE(valid_allocation(p, pinned_elsewhere));
    // No gatewayIndex: no gateway, and an entry with one is invalid.
    Pool nogw = parse_pool(cidrpool({{"cidr", "10.0.0.0/23"}, {"perNodeNetworkPrefix", 24}}), PoolType::cidrpool);
    CHECK_FALSE(next_allocation(nogw, "n1")->gateway);
}

TEST_CASE("nv-ipam CIDRPool node range: /24 with gatewayIndex 1, exclusions, perNodeExclusions", "[nvipam]") {
    const Pool p = parse_pool(cidrpool({{"cidr", "10.0.0.0/16"},
                                        {"perNodeNetworkPrefix", 24},
                                        {"gatewayIndex", 1},
                                        {"exclusions", {{{"startIP", "10.0.0.250"}, {"endIP", "10.0.1.3"}}}},
                                        {"perNodeExclusions", {{{"startIndex", 2}, {"endIndex", 4}}}},
                                        {"routes", {{{"dst", "192.168.0.0/16"}}}},
                                        {"defaultGateway", true}}),
                              PoolType::cidrpool);
    const auto a0 = next_allocation(p, "n0");
    const Range r0 = node_range(p, *a0);
    CHECK(r0.cidr == net("10.0.0.0/24"));  // the address carries the node subnet's length
    CHECK(r0.gateway == ip("10.0.0.1"));
    const auto v0 = addresses(r0);
    CHECK(v0.front() == "10.0.0.5");   // .0 network, .1 gateway, .2-.4 perNodeExclusions
    CHECK(v0.back() == "10.0.0.249");  // .250-.255: exclusion, then broadcast
    CHECK(v0.size() == 245);
    Pool p1 = p;
    p1.allocations.push_back(*a0);
    const Range r1 = node_range(p1, *next_allocation(p1, "n1"));
    CHECK(addresses(r1).front() == "10.0.1.5");  // the pool exclusion reached into .1.0-.1.3 too
    const auto routes = node_routes(p, *a0);
    REQUIRE(routes.size() == 2);
    CHECK(routes[0].dst == net("192.168.0.0/16"));
    CHECK(routes[0].gw == ip("10.0.0.1"));
    CHECK(routes[1].dst == net("0.0.0.0/0"));
    CHECK(routes[1].gw == ip("10.0.0.1"));
}

TEST_CASE("nv-ipam CIDRPool node range: /31 and /32 (RFC 3021), IPv6 /120", "[nvipam]") {
    const Pool p2p = parse_pool(
        cidrpool({{"cidr", "172.16.0.0/30"}, {"perNodeNetworkPrefix", 31}, {"gatewayIndex", 0}}), PoolType::cidrpool);
    const auto a = next_allocation(p2p, "n0");
    CHECK(a->prefix == net("172.16.0.0/31"));
    CHECK(a->gateway == ip("172.16.0.0"));  // the peer
    CHECK(addresses(node_range(p2p, *a)) == std::vector<std::string>{"172.16.0.1"});
    const Pool both =
        parse_pool(cidrpool({{"cidr", "172.16.0.0/30"}, {"perNodeNetworkPrefix", 31}}), PoolType::cidrpool);
    CHECK(addresses(node_range(both, *next_allocation(both, "n0"))) ==
          std::vector<std::string>{"172.16.0.0", "172.16.0.1"});
    const Pool one =
        parse_pool(cidrpool({{"cidr", "172.16.0.0/30"}, {"perNodeNetworkPrefix", 32}}), PoolType::cidrpool);
    CHECK(addresses(node_range(one, *next_allocation(one, "n0"))) == std::vector<std::string>{"172.16.0.0"});
    const Pool v6 = parse_pool(
        cidrpool(
            {{"cidr", "fd00:10::/112"}, {"perNodeNetworkPrefix", 120}, {"gatewayIndex", 1}, {"defaultGateway", true}}),
        PoolType::cidrpool);
    const auto a6 = next_allocation(v6, "n0");
    const auto list = addresses(node_range(v6, *a6));
    CHECK(list.front() == "fd00:10::2");
    CHECK(list.back() == "fd00:10::ff");
    CHECK(list.size() == 254);
    CHECK(node_routes(v6, *a6).at(0).dst == net("::/0"));
}

TEST_CASE("nv-ipam IPPool node range: the block, the pool gateway excluded, perNodeExclusions from the block start",
          "[nvipam]") {
    const Pool p = parse_pool(ippool({{"subnet", "192.168.0.0/24"},
                                      {"perNodeBlockSize", 10},
                                      {"gateway", "192.168.0.1"},
                                      {"exclusions", {{{"startIP", "192.168.0.9"}, {"endIP", "192.168.0.12"}}}},
                                      {"perNodeExclusions", {{{"startIndex", 9}, {"endIndex", 9}}}}}),
                              PoolType::ippool);
    Pool q = p;
    const auto a = next_allocation(q, "n0");
    q.allocations.push_back(*a);
    const auto b = next_allocation(q, "n1");
    const Range ra = node_range(p, *a);
    CHECK(ra.cidr == net("192.168.0.0/24"));  // the address carries the pool subnet's length
    CHECK(addresses(ra) == std::vector<std::string>{"192.168.0.2", "192.168.0.3", "192.168.0.4", "192.168.0.5",
                                                    "192.168.0.6", "192.168.0.7", "192.168.0.8"});
    CHECK(addresses(node_range(p, *b)) == std::vector<std::string>{"192.168.0.13", "192.168.0.14", "192.168.0.15",
                                                                   "192.168.0.16", "192.168.0.17", "192.168.0.18",
                                                                   "192.168.0.19"});
    CHECK(node_range(p, *b).gateway == ip("192.168.0.1"));  // the pool's gateway for every block
}

TEST_CASE("nv-ipam nodeSelector: In, NotIn, Exists, DoesNotExist, Gt, Lt, matchFields, terms ORed", "[nvipam]") {
    const Pool p = parse_pool(
        ippool({{"subnet", "10.0.0.0/24"},
                {"perNodeBlockSize", 10},
                {"nodeSelector",
                 {{"nodeSelectorTerms",
                   {{{"matchExpressions",
                      {{{"key", "rail"}, {"operator", "In"}, {"values", {"1", "2"}}},
                       {{"key", "drain"}, {"operator", "DoesNotExist"}}}}},
                    {{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"special"}}}}}},
                    {{"matchExpressions", {{{"key", "gpus"}, {"operator", "Gt"}, {"values", {"4"}}}}}}}}}}}),
        PoolType::ippool);
    REQUIRE(p.selector);
    const auto& s = *p.selector;
    CHECK(matches(s, {{"rail", "1"}}, "n"));
    CHECK_FALSE(matches(s, {{"rail", "1"}, {"drain", ""}}, "n"));
    CHECK_FALSE(matches(s, {{"rail", "3"}}, "n"));
    CHECK(matches(s, {}, "special"));
    CHECK(matches(s, {{"gpus", "8"}}, "n"));
    CHECK_FALSE(matches(s, {{"gpus", "4"}}, "n"));
    CHECK_FALSE(matches(s, {{"gpus", "many"}}, "n"));
    CHECK_FALSE(matches(NodeSelector{{SelectorTerm{}}}, {{"a", "b"}}, "n"));  // an empty term matches nothing
}

TEST_CASE("nv-ipam status: written sorted by node name in nv-ipam's shape, bad entries skipped on read", "[nvipam]") {
    Pool p = parse_pool(cidrpool({{"cidr", "10.0.0.0/16"}, {"perNodeNetworkPrefix", 24}, {"gatewayIndex", 1}},
                                 {{{"nodeName", "b"}, {"prefix", "10.0.0.0/24"}, {"gateway", "10.0.0.1"}},
                                  {{"nodeName", "c"}, {"prefix", "garbage"}},
                                  {{"prefix", "10.0.9.0/24"}}}),
                        PoolType::cidrpool);
    REQUIRE(p.allocations.size() == 1);
    std::vector<NodeAllocation> all = p.allocations;
    all.push_back(*next_allocation(p, "a"));
    const json out = allocations_json(p, all);
    CHECK(out == json::parse(R"([{"nodeName":"a","prefix":"10.0.1.0/24","gateway":"10.0.1.1"},
                                 {"nodeName":"b","prefix":"10.0.0.0/24","gateway":"10.0.0.1"}])"));
    Pool ipp = parse_pool(ippool({{"subnet", "10.0.0.0/24"}, {"perNodeBlockSize", 10}}), PoolType::ippool);
    CHECK(allocations_json(ipp, {*next_allocation(ipp, "z")}) ==
          json::parse(R"([{"nodeName":"z","startIP":"10.0.0.1","endIP":"10.0.0.10"}])"));
}

TEST_CASE("nv-ipam CNI keys: poolName list, poolType, poolNamespace, typos and mixes are code 7", "[nvipam]") {
    const IpamConfig c = parse_ipam_config({{"type", "rdmanet-ipam"},
                                            {"poolName", "rail1-v4, rail1-v6"},
                                            {"poolType", "cidrpool"},
                                            {"poolNamespace", "nvidia-network-operator"}});
    CHECK(c.nv.enabled);
    CHECK(c.nv.pools == std::vector<std::string>{"rail1-v4", "rail1-v6"});
    CHECK(c.nv.type == "cidrpool");
    CHECK(c.nv.ns == "nvidia-network-operator");
    CHECK(c.store.datastore == Datastore::kubernetes);
    CHECK(c.ranges.empty());
    // poolType alone: the pool is the network's name (nv-ipam's default), resolved by the verb.
    const IpamConfig d = parse_ipam_config({{"type", "rdmanet-ipam"}, {"poolType", "ippool"}});
    CHECK(d.nv.enabled);
    CHECK(d.nv.pools.empty());
    CHECK_FALSE(parse_ipam_config({{"type", "rdmanet-ipam"}, {"range", "10.0.0.0/24"}}).nv.enabled);
    auto refused = [](json ipam) -> std::pair<int, std::string> {
        ipam["type"] = "rdmanet-ipam";
        try {
            parse_ipam_config(ipam);
        } catch (const IpamError& e) {
            return {e.code, e.msg};
        }
        return {0, ""};
    };
    CHECK(refused({{"poolName", "a"}, {"poolType", "cidrpol"}}).first == 7);
    CHECK_THAT(refused({{"poolName", "a"}, {"poolType", "cidrpol"}}).second, Catch::Contains("ipam.poolType"));
    CHECK_THAT(refused({{"poolName", "a,b,c"}}).second, Catch::Contains("more than two pools"));
    CHECK_THAT(refused({{"poolName", "a,,b"}}).second, Catch::Contains("is not a pool name"));
    CHECK_THAT(refused({{"poolName", "../etc"}}).second, Catch::Contains("is not a pool name"));
    CHECK_THAT(refused({{"poolName", "a"}, {"range", "10.0.0.0/24"}}).second,
               Catch::Contains("ipam.range cannot be combined"));
    CHECK_THAT(refused({{"poolName", "a"}, {"poolNamespace", "Bad_NS"}}).second, Catch::Contains("ipam.poolNamespace"));
}

// Hostile or broken pools: what would hand out an address no host has, or a block another node
// holds, is refused with code 7 naming the pool and the field.
TEST_CASE("nv-ipam hostile pools: unusable prefixes refused, naming pool and field", "[nvipam][hostile]") {
    auto refused = [](const json& o, PoolType type, const std::string& field) {
        const auto [code, msg] = refusal(o, type);
        INFO(msg);
        CHECK(code == codes::invalid_config);
        CHECK_THAT(msg, Catch::Contains("kube-system/pool1") && Catch::Contains(field));
        CHECK_THAT(msg, !Catch::Contains("json.exception"));
    };
    // /0 pools: every address, 0.0.0.0/32 or ::/128 the first node's.
    refused(cidrpool({{"cidr", "0.0.0.0/0"}, {"perNodeNetworkPrefix", 32}}), PoolType::cidrpool, "spec.cidr");
    refused(cidrpool({{"cidr", "::/0"}, {"perNodeNetworkPrefix", 128}}), PoolType::cidrpool, "spec.cidr");
    refused(cidrpool({{"cidr", "0.0.0.0/8"}, {"perNodeNetworkPrefix", 32}}), PoolType::cidrpool, "spec.cidr");
    refused(ippool({{"subnet", "0.0.0.0/0"}, {"perNodeBlockSize", 10}}), PoolType::ippool, "spec.subnet");
    refused(ippool({{"subnet", "::/0"}, {"perNodeBlockSize", 10}}), PoolType::ippool, "spec.subnet");
    CHECK_THAT(refusal(cidrpool({{"cidr", "0.0.0.0/0"}, {"perNodeNetworkPrefix", 32}}), PoolType::cidrpool).second,
               Catch::Contains("unspecified address 0.0.0.0") && Catch::Contains("prefix length 0"));
    // A single-address node subnet that is its own gateway: nothing left to hand out.
    refused(cidrpool({{"cidr", "10.0.0.0/24"}, {"perNodeNetworkPrefix", 32}, {"gatewayIndex", 0}}), PoolType::cidrpool,
            "spec.gatewayIndex");
    refused(cidrpool({{"cidr", "fd00::/120"}, {"perNodeNetworkPrefix", 128}, {"gatewayIndex", 0}}), PoolType::cidrpool,
            "spec.gatewayIndex");
    refused(
        cidrpool({{"cidr", "10.0.0.0/24"},
                  {"perNodeNetworkPrefix", 32},
                  {"staticAllocations", {{{"nodeName", "a"}, {"prefix", "10.0.0.7/32"}, {"gateway", "10.0.0.7"}}}}}),
        PoolType::cidrpool, "spec.staticAllocations[0].gateway");
    // Still served: /31 with the peer as gateway, /32 without one, a pool next to 0.0.0.0.
    CHECK(refusal(cidrpool({{"cidr", "10.0.0.0/24"}, {"perNodeNetworkPrefix", 31}, {"gatewayIndex", 0}}),
                  PoolType::cidrpool)
              .first == 0);
    CHECK(refusal(cidrpool({{"cidr", "10.0.0.0/24"}, {"perNodeNetworkPrefix", 32}}), PoolType::cidrpool).first == 0);
    CHECK(refusal(ippool({{"subnet", "1.0.0.0/24"}, {"perNodeBlockSize", 10}}), PoolType::ippool).first == 0);
}

TEST_CASE("nv-ipam hostile pools: type errors name the field, never the JSON library", "[nvipam][hostile]") {
    auto named = [](json o, PoolType type, const std::string& field) {
        const auto [code, msg] = refusal(o, type);
        INFO(msg);
        CHECK(code == codes::invalid_config);
        CHECK_THAT(msg, Catch::Contains(field) && !Catch::Contains("json.exception"));
    };
    json o = ippool({{"subnet", "10.0.0.0/24"}, {"perNodeBlockSize", 10}});
    for (const char* key : {"name", "namespace", "resourceVersion"}) {
        json bad = o;
        bad["metadata"][key] = 5;
        named(bad, PoolType::ippool, std::string("metadata.") + key);
    }
    json md = o;
    md["metadata"] = 7;
    named(md, PoolType::ippool, "metadata");
    named(json(42), PoolType::ippool, "must be a JSON object");
    named(json::array(), PoolType::cidrpool, "must be a JSON object");
    json spec = o;
    spec["spec"]["subnet"] = 10;
    named(spec, PoolType::ippool, "spec.subnet");
    spec = o;
    spec["spec"]["perNodeBlockSize"] = "10";
    named(spec, PoolType::ippool, "spec.perNodeBlockSize");
    spec = cidrpool({{"cidr", "10.0.0.0/16"},
                     {"perNodeNetworkPrefix", 24},
                     {"staticAllocations", {{{"nodeName", 3}, {"prefix", "10.0.1.0/24"}}}}});
    named(spec, PoolType::cidrpool, "spec.staticAllocations[0].nodeName");
}

TEST_CASE("nv-ipam hostile pools: a block another node holds too is never used", "[nvipam][hostile]") {
    const json spec = {{"subnet", "192.168.0.0/24"}, {"perNodeBlockSize", 100}};
    const Pool p =
        parse_pool(ippool(spec, {{{"nodeName", "n1"}, {"startIP", "192.168.0.1"}, {"endIP", "192.168.0.100"}},
                                 {{"nodeName", "n2"}, {"startIP", "192.168.0.1"}, {"endIP", "192.168.0.100"}},
                                 {{"nodeName", "n3"}, {"startIP", "192.168.0.101"}, {"endIP", "192.168.0.200"}}}),
                   PoolType::ippool);
    const NodeAllocation* other = overlapping_allocation(p, *p.allocation_of("n1"));
    REQUIRE(other);
    CHECK(other->node == "n2");
    CHECK_FALSE(overlapping_allocation(p, *p.allocation_of("n3")));
    const Pool c = parse_pool(
        cidrpool({{"cidr", "10.0.0.0/16"}, {"perNodeNetworkPrefix", 24}},
                 {{{"nodeName", "a"}, {"prefix", "10.0.1.0/24"}}, {{"nodeName", "b"}, {"prefix", "10.0.1.0/24"}}}),
        PoolType::cidrpool);
    CHECK(overlapping_allocation(c, *c.allocation_of("b"))->node == "a");
}

// The claim's order at scale, against the straightforward rule (the first candidate no other
// entry overlaps): random pools with holes, misaligned entries, statics and both families.
TEST_CASE("nv-ipam claim order: the one-pass claim picks what a scan of every entry picks", "[nvipam]") {
    std::mt19937 rng(1234);
    auto reference = [](const Pool& pool, const std::string& node) -> std::optional<IpAddress> {
        const IpAddress net0 = pool.subnet.first();
        const bool ippool = pool.type == PoolType::ippool;
        const uint128 step = ippool ? uint128{pool.block_size} : uint128{1} << (net0.bits() - pool.node_prefix);
        for (uint128 k = 0;; ++k) {
            const uint128 lo = net0.to_u128() + (ippool ? 1 : 0) + k * step, hi = lo + step - 1;
            if (hi > pool.subnet.last().to_u128() || (ippool && net0.is_v4() && hi == pool.subnet.last().to_u128()))
                return std::nullopt;
            bool taken = false;
            for (const auto& a : pool.allocations)
                taken = taken || (a.node != node && !(a.end.to_u128() < lo || hi < a.start.to_u128()));
            for (const auto& s : pool.statics) taken = taken || (s.prefix.first().to_u128() == lo);
            if (!taken) return IpAddress::from_u128(net0.family(), lo);
        }
    };
    for (int round = 0; round < 200; ++round) {
        const bool ip = round % 2 == 0;
        Pool p =
            ip ? parse_pool(
                     ippool({{"subnet", round % 4 == 0 ? "10.1.0.0/22" : "fd00:1::/118"}, {"perNodeBlockSize", 7}}),
                     PoolType::ippool)
               : parse_pool(cidrpool({{"cidr", round % 4 == 1 ? "10.2.0.0/22" : "fd00:2::/118"},
                                      {"perNodeNetworkPrefix", round % 4 == 1 ? 28 : 124},
                                      {"staticAllocations",
                                       {{{"prefix", round % 4 == 1 ? "10.2.0.32/28" : "fd00:2::20/124"}}}}}),
                            PoolType::cidrpool);
        const uint128 base = p.subnet.first().to_u128();
        const int entries = static_cast<int>(rng() % 120);
        for (int i = 0; i < entries; ++i) {
            const uint128 s = base + rng() % 1000, len = rng() % 20;
            const IpAddress a = IpAddress::from_u128(p.subnet.address.family(), s),
                            b = IpAddress::from_u128(p.subnet.address.family(), s + len);
            p.allocations.push_back({"o" + std::to_string(i), a, b, IpNetwork{a, a.bits()}, std::nullopt});
        }
        const auto got = next_allocation(p, "me");
        const auto want = reference(p, "me");
        INFO("round " << round);
        REQUIRE(got.has_value() == want.has_value());
        if (got) CHECK(got->start == *want);
    }
}

// The fuzz target's seed corpus at full size (libFuzzer cuts inputs to 8 KiB): deep and large
// pools, a /0, overlapping status, wrong types - each a pool or a clean IpamError.
TEST_CASE("nv-ipam pool objects: the fuzz corpus replayed whole", "[nvipam][hostile][fuzz]") {
    const std::filesystem::path dir = rdmanet::test::source_dir() + "/tests/fuzz/corpus/fuzz_nvipam_pool";
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        INFO(entry.path().string());
        rdmanet::fuzz::check_nvipam_pool(text.str());
        ++files;
    }
    CHECK(files >= 8);
    // The corpus's overlapping status is refused by the claim, and its /0 by the parser.
    const json overlap = json::parse(std::ifstream(dir / "overlap.json"));
    const Pool p = parse_pool(overlap, PoolType::ippool);
    CHECK(overlapping_allocation(p, *p.allocation_of("fuzz-node")));
    CHECK(refusal(json::parse(std::ifstream(dir / "slash0.json")), PoolType::cidrpool).first == codes::invalid_config);
}
