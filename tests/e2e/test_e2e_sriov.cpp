// mode "sriov" through the real caller (Debian's libcni) as a real process: rdmanet-fakekernel,
// the plugin over the file-backed fake kernel (PF-side VF netlink, RDMA netlink), with the VF
// netdevs played by veth ends that move between real namespaces. Asserts on the fake-kernel state
// file (what the PF driver and RDMA core would hold) and on the real links.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "e2e/e2e_fakekernel.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

json read_json_file(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in);
    return json::parse(in);
}

}  // namespace

TEST_CASE("sriov: Ethernet VF ADD, CHECK, DEL through libcni restores every VF setting", "[e2e][sriov]") {
    Workspace ws;
    SriovNode node(ws);
    ScopedNetns pod("sv");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    const std::string devinfo = ws.path("devinfo/e2e-sriov-net1");

    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.40.0/24"),
                                    {{"mac", "0a:58:0a:01:00:05"},
                                     {"vlan", 100},
                                     {"vlanQoS", 3},
                                     {"spoofchk", "off"},
                                     {"trust", "on"},
                                     {"link_state", "enable"},
                                     {"min_tx_rate", 100},
                                     {"max_tx_rate", 1000},
                                     {"mtu", 1400},
                                     {"capabilities", {{"deviceID", true}, {"CNIDeviceInfoFile", true}}}});
    const std::string conf = ws.write("sriov.conflist", conflist("e2e-sriov", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("sv")};
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", devinfo}}.dump();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());

    // The result Multus reads (libcni 1.1.2 speaks up to 1.0.0: mtu/pciID are the integration
    // tests' business).
    const auto& iface = add.json["interfaces"][0];
    CHECK(iface.value("name", "") == "net1");
    CHECK(iface.value("mac", "") == "0a:58:0a:01:00:05");
    CHECK(iface.value("sandbox", "") == pod.path());

    // The netdev: in the pod as net1 with MAC, MTU and the address; gone from the host.
    CHECK_FALSE(find_link(nullptr, node.vf0.name_a()));
    auto inside = find_link(&pod, "net1");
    REQUIRE(inside);
    CHECK(link_mac(*inside) == "0a:58:0a:01:00:05");
    CHECK(inside->value("mtu", 0) == 1400);
    CHECK(link_is_up(*inside));
    CHECK(ipv4_addresses(pod, "net1") == std::vector<std::string>{add.json["ips"][0].value("address", "")});

    // The PF side as the fake kernel now holds it, written in sriov-cni's order.
    const json vf = node.vf(node.pf, 0);
    CHECK(vf["mac"] == "0a:58:0a:01:00:05");
    CHECK(vf["vlan"] == 100);
    CHECK(vf["qos"] == 3);
    CHECK(vf["minTxRate"] == 100);
    CHECK(vf["maxTxRate"] == 1000);
    CHECK(vf["spoofchk"] == false);
    CHECK(vf["trust"] == true);
    CHECK(vf["linkState"] == 1);
    const auto log = node.vf_log();
    REQUIRE(log.size() == 6);
    CHECK_THAT(log[0], Catch::Contains("vlan 100"));
    CHECK_THAT(log[1], Catch::Contains("mac 0a:58:0a:01:00:05"));
    CHECK_THAT(log[5], Catch::Contains("link_state"));

    // Exclusive RDMA netns mode: the VF's RDMA device went into the pod and left the host's sysfs.
    CHECK(node.rdma_owner("mlx5_7") != 0);
    CHECK(node.rdma_owner("mlx5_0") == 0);
    CHECK_FALSE(std::filesystem::exists(node.tree.root() + "/class/infiniband/mlx5_7"));
    const json info = read_json_file(devinfo);
    CHECK(info["type"] == "pci");
    CHECK(info["pci"]["pci-address"] == SriovNode::kVfPci);
    CHECK(info["pci"]["pf-pci-address"] == SriovNode::kPfPci);
    CHECK(info["pci"]["rdma-device"] == "mlx5_7");
    CHECK(vf_record_exists(ws, SriovNode::kVfPci));

    require_verb_ok(ws, node.env(), call, "check");
    require_verb_ok(ws, node.env(), call, "del");
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK(only_loopback(pod));
    CHECK(node.rdma_owner("mlx5_7") == 0);
    CHECK(std::filesystem::exists(node.tree.root() + "/class/infiniband/mlx5_7/device"));
    CHECK_FALSE(std::filesystem::exists(devinfo));
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-sriov").empty());

    // A second DEL (the runtime may repeat it) writes nothing to the PF.
    const auto writes = node.vf_log().size();
    CHECK(drive(ws, node.env(), call).ok());
    CHECK(node.vf_log().size() == writes);
}

TEST_CASE("sriov: InfiniBand VF GUID from runtimeConfig set with a rebind and restored", "[e2e][sriov][ib]") {
    Workspace ws;
    SriovNode node(ws, "shared");
    ScopedNetns pod("si");
    const json vf_before = node.vf(node.ibpf, 0);
    REQUIRE(vf_before.contains("nodeGuid"));

    auto plugin =
        fakekernel_plugin("sriov", host_local(ws, "10.250.41.0/24"),
                          {{"pkey", "0x8001"}, {"capabilities", {{"infinibandGUID", true}, {"deviceID", true}}}});
    const std::string conf = ws.write("ib.conflist", conflist("e2e-ib", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("si")};
    call.cap_args = json{{"deviceID", SriovNode::kIbVfPci}, {"infinibandGUID", "C2:11:22:33:44:55:66:77"}}.dump();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    const json vf = node.vf(node.ibpf, 0);
    CHECK(vf["nodeGuid"] == "c2:11:22:33:44:55:66:77");
    CHECK(vf["portGuid"] == "c2:11:22:33:44:55:66:77");
    CHECK(node.tree.read("bus/pci/drivers/mlx5_core/unbind") == SriovNode::kIbVfPci);
    CHECK(node.tree.read("bus/pci/drivers/mlx5_core/bind") == SriovNode::kIbVfPci);
    for (const auto& write : node.vf_log()) {
        CHECK_THAT(write, !Catch::Contains(" mac ") && !Catch::Contains(" vlan "));
    }
    // Shared RDMA mode: the device stays in the host.
    CHECK(node.rdma_owner("mlx5_9") == 0);
    REQUIRE(find_link(&pod, "net1"));

    require_verb_ok(ws, node.env(), call, "check");
    require_verb_ok(ws, node.env(), call, "del");
    CHECK(node.vf(node.ibpf, 0) == vf_before);
    CHECK(find_link(nullptr, node.ibvf.name_a()));
    CHECK(only_loopback(pod));
    CHECK(attachment_files(ws).empty());
}

TEST_CASE("sriov: a vfio-bound VF is DPDK mode: settings applied, no netdev moved", "[e2e][sriov][dpdk]") {
    Workspace ws;
    SriovNode node(ws);
    ScopedNetns pod("sd");
    const json vf_before = node.vf(node.pf, 1);

    auto plugin = fakekernel_plugin("sriov", host_local(ws, "10.250.42.0/24"),
                                    {{"deviceID", SriovNode::kVfioPci}, {"mac", "0a:58:0a:01:00:07"}, {"vlan", 30}});
    const std::string conf = ws.write("dpdk.conflist", conflist("e2e-dpdk", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("sd")};

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    const auto& iface = add.json["interfaces"][0];
    CHECK(iface.value("name", "") == "net1");
    CHECK(iface.value("mac", "") == "0a:58:0a:01:00:07");
    // Addresses are allocated and reported, but nothing is applied: no netdev in the pod.
    REQUIRE(add.json["ips"].size() == 1);
    CHECK(add.json["ips"][0].value("address", "").rfind("10.250.42.", 0) == 0);
    CHECK(only_loopback(pod));
    CHECK(ws.ipam_reservations("e2e-dpdk").size() == 1);
    CHECK(node.vf(node.pf, 1)["vlan"] == 30);
    CHECK(node.vf(node.pf, 1)["mac"] == "0a:58:0a:01:00:07");

    require_verb_ok(ws, node.env(), call, "check");
    require_verb_ok(ws, node.env(), call, "del");
    CHECK(node.vf(node.pf, 1) == vf_before);
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-dpdk").empty());
}

// CNIDeviceInfoFile is the NAD author's to choose (a literal runtimeConfig passes through libcni
// when no capability replaces it), and the plugin runs as root: outside the node policy's
// deviceInfoDirs it is refused before the VF changes; through a symlink below them it is not
// followed, and the ADD rolls back completely.
TEST_CASE("sriov: a CNIDeviceInfoFile outside deviceInfoDirs or through a symlink writes nothing",
          "[e2e][sriov][policy][devinfo]") {
    Workspace ws;
    SriovNode node(ws);
    ScopedNetns pod("sp");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    std::filesystem::create_directories(ws.path("elsewhere"));
    const std::string victim = ws.write("elsewhere/victim", "keep");
    auto victim_text = [&] {
        std::ifstream in(victim);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };

    auto plugin =
        fakekernel_plugin("sriov", host_local(ws, "10.250.43.0/24"),
                          {{"vlan", 100}, {"capabilities", {{"deviceID", true}, {"CNIDeviceInfoFile", true}}}});
    const std::string conf = ws.write("sriov.conflist", conflist("e2e-devinfo", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("sp")};
    auto untouched = [&] {
        CHECK(victim_text() == "keep");
        CHECK(node.vf(node.pf, 0) == vf_before);
        CHECK(host_netdev(node.vf0.name_a()) == dev_before);
        CHECK(only_loopback(pod));
        CHECK(node.rdma_owner("mlx5_7") == 0);
        CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
        CHECK(attachment_files(ws).empty());
        CHECK(ws.ipam_reservations("e2e-devinfo").empty());
    };

    SECTION("outside: code 7 before the VF changes, audited") {
        call.cap_args = json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", victim}}.dump();
        const auto add = drive(ws, node.env(), call);
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK(add.msg().find("runtimeConfig.CNIDeviceInfoFile") != std::string::npos);
        CHECK(node.vf_log().empty());
        untouched();
        std::ifstream audit(ws.audit_log());
        const std::string lines(std::istreambuf_iterator<char>(audit), {});
        CHECK(lines.find("CNIDeviceInfoFile \"" + victim + "\" is outside") != std::string::npos);
    }
    SECTION("a symlinked directory below deviceInfoDirs: refused, everything rolled back") {
        std::filesystem::create_directories(ws.path("devinfo"));
        std::filesystem::create_directory_symlink(ws.path("elsewhere"), ws.path("devinfo/cni"));
        call.cap_args =
            json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", ws.path("devinfo/cni/victim")}}.dump();
        const auto add = drive(ws, node.env(), call);
        INFO(add.describe());
        CHECK(add.code() == 5);
        CHECK(add.msg().find("symlink") != std::string::npos);
        untouched();
    }
    // The runtime's DEL after a failed ADD finds nothing to undo.
    call.verb = "del";
    const auto del = drive(ws, node.env(), call);
    INFO(del.describe());
    CHECK(del.ok());
    untouched();
}

// `required` is checked at the end of ADD, after the netdev moved: here the VF's RDMA device
// passes the up-front check (it has a PCI function), moves into the pod, and then its driver
// deletes it when the VF netdev moves (as rxe's does). The ADD used to report success.
TEST_CASE("sriov: required fails at the end of ADD when the driver deleted the moved RDMA device",
          "[e2e][sriov][rdma]") {
    Workspace ws;
    SriovNode node(ws);
    {
        json state = node.kernel.read();
        for (auto& d : state["rdma"]["devices"])
            if (d.value("name", "") == "mlx5_7") d["boundNetdev"] = node.vf0.name_a();
        node.kernel.write(state);
    }
    ScopedNetns pod("sr");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    REQUIRE(dev_before);
    auto plugin = fakekernel_plugin(
        "sriov", host_local(ws, "10.250.41.0/24"),
        {{"vlan", 100}, {"rdma", {{"isolation", "required"}}}, {"capabilities", {{"deviceID", true}}}});
    const std::string conf = ws.write("sriov-req.conflist", conflist("e2e-sriov-req", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("sr")};
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}}.dump();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE_FALSE(add.ok());
    CHECK(add.code() == 100);
    CHECK_THAT(add.msg(), Catch::Contains("RDMA device mlx5_7 no longer exists"));
    // Rolled back: the VF netdev and settings as before, no address, no state.
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(only_loopback(pod));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-sriov-req").empty());
    // The driver's deletion stays (nothing can undo it); the other devices are untouched.
    CHECK(node.rdma_owner("mlx5_0") == 0);
    CHECK(node.rdma_owner("mlx5_9") == 0);
    CHECK_THROWS(node.rdma_owner("mlx5_7"));
    CHECK_FALSE(std::filesystem::exists(node.tree.root() + "/class/infiniband/mlx5_7"));

    call.verb = "del";
    CHECK(drive(ws, node.env(), call).ok());
}
