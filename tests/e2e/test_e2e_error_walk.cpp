// The error walk (hardening build only, -DRDMANET_FAILPOINTS=ON), beside the failpoint walk: for
// every mode and every step listed in include/rdmanet/base/failpoint.hpp, the step of ADD, DEL or
// CHECK fails with an error (RDMANET_FAILPOINT_ACTION=error: an exception the code must handle, not
// a kill). ADD must unwind everything itself, with no DEL: a CNI error JSON naming the step, exit
// 1, and the pod (links, addresses, routes of every table, rules, sysctls), the host device, the
// IPAM and the state as before. A failed DEL is retried and then leaves nothing; a failed CHECK
// changes nothing. Each mode runs with and without policyRouting, a sysctl map and IPv6; sriov
// with its RDMA device in exclusive mode, sriov and ipoib through rdmanet-fakekernel.
// The test names start with "failpoint walk" so that the hardening pass (ctest -R 'failpoint
// walk' under ASan/UBSan) runs them.
#include <catch2/catch.hpp>

#ifdef RDMANET_FAILPOINTS

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "e2e/e2e_fabric.hpp"
#include "e2e/e2e_failpoint_call.hpp"
#include "e2e/e2e_fakekernel.hpp"
#include "rdmanet/base/failpoint.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

// One call with `failing_step` armed to fail with its error.
CniOutcome invoke(const Workspace& ws, const std::string& command, const ScopedNetns& pod, const std::string& id,
                  const json& conf, const std::string& failing_step, const PluginUnderTest& plugin) {
    return call_with_failpoint(ws, command, pod, id, conf, failing_step, FailpointAction::error, plugin);
}

std::size_t allocations(const Workspace& ws) {
    std::size_t n = 0;
    for (const auto& pool : embedded_pools(ws)) n += pool["spec"]["allocations"].size();
    return n;
}

json ipam(const Workspace& ws, const std::string& range) {
    return {{"type", "rdmanet-ipam"}, {"range", range}, {"data_dir", ws.path("rdmanet-ipam")}};
}

// What a configuration passes: the pod-side record only when it changes something beyond the
// interface (policyRouting, a sysctl map or an IPv6 address, which turns IPv6 on), the policy
// table's step only with policyRouting, the state step only in the modes that record the host
// device before moving it.
struct Passes {
    bool state_saved = true;
    bool pod_record = false;
    bool policy_routing = false;
    bool reaches(std::string_view step) const {
        if (step == "add_after_state_saved") return state_saved;
        if (step == "add_after_pod_record") return pod_record;
        if (step == "add_after_pod_routes") return policy_routing;
        return true;
    }
};

Passes passes(const json& plugin, bool state_saved) {
    const bool pr = plugin.contains("policyRouting");
    const std::string range = plugin["ipam"].value("range", "");
    const bool v6 = range.find(':') != std::string::npos;
    return Passes{state_saved, pr || plugin.contains("sysctl") || v6, pr};
}

// One configuration, every step: fails it and checks with `nothing_left` (called with the pod
// before and after) that nothing is left.
void walk(const Workspace& ws, const std::string& network, const json& plugin, const Passes& p,
          const std::function<void(const ScopedNetns&)>& nothing_left, const PluginUnderTest& under_test = {}) {
    const json conf = plugin_stdin(network, "1.1.0", plugin);
    for (const auto step_view : rdmanet::base::kFailpoints) {
        const std::string step(step_view);
        if (kube_store_step(step)) continue;
        DYNAMIC_SECTION("error at " << step) {
            ScopedNetns pod("ew");
            const auto before = pod_snapshot(pod);
            const std::string id = container_id("ew");
            const bool reached = p.reaches(step);
            const auto expect_injected = [&](const CniOutcome& r) {
                INFO("step " << step << ": " << r.describe());
                REQUIRE_FALSE(r.ok());
                CHECK(r.exit_code == 1);
                // A CNI error object: a code (InjectedFailure is no CNI error type: the skel's
                // 100, unless a step wraps it in its own) and the cause in the message.
                REQUIRE(r.stdout_is_json());
                CHECK(r.code() > 0);
                CHECK_THAT(r.msg(), Catch::Matchers::Contains("injected failure at " + step));
            };
            const auto del_clean = [&] {
                const auto del = invoke(ws, "DEL", pod, id, conf, "", under_test);
                INFO("DEL: " << del.describe());
                CHECK(del.ok());
                CHECK(pod_snapshot(pod) == before);
                nothing_left(pod);
            };
            if (step.rfind("add_", 0) == 0) {
                const auto add = invoke(ws, "ADD", pod, id, conf, step, under_test);
                if (reached) {
                    expect_injected(add);
                    // Unwound by ADD itself: nothing is left before any DEL.
                    CHECK(pod_snapshot(pod) == before);
                    nothing_left(pod);
                } else {
                    INFO("not reached: " << add.describe());
                    REQUIRE(add.ok());
                }
                del_clean();
            } else {
                const auto add = invoke(ws, "ADD", pod, id, conf, "", under_test);
                INFO("ADD: " << add.describe());
                REQUIRE(add.ok());
                if (step.rfind("del_", 0) == 0) {
                    expect_injected(invoke(ws, "DEL", pod, id, conf, step, under_test));
                } else {
                    json check = conf;
                    check["prevResult"] = add.json;
                    expect_injected(invoke(ws, "CHECK", pod, id, check, step, under_test));
                    // CHECK changed nothing: the attachment is still whole.
                    const auto again = invoke(ws, "CHECK", pod, id, check, "", under_test);
                    INFO("CHECK: " << again.describe());
                    CHECK(again.ok());
                }
                del_clean();
            }
        }
    }
}

}  // namespace

TEST_CASE("failpoint walk (errors): macvlan unwinds a failure at every step", "[e2e][failpoints][errors][macvlan]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "em");
    set_link_up(nullptr, uplink.name_a());
    const auto nothing_left = [&](const ScopedNetns&) {
        CHECK(host_links_on(uplink.name_a()).size() == 1);  // the veth peer only: no macvlan left
        CHECK(allocations(ws) == 0);
        CHECK(ws.state_files().empty());
    };
    const auto run = [&](const std::string& network, json plugin) {
        walk(ws, network, plugin, passes(plugin, false), nothing_left);
    };
    const json v4 = ipam(ws, "10.252.1.0/24");
    const json v6 = ipam(ws, "fd00:252:1::/64");
    SECTION("plain") { run("ew-plain", macvlan_plugin(uplink.name_a(), v4)); }
    SECTION("policyRouting and a sysctl map") {
        json plugin = macvlan_plugin(uplink.name_a(), v4);
        plugin["policyRouting"] = true;
        plugin["sysctl"] = {{"net.ipv4.conf.IFNAME.arp_ignore", "2"}, {"net.ipv4.neigh.IFNAME.ucast_solicit", "7"}};
        run("ew-pr", plugin);
    }
    SECTION("only a sysctl map") {
        json plugin = macvlan_plugin(uplink.name_a(), v4);
        plugin["sysctl"] = {{"net.ipv4.conf.IFNAME.rp_filter", "0"}};
        run("ew-sysctl", plugin);
    }
    SECTION("IPv6 with policyRouting") {
        json plugin = macvlan_plugin(uplink.name_a(), v6);
        plugin["policyRouting"] = true;
        run("ew-v6pr", plugin);
    }
    SECTION("IPv6 without policyRouting") { run("ew-v6", macvlan_plugin(uplink.name_a(), v6)); }
}

TEST_CASE("failpoint walk (errors): hostdev on a veth unwinds a failure at every step",
          "[e2e][failpoints][errors][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "eh");
    const auto before = find_link(nullptr, dev.name_a());
    REQUIRE(before);
    const auto nothing_left = [&](const ScopedNetns&) {
        const auto after = find_link(nullptr, dev.name_a());
        REQUIRE(after);  // home under its own name
        CHECK(link_mac(*after) == link_mac(*before));
        CHECK(link_alias(*after) == link_alias(*before));
        CHECK(allocations(ws) == 0);
        CHECK(ws.state_files().empty());
    };
    const auto run = [&](const std::string& network, json plugin) {
        walk(ws, network, plugin, passes(plugin, true), nothing_left);
    };
    SECTION("policyRouting and a sysctl map") {
        json plugin = hostdev_plugin(dev.name_a(), ipam(ws, "10.252.2.0/24"));
        plugin["policyRouting"] = true;
        plugin["sysctl"] = {{"net.ipv4.conf.IFNAME.arp_ignore", "2"}};
        run("ew-hd-pr", plugin);
    }
    SECTION("IPv6, plain") { run("ew-hd-v6", hostdev_plugin(dev.name_a(), ipam(ws, "fd00:252:2::/64"))); }
}

TEST_CASE("failpoint walk (errors): sriov VF with an exclusive RDMA device unwinds a failure at every step",
          "[e2e][failpoints][errors][sriov]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    const std::string devinfo = ws.path("devinfo/ew-sriov-net1");
    const auto nothing_left = [&](const ScopedNetns&) {
        CHECK(host_netdev(node.vf0.name_a()) == dev_before);
        CHECK(node.vf(node.pf, 0) == vf_before);
        CHECK(node.rdma_owner("mlx5_7") == 0);
        CHECK(std::filesystem::exists(node.tree.root() + "/class/infiniband/mlx5_7/device"));
        CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
        CHECK_FALSE(std::filesystem::exists(devinfo));
        CHECK(allocations(ws) == 0);
        CHECK(attachment_files(ws).empty());
    };
    const json extra = {{"mac", "0a:58:0a:01:00:05"},
                        {"vlan", 100},
                        {"trust", "on"},
                        {"rdma", {{"deviceName", "rdma0"}}},
                        {"runtimeConfig", {{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", devinfo}}}};
    const PluginUnderTest fake{fakekernel_path(), node.env()};
    SECTION("policyRouting and a sysctl map") {
        json plugin = fakekernel_plugin("sriov", ipam(ws, "10.252.3.0/24"), extra);
        plugin["policyRouting"] = true;
        plugin["sysctl"] = {{"net.ipv4.conf.IFNAME.arp_ignore", "2"}};
        walk(ws, "ew-sriov-pr", plugin, passes(plugin, true), nothing_left, fake);
    }
    SECTION("IPv6, plain") {
        json plugin = fakekernel_plugin("sriov", ipam(ws, "fd00:252:3::/64"), extra);
        walk(ws, "ew-sriov-v6", plugin, passes(plugin, true), nothing_left, fake);
    }
}

TEST_CASE("failpoint walk (errors): ipoib unwinds a failure at every step", "[e2e][failpoints][errors][ipoib]") {
    Workspace ws;
    IpoibNode node(ws);
    const auto nothing_left = [&](const ScopedNetns&) {
        // No child left in the host under its temporary name: the veth peer only.
        CHECK(host_links_on(node.parent.name_a()) == std::vector<std::string>{node.parent.name_b()});
        CHECK(allocations(ws) == 0);
        CHECK(attachment_files(ws).empty());
    };
    const PluginUnderTest fake{fakekernel_path(), node.env()};
    SECTION("plain") {
        json plugin = fakekernel_plugin("ipoib", ipam(ws, "10.252.4.0/24"), {{"master", node.parent.name_a()}});
        walk(ws, "ew-ipoib", plugin, passes(plugin, true), nothing_left, fake);
    }
    SECTION("policyRouting") {
        json plugin = fakekernel_plugin("ipoib", ipam(ws, "10.252.5.0/24"), {{"master", node.parent.name_a()}});
        plugin["policyRouting"] = true;
        walk(ws, "ew-ipoib-pr", plugin, passes(plugin, true), nothing_left, fake);
    }
}

#endif  // RDMANET_FAILPOINTS
