// The failpoint walk of the node agent's repair (hardening build only, -DRDMANET_FAILPOINTS=ON):
// an attachment whose pod netns died without DEL is repaired by `rdmanetctl reconcile --local`,
// and the agent is SIGKILLed at every DEL step of that repair. The next pass must finish the job:
// the address released, the state gone, the host device back under its own name and MAC.
#include <catch2/catch.hpp>

#ifdef RDMANET_FAILPOINTS

#include <unistd.h>

#include "e2e/e2e_helpers.hpp"
#include "rdmanet/base/failpoint.hpp"
#include "support/process.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

constexpr int kKilled = 128 + 9;

ProcessResult reconcile_local(const Workspace& ws, const std::string& failpoint) {
    auto env = ws.env();
    if (!failpoint.empty()) env["RDMANET_FAILPOINT"] = failpoint;
    return run_process({bin_dir() + "/rdmanetctl", "reconcile", "--local"}, env);
}

std::size_t allocations(const Workspace& ws) {
    const auto r = run_process({bin_dir() + "/rdmanetctl", "pool", "list", "--json", "--data-dir", ws.path("ipam-db")});
    REQUIRE(r.exit_code == 0);
    std::size_t n = 0;
    for (const auto& pool : json::parse(r.out)) n += pool["spec"]["allocations"].size();
    return n;
}

json embedded_ipam(const Workspace& ws) {
    return {{"type", "rdmanet-ipam"}, {"range", "10.251.17.0/24"}, {"data_dir", ws.path("ipam-db")}};
}

CniOutcome add(const Workspace& ws, const ScopedNetns& pod, const std::string& id, const std::string& ifname,
               const json& conf) {
    return direct(ws, "ADD", pod.path(), id, ifname, conf);
}

// Kills the repair at `step` (when a repair passes it), then runs a clean pass.
void kill_repair_and_finish(const Workspace& ws, const std::string& step) {
    const bool reached = step == "del_after_ipam" || step == "del_after_teardown";
    const auto killed = reconcile_local(ws, step);
    INFO("step " << step << ": " << killed.exit_code << " " << killed.out << killed.err);
    if (reached)
        REQUIRE(killed.exit_code == kKilled);
    else
        REQUIRE(killed.exit_code == 0);
    const auto next = reconcile_local(ws, "");
    INFO("next pass: " << next.out << next.err);
    REQUIRE(next.exit_code == 0);
}

}  // namespace

TEST_CASE("failpoint walk: the agent killed in the middle of a macvlan repair", "[e2e][failpoints][agent]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "wm");
    set_link_up(nullptr, uplink.name_a());
    const auto conf = plugin_stdin("fpa-macvlan", "1.1.0", macvlan_plugin(uplink.name_a(), embedded_ipam(ws)));
    for (const auto step : rdmanet::base::kFailpoints) {
        if (step.rfind("del_", 0) != 0) continue;
        DYNAMIC_SECTION("kill at " << step) {
            ScopedNetns pod("wa");
            REQUIRE(add(ws, pod, container_id("wa"), "net1", conf).ok());
            run_command_checked({"ip", "netns", "del", pod.name()});
            kill_repair_and_finish(ws, std::string(step));
            CHECK(allocations(ws) == 0);
            CHECK(ws.state_files().empty());
            CHECK(host_links_on(uplink.name_a()).size() == 1);
        }
    }
}

TEST_CASE("failpoint walk: the agent killed in the middle of a hostdev repair", "[e2e][failpoints][agent][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "wh");
    const auto before = find_link(nullptr, dev.name_a());
    REQUIRE(before);
    const auto conf = plugin_stdin("fpa-hostdev", "1.1.0", hostdev_plugin(dev.name_a(), embedded_ipam(ws)));
    const std::string ifname = "wah" + std::to_string(::getpid() % 100000);
    for (const auto step : rdmanet::base::kFailpoints) {
        if (step.rfind("del_", 0) != 0) continue;
        DYNAMIC_SECTION("kill at " << step) {
            ScopedNetns pod("wb");
            REQUIRE(add(ws, pod, container_id("wb"), ifname, conf).ok());
            // The kernel's part: the device back in the host under its pod-side name.
            pod.ip({"link", "set", "dev", ifname, "netns", std::to_string(::getpid())});
            run_command_checked({"ip", "netns", "del", pod.name()});
            kill_repair_and_finish(ws, std::string(step));
            CHECK(allocations(ws) == 0);
            CHECK(ws.state_files().empty());
            CHECK_FALSE(find_link(nullptr, ifname));
            const auto after = find_link(nullptr, dev.name_a());
            REQUIRE(after);
            CHECK(link_mac(*after) == link_mac(*before));
        }
    }
}

#endif  // RDMANET_FAILPOINTS
