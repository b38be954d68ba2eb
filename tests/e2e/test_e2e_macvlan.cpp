// macvlan through the real caller: ADD, CHECK and DEL by Debian's libcni, checked against what
// the kernel shows in the pod; two pods on one master talk to each other.
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

// The node's "uplink": a veth pair in the host with unique names, both ends up so the macvlans
// on it have carrier.
struct Uplink {
    ScopedVeth veth{nullptr, nullptr, "up"};
    Uplink() {
        set_link_up(nullptr, veth.name_a());
        set_link_up(nullptr, veth.name_b());
    }
    const std::string& master() const { return veth.name_a(); }
};

}  // namespace

TEST_CASE("macvlan ADD, CHECK and DEL through libcni", "[e2e][macvlan]") {
    Workspace ws;
    Uplink uplink;
    ScopedNetns pod("pod");
    const auto conf = conflist("e2e-mv", "1.0.0", macvlan_plugin(uplink.master(), host_local(ws, "10.250.1.0/24")));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());
    REQUIRE(add.json.is_object());
    const auto& result = add.json;

    SECTION("the result describes what the kernel shows in the pod") {
        auto link = find_link(&pod, "net1");
        REQUIRE(link);
        CHECK(link_kind(*link) == "macvlan");
        CHECK(link->at("linkinfo").at("info_data").value("mode", "") == "bridge");
        CHECK(link_is_up(*link));

        REQUIRE(result["interfaces"].size() == 1);
        const auto& iface = result["interfaces"][0];
        CHECK(iface.value("name", "") == "net1");
        CHECK(iface.value("sandbox", "") == pod.path());
        CHECK(iface.value("mac", "") == link_mac(*link));

        REQUIRE(result["ips"].size() == 1);
        const auto address = result["ips"][0].value("address", "");
        CHECK(result["ips"][0].value("interface", -1) == 0);
        CHECK(ipv4_addresses(pod, "net1") == std::vector<std::string>{address});
        CHECK(ws.ipam_reservations("e2e-mv") == std::vector<std::string>{address_of(address)});
        CHECK(ws.state_files().size() == 1);
        // The master is ours to use, not to change.
        CHECK(find_link(nullptr, uplink.master()));
    }

    SECTION("CHECK passes on a healthy attachment and fails once the interface is gone") {
        const auto check = att.check();
        INFO(check.describe());
        CHECK(check.ok());

        pod.ip({"link", "del", "net1"});
        const auto broken = att.check();
        INFO(broken.describe());
        CHECK_FALSE(broken.ok());
        CHECK(broken.code() > 0);
    }

    const auto del = att.del();
    INFO(del.describe());
    REQUIRE(del.ok());
    CHECK(only_loopback(pod));
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-mv").empty());
    CHECK(find_link(nullptr, uplink.master()));
}

TEST_CASE("two pods on one master reach each other over net1", "[e2e][macvlan]") {
    Workspace ws;
    Uplink uplink;
    ScopedNetns pod1("p1"), pod2("p2");
    const auto conf = conflist("e2e-pair", "1.0.0", macvlan_plugin(uplink.master(), host_local(ws, "10.250.2.0/24")));
    const auto file = ws.write("net.conflist", conf.dump());
    const Attachment a1{ws, file, pod1.path(), container_id("pod1")};
    const Attachment a2{ws, file, pod2.path(), container_id("pod2")};

    const auto r1 = a1.add();
    INFO(r1.describe());
    REQUIRE(r1.ok());
    const auto r2 = a2.add();
    INFO(r2.describe());
    REQUIRE(r2.ok());

    const auto ip1 = address_of(r1.json["ips"][0].value("address", ""));
    const auto ip2 = address_of(r2.json["ips"][0].value("address", ""));
    CHECK(ip1 != ip2);
    CHECK(r1.json["interfaces"][0].value("mac", "") != r2.json["interfaces"][0].value("mac", ""));
    CHECK(pod_ping(pod1, ip2));
    CHECK(pod_ping(pod2, ip1));

    CHECK(a1.del().ok());
    CHECK(a2.del().ok());
    CHECK(only_loopback(pod1));
    CHECK(only_loopback(pod2));
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-pair").empty());
}

TEST_CASE("macvlan ADD refuses an ifname that already exists in the pod", "[e2e][macvlan]") {
    Workspace ws;
    Uplink uplink;
    ScopedNetns pod("pod");
    // Something of the pod's own already called net1 (a veth: this kernel has no dummy module).
    pod.ip({"link", "add", "net1", "type", "veth", "peer", "name", "net1peer"});
    const auto conf = conflist("e2e-busy", "1.0.0", macvlan_plugin(uplink.master(), host_local(ws, "10.250.3.0/24")));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    const auto add = att.add();
    INFO(add.describe());
    CHECK_FALSE(add.ok());
    CHECK(add.code() > 0);
    CHECK(add.msg().find("net1") != std::string::npos);
    // The pod's own net1 is untouched and nothing of ours is left.
    auto link = find_link(&pod, "net1");
    REQUIRE(link);
    CHECK(link_kind(*link) == "veth");
    CHECK(link_names(&pod) == std::vector<std::string>{"lo", "net1", "net1peer"});
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-busy").empty());
}

TEST_CASE("runtime inputs reach the plugin through libcni: capability args and CNI_ARGS", "[e2e][macvlan]") {
    Workspace ws;
    Uplink uplink;
    ScopedNetns pod("pod");
    auto plugin = macvlan_plugin(uplink.master(), host_local(ws, "10.250.4.0/24"));
    plugin["capabilities"] = {{"mac", true}};
    const auto conf = conflist("e2e-rt", "1.0.0", plugin);
    DriverRequest req;
    req.verb = "add";
    req.conflist = ws.write("net.conflist", conf.dump());
    req.netns = pod.path();
    req.container_id = container_id();
    req.cache_dir = ws.cache_dir();
    std::string want;

    SECTION("runtimeConfig.mac from a declared capability") {
        want = "c2:11:22:33:44:55";
        req.cap_args = R"({"mac":"c2:11:22:33:44:55","portMappings":[]})";
    }
    SECTION("MAC= in CNI_ARGS, with Multus-style duplicates and unknown keys") {
        want = "c2:11:22:33:44:66";
        req.args = "IgnoreUnknown=1;K8S_POD_NAME=a;IgnoreUnknown=true;K8S_POD_NAME=a;MAC=c2:11:22:33:44:66";
    }
    SECTION("runtimeConfig.mac wins over CNI_ARGS") {
        want = "c2:11:22:33:44:77";
        req.cap_args = R"({"mac":"c2:11:22:33:44:77"})";
        req.args = "IgnoreUnknown=1;MAC=c2:11:22:33:44:88";
    }

    const auto add = run_driver(req, ws.env());
    INFO(add.describe());
    REQUIRE(add.ok());
    CHECK(add.json["interfaces"][0].value("mac", "") == want);
    auto link = find_link(&pod, "net1");
    REQUIRE(link);
    CHECK(link_mac(*link) == want);

    req.verb = "del";
    const auto del = run_driver(req, ws.env());
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(only_loopback(pod));
    CHECK(ws.state_files().empty());
}
