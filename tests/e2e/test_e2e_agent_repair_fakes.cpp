// The node agent's repair for the backends this kernel cannot run for real: sriov (Ethernet and
// InfiniBand VFs) and ipoib through rdmanet-fakekernel, whose `reconcile-local` runs the same
// repair pass as `rdmanetctl reconcile --local` over the fake PF-side VF netlink. The VF netdevs
// are real veth ends: when the pod netns dies the test moves the VF back into the host under its
// pod-side name first, as the kernel does for a physical device. In exclusive RDMA netns mode the
// fake kernel hands the RDMA device the pod owned back to the host once nothing references the
// namespace any more (no process, open fd or nsfs mount), as the RDMA core does when a
// namespace is freed; the device keeps its name.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

// The host's view of an RDMA device in the fake sysfs tree (class/infiniband/<name> and the PCI
// function's infiniband/<name>), which the exclusive-mode kernel hides while a pod owns it.
bool rdma_visible_in_host(const SriovNode& node, const std::string& device, const std::string& pci) {
    const std::filesystem::path root(node.tree.root());
    return std::filesystem::exists(root / "class/infiniband" / device) &&
           std::filesystem::exists(root / "bus/pci/devices" / pci / "infiniband" / device);
}

// A second reference to a pod's namespace (a bind mount elsewhere, as a leftover tool might
// leave), which keeps it alive after `ip netns del`; released at the latest when the test ends.
class NetnsHold {
public:
    NetnsHold(const ScopedNetns& pod, std::string at) : at_(std::move(at)) {
        std::ofstream(at_).flush();
        run_command_checked({"mount", "--bind", pod.path(), at_});
        held_ = true;
    }
    ~NetnsHold() { release(); }
    NetnsHold(const NetnsHold&) = delete;
    NetnsHold& operator=(const NetnsHold&) = delete;
    const std::string& path() const { return at_; }
    void release() {
        if (held_) ::umount2(at_.c_str(), MNT_DETACH);
        held_ = false;
    }

private:
    std::string at_;
    bool held_ = false;
};

}  // namespace

TEST_CASE("agent repair: sriov Ethernet VF returned by the kernel gets its settings back", "[e2e][agent][sriov]") {
    const std::string rdma_mode = GENERATE(as<std::string>{}, "shared", "exclusive");
    INFO("RDMA netns mode " << rdma_mode);
    Workspace ws;
    SriovNode node(ws, rdma_mode);
    ScopedNetns pod("asv");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    const std::string devinfo = ws.path("devinfo/e2e-agsv-net1");
    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.45.0/24"),
                                    {{"mac", "0a:58:0a:01:00:09"},
                                     {"vlan", 200},
                                     {"trust", "on"},
                                     {"mtu", 1400},
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
    const bool exclusive = rdma_mode == "exclusive";
    REQUIRE((node.rdma_owner("mlx5_7") != 0) == exclusive);  // the pod owns it in exclusive mode
    REQUIRE(rdma_visible_in_host(node, "mlx5_7", SriovNode::kVfPci) == !exclusive);

    die_returning(pod, call.ifname);
    node.tree.rename_netdev(SriovNode::kVfPci, node.vf0.name_a(), call.ifname);  // sysfs follows the name
    const auto r = fake_reconcile_local(node.env());
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-agsv " + call.container_id) != std::string::npos);
    CHECK(node.rdma_owner("mlx5_7") == 0);  // home, under its own name
    CHECK(rdma_visible_in_host(node, "mlx5_7", SriovNode::kVfPci));
    CHECK(node.vf(node.pf, 0) == vf_before);              // VLAN, MAC, trust restored
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);  // host name, MAC, MTU, alias, up
    CHECK_FALSE(find_link(nullptr, call.ifname));
    CHECK_FALSE(std::filesystem::exists(devinfo));  // stale device-info removed
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-agsv").empty());
}

TEST_CASE("agent repair: sriov InfiniBand VF gets its GUID back", "[e2e][agent][sriov][ib]") {
    const std::string rdma_mode = GENERATE(as<std::string>{}, "shared", "exclusive");
    INFO("RDMA netns mode " << rdma_mode);
    Workspace ws;
    SriovNode node(ws, rdma_mode);
    ScopedNetns pod("asi");
    const json vf_before = node.vf(node.ibpf, 0);
    const std::string devinfo = ws.path("devinfo/e2e-agib-net1");
    auto plugin = fakekernel_plugin(
        "sriov", host_local(ws, "10.250.46.0/24"),
        {{"capabilities", {{"infinibandGUID", true}, {"deviceID", true}, {"CNIDeviceInfoFile", true}}}});
    const std::string conf = ws.write("ib.conflist", conflist("e2e-agib", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("asi")};
    call.ifname = unique_ifname("asi");
    call.cap_args = json{
        {"deviceID", SriovNode::kIbVfPci},
        {"infinibandGUID", "C2:11:22:33:44:55:66:78"},
        {"CNIDeviceInfoFile",
         devinfo}}.dump();
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(node.vf(node.ibpf, 0)["nodeGuid"] == "c2:11:22:33:44:55:66:78");
    REQUIRE(std::filesystem::exists(devinfo));
    const bool exclusive = rdma_mode == "exclusive";
    REQUIRE((node.rdma_owner("mlx5_9") != 0) == exclusive);
    REQUIRE(rdma_visible_in_host(node, "mlx5_9", SriovNode::kIbVfPci) == !exclusive);

    die_returning(pod, call.ifname);
    node.tree.rename_netdev(SriovNode::kIbVfPci, node.ibvf.name_a(), call.ifname);
    const auto r = fake_reconcile_local(node.env());
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-agib " + call.container_id) != std::string::npos);
    CHECK(node.rdma_owner("mlx5_9") == 0);
    CHECK(rdma_visible_in_host(node, "mlx5_9", SriovNode::kIbVfPci));
    CHECK(node.vf(node.ibpf, 0) == vf_before);
    CHECK(find_link(nullptr, node.ibvf.name_a()));
    CHECK_FALSE(find_link(nullptr, call.ifname));
    CHECK_FALSE(std::filesystem::exists(devinfo));
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kIbVfPci));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-agib").empty());
}

// A directory made read-only in place (bind mount onto itself, remounted ro), as a container's
// /sys is unless the directory is mounted writable; undone at the latest when the test ends.
class ReadOnlyDir {
public:
    explicit ReadOnlyDir(std::string dir) : dir_(std::move(dir)) {
        run_command_checked({"mount", "--bind", dir_, dir_});
        mounted_ = true;
        run_command_checked({"mount", "-o", "remount,bind,ro", dir_});
    }
    ~ReadOnlyDir() { release(); }
    ReadOnlyDir(const ReadOnlyDir&) = delete;
    ReadOnlyDir& operator=(const ReadOnlyDir&) = delete;
    void release() {
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
        mounted_ = false;
    }

private:
    std::string dir_;
    bool mounted_ = false;
};

TEST_CASE("agent repair: an InfiniBand VF GUID needs a writable PCI drivers directory, the repair says so and retries",
          "[e2e][agent][sriov][ib]") {
    Workspace ws;
    SriovNode node(ws, "shared");
    ScopedNetns pod("asr");
    const json vf_before = node.vf(node.ibpf, 0);
    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.49.0/24"),
                                    {{"capabilities", {{"infinibandGUID", true}, {"deviceID", true}}}});
    const std::string conf = ws.write("ib.conflist", conflist("e2e-agro", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("asr")};
    call.ifname = unique_ifname("asr");
    call.cap_args = json{{"deviceID", SriovNode::kIbVfPci}, {"infinibandGUID", "C2:11:22:33:44:55:66:79"}}.dump();
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    die_returning(pod, call.ifname);
    node.tree.rename_netdev(SriovNode::kIbVfPci, node.ibvf.name_a(), call.ifname);

    // The agent container's /sys without the writable PCI drivers mount: the VF's driver
    // cannot be rebound, so the VF cannot pick its GUID up.
    ReadOnlyDir drivers(node.tree.root() + "/bus/pci/drivers");
    const auto refused = fake_reconcile_local(node.env());
    INFO(describe(refused));
    CHECK(refused.exit_code == 1);
    CHECK(refused.err.find("repair failed e2e-agro " + call.container_id) != std::string::npos);
    CHECK(refused.err.find("restore the VF GUID") != std::string::npos);
    CHECK(refused.err.find("Read-only file system") != std::string::npos);
    CHECK(refused.out.find("0 repaired, 1 failed") != std::string::npos);
    CHECK(attachment_files(ws).size() == 2);  // state + in-use record, kept for the next pass
    CHECK(vf_record_exists(ws, SriovNode::kIbVfPci));

    drivers.release();
    const auto r = fake_reconcile_local(node.env());
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-agro " + call.container_id) != std::string::npos);
    CHECK(node.vf(node.ibpf, 0) == vf_before);
    CHECK(find_link(nullptr, node.ibvf.name_a()));
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kIbVfPci));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-agro").empty());
}

TEST_CASE("agent repair: waits while a dead pod's namespace is still held, with its RDMA device in it",
          "[e2e][agent][sriov]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    ScopedNetns pod("asw");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    const std::string devinfo = ws.path("devinfo/e2e-agsw-net1");
    auto plugin =
        fakekernel_plugin("sriov", host_local(ws, "10.250.48.0/24"),
                          {{"vlan", 300}, {"capabilities", {{"deviceID", true}, {"CNIDeviceInfoFile", true}}}});
    const std::string conf = ws.write("sriov.conflist", conflist("e2e-agsw", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("asw")};
    call.ifname = unique_ifname("asw");
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", devinfo}}.dump();
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(node.rdma_owner("mlx5_7") != 0);

    // The path goes, the namespace stays: the VF's netdev and RDMA device are still in it.
    NetnsHold hold(pod, ws.path("held-netns"));
    run_command_checked({"ip", "netns", "del", pod.name()});
    const auto waiting = fake_reconcile_local(node.env());
    INFO(describe(waiting));
    CHECK(waiting.exit_code == 1);
    CHECK(waiting.err.find("repair failed e2e-agsw " + call.container_id) != std::string::npos);
    CHECK(waiting.err.find("RDMA device mlx5_7 is not back in the host namespace") != std::string::npos);
    CHECK(waiting.out.find("0 repaired, 1 failed") != std::string::npos);
    // Nothing undone: the VF keeps its record and settings, the addresses and the state stay.
    CHECK(node.rdma_owner("mlx5_7") != 0);
    CHECK(node.vf(node.pf, 0)["vlan"] == 300);
    CHECK(vf_record_exists(ws, SriovNode::kVfPci));
    CHECK(std::filesystem::exists(devinfo));
    CHECK(attachment_files(ws).size() == 2);  // the attachment state and the VF's in-use record
    CHECK(ws.ipam_reservations("e2e-agsw").size() == 1);

    // The last reference goes: the kernel hands the netdev (under its pod-side name) and the RDMA
    // device back, and the next pass repairs.
    run_command_checked({"nsenter", "--net=" + hold.path(), "ip", "link", "set", "dev", call.ifname, "netns",
                         std::to_string(::getpid())});
    hold.release();
    node.tree.rename_netdev(SriovNode::kVfPci, node.vf0.name_a(), call.ifname);
    const auto r = fake_reconcile_local(node.env());
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-agsw " + call.container_id) != std::string::npos);
    CHECK(node.rdma_owner("mlx5_7") == 0);
    CHECK(rdma_visible_in_host(node, "mlx5_7", SriovNode::kVfPci));
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK_FALSE(std::filesystem::exists(devinfo));
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-agsw").empty());
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
