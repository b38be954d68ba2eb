// hostdev selected the ways Multus and admins select it (PCI address from a device plugin, MAC),
// and a device the kernel already handed back to the host before DEL: when a pod netns dies, the
// kernel returns a physical netdev to the host under its pod name with its alias;
// DEL must find it by its saved PCI identity and restore its name. The sysfs view is a fake tree
// (rdmanet-fakekernel with only its sysfs fake) that maps a PCI address onto a real veth end, as the kernel's sysfs does.
#include <filesystem>

#include <catch2/catch.hpp>

#include "e2e/e2e_fakekernel.hpp"
#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPci = "0000:3b:00.2";

// <root>/bus/pci/devices/<pci>/net/<ifname> and <root>/class/net/<ifname>/device -> the PCI dir.
void fake_pci_netdev(const std::string& root, const std::string& ifname) {
    const fs::path dev = fs::path(root) / "bus/pci/devices" / kPci;
    fs::create_directories(dev / "net" / ifname);
    fs::create_directories(fs::path(root) / "class/net" / ifname);
    const fs::path link = fs::path(root) / "class/net" / ifname / "device";
    fs::remove(link);
    fs::create_directory_symlink(dev, link);
}

std::map<std::string, std::string> env_with_sysfs(const Workspace& ws) {
    auto env = ws.env();
    env[rdmanet::test::kFakeSysfsRootEnv] = ws.path("sysfs");
    return env;
}

json hostdev_by(const json& selector, const json& ipam) {
    json plugin = {{"type", "rdmanet"}, {"mode", "hostdev"}, {"ipam", ipam}};
    plugin.update(selector);
    return plugin;
}

}  // namespace

TEST_CASE("hostdev selected by PCI address (Multus deviceID) and by MAC", "[e2e][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "hp");
    ScopedNetns pod("pod");
    fake_pci_netdev(ws.path("sysfs"), dev.name_a());
    const auto mac = link_mac(*find_link(nullptr, dev.name_a()));

    json selector;
    SECTION("top-level deviceID") { selector = {{"deviceID", kPci}}; }
    SECTION("pciBusID") { selector = {{"pciBusID", kPci}}; }
    SECTION("hwaddr") { selector = {{"hwaddr", mac}}; }

    const auto conf = plugin_stdin("e2e-hsel", "1.1.0", hostdev_by(selector, host_local(ws, "10.250.40.0/24")));
    const auto id = container_id();
    const auto add =
        invoke_plugin(fakekernel_path(), {"ADD", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()},
                      env_with_sysfs(ws));
    INFO(add.describe());
    REQUIRE(add.ok());
    const auto moved = find_link(&pod, "net1");
    REQUIRE(moved);
    CHECK(link_mac(*moved) == mac);
    CHECK(link_alias(*moved) == dev.name_a());
    if (!selector.contains("hwaddr")) CHECK(add.json["interfaces"][0]["pciID"] == kPci);

    const auto del =
        invoke_plugin(fakekernel_path(), {"DEL", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()},
                      env_with_sysfs(ws));
    INFO(del.describe());
    REQUIRE(del.ok());
    const auto back = find_link(nullptr, dev.name_a());
    REQUIRE(back);
    CHECK(link_alias(*back).empty());
    CHECK(only_loopback(pod));
    CHECK(ws.state_files().empty());
}

TEST_CASE("hostdev DEL recovers a device the kernel already returned under its pod name", "[e2e][hostdev][del]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "hr");
    ScopedNetns pod("pod");
    fake_pci_netdev(ws.path("sysfs"), dev.name_a());
    set_link_up(nullptr, dev.name_a());
    const auto conf =
        plugin_stdin("e2e-hret", "1.0.0", hostdev_by({{"deviceID", kPci}}, host_local(ws, "10.250.41.0/24")));
    const auto id = container_id();
    const PluginRequest add_req{"ADD", id, pod.path(), "net1", std::nullopt, default_cni_path(), conf.dump()};
    const auto add = invoke_plugin(fakekernel_path(), add_req, env_with_sysfs(ws));
    INFO(add.describe());
    REQUIRE(add.ok());

    // What the kernel does when the pod netns dies without DEL: the device reappears in the host
    // under its pod name, alias kept. (A veth would die with the netns, so the return is made by
    // hand.) The host's sysfs then shows it under that name.
    run_command_checked({"ip", "-n", pod.name(), "link", "set", "net1", "netns", "1"});
    REQUIRE(find_link(nullptr, "net1"));
    fake_pci_netdev(ws.path("sysfs"), "net1");

    SECTION("the pod netns is gone too") {
        run_command_checked({"ip", "netns", "del", pod.name()});
        auto del_req = add_req;
        del_req.command = "DEL";
        const auto del = invoke_plugin(fakekernel_path(), del_req, env_with_sysfs(ws));
        INFO(del.describe());
        REQUIRE(del.ok());
    }
    SECTION("the pod netns still exists but no longer holds the device") {
        auto del_req = add_req;
        del_req.command = "DEL";
        const auto del = invoke_plugin(fakekernel_path(), del_req, env_with_sysfs(ws));
        INFO(del.describe());
        REQUIRE(del.ok());
    }
    const auto back = find_link(nullptr, dev.name_a());
    REQUIRE(back);
    CHECK(link_alias(*back).empty());
    CHECK(link_is_up(*back));
    CHECK_FALSE(find_link(nullptr, "net1"));
    CHECK(ws.state_files().empty());
}
