// Bad input from the caller: the plugin answers with the spec's error JSON on stdout (code,
// msg naming what is wrong), exits non-zero, and leaves no trace in any namespace, in the state
// dir or in the IPAM. Config errors go through libcni (what a runtime can actually send);
// malformed stdin and bad CNI_* variables, which libcni filters, are sent directly.
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

struct Scene {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "bi"};
    ScopedNetns pod{"pod"};
    Scene() {
        set_link_up(nullptr, uplink.name_a());
        set_link_up(nullptr, uplink.name_b());
    }
    json ipam() const { return host_local(ws, "10.250.40.0/24"); }
    json good_plugin() const { return macvlan_plugin(uplink.name_a(), ipam()); }

    // The error contract, and nothing left anywhere.
    void require_rejected(const CniOutcome& r, int code, const std::string& mentions) const {
        INFO(r.describe());
        CHECK(r.exit_code != 0);
        REQUIRE(r.stdout_is_json());
        CHECK(r.code() == code);
        CHECK_FALSE(r.msg().empty());
        if (!mentions.empty()) CHECK((r.msg() + " " + r.details()).find(mentions) != std::string::npos);
        CHECK(only_loopback(pod));
        CHECK(host_links_on(uplink.name_a()) == std::vector<std::string>{uplink.name_b()});
        CHECK_FALSE(find_link(nullptr, "net1"));
        CHECK(ws.state_files().empty());
        CHECK(ws.ipam_reservations("e2e-bad").empty());
    }

    CniOutcome add_via_libcni(const json& plugin, const std::string& ifname = "net1",
                              const std::string& id = container_id(), const std::string& netns = "") const {
        const Attachment att{ws, ws.write("net.conflist", conflist("e2e-bad", "1.0.0", plugin).dump()),
                             netns.empty() ? pod.path() : netns, id, ifname};
        return att.add();
    }

    CniOutcome add_direct(const std::string& stdin_data, const std::string& ifname = "net1",
                          const std::string& id = container_id()) const {
        PluginRequest req;
        req.command = "ADD";
        req.container_id = id;
        req.netns = pod.path();
        req.ifname = ifname;
        req.path = default_cni_path();
        req.stdin_data = stdin_data;
        return invoke_plugin(rdmanet_path(), req, ws.env());
    }
};

constexpr int kIncompatibleVersion = 1;
constexpr int kInvalidEnv = 4;
constexpr int kDecodeFailure = 6;
constexpr int kInvalidConfig = 7;
constexpr int kInvalidNetns = 8;      // libcni's ErrInvalidNetNS: CNI_NETNS is the plugin's own namespace
constexpr int kDeviceNotFound = 101;  // rdmanet's own code (include/rdmanet/cni/error.hpp)

}  // namespace

TEST_CASE("config errors through libcni", "[e2e][bad-input]") {
    Scene s;
    json plugin = s.good_plugin();

    SECTION("unknown mode") {
        plugin["mode"] = "bogus";
        s.require_rejected(s.add_via_libcni(plugin), kInvalidConfig, "bogus");
    }
    SECTION("macvlan without master") {
        plugin.erase("master");
        s.require_rejected(s.add_via_libcni(plugin), kInvalidConfig, "master");
    }
    SECTION("hostdev without any device selector") {
        plugin = {{"type", "rdmanet"}, {"mode", "hostdev"}, {"ipam", s.ipam()}};
        s.require_rejected(s.add_via_libcni(plugin), kInvalidConfig, "device");
    }
    SECTION("master of the wrong JSON type") {
        plugin["master"] = 42;
        s.require_rejected(s.add_via_libcni(plugin), kInvalidConfig, "master");
    }
    SECTION("mtu of the wrong JSON type") {
        plugin["mtu"] = "jumbo";
        s.require_rejected(s.add_via_libcni(plugin), kInvalidConfig, "mtu");
    }
    SECTION("unknown macvlanMode") {
        plugin["macvlanMode"] = "sideways";
        s.require_rejected(s.add_via_libcni(plugin), kInvalidConfig, "sideways");
    }
    SECTION("master that does not exist") {
        const std::string missing = unique_name("nomaster");
        plugin["master"] = missing;
        s.require_rejected(s.add_via_libcni(plugin), kDeviceNotFound, missing);
    }
    SECTION("netns path that does not exist") {
        const std::string missing = "/run/netns/" + unique_name("gone");
        s.require_rejected(s.add_via_libcni(plugin, "net1", container_id(), missing), kInvalidEnv, missing);
    }
}

TEST_CASE("bad names are stopped by libcni before the plugin runs", "[e2e][bad-input]") {
    // libcni validates like the plugin (same codes); the plugin's own check is exercised below.
    Scene s;
    SECTION("ifname with a slash") { s.require_rejected(s.add_via_libcni(s.good_plugin(), "a/b"), kInvalidEnv, ""); }
    SECTION("16-character ifname") {
        s.require_rejected(s.add_via_libcni(s.good_plugin(), "abcdefghijklmnop"), kInvalidEnv, "");
    }
    SECTION("container id with invalid characters") {
        s.require_rejected(s.add_via_libcni(s.good_plugin(), "net1", "bad id!"), kInvalidEnv, "");
    }
}

TEST_CASE("bad input sent straight to the plugin", "[e2e][bad-input]") {
    Scene s;
    const std::string good = plugin_stdin("e2e-bad", "1.0.0", s.good_plugin()).dump();

    SECTION("malformed JSON") { s.require_rejected(s.add_direct("{\"cniVersion\": \"1.0.0\", "), kDecodeFailure, ""); }
    SECTION("not an object") { s.require_rejected(s.add_direct("[1, 2, 3]"), kDecodeFailure, ""); }
    SECTION("hostile nesting depth does not crash the plugin") {
        const std::string deep = std::string(200000, '[') + std::string(200000, ']');
        s.require_rejected(s.add_direct(deep), kDecodeFailure, "");
    }
    SECTION("ifname with a slash") { s.require_rejected(s.add_direct(good, "a/b"), kInvalidEnv, "CNI_IFNAME"); }
    SECTION("16-character ifname") {
        s.require_rejected(s.add_direct(good, "abcdefghijklmnop"), kInvalidEnv, "CNI_IFNAME");
    }
    SECTION("ifname '..'") { s.require_rejected(s.add_direct(good, ".."), kInvalidEnv, "CNI_IFNAME"); }
    SECTION("container id with a slash") {
        s.require_rejected(s.add_direct(good, "net1", "a/b"), kInvalidEnv, "CNI_CONTAINERID");
    }
    SECTION("container id starting with a dash") {
        s.require_rejected(s.add_direct(good, "net1", "-abc"), kInvalidEnv, "CNI_CONTAINERID");
    }
    SECTION("unsupported cniVersion") {
        s.require_rejected(s.add_direct(plugin_stdin("e2e-bad", "9.9.9", s.good_plugin()).dump()), kIncompatibleVersion,
                           "9.9.9");
    }
    SECTION("CHECK on a 0.3.1 config") {
        PluginRequest req{"CHECK",
                          container_id(),
                          s.pod.path(),
                          "net1",
                          "",
                          default_cni_path(),
                          plugin_stdin("e2e-bad", "0.3.1", s.good_plugin()).dump()};
        s.require_rejected(invoke_plugin(rdmanet_path(), req, s.ws.env()), kIncompatibleVersion, "");
    }
    SECTION("CNI_NETNS missing on ADD") {
        PluginRequest req{"ADD", container_id(), std::nullopt, "net1", "", default_cni_path(), good};
        s.require_rejected(invoke_plugin(rdmanet_path(), req, s.ws.env()), kInvalidEnv, "CNI_NETNS");
    }
    SECTION("CNI_NETNS naming the plugin's own namespace") {
        PluginRequest req{"ADD", container_id(), "/proc/self/ns/net", "net1", "", default_cni_path(), good};
        s.require_rejected(invoke_plugin(rdmanet_path(), req, s.ws.env()), kInvalidNetns, "own network namespace");
    }
    SECTION("unknown CNI_COMMAND") {
        PluginRequest req{"FROB", container_id(), s.pod.path(), "net1", "", default_cni_path(), good};
        s.require_rejected(invoke_plugin(rdmanet_path(), req, s.ws.env()), kInvalidEnv, "");
    }
}

TEST_CASE("without CNI_COMMAND the plugin prints its about text and exits 0", "[e2e][bad-input]") {
    const auto r = invoke_plugin(rdmanet_path(), PluginRequest{});
    INFO(r.describe());
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.find("1.1.0") != std::string::npos);
}
