// Node slices, pure part: node_slice_size parsing and validation, slice arithmetic (IPv4, IPv6,
// ranges far too large to list), whereabouts' names, the NodeSlicePool reader, the claim decision
// and its patches, node identity.
#include <catch2/catch.hpp>

#include "ipam_test_util.hpp"
#include "rdmanet/ipam/core/error.hpp"
#include "rdmanet/ipam/kube/node_identity.hpp"
#include "rdmanet/ipam/kube/node_slices.hpp"
#include "rdmanet/ipam/kube/slice_backlog.hpp"
#include "rdmanet/ipam/kube/slice_reclaim.hpp"
#include "rdmanet/ipam/core/node_slice_size.hpp"

using namespace rdmanet::ipam;
using namespace rdmanet::ipam::kube;
using nlohmann::json;
using rdmanet::base::IpNetwork;

namespace {

IpNetwork net(const char* text) { return *IpNetwork::parse(text); }

// parse_ipam_config's error (code and message) for `ipam`.
std::pair<int, std::string> config_failure(json ipam) {
    ipam["type"] = "rdmanet-ipam";
    try {
        parse_ipam_config(ipam);
    } catch (const IpamError& e) {
        return {e.code, e.msg};
    }
    return {0, ""};
}

json pool_object(const char* range, const char* size, json allocations = json::array(), const char* rv = "7") {
    return {{"apiVersion", "whereabouts.cni.cncf.io/v1alpha1"},
            {"kind", "NodeSlicePool"},
            {"metadata", {{"name", "blue"}, {"namespace", "kube-system"}, {"resourceVersion", rv}}},
            {"spec", {{"range", range}, {"sliceSize", size}}},
            {"status", {{"allocations", allocations}}}};
}

}  // namespace

TEST_CASE("node_slice_size: \"/26\" and \"26\" forms, IPv4 and IPv6", "[ipam][slices]") {
    CHECK(parse_node_slice_size("/26") == 26);
    CHECK(parse_node_slice_size("26") == 26);
    CHECK(parse_node_slice_size("/120") == 120);
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/16"}, {"node_slice_size", "/25"}});
    REQUIRE(c.store.node_slice_prefix);
    CHECK(*c.store.node_slice_prefix == 25);
    const IpamConfig v6 = ipam_test::config({{"range", "fd00::/64"}, {"node_slice_size", "/120"}});
    CHECK(*v6.store.node_slice_prefix == 120);
    // Absent: no slice mode.
    CHECK_FALSE(ipam_test::config({{"range", "10.0.0.0/16"}}).store.node_slice_prefix);
}

TEST_CASE("node_slice_size: bad values are code 7 with a message saying what to fix", "[ipam][slices]") {
    auto [code, msg] = config_failure({{"range", "10.0.0.0/16"}, {"node_slice_size", "big"}});
    CHECK(code == 7);
    CHECK_THAT(msg, Catch::Contains("not a prefix length") && Catch::Contains("\"/26\""));
    std::tie(code, msg) = config_failure({{"range", "10.0.0.0/16"}, {"node_slice_size", "/12"}});
    CHECK(code == 7);
    CHECK_THAT(msg, Catch::Contains("larger than ipam.range 10.0.0.0/16"));
    std::tie(code, msg) = config_failure({{"range", "10.0.0.0/16"}, {"node_slice_size", "/33"}});
    CHECK(code == 7);
    CHECK_THAT(msg, Catch::Contains("at most /32"));
    std::tie(code, msg) = config_failure({{"range", "10.0.0.0/16"}, {"node_slice_size", "/31"}});
    CHECK(code == 7);
    CHECK_THAT(msg, Catch::Contains("no usable address") && Catch::Contains("/30"));
    std::tie(code, msg) = config_failure({{"range", "fd00::/64"}, {"node_slice_size", "/48"}});
    CHECK(code == 7);
    CHECK_THAT(msg, Catch::Contains("larger than"));
    std::tie(code, msg) = config_failure({{"range", "10.0.0.0/16"}, {"node_slice_size", "/-5"}});
    CHECK(code == 7);
    std::tie(code, msg) = config_failure({{"range", "10.0.0.0/16"}, {"node_slice_size", 26}});
    CHECK(code == 7);
    // Dual stack with one size: the range it does not fit is named.
    std::tie(code, msg) = config_failure(
        {{"range", "10.0.0.0/16"}, {"ipRanges", {{{"range", "fd00::/64"}}}}, {"node_slice_size", "/26"}});
    CHECK(code == 7);
    CHECK_THAT(msg, Catch::Contains("ipam.ipRanges[0]") && Catch::Contains("fd00::/64"));
}

TEST_CASE("slices: count, position and index, also where the range has 2^56 slices", "[ipam][slices]") {
    CHECK(slice_count(net("10.0.0.0/16"), 25) == 512);
    CHECK(slice_at(net("10.0.0.0/16"), 25, 0) == net("10.0.0.0/25"));
    CHECK(slice_at(net("10.0.0.0/16"), 25, 3) == net("10.0.1.128/25"));
    CHECK(slice_index(net("10.0.0.0/16"), 25, net("10.0.255.128/25")) == uint128{511});
    CHECK_FALSE(slice_index(net("10.0.0.0/16"), 25, net("10.0.0.64/26")));  // other size
    CHECK_FALSE(slice_index(net("10.0.0.0/16"), 25, net("10.1.0.0/25")));   // outside
    CHECK(slice_count(net("fd00::/64"), 120) == (uint128{1} << 56));
    CHECK(slice_at(net("fd00::/64"), 120, (uint128{1} << 56) - 1) == net("fd00::ffff:ffff:ffff:ff00/120"));
    CHECK(slice_count(net("::/0"), 128) == (uint128{1} << 127));  // saturates
}

TEST_CASE("slices: whereabouts' slice IPPool names", "[ipam][slices]") {
    CHECK(slice_pool_key("blue", "node-a", net("10.0.1.0/24")).name() == "blue-node-a-10.0.1.0-24");
    CHECK(slice_pool_key("", "node-a", net("10.0.1.0/24")).name() == "node-a-10.0.1.0-24");
    CHECK(slice_pool_key("blue", "n1", net("fd00::100/120")).name() == "blue-n1-fd00--100-120");
}

TEST_CASE("slices: a slice's usable part keeps the range's start/end, exclusions and gateway", "[ipam][slices]") {
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/16"},
                                            {"range_start", "10.0.0.10"},
                                            {"exclude", {"10.0.1.0/25"}},
                                            {"gateway", "10.0.0.200"},
                                            {"node_slice_size", "/25"}});
    const Range& parent = c.ranges[0];
    const Range s0 = slice_range(parent, net("10.0.0.0/25"));
    CHECK(s0.cidr == net("10.0.0.0/25"));
    CHECK(s0.first == 10);  // range_start
    CHECK(s0.last == 126);  // the slice's broadcast is never handed out
    const Range s1 = slice_range(parent, net("10.0.0.128/25"));
    CHECK(s1.first == 1);
    CHECK(s1.allocatable(1));
    CHECK_FALSE(s1.allocatable(200 - 128));  // the gateway
    CHECK(s1.gateway);
    CHECK_FALSE(slice_has_usable(parent, net("10.0.1.0/25")));  // wholly excluded
    CHECK(slice_has_usable(parent, net("10.0.1.128/25")));
}

TEST_CASE("NodeSlicePool: whereabouts' own shape is read, a different range or size is code 7", "[ipam][slices]") {
    // As whereabouts' controller writes it: every slice listed, free ones with nodeName "".
    const json theirs = pool_object("10.0.0.0/16", "24",
                                    {{{"nodeName", "node-a"}, {"sliceRange", "10.0.0.0/24"}},
                                     {{"nodeName", ""}, {"sliceRange", "10.0.1.0/24"}},
                                     {{"nodeName", "node-b"}, {"sliceRange", "10.0.2.0/24"}}});
    const NodeSlicePool p = parse_node_slice_pool(theirs, net("10.0.0.0/16"), 24);
    CHECK(p.resource_version == "7");
    CHECK(p.slices_of("node-a") == std::vector<IpNetwork>{net("10.0.0.0/24")});
    CHECK(p.holder(net("10.0.2.0/24")) == "node-b");
    CHECK(p.holder(net("10.0.1.0/24")).empty());
    try {
        parse_node_slice_pool(theirs, net("10.0.0.0/16"), 25);
        FAIL("accepted another slice size");
    } catch (const IpamError& e) {
        CHECK(e.code == 7);
        CHECK_THAT(e.msg, Catch::Contains("NodeSlicePool blue") && Catch::Contains("spec.sliceSize \"24\"") &&
                              Catch::Contains("node_slice_size \"/25\""));
    }
    try {
        parse_node_slice_pool(pool_object("10.1.0.0/16", "/24"), net("10.0.0.0/16"), 24);
        FAIL("accepted another range");
    } catch (const IpamError& e) {
        CHECK(e.code == 7);
        CHECK_THAT(e.msg, Catch::Contains("network_name"));
    }
    // A listed slice that is not a slice of the range: malformed (5).
    try {
        parse_node_slice_pool(pool_object("10.0.0.0/16", "/24", {{{"nodeName", "x"}, {"sliceRange", "10.0.0.0/23"}}}),
                              net("10.0.0.0/16"), 24);
        FAIL("accepted a bad slice");
    } catch (const IpamError& e) {
        CHECK(e.code == 5);
    }
}

TEST_CASE("claim: the lowest unheld slice, a listed free entry is claimed in place", "[ipam][slices]") {
    const IpamConfig c = ipam_test::config({{"range", "10.0.0.0/16"}, {"node_slice_size", "/24"}});
    // rdmanet's shape: only held slices listed.
    NodeSlicePool ours = parse_node_slice_pool(pool_object("10.0.0.0/16", "/24",
                                                           {{{"nodeName", "b"}, {"sliceRange", "10.0.0.0/24"}},
                                                            {{"nodeName", "c"}, {"sliceRange", "10.0.2.0/24"}}}),
                                               net("10.0.0.0/16"), 24);
    CHECK(free_slice(ours, c.ranges[0]) == net("10.0.1.0/24"));
    CHECK(free_slice(ours, c.ranges[0], {net("10.0.1.0/24")}) == net("10.0.3.0/24"));
    const json add = claim_patch(ours, "a", net("10.0.1.0/24"));
    CHECK(add == json::parse(R"([{"op":"test","path":"/metadata/resourceVersion","value":"7"},
        {"op":"add","path":"/status/allocations","value":[{"nodeName":"b","sliceRange":"10.0.0.0/24"},
        {"nodeName":"a","sliceRange":"10.0.1.0/24"},{"nodeName":"c","sliceRange":"10.0.2.0/24"}]}])"));
    // whereabouts' shape: the free entry gets the name.
    NodeSlicePool theirs = parse_node_slice_pool(pool_object("10.0.0.0/16", "24",
                                                             {{{"nodeName", "b"}, {"sliceRange", "10.0.0.0/24"}},
                                                              {{"nodeName", ""}, {"sliceRange", "10.0.1.0/24"}}}),
                                                 net("10.0.0.0/16"), 24);
    CHECK(claim_patch(theirs, "a", net("10.0.1.0/24")) ==
          json::parse(R"([{"op":"test","path":"/metadata/resourceVersion","value":"7"},
        {"op":"replace","path":"/status/allocations/1/nodeName","value":"a"}])"));
    CHECK(release_patch(theirs, "b", net("10.0.0.0/24"))[1] ==
          json({{"op", "replace"}, {"path", "/status/allocations/0/nodeName"}, {"value", ""}}));
    CHECK(release_patch(ours, "c", net("10.0.2.0/24"))[1] ==
          json({{"op", "remove"}, {"path", "/status/allocations/1"}}));
    // Without a status at all (created by hand): the status is added.
    json bare = pool_object("10.0.0.0/16", "/24");
    bare.erase("status");
    const NodeSlicePool b = parse_node_slice_pool(bare, net("10.0.0.0/16"), 24);
    CHECK(claim_patch(b, "a", net("10.0.0.0/24"))[1]["path"] == "/status");
}

TEST_CASE("claim: exhaustion, excluded slices skipped in one step, a 2^56-slice IPv6 range", "[ipam][slices]") {
    const IpamConfig small = ipam_test::config({{"range", "10.0.0.0/24"}, {"node_slice_size", "/25"}});
    NodeSlicePool full = parse_node_slice_pool(pool_object("10.0.0.0/24", "/25",
                                                           {{{"nodeName", "a"}, {"sliceRange", "10.0.0.0/25"}},
                                                            {{"nodeName", "b"}, {"sliceRange", "10.0.0.128/25"}}}),
                                               net("10.0.0.0/24"), 25);
    CHECK_FALSE(free_slice(full, small.ranges[0]));
    const IpamError e = range_exhausted("blue", small.ranges[0], 25, "c");
    CHECK(e.code == codes::range_full);
    CHECK_THAT(e.msg, Catch::Contains("network blue") && Catch::Contains("10.0.0.0/24") && Catch::Contains("/25"));

    // All but the last /120 of a /64 excluded: found without walking 2^56 slices.
    const IpamConfig v6 = ipam_test::config({{"range", "fd00::/64"},
                                             {"exclude", {"fd00::/65", "fd00::8000:0:0:0/66", "fd00::c000:0:0:0/67"}},
                                             {"range_end", "fd00::ffff:ffff:ffff:fffe"},
                                             {"node_slice_size", "/120"}});
    NodeSlicePool empty = parse_node_slice_pool(pool_object("fd00::/64", "/120"), net("fd00::/64"), 120);
    CHECK(free_slice(empty, v6.ranges[0]) == net("fd00::e000:0:0:0/120"));
}

TEST_CASE("node identity: $NODENAME, else the nodename file, else the host name", "[ipam][slices]") {
    CHECK(choose_node_name("node-a", "file-node", "host", "/etc/x") == "node-a");
    CHECK(choose_node_name(std::nullopt, "file-node\n", "host", "/etc/x") == "file-node");
    CHECK(choose_node_name("", "  \n", "host.example\n", "/etc/x") == "host.example");
    try {
        choose_node_name("Node_A", std::nullopt, "host", "/etc/x");
        FAIL("accepted an invalid name");
    } catch (const IpamError& e) {
        CHECK(e.code == 7);
        CHECK_THAT(e.msg, Catch::Contains("$NODENAME") && Catch::Contains("/etc/x/nodename"));
    }
    CHECK_THROWS_AS(choose_node_name(std::nullopt, std::nullopt, std::nullopt, "/etc/x"), IpamError);
}

TEST_CASE("slice backlog: markers survive as files, read back equal, in creation order", "[ipam][slices]") {
    ipam_test::TempDir dir;
    SliceBacklog backlog(dir.sub("backlog"));
    CHECK(backlog.empty());
    CHECK(backlog.pending().empty());
    const PoolKey key{"red-node-a", net("10.74.0.0/26")};
    const SliceChange add{SliceChange::Op::add, "kube-system", key, "c1", "net1", "ns/p1", {}};
    const SliceChange remove{
        SliceChange::Op::remove, "kube-system", key, "c0", "net1", "", {{uint128{5}, Owner{"c0", "ns/p0", "net1"}}}};
    const std::string first = backlog.add(remove);
    const std::string second = backlog.add(add);
    CHECK(first < second);
    CHECK(slice_change_from_json(to_json(remove)) == remove);
    SliceBacklog reopened(dir.sub("backlog"));  // another process
    auto pending = reopened.pending();
    REQUIRE(pending.size() == 2);
    CHECK(pending[0].first == first);
    CHECK(pending[0].second == remove);
    CHECK(pending[1].second == add);
    reopened.remove(first);
    CHECK(backlog.pending().size() == 1);
    CHECK_THROWS_AS(slice_change_from_json(json{{"op", "move"}}), IpamError);
}

TEST_CASE("reclaim: the slices of nodes missing from the Node list, found with the pool's own spec",
          "[ipam][slices][reclaim]") {
    // The reconciler has no configuration: the stored spec gives range and slice size.
    const json stored = pool_object("10.0.0.0/16", "24",
                                    {{{"nodeName", "node-a"}, {"sliceRange", "10.0.0.0/24"}},
                                     {{"nodeName", ""}, {"sliceRange", "10.0.1.0/24"}},
                                     {{"nodeName", "node-b"}, {"sliceRange", "10.0.2.0/24"}},
                                     {{"nodeName", "node-b"}, {"sliceRange", "10.0.3.0/24"}}});
    const auto p = parse_stored_node_slice_pool(stored);
    REQUIRE(p);
    CHECK(p->range == net("10.0.0.0/16"));
    CHECK(p->slice_prefix == 24);
    CHECK(p->entries.size() == 4);
    CHECK_FALSE(parse_stored_node_slice_pool(pool_object("10.0.0.0/16", "/12")));  // larger than the range
    CHECK_FALSE(parse_stored_node_slice_pool(pool_object("10.0.0.0/16", "x")));
    CHECK_FALSE(parse_stored_node_slice_pool(
        pool_object("10.0.0.0/16", "/24", {{{"nodeName", "x"}, {"sliceRange", "10.9.0.0/24"}}})));

    // Free entries ("") are nobody's; node-b is gone with both its slices; node-a exists.
    const auto gone = slices_of_missing_nodes(*p, {"node-a", "node-c"});
    CHECK(gone == std::vector<SliceEntry>{{"node-b", net("10.0.2.0/24")}, {"node-b", net("10.0.3.0/24")}});
    CHECK(slices_of_missing_nodes(*p, {"node-a", "node-b"}).empty());
    CHECK(slices_of_missing_nodes(*p, {}).size() == 3);

    // The slice IPPool is named with network_name, or without it (the NodeSlicePool then has the
    // CNI network's name).
    const auto names = slice_pool_candidates("blue", "node-b", net("10.0.2.0/24"));
    REQUIRE(names.size() == 2);
    CHECK(names[0].name() == "blue-node-b-10.0.2.0-24");
    CHECK(names[1].name() == "node-b-10.0.2.0-24");
}
