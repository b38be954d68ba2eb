// An ADD that fails inside the pod, after the pod-side setup (policy table, rules, sysctls) was
// recorded, on the real kernel: an IPAM route whose gateway is not on the link (with policyRouting,
// and with only a sysctl map) and an IPv6 address another host on the link already holds (DAD
// fails; with and without policyRouting). Each must end as a CNI error (a code and a message
// naming the gateway or the address, non-zero exit, no crash) with the pod, the host, the IPAM and
// the state exactly as before the ADD.
#include <catch2/catch.hpp>

#include "e2e/e2e_fabric.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

constexpr int kSegfault = 128 + 11;  // run_process reports death by a signal as 128 + signal

// Runs ADD, which must fail with `code` and a message containing `names`, and checks that nothing
// changed: the pod's links, addresses, routes, rules and sysctls, the master's children, the
// host-local reservations and rdmanet's state.
void add_fails_cleanly(const Workspace& ws, Fabric& fab, const Rail& rail, const std::string& master, int code,
                       const std::string& names) {
    const auto before = pod_snapshot(fab.pod);
    const auto children_before = host_links_on(master);
    const auto r = call(ws, "ADD", fab.pod, rail);
    INFO(r.describe());
    CHECK(r.exit_code != kSegfault);
    REQUIRE_FALSE(r.ok());
    CHECK(r.exit_code != 0);
    CHECK(r.code() == code);
    CHECK_THAT(r.msg(), Catch::Matchers::Contains(names));
    CHECK(pod_snapshot(fab.pod) == before);
    CHECK(host_links_on(master) == children_before);
    CHECK(ws.ipam_reservations(rail.network).empty());
    CHECK(ws.state_files().empty());
    // The runtime's DEL after a failed ADD finds nothing and succeeds.
    CHECK(call(ws, "DEL", fab.pod, rail).ok());
    CHECK(pod_snapshot(fab.pod) == before);
}

json with_route(json ipam, const std::string& dst, const std::string& gw) {
    ipam["routes"] = json::array({{{"dst", dst}, {"gw", gw}}});
    return ipam;
}

}  // namespace

TEST_CASE("ADD with an off-link gateway in an IPAM route fails cleanly, naming the gateway",
          "[e2e][macvlan][multirail][addfail]") {
    Workspace ws;
    Fabric fab;
    const auto& up = fab.uplink("10.63.0.1/24");
    // 10.99.9.9 is in no subnet of the interface: the kernel refuses the route (ENETUNREACH).
    const json ipam =
        with_route(host_local(ws, "10.63.0.0/24", {{"gateway", "10.63.0.1"}}), "10.64.0.0/16", "10.99.9.9");

    SECTION("with policyRouting") {
        json plugin = macvlan_plugin(up.name_a(), ipam);
        plugin["policyRouting"] = true;
        add_fails_cleanly(ws, fab, Rail{"offlink-pr", "net1", plugin}, up.name_a(), 7, "10.99.9.9");
    }
    SECTION("with only a sysctl map") {
        json plugin = macvlan_plugin(up.name_a(), ipam);
        plugin["sysctl"] = {{"net.ipv4.conf.IFNAME.arp_ignore", "1"}};
        add_fails_cleanly(ws, fab, Rail{"offlink-sysctl", "net1", plugin}, up.name_a(), 7, "10.99.9.9");
    }
    SECTION("with neither") {
        add_fails_cleanly(ws, fab, Rail{"offlink-plain", "net1", macvlan_plugin(up.name_a(), ipam)}, up.name_a(), 7,
                          "10.99.9.9");
    }
}

TEST_CASE("ADD of an IPv6 address another host holds fails cleanly on DAD, naming the address",
          "[e2e][macvlan][multirail][addfail][ipv6]") {
    Workspace ws;
    Fabric fab;
    const auto& up = fab.uplink("");
    // The far side of the rail already holds the one address the IPAM hands out.
    const std::string taken = "fd00:63::5";
    fab.far.ip({"addr", "add", taken + "/64", "dev", up.name_b(), "nodad"});
    json ipam = host_local(ws, "fd00:63::/64", {{"rangeStart", taken}, {"rangeEnd", taken}});

    SECTION("with policyRouting") {
        json plugin = macvlan_plugin(up.name_a(), ipam);
        plugin["policyRouting"] = true;
        add_fails_cleanly(ws, fab, Rail{"dad-pr", "net1", plugin}, up.name_a(), 100, taken);
    }
    SECTION("without policyRouting") {
        add_fails_cleanly(ws, fab, Rail{"dad-plain", "net1", macvlan_plugin(up.name_a(), ipam)}, up.name_a(), 100,
                          taken);
    }
}
