// The node agent's repair for the backends this kernel cannot run for real: sriov (Ethernet and
// InfiniBand VFs) and ipoib through rdmanet-fakekernel, whose `reconcile-local` runs the same
// repair pass as `rdmanetctl reconcile --local` over the fake PF-side VF netlink. The VF netdevs
// are real veth ends: when the pod netns dies the test moves the VF back into the host under its
// pod-side name first, as the kernel does for a physical device.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "e2e/e2e_fakekernel.hpp"
#include "support/process.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

ProcessResult fake_reconcile_local(const std::map<std::string, std::string>& env) {
    return run_process({fakekernel_path(), "reconcile-local"}, env);
}

std::string describe(const ProcessResult& r) {
    return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// The kernel's part of a netns dying: a physical netdev comes back to the host under its
// pod-side name; then the namespace is gone.
void die_returning(const ScopedNetns& pod, const std::string& ifname) {
    pod.ip({"link", "set", "dev", ifname, "netns", std::to_string(::getpid())});
    run_command_checked({"ip", "netns", "del", pod.name()});
}

std::string unique_ifname(const std::string& prefix) { return prefix + std::to_string(::getpid() % 100000); }

}  // namespace

TEST_CASE("agent repair: sriov Ethernet VF returned by the kernel gets its settings back", "[e2e][agent][sriov]") {
    Workspace ws;
    SriovNode node(ws, "shared");
    ScopedNetns pod("asv");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    const std::string devinfo = ws.path("devinfo/e2e-agsv-net1");
    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.45.0/24"),
                                    {{"mac", "0a:58:0a:01:00:09"}, {"vlan", 200}, {"trust", "on"}, {"mtu", 1400},
                                     {"capabilities", {{"deviceID", true}, {"CNIDeviceInfoFile", true}}}});
    const std::string conf = ws.write("sriov.conflist", conflist("e2e-agsv", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("asv")};
    call.ifname = unique_ifname("asv");
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", devinfo}}.dump();
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(node.vf(node.pf, 0)["vlan"] == 200);
    REQUIRE(std::filesystem::exists(devinfo));

    die_returning(pod, call.ifname);
    node.tree.rename_netdev(SriovNode::kVfPci, node.vf0.name_a(), call.ifname);   // sysfs follows the name
    const auto r = fake_reconcile_local(node.env());
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-agsv " + call.container_id) != std::string::npos);
    CHECK(node.vf(node.pf, 0) == vf_before);                       // VLAN, MAC, trust restored
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);           // host name, MAC, MTU, alias, up
    CHECK_FALSE(find_link(nullptr, call.ifname));
    CHECK_FALSE(std::filesystem::exists(devinfo));                 // stale device-info removed
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-agsv").empty());
}

TEST_CASE("agent repair: sriov InfiniBand VF gets its GUID back", "[e2e][agent][sriov][ib]") {
    Workspace ws;
    SriovNode node(ws, "shared");
    ScopedNetns pod("asi");
    const json vf_before = node.vf(node.ibpf, 0);
    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.46.0/24"),
                                    {{"capabilities", {{"infinibandGUID", true}, {"deviceID", true}}}});
    const std::string conf = ws.write("ib.conflist", conflist("e2e-agib", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("asi")};
    call.ifname = unique_ifname("asi");
    call.cap_args = json{{"deviceID", SriovNode::kIbVfPci}, {"infinibandGUID", "C2:11:22:33:44:55:66:78"}}.dump();
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(node.vf(node.ibpf, 0)["nodeGuid"] == "c2:11:22:33:44:55:66:78");

    die_returning(pod, call.ifname);
    node.tree.rename_netdev(SriovNode::kIbVfPci, node.ibvf.name_a(), call.ifname);
    const auto r = fake_reconcile_local(node.env());
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(node.vf(node.ibpf, 0) == vf_before);
    CHECK(find_link(nullptr, node.ibvf.name_a()));
    CHECK_FALSE(find_link(nullptr, call.ifname));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-agib").empty());
}

TEST_CASE("agent repair: ipoib child whose netns is gone", "[e2e][agent][ipoib]") {
    Workspace ws;
    IpoibNode node(ws);
    ScopedNetns pod("aib");
    auto plugin = fakekernel_plugin("ipoib", host_local(ws, "10.250.47.0/24"), {{"master", node.parent.name_a()}});
    const std::string conf = ws.write("ipoib.conflist", conflist("e2e-agipoib", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("aib")};
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());

    SECTION("alive: left alone") {
        const auto r = fake_reconcile_local(node.env());
        INFO(describe(r));
        CHECK(r.out.find("1 alive, 0 repaired") != std::string::npos);
        CHECK(find_link(&pod, "net1"));
        CHECK(attachment_files(ws).size() == 1);
        call.verb = "del";
        CHECK(drive(ws, node.env(), call).ok());
    }
    SECTION("gone: the child died with it; addresses and state are released") {
        run_command_checked({"ip", "netns", "del", pod.name()});
        const auto r = fake_reconcile_local(node.env());
        INFO(describe(r));
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("repaired e2e-agipoib " + call.container_id + " net1 (ipoib)") != std::string::npos);
        CHECK(attachment_files(ws).empty());
        CHECK(ws.ipam_reservations("e2e-agipoib").empty());
        CHECK(host_links_on(node.parent.name_a()) == std::vector<std::string>{node.parent.name_b()});
    }
}
