// The failpoint walk (hardening build only, -DRDMANET_FAILPOINTS=ON): for every mode and every
// step listed in cni/failpoint.hpp, the plugin is SIGKILLed at that step of ADD (or of DEL), and
// then the runtime's recovery — DEL, then GC with no valid attachment — must leave nothing behind:
// no interface in the pod, the host device back under its own name with its own MAC, no macvlan
// child on the master, no address in the embedded IPAM's store and no attachment state.
#include <catch2/catch.hpp>

#ifdef RDMANET_FAILPOINTS

#include <string>

#include "e2e/e2e_helpers.hpp"
#include "rdmanet/cni/failpoint.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

constexpr int kKilled = 128 + 9;   // run_process reports death by SIGKILL as 128 + signal

CniOutcome call(const Workspace& ws, const std::string& command, const ScopedNetns& pod, const std::string& id,
                const json& conf, const std::string& failpoint) {
    PluginRequest req;
    req.command = command;
    req.container_id = id;
    req.netns = pod.path();
    req.ifname = "net1";
    req.args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=walk;K8S_POD_NAME=" + id;
    req.path = default_cni_path();
    req.stdin_data = conf.dump();
    auto env = ws.env();
    if (!failpoint.empty()) env["RDMANET_FAILPOINT"] = failpoint;
    return invoke_plugin(rdmanet_path(), req, env);
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

// Runs ADD (and DEL when the step belongs to DEL) with `step` armed, then recovers as a runtime
// would and checks that nothing is left. `host_device` is checked for name and MAC.
void walk_one(const Workspace& ws, const json& conf_in, const std::string& step, const std::string& host_device,
              const std::string& master_for_children) {
    json conf = conf_in;
    ScopedNetns pod("fp");
    const std::string id = container_id("fp");
    const auto before = find_link(nullptr, host_device);
    REQUIRE(before);

    const bool del_step = step.rfind("del_", 0) == 0;
    const auto add = call(ws, "ADD", pod, id, conf, del_step ? "" : step);
    INFO("step " << step << " ADD: " << add.describe());
    if (del_step) {
        REQUIRE(add.ok());
        const auto del = call(ws, "DEL", pod, id, conf, step);
        INFO("DEL: " << del.describe());
        REQUIRE(del.exit_code == kKilled);
    } else {
        // A step this mode never reaches (hostdev's state save in macvlan) lets ADD finish.
        REQUIRE((add.exit_code == kKilled || add.ok()));
    }

    // Recovery: the runtime retries DEL, then garbage-collects with no valid attachment.
    const auto del = call(ws, "DEL", pod, id, conf, "");
    INFO("recovery DEL: " << del.describe());
    REQUIRE(del.ok());
    json gc = conf;
    gc["cni.dev/valid-attachments"] = json::array();
    PluginRequest req;
    req.command = "GC";
    req.path = default_cni_path();
    req.stdin_data = gc.dump();
    const auto gc_out = invoke_plugin(rdmanet_path(), req, ws.env());
    INFO("GC: " << gc_out.describe());
    REQUIRE(gc_out.ok());

    CHECK(only_loopback(pod));
    const auto after = find_link(nullptr, host_device);
    REQUIRE(after);
    CHECK(link_mac(*after) == link_mac(*before));
    CHECK(host_links_on(master_for_children).size() == 1);   // the veth peer only: no macvlan left
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
    const auto conf = plugin_stdin("fp-macvlan", "1.1.0", macvlan_plugin(uplink.name_a(), embedded_ipam(ws)));
    for (const auto step : rdmanet::cni::kFailpoints) {
        DYNAMIC_SECTION("kill at " << step) { walk_one(ws, conf, std::string(step), uplink.name_a(), uplink.name_a()); }
    }
}

TEST_CASE("failpoint walk: hostdev recovers from a kill at every step", "[e2e][failpoints][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "fh");
    const auto conf = plugin_stdin("fp-hostdev", "1.1.0", hostdev_plugin(dev.name_a(), embedded_ipam(ws)));
    for (const auto step : rdmanet::cni::kFailpoints) {
        DYNAMIC_SECTION("kill at " << step) { walk_one(ws, conf, std::string(step), dev.name_a(), dev.name_b()); }
    }
}

#endif  // RDMANET_FAILPOINTS
