// The kernel lab's sriov scenarios (tests/lab/guest/lab_sriov.sh, run on QEMU's emulated Intel
// 82576 with the real igb driver) against the fake kernel with its igb model, through the same
// caller (libcni) with the same network configs and the same expected outcomes. The two form a
// pair: when the fake and the driver disagree, one side fails.
#include <catch2/catch.hpp>

#include "e2e/e2e_fakekernel.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

// The lab's VF settings ("full" config): everything igb accepts.
const json kIgbSettings = {
    {"mac", "0a:58:0a:4e:00:05"}, {"vlan", 100}, {"vlanQoS", 3}, {"spoofchk", "off"}, {"trust", "on"},
    {"max_tx_rate", 100},         {"mtu", 1400}};

json with_capabilities(json extra) {
    extra["capabilities"] = {{"deviceID", true}};
    return extra;
}

}  // namespace

TEST_CASE("sriov on the igb model: every setting igb accepts, CHECK, DEL restores exactly",
          "[e2e][sriov][igb][lab-pair]") {
    Workspace ws;
    SriovNode node(ws, "shared", "igb");
    ScopedNetns pod("sg");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);

    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.44.0/24"), with_capabilities(kIgbSettings));
    const std::string conf = ws.write("igb.conflist", conflist("e2e-igb", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("sg")};
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}}.dump();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    const json vf = node.vf(node.pf, 0);
    CHECK(vf["mac"] == "0a:58:0a:4e:00:05");
    CHECK(vf["vlan"] == 100);
    CHECK(vf["qos"] == 3);
    CHECK(vf["spoofchk"] == false);
    CHECK(vf["trust"] == true);
    CHECK(vf["maxTxRate"] == 100);
    CHECK(vf["minTxRate"] == 0);
    auto inside = find_link(&pod, "net1");
    REQUIRE(inside);
    CHECK(link_mac(*inside) == "0a:58:0a:4e:00:05");
    CHECK(inside->value("mtu", 0) == 1400);
    CHECK(link_is_up(*inside));
    CHECK(ipv4_addresses(pod, "net1") == std::vector<std::string>{add.json["ips"][0].value("address", "")});

    require_verb_ok(ws, node.env(), call, "check");
    require_verb_ok(ws, node.env(), call, "del");
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK(only_loopback(pod));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-igb").empty());
    CHECK(drive(ws, node.env(), call).ok());
}

TEST_CASE("sriov on the igb model: a setting igb refuses fails the ADD with code 100 and rolls back",
          "[e2e][sriov][igb][lab-pair]") {
    Workspace ws;
    SriovNode node(ws, "shared", "igb");
    ScopedNetns pod("sr");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);

    // The same three refusals as the lab: link_state (no driver hook), min_tx_rate, 802.1ad.
    // The lab checks the same message and hint fragments.
    json extra;
    std::string names, hint;
    SECTION("link_state enable: EOPNOTSUPP") {
        extra = {{"vlan", 200}, {"link_state", "enable"}};
        names = "link_state enable";
        hint = "cannot set a VF's link state";
    }
    SECTION("min_tx_rate: EINVAL") {
        extra = {{"vlan", 200}, {"min_tx_rate", 10}, {"max_tx_rate", 100}};
        names = "min_tx_rate 10";
        hint = "up to the PF's current link speed";
    }
    SECTION("vlanProto 802.1ad: EPROTONOSUPPORT") {
        extra = {{"vlan", 200}, {"vlanProto", "802.1ad"}};
        names = "proto 0x88a8";
        hint = "802.1Q only";
    }
    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.45.0/24"), with_capabilities(extra));
    const std::string conf = ws.write("refused.conflist", conflist("e2e-igb-refused", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("sr")};
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}}.dump();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    CHECK(add.code() == 100);
    CHECK(add.msg().find(names) != std::string::npos);
    CHECK(add.details().find(hint) != std::string::npos);
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK(only_loopback(pod));
    CHECK(ws.ipam_reservations("e2e-igb-refused").empty());

    call.verb = "del";
    const auto del = drive(ws, node.env(), call);
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(attachment_files(ws).empty());
}
