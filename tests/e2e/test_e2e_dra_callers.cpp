// rdmanet as the one CNI plugin of a DRA driver, on the real kernel, called through Debian's libcni
// exactly as the two callers call it (e2e/dra_callers.hpp): dra-driver-sriov in STANDALONE mode
// (AddNetwork/DelNetwork on ONE plugin configuration from the NAD, top-level deviceID injected)
// and Multus with DRA (deviceID and pciBusID in every plugin of the NAD's conflist, runtimeConfig
// deviceID). Both with policyRouting and the embedded IPAM, for hostdev of a veth end and a
// macvlan: the rail's source address leaves through its own gateway (real pings counted on the far
// side), and the result carries what the driver turns into KEP-4817 networkData. The SR-IOV and
// RDMA-exclusive variants are in test_e2e_dra_callers_fakes.cpp.
#include <catch2/catch.hpp>

#include <filesystem>

#include "e2e/dra_callers.hpp"
#include "e2e/e2e_helpers.hpp"
#include "support/process.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;
namespace fs = std::filesystem;

namespace {

const std::string kRemote = "192.0.2.100";  // behind the rail's gateway, on the far side
const std::string kGateway = "10.251.7.1";
const std::string kRange = "10.251.7.0/24";
// The deviceID the callers inject. The veth stands in for the claimed function but has no PCI
// address, so the NAD names the device (which wins over deviceID) and the injected address names
// a function absent from this node, as the test requires below. Selection by deviceID itself
// runs over the fake sysfs in test_e2e_dra_callers_fakes.cpp.
const std::string kAbsentPci = "0000:ff:1f.7";

ProcessResult in_ns(const ScopedNetns& ns, std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"ip", "netns", "exec", ns.name()});
    return run_process(argv, {}, "", std::chrono::seconds(20));
}

unsigned long rx_packets(const ScopedNetns& ns, const std::string& ifname) {
    auto r = in_ns(ns, {"cat", "/sys/class/net/" + ifname + "/statistics/rx_packets"});
    return r.exit_code == 0 ? std::stoul(r.out) : 0;
}

// The pod's rules that are not the kernel's defaults.
std::vector<json> own_rules(const ScopedNetns& ns) {
    std::vector<json> rules;
    for (const auto& r : json::parse(ns.ip({"-4", "-j", "rule", "show"}), nullptr, false))
        if (r.contains("src") && r.value("src", "") != "all") rules.push_back(r);
    return rules;
}

// `ip route get <dst> from <src>` in `ns`: {dev, gateway}.
std::pair<std::string, std::string> route_get_from(const ScopedNetns& ns, const std::string& dst,
                                                   const std::string& src) {
    const json j = json::parse(ns.ip({"-j", "route", "get", dst, "from", src}), nullptr, false);
    if (!j.is_array() || j.empty()) return {"", ""};
    return {j[0].value("dev", ""), j[0].value("gateway", "")};
}

// The node side of one rail: a veth whose host end is the device (hostdev) or the macvlan master,
// and whose far end holds the gateway, with kRemote behind it.
struct Rail {
    ScopedNetns far{"drf"};
    ScopedVeth veth{nullptr, &far, "dr"};
    Rail() {
        set_link_up(nullptr, veth.name_a());
        far.ip({"link", "set", "lo", "up"});
        far.ip({"addr", "add", kRemote + "/32", "dev", "lo"});
        far.ip({"addr", "add", kGateway + "/24", "dev", veth.name_b()});
        far.ip({"link", "set", veth.name_b(), "up"});
    }
    const std::string& host_end() const { return veth.name_a(); }
};

// The NAD's spec.config as an admin writes it for the mode: no "name" (the driver takes the
// NAD's), policyRouting, the embedded IPAM.
json nad_config(const Workspace& ws, const std::string& mode, const Rail& rail) {
    json conf = mode == "hostdev" ? hostdev_plugin(rail.host_end(), embedded_ipam(ws, kRange, kGateway))
                                  : macvlan_plugin(rail.host_end(), embedded_ipam(ws, kRange, kGateway));
    conf["cniVersion"] = "1.0.0";
    conf["policyRouting"] = true;
    return conf;
}

struct Call {
    std::string file;
    bool single_plugin;
    dra::PodSandbox pod;
    std::string netns;
    std::string cap_args;
};

CniOutcome drive(const Workspace& ws, const std::string& verb, const Call& c) {
    DriverRequest req;
    req.verb = verb;
    req.conflist = c.file;
    req.single_plugin = c.single_plugin;
    req.netns = c.netns;
    req.container_id = c.pod.sandbox_id;
    req.args = c.pod.cni_args();
    req.cap_args = c.cap_args;
    req.cache_dir = ws.cache_dir();
    return run_driver(req, ws.env());
}

// What both callers need from ADD, checked on the kernel: the networkData the driver writes into
// the claim, the interface and its address in the pod, the per-rail rule and table that send the
// rail's traffic to its own gateway, and real traffic through it.
void check_attached(const Workspace& ws, const ScopedNetns& pod, const Rail& rail, const Call& c, const json& result) {
    const auto data = dra::network_data_from_result(result);
    CHECK(data.interface_name == "net1");
    REQUIRE(data.ips.size() == 1);
    CHECK(data.ips[0] == "10.251.7.2/24");
    const auto link = find_link(&pod, "net1");
    REQUIRE(link);
    CHECK(data.hardware_address == link_mac(*link));
    // Every IP references the interface the driver took (the one with a sandbox).
    for (const auto& ip : result["ips"]) {
        const int index = ip.value("interface", -1);
        REQUIRE(index >= 0);
        REQUIRE(static_cast<std::size_t>(index) < result["interfaces"].size());
        CHECK(result["interfaces"][index].value("sandbox", "") == pod.path());
        CHECK(result["interfaces"][index].value("name", "") == data.interface_name);
    }
    CHECK(ipv4_addresses(pod, "net1") == data.ips);

    // The embedded IPAM recorded the pod the callers named in CNI_ARGS, under the sandbox id.
    const auto pools = embedded_pools(ws);
    REQUIRE(pools.size() == 1);
    CHECK(
        pools[0]["spec"]["allocations"] ==
        json({{"2",
               {{"id", c.pod.sandbox_id}, {"podref", c.pod.namespace_name + "/" + c.pod.name}, {"ifname", "net1"}}}}));

    // policyRouting: one rule for the rail's address, its table's default via the rail's gateway.
    const auto rules = own_rules(pod);
    REQUIRE(rules.size() == 1);
    CHECK(rules[0].value("src", "") == "10.251.7.2");
    const auto [dev, gw] = route_get_from(pod, kRemote, "10.251.7.2");
    CHECK(dev == "net1");
    CHECK(gw == kGateway);
    const auto before = rx_packets(rail.far, rail.veth.name_b());
    const auto ping = in_ns(pod, {"ping", "-q", "-c", "5", "-i", "0.05", "-W", "2", "-I", "10.251.7.2", kRemote});
    INFO(ping.out << ping.err);
    CHECK(ping.exit_code == 0);
    CHECK(rx_packets(rail.far, rail.veth.name_b()) - before >= 5);
}

// After DEL at sandbox stop: nothing left in the pod, the device home, the address free.
void check_detached(const Workspace& ws, const ScopedNetns& pod, const Rail& rail, const std::string& mode) {
    CHECK(only_loopback(pod));
    CHECK(own_rules(pod).empty());
    if (mode == "hostdev") CHECK(find_link(nullptr, rail.host_end()));
    CHECK(host_links_on(rail.host_end()).empty());
    CHECK(ws.state_files().empty());
    const auto pools = embedded_pools(ws);
    REQUIRE(pools.size() == 1);
    CHECK(pools[0]["spec"]["allocations"].empty());
}

}  // namespace

TEST_CASE("dra-driver-sriov STANDALONE: one plugin config from the NAD with deviceID, policyRouting, embedded IPAM",
          "[e2e][dra]") {
    REQUIRE_FALSE(fs::exists("/sys/bus/pci/devices/" + kAbsentPci));
    const std::string mode = GENERATE("hostdev", "macvlan");
    INFO("mode " << mode);
    Workspace ws;
    Rail rail;
    ScopedNetns pod("drp");
    pod.ip({"link", "set", "lo", "up"});

    const json conf = dra::standalone_plugin_config(nad_config(ws, mode, rail), "rdma-rail0", kAbsentPci);
    CHECK(conf["name"] == "rdma-rail0");
    CHECK_FALSE(conf.contains("plugins"));
    const Call c{ws.write("nad.conf", conf.dump()), true, dra::pod_sandbox("trainer-0"), pod.path(), ""};

    const auto add = drive(ws, "add", c);
    INFO(add.describe());
    REQUIRE(add.ok());
    check_attached(ws, pod, rail, c, add.json);

    // StopPodSandbox: DelNetwork with the same single config and arguments; a repeat is fine.
    const auto del = drive(ws, "del", c);
    INFO(del.describe());
    REQUIRE(del.ok());
    check_detached(ws, pod, rail, mode);
    const auto again = drive(ws, "del", c);
    INFO(again.describe());
    CHECK(again.ok());
}

TEST_CASE("Multus with DRA: deviceID and pciBusID in every plugin of the conflist, policyRouting, embedded IPAM",
          "[e2e][dra]") {
    REQUIRE_FALSE(fs::exists("/sys/bus/pci/devices/" + kAbsentPci));
    const std::string mode = GENERATE("hostdev", "macvlan");
    INFO("mode " << mode);
    Workspace ws;
    Rail rail;
    ScopedNetns pod("dmp");
    pod.ip({"link", "set", "lo", "up"});

    json plugin = nad_config(ws, mode, rail);
    plugin.erase("cniVersion");
    plugin["capabilities"] = {{"deviceID", true}, {"CNIDeviceInfoFile", true}};
    const json list = dra::multus_conflist_with_device(conflist("rdma-rail0", "1.0.0", plugin), kAbsentPci);
    CHECK(list["plugins"][0]["deviceID"] == kAbsentPci);
    CHECK(list["plugins"][0]["pciBusID"] == kAbsentPci);
    Call c{ws.write("nad.conflist", list.dump()), false, dra::pod_sandbox("trainer-1"), pod.path(), ""};
    // Multus' runtimeConfig for a delegate with a device: deviceID and its own device-info path.
    const std::string devinfo =
        dra::multus_device_info_path(ws.path("devinfo"), "rdma-rail0", c.pod.sandbox_id, "net1");
    c.cap_args = json{{"deviceID", kAbsentPci}, {"CNIDeviceInfoFile", devinfo}}.dump();

    const auto add = drive(ws, "add", c);
    INFO(add.describe());
    REQUIRE(add.ok());
    check_attached(ws, pod, rail, c, add.json);
    // A veth end is no PCI function: no device-info file is made up for it.
    CHECK_FALSE(fs::exists(devinfo));

    const auto del = drive(ws, "del", c);
    INFO(del.describe());
    REQUIRE(del.ok());
    check_detached(ws, pod, rail, mode);
}
