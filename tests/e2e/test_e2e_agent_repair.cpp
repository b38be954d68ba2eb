// The node agent's repair (rdmanetctl reconcile --local) on the real kernel: an attachment whose
// pod netns died without DEL is undone from its attachment state -- addresses released, state
// removed, a device the kernel returned to the host under its pod-side name renamed back with
// its original settings -- while a live attachment, and a namespace that now sits at a reused
// path, are left alone.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "e2e/e2e_helpers.hpp"
#include "support/process.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

void destroy_netns(const ScopedNetns& ns) { run_command_checked({"ip", "netns", "del", ns.name()}); }

ProcessResult reconcile_local(const Workspace& ws, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{bin_dir() + "/rdmanetctl", "reconcile", "--local"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, ws.env());
}

// A pod-side interface name unique to this test process (the "returned" device appears in the
// host under it, where other test programs run concurrently).
std::string unique_ifname(const std::string& prefix) { return prefix + std::to_string(::getpid() % 100000); }

std::string describe(const ProcessResult& r) {
    return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

}  // namespace

TEST_CASE("reconcile --local undoes a macvlan attachment whose netns is gone", "[e2e][agent]") {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "ag"};
    ScopedNetns pod{"pod"};
    set_link_up(nullptr, uplink.name_a());
    const Attachment att{
        ws,
        ws.write(
            "net.conflist",
            conflist("e2e-agmv", "1.0.0", macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.40.0/24"))).dump()),
        pod.path(), container_id()};
    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(ws.state_files().size() == 1);
    REQUIRE(ws.ipam_reservations("e2e-agmv").size() == 1);

    SECTION("a live attachment is never touched") {
        const auto r = reconcile_local(ws);
        INFO(describe(r));
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("1 attachments, 1 alive, 0 repaired") != std::string::npos);
        CHECK(ws.state_files().size() == 1);
        CHECK(ws.ipam_reservations("e2e-agmv").size() == 1);
        CHECK(find_link(&pod, "net1"));
        const auto del = att.del();
        CHECK(del.ok());
    }
    SECTION("netns deleted without DEL: one pass releases the address and the state") {
        destroy_netns(pod);
        const auto dry = reconcile_local(ws, {"--dry-run"});
        INFO(describe(dry));
        CHECK(dry.out.find("would repair e2e-agmv " + att.container_id) != std::string::npos);
        CHECK(ws.state_files().size() == 1);  // dry run changes nothing

        const auto r = reconcile_local(ws);
        INFO(describe(r));
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("repaired e2e-agmv " + att.container_id + " net1 (macvlan)") != std::string::npos);
        CHECK(r.out.find("netns_gone") != std::string::npos);
        CHECK(ws.state_files().empty());
        CHECK(ws.ipam_reservations("e2e-agmv").empty());
        CHECK(host_links_on(uplink.name_a()) == std::vector<std::string>{uplink.name_b()});
        // A second pass finds nothing left; the runtime's late DEL still succeeds.
        const auto again = reconcile_local(ws);
        CHECK(again.out.find("0 attachments") != std::string::npos);
        CHECK(att.del().ok());
    }
    SECTION("the netns path reused by a new namespace: ours is undone, the new one untouched") {
        destroy_netns(pod);
        run_command_checked({"ip", "netns", "add", pod.name()});  // same path, another namespace
        run_command_checked({"ip", "-n", pod.name(), "link", "add", "net1", "type", "veth", "peer", "name", "net1p"});
        const auto r = reconcile_local(ws);
        INFO(describe(r));
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("netns_replaced") != std::string::npos);
        CHECK(ws.state_files().empty());
        CHECK(ws.ipam_reservations("e2e-agmv").empty());
        const auto still = find_link(&pod, "net1");
        REQUIRE(still);
        CHECK(link_kind(*still) == "veth");
    }
}

TEST_CASE("reconcile --local returns a hostdev device the kernel gave back under its pod-side name",
          "[e2e][agent][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "ah");
    ScopedNetns pod("pod");
    const std::string device = dev.name_a();
    set_link_up(nullptr, device);
    const auto original = find_link(nullptr, device);
    REQUIRE(original);
    const std::string ifname = unique_ifname("agh");
    const auto conf = conflist("e2e-aghd", "1.0.0", hostdev_plugin(device, host_local(ws, "10.250.41.0/24")));
    Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};
    att.ifname = ifname;
    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE_FALSE(find_link(nullptr, device));
    REQUIRE(find_link(&pod, ifname));

    // What the kernel does to a physical device when its netns dies: back to the host under its
    // pod-side name (a veth would be destroyed instead, so the test moves it back by hand).
    pod.ip({"link", "set", "dev", ifname, "netns", std::to_string(::getpid())});
    destroy_netns(pod);
    REQUIRE(find_link(nullptr, ifname));

    const auto r = reconcile_local(ws);
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-aghd " + att.container_id + " " + ifname + " (hostdev)") != std::string::npos);
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-aghd").empty());
    CHECK_FALSE(find_link(nullptr, ifname));
    const auto back = find_link(nullptr, device);
    REQUIRE(back);
    CHECK(link_mac(*back) == link_mac(*original));
    CHECK(link_alias(*back) == link_alias(*original));
    CHECK(link_is_up(*back));
}

TEST_CASE("reconcile --local leaves a device it did not record alone", "[e2e][agent][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "an");
    ScopedVeth bystander(nullptr, nullptr, "ab");
    ScopedNetns pod("pod");
    const std::string ifname = unique_ifname("agn");
    const auto conf = conflist("e2e-agnd", "1.0.0", hostdev_plugin(dev.name_a(), host_local(ws, "10.250.42.0/24")));
    Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};
    att.ifname = ifname;
    REQUIRE(att.add().ok());
    // The netns dies and the veth stand-in dies with it; a bystander carries the pod-side name.
    destroy_netns(pod);
    run_command_checked({"ip", "link", "set", "dev", bystander.name_a(), "name", ifname});
    const auto r = reconcile_local(ws);
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-agnd").empty());
    // Not ours (another MAC, no alias of ours): still there under the name it had.
    CHECK(find_link(nullptr, ifname));
    run_command_checked({"ip", "link", "del", ifname});
}

TEST_CASE("reconcile --local undoes a policyRouting attachment without touching a reused netns",
          "[e2e][agent][multirail]") {
    // The rules, table routes and sysctls of an attachment live in its pod namespace and die with
    // it; the repair releases the address and the state, and never acts inside whatever namespace
    // now sits at the recorded path (its rules, even one that looks like ours, are not ours).
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "ag"};
    ScopedNetns pod{"pod"};
    set_link_up(nullptr, uplink.name_a());
    auto plugin = macvlan_plugin(uplink.name_a(), host_local(ws, "10.250.41.0/24", {{"gateway", "10.250.41.1"}}));
    plugin["policyRouting"] = true;
    const Attachment att{ws, ws.write("net.conflist", conflist("e2e-agpr", "1.0.0", plugin).dump()), pod.path(),
                         container_id()};
    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());
    const auto address = address_of(add.json["ips"][0].value("address", ""));
    REQUIRE(pod.ip({"rule", "show"}).find("from " + address + " lookup 100") != std::string::npos);

    destroy_netns(pod);
    run_command_checked({"ip", "netns", "add", pod.name()});  // same path, another namespace
    run_command_checked({"ip", "-n", pod.name(), "rule", "add", "from", address, "lookup", "100"});
    const auto r = reconcile_local(ws);
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("repaired e2e-agpr " + att.container_id) != std::string::npos);
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-agpr").empty());
    CHECK(pod.ip({"rule", "show"}).find("from " + address + " lookup 100") != std::string::npos);
}
