// The RDMA GIDs and device names of a rail (multi-rail RDMA; policy routing is
// test_e2e_multirail.cpp) on a pod-owned device (exclusive RDMA netns mode) through libcni and
// rdmanet-fakekernel: the RoCE v2 GID wait, the GID indexes in the device-info file, CHECK of the
// GIDs, and rdma.deviceName (rename in the pod, name back before the device goes home, clashes
// refused before anything changes). RDMA netlink and the pod's sysfs view of the device are the
// fake kernel's (support/fake_kernel_file.hpp: <sysfs root>/rdma-netns); the VF netdev is a real
// veth end moving between real namespaces, with real addresses.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e/e2e_fakekernel.hpp"
#include "support/process.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;
namespace fs = std::filesystem;

namespace {

constexpr const char* kAddress = "10.250.46.7";
constexpr const char* kAddressGid = "0000:0000:0000:0000:0000:ffff:0afa:2e07";

json read_json_file(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in);
    return json::parse(in);
}

// The pod's sysfs view of RDMA device `name`: an Ethernet port whose table holds the link-local
// GID (as every RoCE port has) and, if asked, the RoCE v2 GID of kAddress at `index`.
struct GidView {
    fs::path port;
    GidView(const SriovNode& node, const std::string& name)
        : port(fs::path(node.tree.root()) / kRdmaNetnsView / "class/infiniband" / name / "ports/1") {
        write("link_layer", "Ethernet");
        write("gids/0", "fe80:0000:0000:0000:0858:0aff:fe01:0005");
        write("gid_attrs/types/0", "RoCE v2");
        write("gids/1", "0000:0000:0000:0000:0000:0000:0000:0000");
    }
    void write(const std::string& rel, const std::string& content) const {
        fs::create_directories((port / rel).parent_path());
        std::ofstream(port / rel) << content << "\n";
    }
    // Under the device's current name (a rename moves the directory).
    void add_address_gid(const fs::path& port_dir, unsigned index) const {
        std::ofstream(port_dir / "gid_attrs/types" / std::to_string(index)) << "RoCE v2\n";
        std::ofstream(port_dir / "gids" / std::to_string(index)) << kAddressGid << "\n";
    }
};

json rail_plugin(const Workspace& ws, const std::string& devinfo, json rdma) {
    return fakekernel_plugin("sriov",
                             host_local(ws, "10.250.46.0/24", {{"rangeStart", kAddress}, {"rangeEnd", kAddress}}),
                             {{"mac", "0a:58:0a:01:00:05"},
                              {"rdma", rdma},
                              {"capabilities", {{"deviceID", true}, {"CNIDeviceInfoFile", true}}}});
}

FakeKernelCall rail_call(const Workspace& ws, const ScopedNetns& pod, const std::string& devinfo, const json& plugin) {
    const std::string conf = ws.write("rail.conflist", conflist("e2e-rail", "1.0.0", plugin).dump());
    FakeKernelCall call{"add", conf, pod.path(), container_id("rl")};
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", devinfo}}.dump();
    return call;
}

std::vector<std::string> rdma_calls(const SriovNode& node) {
    return node.kernel.read().value("rdmaCalls", json::array()).get<std::vector<std::string>>();
}

bool has_device(const SriovNode& node, const std::string& name) {
    for (const auto& d : node.kernel.read().at("rdma").at("devices"))
        if (d.value("name", "") == name) return true;
    return false;
}

std::uint64_t inode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_ino;
}

// Nothing of the attachment anywhere: VF settings and netdev as before, mlx5_7 home under its
// own name and visible in the host's sysfs, no state, no allocation.
void require_untouched(const Workspace& ws, const SriovNode& node, const ScopedNetns& pod, const json& vf_before,
                       const std::optional<HostNetdev>& dev_before) {
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK(only_loopback(pod));
    CHECK(node.rdma_owner("mlx5_7") == 0);
    CHECK(fs::exists(node.tree.root() + "/class/infiniband/mlx5_7/device"));
    CHECK(attachment_files(ws).empty());
    CHECK(ws.ipam_reservations("e2e-rail").empty());
}

}  // namespace

TEST_CASE(
    "rdma gids and names: ADD waits for a late RoCE v2 GID, reports its index, CHECK verifies it, DEL renames back",
    "[e2e][sriov][rdma][rdma-gids-names]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    ScopedNetns pod("rl");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    const std::string devinfo = ws.path("devinfo/e2e-rail-net1");
    const GidView view(node, "rdma0");  // the pod sees the device under its pod name
    auto call =
        rail_call(ws, pod, devinfo, rail_plugin(ws, devinfo, {{"deviceName", "rdma0"}, {"gidTimeoutMs", 20000}}));

    // The kernel adds the address's GID some time after the address: here only once the address
    // is on the pod's interface, i.e. once the plugin is past configuring it. ADD can only succeed
    // by waiting for this write.
    std::thread kernel_fills_gid([&] {
        eventually(
            [&] {
                try {
                    return !ipv4_addresses(pod, "net1").empty();
                } catch (const std::exception&) {
                    return false;  // net1 not in the pod yet
                }
            },
            std::chrono::seconds(60));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        view.add_address_gid(view.port, 3);
    });
    const auto add = drive(ws, node.env(), call);
    kernel_fills_gid.join();
    INFO(add.describe());
    REQUIRE(add.ok());

    // Renamed inside the pod: the pod's view lists rdma0, mlx5_7 exists no more (names are node-wide).
    CHECK(node.rdma_owner("rdma0") == inode_of(pod.path()));
    CHECK_FALSE(has_device(node, "mlx5_7"));
    const auto calls = rdma_calls(node);
    CHECK(std::find(calls.begin(), calls.end(), "rename mlx5_7 rdma0") != calls.end());

    // Multus' device-info file: the pod's name of the device and the GID index of its address.
    const json info = read_json_file(devinfo);
    CHECK(info["pci"]["rdma-device"] == "rdma0");
    CHECK(info["pci"]["pci-address"] == SriovNode::kVfPci);
    CHECK(info["pci"]["roce-gids"] == json::parse(std::string(R"([{"address":")") + kAddress + R"(","gid":")" +
                                                  kAddressGid + R"(","port":1,"index":3}])"));

    require_verb_ok(ws, node.env(), call, "check");

    // The GID vanished (address flushed behind the plugin's back, port reset ...): CHECK says so.
    fs::remove(view.port / "gids/3");
    call.verb = "check";
    const auto check = drive(ws, node.env(), call);
    CHECK_FALSE(check.ok());
    CHECK_THAT(check.msg(), Catch::Contains(kAddress) && Catch::Contains("rdma0"));
    // At another index than ADD reported: NCCL_IB_GID_INDEX taken from the device-info is stale.
    view.add_address_gid(view.port, 5);
    const auto moved = drive(ws, node.env(), call);
    CHECK_FALSE(moved.ok());
    CHECK_THAT(moved.msg(), Catch::Contains("index 3") && Catch::Contains("index 5"));

    require_verb_ok(ws, node.env(), call, "del");
    require_untouched(ws, node, pod, vf_before, dev_before);
    CHECK_FALSE(has_device(node, "rdma0"));
    CHECK_FALSE(fs::exists(devinfo));
}

TEST_CASE(
    "rdma gids and names: a RoCE v2 GID that never appears fails ADD after the bounded wait and undoes everything",
    "[e2e][sriov][rdma][rdma-gids-names]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    ScopedNetns pod("rg");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    const std::string devinfo = ws.path("devinfo/e2e-rail-net1");
    const GidView view(node, "rdma0");
    auto call = rail_call(ws, pod, devinfo, rail_plugin(ws, devinfo, {{"deviceName", "rdma0"}, {"gidTimeoutMs", 300}}));

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE_FALSE(add.ok());
    CHECK(add.code() == 104);
    CHECK_THAT(add.msg(), Catch::Contains("RoCE v2 GID") && Catch::Contains(kAddress) && Catch::Contains("rdma0"));
    CHECK_THAT(add.details(), Catch::Contains("rdma.gidTimeoutMs"));
    require_untouched(ws, node, pod, vf_before, dev_before);
    CHECK_FALSE(has_device(node, "rdma0"));
    CHECK_FALSE(fs::exists(devinfo));
}

TEST_CASE("rdma gids and names: rdma.deviceName already used in the pod is code 7 before anything changes",
          "[e2e][sriov][rdma][rdma-gids-names]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    ScopedNetns pod("rc");
    // Another rail of this pod already carries the name.
    json state = node.kernel.read();
    state["rdma"]["devices"].push_back({{"index", 8}, {"name", "rdma0"}, {"owner", inode_of(pod.path())}});
    node.kernel.write(state);
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    const std::string devinfo = ws.path("devinfo/e2e-rail-net1");
    auto call = rail_call(ws, pod, devinfo, rail_plugin(ws, devinfo, {{"deviceName", "rdma0"}}));

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE_FALSE(add.ok());
    CHECK(add.code() == 7);
    CHECK_THAT(add.msg(), Catch::Contains("rdma.deviceName") && Catch::Contains("rdma0"));
    // Nothing changed: no PF write, no RDMA move or rename, no address taken.
    CHECK(node.vf_log().empty());
    for (const auto& c : rdma_calls(node)) {
        CHECK(c.rfind("move", 0) != 0);
        CHECK(c.rfind("rename", 0) != 0);
    }
    require_untouched(ws, node, pod, vf_before, dev_before);
    CHECK(node.rdma_owner("rdma0") == inode_of(pod.path()));

    // An invalid name is code 7 as well, before anything changes.
    auto bad = rail_call(ws, pod, devinfo, rail_plugin(ws, devinfo, {{"deviceName", "mlx5_%d"}}));
    const auto refused = drive(ws, node.env(), bad);
    CHECK(refused.code() == 7);
    CHECK_THAT(refused.msg(), Catch::Contains("rdma.deviceName"));
    CHECK(node.vf_log().empty());
}

TEST_CASE("rdma gids and names: a name held by a device outside the pod (EEXIST at rename) is code 7 and rolled back",
          "[e2e][sriov][rdma][rdma-gids-names]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    ScopedNetns pod("re");
    // The host's mlx5_0 is invisible to the pod in exclusive mode, yet its name is taken node-wide.
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    const std::string devinfo = ws.path("devinfo/e2e-rail-net1");
    auto call = rail_call(ws, pod, devinfo, rail_plugin(ws, devinfo, {{"deviceName", "mlx5_0"}}));

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE_FALSE(add.ok());
    CHECK(add.code() == 7);
    CHECK_THAT(add.msg(), Catch::Contains("already the name of another RDMA device"));
    require_untouched(ws, node, pod, vf_before, dev_before);
    CHECK(node.rdma_owner("mlx5_0") == 0);
}

TEST_CASE(
    "rdma gids and names: agent repair brings a renamed device home under its own name after the pod died without DEL",
    "[e2e][sriov][rdma][rdma-gids-names][agent]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    const json vf_before = node.vf(node.pf, 0);
    const auto dev_before = host_netdev(node.vf0.name_a());
    const std::string devinfo = ws.path("devinfo/e2e-rail-net1");
    ScopedNetns pod("rd");
    auto call = rail_call(ws, pod, devinfo, rail_plugin(ws, devinfo, {{"deviceName", "rdma0"}}));
    call.ifname = "rd" + std::to_string(::getpid() % 100000);
    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(node.rdma_owner("rdma0") != 0);

    // The pod's namespace dies without DEL: the kernel hands back the VF netdev under its pod
    // name, and the RDMA device under the pod's name (the RDMA core keeps names on the way home).
    pod.ip({"link", "set", "dev", call.ifname, "netns", std::to_string(::getpid())});
    run_command_checked({"ip", "netns", "del", pod.name()});
    node.tree.rename_netdev(SriovNode::kVfPci, node.vf0.name_a(), call.ifname);  // sysfs follows the name
    CHECK(node.rdma_owner("rdma0") == 0);
    CHECK(fs::exists(node.tree.root() + "/class/infiniband/rdma0/device"));

    const auto r = run_process({fakekernel_path(), "reconcile-local"}, node.env());
    INFO("exit " << r.exit_code << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(node.rdma_owner("mlx5_7") == 0);
    CHECK_FALSE(has_device(node, "rdma0"));
    CHECK(fs::exists(node.tree.root() + "/class/infiniband/mlx5_7/device"));
    CHECK_FALSE(fs::exists(node.tree.root() + "/class/infiniband/rdma0"));
    CHECK(node.vf(node.pf, 0) == vf_before);
    CHECK(host_netdev(node.vf0.name_a()) == dev_before);
    CHECK(attachment_files(ws).empty());
}
