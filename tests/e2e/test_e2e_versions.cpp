// The result as each CNI version spells it, through the caller that parses it:
// libcni 1.1.2 for 0.3.0 .. 1.0.0 (it cannot decode 1.1.0 results), direct calls for 1.1.0,
// VERSION, STATUS and GC (libcni 1.1.2 has no GC/STATUS).
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

struct Scene {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "vr"};
    ScopedNetns pod{"pod"};
    Scene() {
        set_link_up(nullptr, uplink.name_a());
        set_link_up(nullptr, uplink.name_b());
    }
    json plugin(const std::string& subnet) const { return macvlan_plugin(uplink.name_a(), host_local(ws, subnet)); }
};

// What every version shares: one interface in the sandbox with the kernel's MAC, one address
// on it that the kernel has.
void check_common(const json& result, const std::string& version, const ScopedNetns& pod) {
    INFO(result.dump(2));
    CHECK(result.value("cniVersion", "") == version);
    REQUIRE(result["interfaces"].size() == 1);
    const auto& iface = result["interfaces"][0];
    auto link = find_link(&pod, "net1");
    REQUIRE(link);
    CHECK(iface.value("name", "") == "net1");
    CHECK(iface.value("sandbox", "") == pod.path());
    CHECK(iface.value("mac", "") == link_mac(*link));
    REQUIRE(result["ips"].size() == 1);
    const auto& ip = result["ips"][0];
    CHECK(ip.value("interface", -1) == 0);
    CHECK(ipv4_addresses(pod, "net1") == std::vector<std::string>{ip.value("address", "")});
}

}  // namespace

TEST_CASE("results per cniVersion through libcni", "[e2e][versions]") {
    const std::string version = GENERATE(as<std::string>{}, "0.3.0", "0.3.1", "0.4.0", "1.0.0");
    INFO("cniVersion " << version);
    Scene s;
    const auto file = s.ws.write("net.conflist", conflist("e2e-ver", version, s.plugin("10.250.50.0/24")).dump());
    const Attachment att{s.ws, file, s.pod.path(), container_id()};

    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());
    check_common(add.json, version, s.pod);
    const auto& ip = add.json["ips"][0];
    if (version == "1.0.0") {
        CHECK_FALSE(ip.contains("version"));
    } else {
        CHECK(ip.value("version", "") == "4");
    }

    // libcni only sends CHECK from 0.4.0 on (and refuses it itself below).
    const auto check = att.check();
    INFO(check.describe());
    CHECK(check.ok() == (version == "0.4.0" || version == "1.0.0"));

    const auto del = att.del();
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(only_loopback(s.pod));
    CHECK(s.ws.state_files().empty());
    CHECK(s.ws.ipam_reservations("e2e-ver").empty());
}

namespace {

// A 1.1.0 config without IPAM: Debian's host-local (1.1.1) only speaks up to 1.0.0 (next test).
json no_ipam_plugin(const std::string& master) {
    json plugin = macvlan_plugin(master, json::object());
    plugin.erase("ipam");
    return plugin;
}

}  // namespace

TEST_CASE("cniVersion 1.1.0 result, sent directly", "[e2e][versions]") {
    Scene s;
    const auto conf = plugin_stdin("e2e-v11", "1.1.0", no_ipam_plugin(s.uplink.name_a()));
    const auto id = container_id();
    const auto add = direct(s.ws, "ADD", s.pod.path(), id, "net1", conf);
    INFO(add.describe());
    REQUIRE(add.ok());
    const auto& result = add.json;
    CHECK(result.value("cniVersion", "") == "1.1.0");
    REQUIRE(result["interfaces"].size() == 1);
    const auto& iface = result["interfaces"][0];
    auto link = find_link(&s.pod, "net1");
    REQUIRE(link);
    CHECK(iface.value("name", "") == "net1");
    CHECK(iface.value("sandbox", "") == s.pod.path());
    CHECK(iface.value("mac", "") == link_mac(*link));
    CHECK(link_is_up(*link));
    // 1.1.0 may report the interface MTU; when it does it must be the kernel's.
    if (iface.contains("mtu")) CHECK(iface["mtu"].get<int>() == link->value("mtu", -1));
    CHECK(result.value("ips", json::array()).empty());

    auto with_prev = conf;
    with_prev["prevResult"] = result;
    const auto check = direct(s.ws, "CHECK", s.pod.path(), id, "net1", with_prev);
    INFO(check.describe());
    CHECK(check.ok());

    const auto del = direct(s.ws, "DEL", s.pod.path(), id, "net1", with_prev);
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(only_loopback(s.pod));
    CHECK(s.ws.state_files().empty());
}

TEST_CASE("cniVersion 1.1.0 with an IPAM that only speaks 1.0.0 (Debian host-local)", "[e2e][versions]") {
    // Either rdmanet bridges the version gap and the attachment works, or it passes host-local's
    // refusal (code 1) through and leaves nothing behind. Both are honest; a half-made
    // attachment is not.
    Scene s;
    const auto conf = plugin_stdin("e2e-v11hl", "1.1.0", s.plugin("10.250.54.0/24"));
    const auto id = container_id();
    const auto add = direct(s.ws, "ADD", s.pod.path(), id, "net1", conf);
    INFO(add.describe());
    if (add.ok()) {
        check_common(add.json, "1.1.0", s.pod);
        CHECK(direct(s.ws, "DEL", s.pod.path(), id, "net1", conf).ok());
        CHECK(s.ws.ipam_reservations("e2e-v11hl").empty());
    } else {
        CHECK(add.code() == 1);
        CHECK(s.ws.ipam_reservations("e2e-v11hl").empty());
    }
    CHECK(only_loopback(s.pod));
    CHECK(s.ws.state_files().empty());
}

TEST_CASE("VERSION echoes the config's cniVersion and lists every supported version", "[e2e][versions]") {
    const json supported = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
    PluginRequest req;
    req.command = "VERSION";
    SECTION("with a config") {
        req.stdin_data = R"({"cniVersion":"0.4.0"})";
        const auto r = invoke_plugin(rdmanet_path(), req);
        INFO(r.describe());
        REQUIRE(r.ok());
        CHECK(r.json.value("cniVersion", "") == "0.4.0");
        CHECK(r.json["supportedVersions"] == supported);
    }
    SECTION("with empty stdin") {
        const auto r = invoke_plugin(rdmanet_path(), req);
        INFO(r.describe());
        REQUIRE(r.ok());
        CHECK(r.json.value("cniVersion", "") == "1.1.0");
        CHECK(r.json["supportedVersions"] == supported);
    }
    SECTION("libcni's probe (dummy env, 1.1.0 stdin)") {
        req.netns = "dummy";
        req.ifname = "dummy";
        req.path = "dummy";
        req.stdin_data = R"({"cniVersion":"1.1.0"})";
        const auto r = invoke_plugin(rdmanet_path(), req);
        INFO(r.describe());
        REQUIRE(r.ok());
        CHECK(r.json.value("cniVersion", "") == "1.1.0");
    }
}

TEST_CASE("STATUS", "[e2e][versions]") {
    Scene s;
    // libcni sends STATUS with no container, netns or ifname.
    PluginRequest req;
    req.command = "STATUS";
    req.path = default_cni_path();
    SECTION("1.1.0 without IPAM is available") {
        req.stdin_data = plugin_stdin("e2e-st", "1.1.0", no_ipam_plugin(s.uplink.name_a())).dump();
        const auto r = invoke_plugin(rdmanet_path(), req, s.ws.env());
        INFO(r.describe());
        CHECK(r.ok());
    }
    SECTION("1.1.0 with host-local, which predates STATUS, is available") {
        req.stdin_data = plugin_stdin("e2e-st", "1.1.0", s.plugin("10.250.52.0/24")).dump();
        const auto r = invoke_plugin(rdmanet_path(), req, s.ws.env());
        INFO(r.describe());
        CHECK(r.ok());
    }
    SECTION("a 1.0.0 config has no STATUS") {
        req.stdin_data = plugin_stdin("e2e-st", "1.0.0", s.plugin("10.250.52.0/24")).dump();
        const auto r = invoke_plugin(rdmanet_path(), req, s.ws.env());
        INFO(r.describe());
        CHECK_FALSE(r.ok());
        CHECK(r.code() == 1);
    }
}

TEST_CASE("GC releases exactly the attachments not listed as valid", "[e2e][versions][gc]") {
    Scene s;
    ScopedNetns pod2("pod2");
    const auto conf = plugin_stdin("e2e-gc", "1.1.0", no_ipam_plugin(s.uplink.name_a()));
    const auto keep = container_id("keep"), stale = container_id("stale");
    REQUIRE(direct(s.ws, "ADD", s.pod.path(), keep, "net1", conf).ok());
    REQUIRE(direct(s.ws, "ADD", pod2.path(), stale, "net1", conf).ok());
    REQUIRE(s.ws.state_files().size() == 2);

    // libcni sends GC with CNI_PATH only.
    PluginRequest req;
    req.command = "GC";
    req.path = default_cni_path();
    auto gc_conf = conf;

    SECTION("no cni.dev/valid-attachments key: nothing destructive") {
        req.stdin_data = gc_conf.dump();
        const auto r = invoke_plugin(rdmanet_path(), req, s.ws.env());
        INFO(r.describe());
        CHECK(r.ok());
        CHECK(s.ws.state_files().size() == 2);
        CHECK(find_link(&pod2, "net1"));
    }
    SECTION("one valid attachment: the other is released") {
        gc_conf["cni.dev/valid-attachments"] = json::array({{{"containerID", keep}, {"ifname", "net1"}}});
        req.stdin_data = gc_conf.dump();
        const auto r = invoke_plugin(rdmanet_path(), req, s.ws.env());
        INFO(r.describe());
        CHECK(r.ok());
        CHECK(s.ws.state_files().size() == 1);
        CHECK(find_link(&s.pod, "net1"));
        CHECK(only_loopback(pod2));
    }
    CHECK(direct(s.ws, "DEL", s.pod.path(), keep, "net1", conf).ok());
    CHECK(direct(s.ws, "DEL", pod2.path(), stale, "net1", conf).ok());
    CHECK(s.ws.state_files().empty());
    CHECK(only_loopback(s.pod));
}

TEST_CASE("GC forwarded to host-local, which predates GC, succeeds", "[e2e][versions][gc]") {
    Scene s;
    PluginRequest req;
    req.command = "GC";
    req.path = default_cni_path();
    auto conf = plugin_stdin("e2e-gchl", "1.1.0", s.plugin("10.250.55.0/24"));
    conf["cni.dev/valid-attachments"] = json::array();
    req.stdin_data = conf.dump();
    const auto r = invoke_plugin(rdmanet_path(), req, s.ws.env());
    INFO(r.describe());
    CHECK(r.ok());
}
