// The failpoint walk (hardening build only, -DRDMANET_FAILPOINTS=ON): for every mode and every
// step listed in include/rdmanet/base/failpoint.hpp, the plugin is SIGKILLed at that step of ADD (or of DEL), and
// then the runtime's recovery — DEL, then GC with no valid attachment — must leave nothing behind:
// no interface in the pod, the host device back under its own name with its own MAC, no macvlan
// child on the master, no address in the embedded IPAM's store and no attachment state. sriov and
// ipoib run through rdmanet-fakekernel; the Kubernetes datastore against the test API server.
#include <catch2/catch.hpp>

#ifdef RDMANET_FAILPOINTS

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "e2e/e2e_failpoint_call.hpp"
#include "e2e/e2e_fakekernel.hpp"
#include "e2e/e2e_helpers.hpp"
#include "fixture.hpp"
#include "rdmanet/base/failpoint.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

constexpr int kKilled = 128 + 9;  // run_process reports death by SIGKILL as 128 + signal

// One call with `failpoint` armed to SIGKILL the plugin there.
CniOutcome call(const Workspace& ws, const std::string& command, const ScopedNetns& pod, const std::string& id,
                const json& conf, const std::string& failpoint, const PluginUnderTest& plugin = {}) {
    return call_with_failpoint(ws, command, pod, id, conf, failpoint, FailpointAction::kill, plugin);
}

// Allocations left in the embedded IPAM's store, counted through rdmanetctl.
std::size_t allocations(const Workspace& ws) {
    const auto r = run_process({bin_dir() + "/rdmanetctl", "pool", "list", "--json", "--data-dir", ws.path("ipam-db")});
    INFO("rdmanetctl: " << r.exit_code << " " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    std::size_t n = 0;
    for (const auto& pool : json::parse(r.out)) n += pool["spec"]["allocations"].size();
    return n;
}

// The pod-side record step, and the one between the table's routes and its rules, are passed only
// by a configuration that changes something beyond the interface (policyRouting: a table, rules,
// sysctls).
bool reaches_pod_record(const json& conf, std::string_view step) {
    return (step != "add_after_pod_record" && step != "add_after_pod_routes") || conf.contains("policyRouting");
}

// The steps inside the pod interface's configuration: a DPDK VF has no netdev there.
bool pod_interface_step(std::string_view step) {
    return step == "add_after_pod_record" || step == "add_after_pod_sysctls" || step == "add_after_pod_addresses" ||
           step == "add_after_pod_routes";
}

// CHECK changes nothing: a kill there leaves nothing to recover (the error walk fails them instead).
bool check_step(std::string_view step) { return step.rfind("check_", 0) == 0; }

// Runs ADD (and DEL when the step belongs to DEL) with `step` armed, then recovers as a runtime
// would: DEL, then GC with no valid attachment. Both must succeed; the caller checks the rest.
// `reached` says whether this configuration passes the step: then the plugin must die there,
// otherwise the verb must run to the end — so a failpoint that stops firing fails the walk.
void kill_and_recover(const Workspace& ws, const json& conf, const std::string& step, const ScopedNetns& pod,
                      bool reached, const PluginUnderTest& plugin = {}) {
    const std::string id = container_id("fp");
    const bool del_step = step.rfind("del_", 0) == 0;
    reached = reached && reaches_pod_record(conf, step);
    const auto add = call(ws, "ADD", pod, id, conf, del_step ? "" : step, plugin);
    INFO("step " << step << (reached ? " (reached)" : " (not reached)") << " ADD: " << add.describe());
    if (del_step) {
        REQUIRE(add.ok());
        const auto del = call(ws, "DEL", pod, id, conf, step, plugin);
        INFO("DEL: " << del.describe());
        if (reached)
            REQUIRE(del.exit_code == kKilled);
        else
            REQUIRE(del.ok());
    } else if (reached) {
        REQUIRE(add.exit_code == kKilled);
    } else {
        REQUIRE(add.ok());
    }

    // Recovery: the runtime retries DEL, then garbage-collects with no valid attachment.
    const auto del = call(ws, "DEL", pod, id, conf, "", plugin);
    INFO("recovery DEL: " << del.describe());
    REQUIRE(del.ok());
    json gc = conf;
    gc["cni.dev/valid-attachments"] = json::array();
    PluginRequest req;
    req.command = "GC";
    req.path = default_cni_path();
    req.stdin_data = gc.dump();
    auto env = ws.env();
    env.insert(plugin.env.begin(), plugin.env.end());
    const auto gc_out = invoke_plugin(plugin.path, req, env);
    INFO("GC: " << gc_out.describe());
    REQUIRE(gc_out.ok());
}

// Runs ADD (and DEL when the step belongs to DEL) with `step` armed, then recovers as a runtime
// would and checks that nothing is left. `host_device` is checked for name and MAC.
void walk_one(const Workspace& ws, const json& conf_in, const std::string& step, bool reached,
              const std::string& host_device, const std::string& master_for_children) {
    ScopedNetns pod("fp");
    const auto before = find_link(nullptr, host_device);
    REQUIRE(before);
    kill_and_recover(ws, conf_in, step, pod, reached);

    CHECK(only_loopback(pod));
    // No source rule of the attachment is left in the pod (the kernel's three are "all").
    CHECK(pod.ip({"rule", "show"}).find("from 10.251.7.") == std::string::npos);
    const auto after = find_link(nullptr, host_device);
    REQUIRE(after);
    CHECK(link_mac(*after) == link_mac(*before));
    CHECK(host_links_on(master_for_children).size() == 1);  // the veth peer only: no macvlan left
    CHECK(allocations(ws) == 0);
    CHECK(ws.state_files().empty());
}

json embedded_ipam(const Workspace& ws) {
    return {{"type", "rdmanet-ipam"}, {"range", "10.251.7.0/24"}, {"data_dir", ws.path("ipam-db")}};
}

}  // namespace

TEST_CASE("failpoint walk: macvlan recovers from a kill at every step", "[e2e][failpoints][macvlan]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "fm");
    set_link_up(nullptr, uplink.name_a());
    // With policyRouting: the walk also covers the table, the rules and the sysctls.
    auto plugin = macvlan_plugin(uplink.name_a(), embedded_ipam(ws));
    plugin["policyRouting"] = true;
    const auto conf = plugin_stdin("fp-macvlan", "1.1.0", plugin);
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        // macvlan saves no state before the kernel change (nothing in the host to restore).
        const bool reached = !kube_store_step(step) && step != "add_after_state_saved";
        DYNAMIC_SECTION("kill at " << step) {
            walk_one(ws, conf, std::string(step), reached, uplink.name_a(), uplink.name_a());
        }
    }
}

TEST_CASE("failpoint walk: hostdev recovers from a kill at every step", "[e2e][failpoints][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "fh");
    auto plugin = hostdev_plugin(dev.name_a(), embedded_ipam(ws));
    plugin["policyRouting"] = true;
    const auto conf = plugin_stdin("fp-hostdev", "1.1.0", plugin);
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            walk_one(ws, conf, std::string(step), !kube_store_step(step), dev.name_a(), dev.name_b());
        }
    }
}

// ---- sriov and ipoib through rdmanet-fakekernel (PF-side VF netlink, RDMA netlink and IPoIB
// creation in a fake-kernel state file that survives the kill; netdevs are real veth ends). -------

namespace {

PluginUnderTest fakekernel(const std::map<std::string, std::string>& node_env) {
    return PluginUnderTest{fakekernel_path(), node_env};
}

// After the kill and the recovery: the VF netdev back in the host under its name with its MAC,
// MTU, alias and up state; every PF-side setting (GUIDs included) as before; its RDMA device home
// and visible in the host's sysfs again; no in-use record, device-info file, allocation or
// attachment state.
void walk_sriov_one(const Workspace& ws, const SriovNode& node, const json& conf, const std::string& step,
                    const std::string& pf, unsigned vf, const std::string& netdev, const std::string& pci,
                    const std::string& rdma_device, const std::string& devinfo) {
    ScopedNetns pod("fs");
    const json vf_before = node.vf(pf, vf);
    const auto dev_before = netdev.empty() ? std::nullopt : host_netdev(netdev);
    // A DPDK VF (no netdev) passes none of the pod interface's steps.
    const bool reached = !kube_store_step(step) && (!netdev.empty() || !pod_interface_step(step));
    kill_and_recover(ws, conf, step, pod, reached, fakekernel(node.env()));

    CHECK(only_loopback(pod));
    if (!netdev.empty()) CHECK(host_netdev(netdev) == dev_before);
    CHECK(node.vf(pf, vf) == vf_before);
    if (!rdma_device.empty()) {
        CHECK(node.rdma_owner(rdma_device) == 0);
        CHECK(std::filesystem::exists(node.tree.root() + "/class/infiniband/" + rdma_device + "/device"));
    }
    CHECK_FALSE(vf_record_exists(ws, pci));
    if (!devinfo.empty()) CHECK_FALSE(std::filesystem::exists(devinfo));
    CHECK(allocations(ws) == 0);
    CHECK(attachment_files(ws).empty());
}

}  // namespace

TEST_CASE("failpoint walk: sriov Ethernet VF recovers from a kill at every step", "[e2e][failpoints][sriov]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    const std::string devinfo = ws.path("devinfo/fp-sriov-net1");
    auto plugin =
        fakekernel_plugin("sriov", embedded_ipam(ws),
                          {{"mac", "0a:58:0a:01:00:05"},
                           {"vlan", 100},
                           {"vlanQoS", 3},
                           {"vlanProto", "802.1ad"},
                           {"spoofchk", "off"},
                           {"trust", "on"},
                           {"link_state", "enable"},
                           {"min_tx_rate", 100},
                           {"max_tx_rate", 1000},
                           {"mtu", 1400},
                           // Renamed in the pod: a kill after the rename must still bring
                           // it home as mlx5_7 (walk_sriov_one looks for that name).
                           {"rdma", {{"deviceName", "rdma0"}}},
                           {"runtimeConfig", {{"deviceID", SriovNode::kVfPci}, {"CNIDeviceInfoFile", devinfo}}}});
    const auto conf = plugin_stdin("fp-sriov", "1.1.0", plugin);
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            walk_sriov_one(ws, node, conf, std::string(step), node.pf, 0, node.vf0.name_a(), SriovNode::kVfPci,
                           "mlx5_7", devinfo);
        }
    }
}

TEST_CASE("failpoint walk: sriov InfiniBand VF GUID is restored after a kill at every step",
          "[e2e][failpoints][sriov][ib]") {
    Workspace ws;
    SriovNode node(ws, "exclusive");
    auto plugin = fakekernel_plugin(
        "sriov", embedded_ipam(ws),
        {{"pkey", "0x8001"},
         {"runtimeConfig", {{"deviceID", SriovNode::kIbVfPci}, {"infinibandGUID", "c2:11:22:33:44:55:66:77"}}}});
    const auto conf = plugin_stdin("fp-sriov-ib", "1.1.0", plugin);
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            walk_sriov_one(ws, node, conf, std::string(step), node.ibpf, 0, node.ibvf.name_a(), SriovNode::kIbVfPci,
                           "mlx5_9", "");
        }
    }
}

TEST_CASE("failpoint walk: sriov DPDK (vfio) VF recovers from a kill at every step", "[e2e][failpoints][sriov]") {
    Workspace ws;
    SriovNode node(ws, "shared");
    auto plugin = fakekernel_plugin("sriov", embedded_ipam(ws),
                                    {{"deviceID", SriovNode::kVfioPci}, {"mac", "0a:58:0a:01:00:07"}, {"vlan", 30}});
    const auto conf = plugin_stdin("fp-sriov-dpdk", "1.1.0", plugin);
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            walk_sriov_one(ws, node, conf, std::string(step), node.pf, 1, "", SriovNode::kVfioPci, "", "");
        }
    }
}

TEST_CASE("failpoint walk: ipoib recovers from a kill at every step", "[e2e][failpoints][ipoib]") {
    Workspace ws;
    IpoibNode node(ws);
    const auto conf = plugin_stdin("fp-ipoib", "1.1.0",
                                   fakekernel_plugin("ipoib", embedded_ipam(ws), {{"master", node.parent.name_a()}}));
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            ScopedNetns pod("fi");
            kill_and_recover(ws, conf, std::string(step), pod, !kube_store_step(step), fakekernel(node.env()));
            CHECK(only_loopback(pod));
            // No child left in the host under its temporary name: the veth peer only.
            CHECK(host_links_on(node.parent.name_a()) == std::vector<std::string>{node.parent.name_b()});
            CHECK(allocations(ws) == 0);
            CHECK(attachment_files(ws).empty());
        }
    }
}

// ---- the Kubernetes datastore: a pool entry and its reservation are two API objects, written in
// order (entry, then reservation; DEL: reservation, then entry). A kill between them, or anywhere
// else, must leave neither behind after the recovery. ------------------------------------------

namespace {

// Allocations in every IPPool and every OverlappingRangeIPReservation, straight from the server.
std::size_t kube_allocations(const apiserver_test::TestApiServer& server) {
    std::size_t n = 0;
    for (const auto& pool : server.list("kube-system", "ippools"))
        n += pool["spec"].value("allocations", json::object()).size();
    return n;
}

std::size_t kube_reservations(const apiserver_test::TestApiServer& server) {
    return server.list("kube-system", "overlappingrangeipreservations").size();
}

}  // namespace

TEST_CASE("failpoint walk: macvlan on the Kubernetes datastore leaves no pool entry or reservation",
          "[e2e][failpoints][kube]") {
    apiserver_test::TestApiServer server;
    Workspace ws;
    // The node policy confines kubeconfigs to the workspace; the CA is embedded, so the kubeconfig
    // names no other file.
    std::ifstream in(server.write_kubeconfig("kubeconfig"));
    const std::string kubeconfig = ws.write("kubeconfig", std::string(std::istreambuf_iterator<char>(in), {}));
    ScopedVeth uplink(nullptr, nullptr, "fk");
    set_link_up(nullptr, uplink.name_a());
    const json ipam = {{"type", "rdmanet-ipam"},
                       {"range", "10.251.9.0/24"},
                       {"datastore", "kubernetes"},
                       {"kubernetes", {{"kubeconfig", kubeconfig}}},
                       {"data_dir", ws.path("ipam-db")}};
    const auto conf = plugin_stdin("fp-kube", "1.1.0", macvlan_plugin(uplink.name_a(), ipam));
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            ScopedNetns pod("fk");
            // macvlan saves no state before the kernel change; the store's steps are all reached but
            // those of node-slice mode.
            kill_and_recover(ws, conf, std::string(step), pod, step != "add_after_state_saved" && !slice_step(step));
            CHECK(only_loopback(pod));
            CHECK(host_links_on(uplink.name_a()).size() == 1);  // the veth peer only
            CHECK(kube_allocations(server) == 0);
            CHECK(kube_reservations(server) == 0);
            CHECK(ws.state_files().empty());
        }
    }
}

// ---- the Kubernetes datastore in node-slice mode: the claim (NodeSlicePool), the local commit
// (backlog marker + SQLite) and the publication (slice IPPool) are separate steps. After a kill at
// any of them and the recovery (DEL, GC, a new ADD, whose call publishes what the backlog holds):
// no address twice, every slice IPPool equal to the node's local store, no reservation, no
// backlog. --------------------------------------------------------------------------------------

namespace {

// name -> spec.allocations of every non-empty pool: the slice IPPools on the server, or the
// node's local store (rdmanetctl pool list of <data_dir>/kubernetes/slices) in the same shape.
std::map<std::string, json> server_pools(const apiserver_test::TestApiServer& server) {
    std::map<std::string, json> out;
    for (const auto& pool : server.list("kube-system", "ippools")) {
        const json a = pool["spec"].value("allocations", json::object());
        if (!a.empty()) out[pool["metadata"]["name"]] = a;
    }
    return out;
}

std::map<std::string, json> local_slice_pools(const Workspace& ws) {
    const auto r = run_process(
        {bin_dir() + "/rdmanetctl", "pool", "list", "--json", "--data-dir", ws.path("ipam-db") + "/kubernetes/slices"});
    INFO("rdmanetctl: " << r.exit_code << " " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    std::map<std::string, json> out;
    for (const auto& pool : json::parse(r.out)) {
        if (!pool["spec"]["allocations"].empty()) out[pool["metadata"]["name"]] = pool["spec"]["allocations"];
    }
    return out;
}

bool backlog_empty(const Workspace& ws) {
    const std::string dir = ws.path("ipam-db") + "/kubernetes/slices/backlog";
    return !std::filesystem::exists(dir) || std::filesystem::is_empty(dir);
}

}  // namespace

TEST_CASE(
    "failpoint walk: macvlan on the Kubernetes datastore with node slices leaves no duplicate and slice IPPools "
    "equal to the local store",
    "[e2e][failpoints][kube][slices]") {
    apiserver_test::TestApiServer server;
    Workspace ws;
    std::ifstream in(server.write_kubeconfig("kubeconfig"));
    const std::string kubeconfig = ws.write("kubeconfig", std::string(std::istreambuf_iterator<char>(in), {}));
    ScopedVeth uplink(nullptr, nullptr, "fs");
    set_link_up(nullptr, uplink.name_a());
    const json ipam = {{"type", "rdmanet-ipam"},        {"range", "10.251.10.0/24"},
                       {"datastore", "kubernetes"},     {"kubernetes", {{"kubeconfig", kubeconfig}}},
                       {"network_name", "fpslice"},     {"node_slice_size", "/28"},
                       {"data_dir", ws.path("ipam-db")}};
    const auto conf = plugin_stdin("fp-slices", "1.1.0", macvlan_plugin(uplink.name_a(), ipam));
    PluginUnderTest plugin;
    plugin.env["NODENAME"] = "fp-node";
    for (const auto step : rdmanet::base::kFailpoints) {
        if (check_step(step)) continue;
        DYNAMIC_SECTION("kill at " << step) {
            // Each section runs on a fresh API server and workspace: its first ADD claims a slice.
            const bool reached = step != "add_after_state_saved" && !single_object_step(step);
            {
                ScopedNetns pod("fs");
                kill_and_recover(ws, conf, std::string(step), pod, reached, plugin);
                CHECK(only_loopback(pod));
            }
            // The node's next ADD publishes whatever the killed call left in the backlog first.
            ScopedNetns pod("fs");
            const std::string id = container_id("after");
            const auto add = call(ws, "ADD", pod, id, conf, "", plugin);
            INFO("ADD after the recovery: " << add.describe());
            REQUIRE(add.ok());
            CHECK(backlog_empty(ws));
            const auto published = server_pools(server);
            CHECK(published == local_slice_pools(ws));
            // One pod alive, one entry: the killed attachment's address is not held twice or leaked.
            REQUIRE(published.size() == 1);
            const json& entries = published.begin()->second;
            REQUIRE(entries.size() == 1);
            CHECK(entries.begin().value()["id"] == id);
            CHECK(kube_reservations(server) == 0);
            // The NodeSlicePool lists the node's one slice.
            const auto nsp = server.request("GET",
                                            "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/"
                                            "nodeslicepools/fpslice");
            REQUIRE(nsp.status == 200);
            CHECK(nsp.body["status"]["allocations"] ==
                  json::parse(R"([{"nodeName":"fp-node","sliceRange":"10.251.10.0/28"}])"));

            const auto del = call(ws, "DEL", pod, id, conf, "", plugin);
            INFO("DEL: " << del.describe());
            REQUIRE(del.ok());
            CHECK(only_loopback(pod));
            CHECK(host_links_on(uplink.name_a()).size() == 1);
            CHECK(server_pools(server).empty());
            CHECK(local_slice_pools(ws).empty());
            CHECK(backlog_empty(ws));
            CHECK(ws.state_files().empty());
        }
        // The runtime may also retry the killed ADD itself (same container, same pod) before any
        // DEL: the retry gets the address the killed call committed, if it did, and publishes it
        // once. Only the steps inside the IPAM: later ones leave the interface half-made for DEL.
        if (!slice_step(step) && step != "add_after_ipam") continue;
        DYNAMIC_SECTION("kill at " << step << ", then the same ADD again") {
            ScopedNetns pod("fs");
            const std::string id = container_id("retry");
            const auto killed = call(ws, "ADD", pod, id, conf, std::string(step), plugin);
            INFO("armed ADD: " << killed.describe());
            REQUIRE(killed.exit_code == kKilled);
            const auto retry = call(ws, "ADD", pod, id, conf, "", plugin);
            INFO("retried ADD: " << retry.describe());
            REQUIRE(retry.ok());
            CHECK(backlog_empty(ws));
            const auto published = server_pools(server);
            CHECK(published == local_slice_pools(ws));
            REQUIRE(published.size() == 1);
            const json& entries = published.begin()->second;
            REQUIRE(entries.size() == 1);  // one address for the pod, not one per attempt
            CHECK(entries.begin().value()["id"] == id);
            CHECK(retry.json["ips"][0]["address"] == "10.251.10." + entries.begin().key() + "/24");
            const auto del = call(ws, "DEL", pod, id, conf, "", plugin);
            INFO("DEL: " << del.describe());
            REQUIRE(del.ok());
            CHECK(only_loopback(pod));
            CHECK(server_pools(server).empty());
            CHECK(local_slice_pools(ws).empty());
            CHECK(backlog_empty(ws));
            CHECK(ws.state_files().empty());
        }
    }
}

#endif  // RDMANET_FAILPOINTS
