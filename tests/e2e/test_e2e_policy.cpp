// The node policy and the built-in protections, on a simulated host: a test netns plays the node
// (its own veth uplink with an address and the default route, spare devices), and the plugin runs
// inside it (`ip netns exec`, which also gives it that netns' /sys), so refusing the node's
// uplink or loopback is exercised without the machine's real interfaces ever being candidates.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e/e2e_helpers.hpp"
#include "rdmanet/base/fd.hpp"
#include "support/fake_kernel_file.hpp"
#include "support/fake_sysfs.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;
namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The node: uplink with 192.0.2.2/24 and the default route via 192.0.2.1 (the far end lives in
// `world`), plus spare veth ends with no address that hostdev may take.
struct SimulatedNode {
    ScopedNetns node{"node"};
    ScopedNetns world{"world"};
    ScopedVeth uplink{&node, &world, "upl"};
    ScopedVeth spare{&node, &world, "alw"};  // matches the allow-list "alw*" of some policies
    ScopedVeth other{&node, &world, "den"};
    ScopedNetns pod{"pod"};

    SimulatedNode() {
        node.ip({"link", "set", "lo", "up"});
        node.ip({"addr", "add", "192.0.2.2/24", "dev", uplink.name_a()});
        node.ip({"link", "set", uplink.name_a(), "up"});
        node.ip({"route", "add", "default", "via", "192.0.2.1"});
    }
    std::string uplink_dev() const { return uplink.name_a(); }
    bool has_default_route() const {
        return node.ip({"route", "show", "default"}).find(uplink.name_a()) != std::string::npos;
    }
    bool in_node(const std::string& dev) const { return find_link(&node, dev).has_value(); }
};

// A script that runs bin/<plugin> inside the node's netns, as the runtime would on that node.
std::string plugin_in(const Workspace& ws, const SimulatedNode& sim, const std::string& plugin = "rdmanet",
                      const std::string& dir = bin_dir()) {
    const std::string script = ws.path("in-node-" + plugin + ".sh");
    std::ofstream(script) << "#!/bin/sh\nexec ip netns exec " << sim.node.name() << " " << dir << "/" << plugin
                          << " \"$@\"\n";
    ::chmod(script.c_str(), 0755);
    return script;
}

json plugin_conf(const std::string& name, json body) {
    body["type"] = "rdmanet";
    return plugin_stdin(name, "1.0.0", body);
}

CniOutcome call(const Workspace& ws, const std::string& plugin, const std::string& command, const std::string& netns,
                const std::string& id, const json& conf, const std::map<std::string, std::string>& extra = {}) {
    PluginRequest req;
    req.command = command;
    req.container_id = id;
    req.netns = netns;
    req.ifname = "net1";
    req.args = "";
    req.path = default_cni_path();
    req.stdin_data = conf.dump();
    auto env = ws.env();
    for (const auto& [k, v] : extra) env[k] = v;
    return invoke_plugin(plugin, req, env);
}

// Rewrites the workspace policy with `changes` merged over the one Workspace wrote.
void amend_policy(const Workspace& ws, const json& changes) {
    json policy = json::parse(read_text(ws.policy_file()));
    policy.update(changes);
    ws.write("policy.json", policy.dump());
}

// inotify on one file: whether anything opened it while the watch was up.
class OpenWatch {
public:
    explicit OpenWatch(const std::string& path) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
        REQUIRE(fd_);
        REQUIRE(::inotify_add_watch(fd_.get(), path.c_str(), IN_OPEN | IN_ACCESS | IN_MODIFY) >= 0);
    }
    bool opened() const {
        pollfd p{fd_.get(), POLLIN, 0};
        return ::poll(&p, 1, 100) > 0;
    }

private:
    rdmanet::base::UniqueFd fd_;
};

}  // namespace

TEST_CASE("policy: hostdev on the node's uplink or loopback is refused, device untouched", "[e2e][policy]") {
    Workspace ws;
    SimulatedNode sim;
    const auto plugin = plugin_in(ws, sim);

    for (const std::string& dev : {sim.uplink_dev(), std::string("lo")}) {
        INFO(dev);
        const auto add = call(ws, plugin, "ADD", sim.pod.path(), container_id(),
                              plugin_conf("pol-uplink", {{"mode", "hostdev"}, {"device", dev}}));
        INFO(add.describe());
        CHECK_FALSE(add.ok());
        CHECK(add.code() == 102);
        CHECK(add.msg().find("refusing to move \"" + dev + "\"") != std::string::npos);
        CHECK(add.msg().find(dev == "lo" ? "loopback" : "192.0.2.2") != std::string::npos);
        CHECK(sim.in_node(dev));
        CHECK(only_loopback(sim.pod));
    }
    CHECK(sim.has_default_route());
    CHECK(ipv4_addresses(sim.node, sim.uplink_dev()) == std::vector<std::string>{"192.0.2.2/24"});
    CHECK(ws.state_files().empty());
    // Both refusals are in the admin's audit log.
    const auto audit = read_text(ws.audit_log());
    CHECK(audit.find("refused: refusing to move \"" + sim.uplink_dev() + "\"") != std::string::npos);
    CHECK(audit.find("refused: refusing to move \"lo\"") != std::string::npos);

    SECTION("a device that only holds the default route (no address) is refused too") {
        sim.node.ip({"link", "set", sim.spare.name_a(), "up"});
        sim.node.ip({"route", "del", "default"});
        sim.node.ip({"route", "add", "default", "dev", sim.spare.name_a()});
        const auto add = call(ws, plugin, "ADD", sim.pod.path(), container_id(),
                              plugin_conf("pol-uplink", {{"mode", "hostdev"}, {"device", sim.spare.name_a()}}));
        INFO(add.describe());
        CHECK(add.code() == 102);
        CHECK(add.msg().find("default route") != std::string::npos);
        CHECK(sim.in_node(sim.spare.name_a()));
    }
}

TEST_CASE("policy: a macvlan child of the uplink works unless masters.allowUplink is false", "[e2e][policy]") {
    Workspace ws;
    SimulatedNode sim;
    const auto plugin = plugin_in(ws, sim);
    const auto conf = plugin_conf("pol-mv", {{"mode", "macvlan"}, {"master", sim.uplink_dev()}});
    const auto id = container_id();

    const auto add = call(ws, plugin, "ADD", sim.pod.path(), id, conf);
    INFO(add.describe());
    REQUIRE(add.ok());
    CHECK(find_link(&sim.pod, "net1"));
    CHECK(call(ws, plugin, "DEL", sim.pod.path(), id, conf).ok());
    CHECK(only_loopback(sim.pod));

    amend_policy(ws, {{"masters", {{"allowUplink", false}}}});
    const auto refused = call(ws, plugin, "ADD", sim.pod.path(), container_id(), conf);
    INFO(refused.describe());
    CHECK(refused.code() == 7);
    CHECK(refused.msg().find("allowUplink") != std::string::npos);
    CHECK(only_loopback(sim.pod));
    CHECK(sim.has_default_route());

    SECTION("a master outside masters.names is refused, one inside works") {
        amend_policy(ws, {{"masters", {{"names", {"alw*"}}}}});
        CHECK(call(ws, plugin, "ADD", sim.pod.path(), container_id(), conf).code() == 7);
        const auto on_spare = plugin_conf("pol-mv", {{"mode", "macvlan"}, {"master", sim.spare.name_a()}});
        const auto id2 = container_id();
        const auto ok = call(ws, plugin, "ADD", sim.pod.path(), id2, on_spare);
        INFO(ok.describe());
        CHECK(ok.ok());
        CHECK(call(ws, plugin, "DEL", sim.pod.path(), id2, on_spare).ok());
    }
}

TEST_CASE("policy: the device allow-list and the mode list decide, before the device changes", "[e2e][policy]") {
    Workspace ws;
    SimulatedNode sim;
    const auto plugin = plugin_in(ws, sim);
    amend_policy(ws, {{"devices", {{"names", {"alw*"}}}}});

    const auto denied = call(ws, plugin, "ADD", sim.pod.path(), container_id(),
                             plugin_conf("pol-dev", {{"mode", "hostdev"}, {"device", sim.other.name_a()}}));
    INFO(denied.describe());
    CHECK(denied.code() == 7);
    CHECK(denied.msg().find(sim.other.name_a()) != std::string::npos);
    CHECK(denied.msg().find("key devices") != std::string::npos);
    const auto other = find_link(&sim.node, sim.other.name_a());
    REQUIRE(other);
    CHECK(link_alias(*other).empty());  // not even the alias marker was written

    const auto id = container_id();
    const auto conf = plugin_conf("pol-dev", {{"mode", "hostdev"}, {"device", sim.spare.name_a()}});
    const auto add = call(ws, plugin, "ADD", sim.pod.path(), id, conf);
    INFO(add.describe());
    REQUIRE(add.ok());
    CHECK(find_link(&sim.pod, "net1"));
    CHECK(call(ws, plugin, "DEL", sim.pod.path(), id, conf).ok());
    CHECK(sim.in_node(sim.spare.name_a()));

    SECTION("a mode the policy does not list is refused") {
        amend_policy(ws, {{"modes", {"macvlan"}}});
        const auto r = call(ws, plugin, "ADD", sim.pod.path(), container_id(), conf);
        CHECK(r.code() == 7);
        CHECK(r.msg().find("mode \"hostdev\" is not allowed") != std::string::npos);
        CHECK(sim.in_node(sim.spare.name_a()));
    }
    SECTION("vfsOnly refuses a device that is not an SR-IOV VF") {
        amend_policy(ws, {{"devices", {{"vfsOnly", true}}}});
        const auto r = call(ws, plugin, "ADD", sim.pod.path(), container_id(), conf);
        CHECK(r.code() == 7);
        CHECK(r.msg().find("vfsOnly") != std::string::npos);
    }
    SECTION("a device the state records as attached to another live pod is refused") {
        const auto link = find_link(&sim.node, sim.spare.name_a());
        REQUIRE(link);
        ScopedNetns live("live");
        fs::create_directories(ws.state_dir());
        ws.write("state/pol-dev:other-pod:net1.json", json{{"version", 1},
                                                           {"network", "pol-dev"},
                                                           {"containerID", "other-pod"},
                                                           {"ifname", "net1"},
                                                           {"mode", "hostdev"},
                                                           {"netns", live.path()},
                                                           {"complete", true},
                                                           {"hostIfname", sim.spare.name_a()},
                                                           {"hostMac", link_mac(*link)}}
                                                          .dump());
        const auto r = call(ws, plugin, "ADD", sim.pod.path(), container_id(), conf);
        INFO(r.describe());
        CHECK(r.code() == 102);
        CHECK(r.msg().find("attached to another pod (container other-pod") != std::string::npos);
        CHECK(sim.in_node(sim.spare.name_a()));
    }
}

// mode sriov resolves deviceID through sysfs (a fake PCI tree here: this machine has no SR-IOV),
// then meets the same protections as hostdev before any VF setting is read or written. The VF
// netdevs are the simulated node's own links, so the refusals are judged on a real kernel.
TEST_CASE("policy: sriov with a VF netdev the node needs, or outside the allow-list, is refused untouched",
          "[e2e][policy][sriov]") {
    Workspace ws;
    SimulatedNode sim;
    rdmanet::test::FakeSysfs tree;
    tree.add_pf("0000:af:00.0", "pfdev");
    tree.add_vf("0000:af:00.0", 0, "0000:af:00.1", sim.uplink_dev());
    tree.add_vf("0000:af:00.0", 1, "0000:af:00.2", "lo");
    tree.add_vf("0000:af:00.0", 2, "0000:af:00.3", sim.other.name_a());
    // The plugin with only sysfs fake (rdmanet-fakekernel without a fake-kernel state file).
    const auto plugin = plugin_in(ws, sim, "rdmanet-fakekernel", rdmanet::test::test_bin_dir());
    const std::map<std::string, std::string> sysfs_env = {{rdmanet::test::kFakeSysfsRootEnv, tree.root()}};
    auto sriov = [&](const std::string& pci) {
        return plugin_conf("pol-sriov", {{"mode", "sriov"}, {"deviceID", pci}});
    };

    struct Case {
        std::string pci, dev, reason;
    };
    for (const Case& c :
         {Case{"0000:af:00.1", sim.uplink_dev(), "192.0.2.2"}, Case{"0000:af:00.2", "lo", "loopback"}}) {
        INFO(c.dev);
        const auto add = call(ws, plugin, "ADD", sim.pod.path(), container_id(), sriov(c.pci), sysfs_env);
        INFO(add.describe());
        CHECK(add.code() == 102);
        CHECK(add.msg().find("refusing to move \"" + c.dev + "\"") != std::string::npos);
        CHECK(add.msg().find(c.reason) != std::string::npos);
        CHECK(sim.in_node(c.dev));
        CHECK(only_loopback(sim.pod));
        // The VF's in-use record taken before the check is released with the refusal.
        CHECK_FALSE(fs::exists(ws.state_dir() + "/sriov/pci/" + c.pci));
    }
    CHECK(sim.has_default_route());
    CHECK(ipv4_addresses(sim.node, sim.uplink_dev()) == std::vector<std::string>{"192.0.2.2/24"});

    amend_policy(ws, {{"devices", {{"pciAddresses", {"0000:af:00.7"}}}}});
    const auto denied = call(ws, plugin, "ADD", sim.pod.path(), container_id(), sriov("0000:af:00.3"), sysfs_env);
    INFO(denied.describe());
    CHECK(denied.code() == 7);
    CHECK(denied.msg().find("PCI address 0000:af:00.3 matches none of the allowed PCI addresses") != std::string::npos);
    CHECK(sim.in_node(sim.other.name_a()));
    CHECK(only_loopback(sim.pod));
    const auto audit = read_text(ws.audit_log());
    CHECK(audit.find("refusing to move \"lo\"") != std::string::npos);
    CHECK(audit.find("0000:af:00.3") != std::string::npos);
}

// mode ipoib: the policy's master check runs before the parent is even read as IPoIB, so it is
// exercised here without IPoIB hardware: loopback never, the uplink only while allowUplink holds.
TEST_CASE("policy: ipoib on loopback, or on the uplink with allowUplink false, is refused", "[e2e][policy][ipoib]") {
    Workspace ws;
    SimulatedNode sim;
    const auto plugin = plugin_in(ws, sim);
    auto ipoib = [](const std::string& master) {
        return plugin_conf("pol-ib", {{"mode", "ipoib"}, {"master", master}});
    };

    const auto on_lo = call(ws, plugin, "ADD", sim.pod.path(), container_id(), ipoib("lo"));
    INFO(on_lo.describe());
    CHECK(on_lo.code() == 7);
    CHECK(on_lo.msg().find("master \"lo\" is the loopback device") != std::string::npos);

    // Allowed by default: it gets past the policy and fails on the parent not being IPoIB.
    const auto on_uplink = call(ws, plugin, "ADD", sim.pod.path(), container_id(), ipoib(sim.uplink_dev()));
    INFO(on_uplink.describe());
    CHECK_FALSE(on_uplink.ok());
    CHECK(on_uplink.msg().find("allowUplink") == std::string::npos);
    CHECK(on_uplink.msg().find("is not an InfiniBand (IPoIB) interface") != std::string::npos);

    amend_policy(ws, {{"masters", {{"allowUplink", false}}}});
    const auto refused = call(ws, plugin, "ADD", sim.pod.path(), container_id(), ipoib(sim.uplink_dev()));
    INFO(refused.describe());
    CHECK(refused.code() == 7);
    CHECK(refused.msg().find("allowUplink") != std::string::npos);
    CHECK(only_loopback(sim.pod));
    CHECK(sim.has_default_route());
    CHECK(read_text(ws.audit_log()).find("master \"lo\"") != std::string::npos);
}

TEST_CASE("policy: logFile outside the log dir is refused and nothing is created", "[e2e][policy]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "plg");
    ScopedNetns pod("pod");
    const auto id = container_id();
    auto conf = plugin_conf("pol-log", {{"mode", "macvlan"}, {"master", uplink.name_a()}});
    const std::string outside = "/etc/" + unique_name("rdmlog") + ".log";

    for (const std::string& file : {outside, ws.path("logs/../../" + fs::path(outside).filename().string())}) {
        INFO(file);
        conf["logFile"] = file;
        const auto add = call(ws, rdmanet_path(), "ADD", pod.path(), id, conf);
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK(add.msg().find("logFile") != std::string::npos);
        CHECK(only_loopback(pod));
    }
    CHECK_FALSE(fs::exists(outside));
    CHECK_FALSE(fs::exists(fs::path(ws.path("x")).parent_path().parent_path() / fs::path(outside).filename()));
    CHECK(read_text(ws.audit_log()).find("logFile \"" + outside + "\" is outside") != std::string::npos);

    SECTION("DEL with such a logFile still tears down (logging off, refusal audited)") {
        const auto del = call(ws, rdmanet_path(), "DEL", pod.path(), id, conf);
        INFO(del.describe());
        CHECK(del.ok());
        CHECK_FALSE(fs::exists(outside));
    }
    SECTION("inside the log dir the file is created 0600, its directory 0700") {
        conf["logFile"] = ws.path("logs/net/pol.log");
        const auto add = call(ws, rdmanet_path(), "ADD", pod.path(), id, conf);
        INFO(add.describe());
        REQUIRE(add.ok());
        struct stat st {};
        REQUIRE(::stat(ws.path("logs/net/pol.log").c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0600);
        REQUIRE(::stat(ws.path("logs/net").c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0700);
        CHECK(call(ws, rdmanet_path(), "DEL", pod.path(), id, conf).ok());
    }
}

TEST_CASE("policy: symlinks in the log and state dirs are refused, their targets untouched", "[e2e][policy]") {
    Workspace ws;
    ScopedVeth uplink(nullptr, nullptr, "psl");
    ScopedNetns pod("pod");
    const std::string target_dir = ws.path("elsewhere");
    fs::create_directories(target_dir);
    const std::string victim = ws.write("elsewhere/victim", "precious\n");
    auto conf = plugin_conf("pol-sym", {{"mode", "macvlan"}, {"master", uplink.name_a()}});

    SECTION("log file is a symlink") {
        fs::create_directories(ws.path("logs"));
        fs::create_symlink(victim, ws.path("logs/evil.log"));
        conf["logFile"] = ws.path("logs/evil.log");
        const auto add = call(ws, rdmanet_path(), "ADD", pod.path(), container_id(), conf);
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK(add.msg().find("symlink") != std::string::npos);
        CHECK(read_text(victim) == "precious\n");
        CHECK(only_loopback(pod));
    }
    SECTION("a directory of the log path is a symlink") {
        fs::create_symlink(target_dir, ws.path("linkdir"));
        conf["logFile"] = ws.path("linkdir/new.log");
        const auto add = call(ws, rdmanet_path(), "ADD", pod.path(), container_id(), conf);
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK(add.msg().find("symlink") != std::string::npos);
        CHECK_FALSE(fs::exists(target_dir + "/new.log"));
    }
    SECTION("the state dir is a symlink") {
        fs::create_symlink(target_dir, ws.state_dir());
        const auto add = call(ws, rdmanet_path(), "ADD", pod.path(), container_id(), conf);
        INFO(add.describe());
        CHECK_FALSE(add.ok());
        CHECK(add.msg().find("symlink") != std::string::npos);
        CHECK(std::distance(fs::directory_iterator(target_dir), fs::directory_iterator{}) == 1);  // only the victim
        CHECK(only_loopback(pod));
    }
    SECTION("a state file planted as a symlink is replaced, never written through") {
        const auto id = container_id();
        fs::create_directories(ws.state_dir());
        fs::create_symlink(victim, ws.state_dir() + "/pol-sym:" + id + ":net1.json");
        const auto add = call(ws, rdmanet_path(), "ADD", pod.path(), id, conf);
        INFO(add.describe());
        REQUIRE(add.ok());
        CHECK(read_text(victim) == "precious\n");
        CHECK_FALSE(fs::is_symlink(ws.state_dir() + "/pol-sym:" + id + ":net1.json"));
        CHECK(call(ws, rdmanet_path(), "DEL", pod.path(), id, conf).ok());
        CHECK(read_text(victim) == "precious\n");
    }
}

TEST_CASE("policy: configuration_path and kubeconfig outside the allowed dirs are refused, never opened",
          "[e2e][policy]") {
    Workspace ws;
    // Outside every allowed dir of the workspace policy: a sibling temp dir.
    const std::string root = fs::path(ws.path("x")).parent_path().string();
    const std::string outside_dir = root + "-outside";
    fs::create_directories(outside_dir);
    struct Cleanup {
        std::string dir;
        ~Cleanup() {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } cleanup{outside_dir};
    const std::string flat = outside_dir + "/whereabouts.conf";
    const std::string kubeconfig = outside_dir + "/kubelet.kubeconfig";
    std::ofstream(flat) << R"({"range": "10.251.9.0/24"})";
    std::ofstream(kubeconfig) << "apiVersion: v1\nusers:\n- user:\n    token: s3cr3t-token-value\n";
    const std::string ipam_plugin = bin_dir() + "/rdmanet-ipam";

    struct Case {
        std::string name;
        json ipam;
        std::string file;
        std::string key;
    };
    const std::vector<Case> cases = {
        {"configuration_path",
         {{"type", "rdmanet-ipam"}, {"configuration_path", flat}},
         flat,
         "ipam.configuration_path"},
        {"kubeconfig",
         {{"type", "rdmanet-ipam"},
          {"range", "10.251.9.0/24"},
          {"datastore", "kubernetes"},
          {"kubernetes", {{"kubeconfig", kubeconfig}}}},
         kubeconfig,
         "ipam.kubernetes.kubeconfig"},
        {"data_dir",
         {{"type", "rdmanet-ipam"}, {"range", "10.251.9.0/24"}, {"data_dir", outside_dir + "/db"}},
         outside_dir,
         "ipam.data_dir"},
        {"log_file",
         {{"type", "rdmanet-ipam"}, {"range", "10.251.9.0/24"}, {"log_file", outside_dir + "/ipam.log"}},
         outside_dir,
         "ipam.log_file"},
    };
    for (const auto& c : cases) {
        for (const std::string& plugin : {ipam_plugin, rdmanet_path()}) {
            INFO(c.name << " via " << plugin);
            OpenWatch watch(c.file);
            ScopedNetns pod("pod");
            ScopedVeth uplink(nullptr, nullptr, "pcf");
            json conf =
                plugin == ipam_plugin
                    ? plugin_stdin("pol-cfg", "1.0.0", {{"type", "macvlan"}, {"ipam", c.ipam}})
                    : plugin_conf("pol-cfg", {{"mode", "macvlan"}, {"master", uplink.name_a()}, {"ipam", c.ipam}});
            const auto add = call(ws, plugin, "ADD", pod.path(), container_id(), conf);
            INFO(add.describe());
            CHECK(add.code() == 7);
            CHECK(add.msg().find(c.key) != std::string::npos);
            CHECK(add.msg().find(root) != std::string::npos);  // the allowed place is named
            CHECK_FALSE(watch.opened());
            CHECK(only_loopback(pod));
            CHECK_FALSE(fs::exists(outside_dir + "/db"));
            CHECK_FALSE(fs::exists(outside_dir + "/ipam.log"));
        }
    }
    const auto audit = read_text(ws.audit_log());
    CHECK(audit.find("ipam.kubernetes.kubeconfig") != std::string::npos);
    CHECK(audit.find("s3cr3t") == std::string::npos);  // never read, never logged

    SECTION("a flat file inside the allowed dir is read and merged") {
        ws.write("whereabouts.conf", R"({"range": "10.251.10.0/24", "data_dir": ")" + ws.path("db") + "\"}");
        const json conf =
            plugin_stdin("pol-cfg", "1.0.0",
                         {{"type", "macvlan"},
                          {"ipam", {{"type", "rdmanet-ipam"}, {"configuration_path", ws.path("whereabouts.conf")}}}});
        const auto id = container_id();
        const auto add = call(ws, ipam_plugin, "ADD", "/var/run/netns/unused", id, conf);
        INFO(add.describe());
        REQUIRE(add.ok());
        CHECK(add.json["ips"][0].value("address", "").starts_with("10.251.10."));
        CHECK(call(ws, ipam_plugin, "DEL", "/var/run/netns/unused", id, conf).ok());
    }
    SECTION("a kubeconfig inside the allowed dir cannot name a token file outside it") {
        const std::string token = outside_dir + "/kubelet-token";
        std::ofstream(token) << "s3cr3t-kubelet-token\n";
        ws.write("ipam.kubeconfig",
                 "apiVersion: v1\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
                 "    server: https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    tokenFile: " +
                     token + "\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n");
        OpenWatch watch(token);
        const json conf = plugin_stdin("pol-cfg", "1.0.0",
                                       {{"type", "macvlan"},
                                        {"ipam",
                                         {{"type", "rdmanet-ipam"},
                                          {"range", "10.251.9.0/24"},
                                          {"datastore", "kubernetes"},
                                          {"data_dir", ws.path("db")},
                                          {"kubernetes", {{"kubeconfig", ws.path("ipam.kubeconfig")}}}}}});
        const auto add = call(ws, ipam_plugin, "ADD", "/var/run/netns/unused", container_id(), conf);
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK(add.msg().find("tokenFile") != std::string::npos);
        CHECK(add.msg().find(token) != std::string::npos);
        CHECK(add.msg().find("s3cr3t") == std::string::npos);
        CHECK_FALSE(watch.opened());
        CHECK(read_text(ws.audit_log()).find(token) != std::string::npos);
    }
    SECTION("a flat file reached through a symlink inside the allowed dir is refused") {
        fs::create_symlink(flat, ws.path("link.conf"));
        OpenWatch watch(flat);
        const json conf = plugin_stdin(
            "pol-cfg", "1.0.0",
            {{"type", "macvlan"}, {"ipam", {{"type", "rdmanet-ipam"}, {"configuration_path", ws.path("link.conf")}}}});
        const auto add = call(ws, ipam_plugin, "ADD", "/var/run/netns/unused", container_id(), conf);
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK(add.msg().find("symlink") != std::string::npos);
        CHECK_FALSE(watch.opened());
    }
}
