// rdmanet as the one CNI plugin of a DRA driver, for a claimed SR-IOV VF (modes sriov and
// hostdev, the function selected by the injected deviceID) with its RDMA device moved into the
// pod in exclusive RDMA netns mode: dra-driver-sriov hands the pod the RDMA character devices by
// CDI but never moves the RDMA device, so the plugin does. Called through Debian's libcni exactly
// as dra-driver-sriov STANDALONE and Multus with DRA call it (e2e/dra_callers.hpp), through
// rdmanet-fakekernel (PF-side VF netlink, RDMA netlink and sysfs are the fake kernel's; the VF
// netdev is a real veth end moving between real namespaces).
//
// Device-info files: the driver (in MULTUS mode) writes dp/<resourceName>-<deviceID>-device.json,
// Multus copies it to the delegate's cni/ path, and rdmanet fills in (and, in sriov mode, removes
// at DEL) only that copy. The driver's file survives ADD and DEL, and a NAD that points CNIDeviceInfoFile at it is
// refused before anything changes.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/dra_callers.hpp"
#include "e2e/e2e_fakekernel.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;
namespace fs = std::filesystem;

namespace {

const std::string kResourceName = "nvidia.com/rdma_vf";
const std::string kRange = "10.251.8.0/24";
const std::string kGateway = "10.251.8.1";

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

unsigned mode_bits(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

// A file as the NAD client library writes device-info (driver and Multus alike): 0444.
void write_read_only(const std::string& path, const std::string& content) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << content;
    fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
}

std::vector<json> own_rules(const ScopedNetns& ns) {
    std::vector<json> rules;
    for (const auto& r : json::parse(ns.ip({"-4", "-j", "rule", "show"}), nullptr, false))
        if (r.contains("src") && r.value("src", "") != "all") rules.push_back(r);
    return rules;
}

// The NAD's spec.config for the claimed VF: no device named (deviceID selects it), policyRouting,
// the embedded IPAM.
json nad_config(const Workspace& ws, const std::string& mode) {
    auto plugin = fakekernel_plugin(mode, embedded_ipam(ws, kRange, kGateway), {{"policyRouting", true}});
    plugin["cniVersion"] = "1.0.0";
    return plugin;
}

// The VF as the host holds it before ADD, to compare after DEL.
struct Before {
    json vf;
    std::optional<HostNetdev> netdev;
};

// ADD's effects both callers rely on: the networkData the driver writes into the claim, the VF's
// RDMA device in the pod (gone from the host's sysfs), the rail's rule and table.
void check_attached(const Workspace& ws, const SriovNode& node, const ScopedNetns& pod, const dra::PodSandbox& sandbox,
                    const json& result) {
    const auto data = dra::network_data_from_result(result);
    CHECK(data.interface_name == "net1");
    REQUIRE(data.ips == std::vector<std::string>{"10.251.8.2/24"});
    const auto link = find_link(&pod, "net1");
    REQUIRE(link);
    CHECK(data.hardware_address == link_mac(*link));
    const int index = result["ips"][0].value("interface", -1);
    REQUIRE(index >= 0);
    CHECK(result["interfaces"][index].value("sandbox", "") == pod.path());
    CHECK(ipv4_addresses(pod, "net1") == data.ips);

    CHECK(node.rdma_owner("mlx5_7") != 0);
    CHECK_FALSE(fs::exists(node.tree.root() + "/class/infiniband/mlx5_7"));
    CHECK(node.rdma_owner("mlx5_0") == 0);

    const auto rules = own_rules(pod);
    REQUIRE(rules.size() == 1);
    CHECK(rules[0].value("src", "") == "10.251.8.2");
    const json got = json::parse(pod.ip({"-j", "route", "get", "192.0.2.100", "from", "10.251.8.2"}), nullptr, false);
    REQUIRE(got.is_array());
    REQUIRE_FALSE(got.empty());
    CHECK(got[0].value("dev", "") == "net1");
    CHECK(got[0].value("gateway", "") == kGateway);

    const auto pools = embedded_pools(ws);
    REQUIRE(pools.size() == 1);
    CHECK(pools[0]["spec"]["allocations"] == json({{"2",
                                                    {{"id", sandbox.sandbox_id},
                                                     {"podref", sandbox.namespace_name + "/" + sandbox.name},
                                                     {"ifname", "net1"}}}}));
}

void check_detached(const Workspace& ws, const SriovNode& node, const ScopedNetns& pod, const std::string& mode,
                    const Before& before) {
    CHECK(only_loopback(pod));
    CHECK(node.rdma_owner("mlx5_7") == 0);
    CHECK(fs::exists(node.tree.root() + "/class/infiniband/mlx5_7/device"));
    CHECK(host_netdev(node.vf0.name_a()) == before.netdev);
    if (mode == "sriov") CHECK(node.vf(node.pf, 0) == before.vf);
    CHECK_FALSE(vf_record_exists(ws, SriovNode::kVfPci));
    CHECK(attachment_files(ws).empty());
    const auto pools = embedded_pools(ws);
    REQUIRE(pools.size() == 1);
    CHECK(pools[0]["spec"]["allocations"].empty());
}

// Regular files below `dir` (recursively), "" entries never.
std::vector<std::string> files_below(const std::string& dir) {
    std::vector<std::string> out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("dra-driver-sriov STANDALONE: the claimed VF by deviceID, RDMA device moved in exclusive mode",
          "[e2e][dra][sriov]") {
    const std::string mode = GENERATE("sriov", "hostdev");
    INFO("mode " << mode);
    Workspace ws;
    SriovNode node(ws);
    set_link_up(nullptr, node.vf0.name_b());  // the VF's link partner: carrier in the pod
    ScopedNetns pod("dsp");
    const Before before{node.vf(node.pf, 0), host_netdev(node.vf0.name_a())};
    REQUIRE(before.netdev);

    const auto sandbox = dra::pod_sandbox("trainer-0");
    const json conf = dra::standalone_plugin_config(nad_config(ws, mode), "rdma-vf", SriovNode::kVfPci);
    FakeKernelCall call{"add", ws.write("nad.conf", conf.dump()), pod.path(), sandbox.sandbox_id};
    call.single_plugin = true;
    call.args = sandbox.cni_args();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    check_attached(ws, node, pod, sandbox, add.json);
    if (mode == "sriov") CHECK(vf_record_exists(ws, SriovNode::kVfPci));
    // No runtimeConfig from this caller: rdmanet writes no device-info file of its own.
    CHECK(files_below(ws.path("devinfo")).empty());

    require_verb_ok(ws, node.env(), call, "del");
    check_detached(ws, node, pod, mode, before);
    CHECK(drive(ws, node.env(), call).ok());  // a repeated DEL
}

TEST_CASE(
    "Multus with DRA: the claimed VF by deviceID/pciBusID in a conflist, the driver's device-info file "
    "survives ADD and DEL, rdmanet fills in only Multus' copy",
    "[e2e][dra][sriov]") {
    const std::string mode = GENERATE("sriov", "hostdev");
    INFO("mode " << mode);
    Workspace ws;
    SriovNode node(ws);
    set_link_up(nullptr, node.vf0.name_b());
    ScopedNetns pod("dmf");
    const Before before{node.vf(node.pf, 0), host_netdev(node.vf0.name_a())};
    REQUIRE(before.netdev);
    const auto sandbox = dra::pod_sandbox("trainer-1");

    // The driver's file (MULTUS mode, at PrepareResourceClaims) and Multus' copy for the delegate.
    const std::string devinfo = ws.path("devinfo");
    const std::string driver_file = dra::driver_device_info_path(devinfo, kResourceName, SriovNode::kVfPci);
    const std::string copy = dra::multus_device_info_path(devinfo, "rdma-vf", sandbox.sandbox_id, "net1");
    const std::string driver_text = json{{"type", "pci"},
                                         {"version", "1.1.0"},
                                         {"pci", {{"pci-address", SriovNode::kVfPci}, {"rdma-device", "mlx5_7"}}}}
                                        .dump();
    write_read_only(driver_file, driver_text);
    write_read_only(copy, driver_text);
    CHECK(fs::path(driver_file).filename() == "nvidia.com-rdma_vf-0000:af:00.2-device.json");

    json plugin = nad_config(ws, mode);
    plugin.erase("cniVersion");
    plugin["capabilities"] = {{"deviceID", true}, {"CNIDeviceInfoFile", true}};
    const json list = dra::multus_conflist_with_device(conflist("rdma-vf", "1.0.0", plugin), SriovNode::kVfPci);
    FakeKernelCall call{"add", ws.write("nad.conflist", list.dump()), pod.path(), sandbox.sandbox_id};
    call.args = sandbox.cni_args();
    call.cap_args = json{{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", copy}}.dump();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    REQUIRE(add.ok());
    check_attached(ws, node, pod, sandbox, add.json);

    // The driver's file: same bytes, same mode. The copy: rdmanet's details merged in.
    CHECK(read_file(driver_file) == driver_text);
    CHECK(mode_bits(driver_file) == 0444);
    const json info = json::parse(read_file(copy));
    CHECK(info["type"] == "pci");
    CHECK(info["pci"]["pci-address"] == SriovNode::kVfPci);
    CHECK(info["pci"]["pf-pci-address"] == SriovNode::kPfPci);
    CHECK(info["pci"]["rdma-device"] == "mlx5_7");
    CHECK(files_below(devinfo) == std::vector<std::string>{copy, driver_file});

    require_verb_ok(ws, node.env(), call, "del");
    check_detached(ws, node, pod, mode, before);
    // sriov removes its copy at DEL; hostdev leaves it to Multus, which removes the delegate's
    // file after DEL (both as under Multus with a device plugin).
    if (mode == "sriov")
        CHECK_FALSE(fs::exists(copy));
    else
        CHECK(fs::exists(copy));
    CHECK(read_file(driver_file) == driver_text);
    CHECK(mode_bits(driver_file) == 0444);
    CHECK(drive(ws, node.env(), call).ok());  // a repeated DEL
    CHECK(read_file(driver_file) == driver_text);
}

TEST_CASE("a NAD whose runtimeConfig names the driver's dp/ device-info file is refused before anything changes",
          "[e2e][dra][sriov]") {
    Workspace ws;
    SriovNode node(ws);
    ScopedNetns pod("dxf");
    const Before before{node.vf(node.pf, 0), host_netdev(node.vf0.name_a())};
    const auto sandbox = dra::pod_sandbox("trainer-2");
    const std::string driver_file = dra::driver_device_info_path(ws.path("devinfo"), kResourceName, SriovNode::kVfPci);
    const std::string driver_text =
        json{{"type", "pci"}, {"version", "1.1.0"}, {"pci", {{"pci-address", SriovNode::kVfPci}}}}.dump();
    write_read_only(driver_file, driver_text);

    json nad = nad_config(ws, "sriov");
    nad["runtimeConfig"] = {{"CNIDeviceInfoFile", driver_file}};  // literal: reaches the plugin as is
    const json conf = dra::standalone_plugin_config(nad, "rdma-vf", SriovNode::kVfPci);
    FakeKernelCall call{"add", ws.write("nad.conf", conf.dump()), pod.path(), sandbox.sandbox_id};
    call.single_plugin = true;
    call.args = sandbox.cni_args();

    const auto add = drive(ws, node.env(), call);
    INFO(add.describe());
    CHECK_FALSE(add.ok());
    CHECK(add.code() == 7);
    CHECK_THAT(add.msg(), Catch::Contains("CNIDeviceInfoFile") && Catch::Contains("dp/"));
    CHECK(read_file(driver_file) == driver_text);
    CHECK(mode_bits(driver_file) == 0444);
    CHECK(only_loopback(pod));
    CHECK(node.rdma_owner("mlx5_7") == 0);
    CHECK(node.vf(node.pf, 0) == before.vf);
    CHECK(host_netdev(node.vf0.name_a()) == before.netdev);
    CHECK(attachment_files(ws).empty());

    // DEL after the failed ADD (the runtime's cleanup) leaves the driver's file too.
    call.verb = "del";
    const auto del = drive(ws, node.env(), call);
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(read_file(driver_file) == driver_text);
}
