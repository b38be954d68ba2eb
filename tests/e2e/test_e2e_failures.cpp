// ADD failing part-way must unwind everything it did: no interface in the pod, the hostdev
// device back in the host as it was, no state file, no IPAM reservation (every step's undo is on
// the rollback stack; a failed IPAM delegate is DELeted before the error is returned, as the CNI
// spec asks).
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

// host-local hands out this route, whose gateway is not on the pod's subnet: the kernel refuses
// it (ENETUNREACH) only after the interface exists, is renamed and has its address, i.e. at the
// last step of ADD.
json unreachable_route() { return {{"routes", json::array({{{"dst", "10.99.0.0/16"}, {"gw", "192.0.2.1"}}})}}; }

void require_failed(const CniOutcome& add) {
    INFO(add.describe());
    REQUIRE_FALSE(add.ok());
    REQUIRE(add.stdout_is_json());
    CHECK(add.code() > 0);
    CHECK_FALSE(add.msg().empty());
}

struct Uplink {
    ScopedVeth veth{nullptr, nullptr, "fu"};
    Uplink() {
        set_link_up(nullptr, veth.name_a());
        set_link_up(nullptr, veth.name_b());
    }
};

}  // namespace

TEST_CASE("macvlan ADD failing at the route step leaves nothing behind", "[e2e][rollback][macvlan]") {
    Workspace ws;
    Uplink up;
    ScopedNetns pod("pod");
    const auto ipam = host_local(ws, "10.250.30.0/24", unreachable_route());
    const auto conf = conflist("e2e-rbmv", "1.0.0", macvlan_plugin(up.veth.name_a(), ipam));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    require_failed(att.add());
    CHECK(only_loopback(pod));
    CHECK(host_links_on(up.veth.name_a()) == std::vector<std::string>{up.veth.name_b()});
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-rbmv").empty());
    // The runtime's DEL after a failed ADD still succeeds.
    CHECK(att.del().ok());
}

TEST_CASE("hostdev ADD failing at the route step returns the device", "[e2e][rollback][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "fh");
    ScopedNetns pod("pod");
    const std::string device = dev.name_a();
    set_link_up(nullptr, device);
    const auto before = find_link(nullptr, device);
    REQUIRE(before);

    const auto ipam = host_local(ws, "10.250.31.0/24", unreachable_route());
    const auto conf = conflist("e2e-rbhd", "1.0.0", hostdev_plugin(device, ipam));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    require_failed(att.add());
    CHECK(only_loopback(pod));
    auto back = find_link(nullptr, device);
    REQUIRE(back);
    CHECK(link_mac(*back) == link_mac(*before));
    CHECK(link_alias(*back).empty());
    CHECK(link_is_up(*back) == link_is_up(*before));
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-rbhd").empty());
    CHECK(att.del().ok());
    CHECK(find_link(nullptr, device));
}

TEST_CASE("ADD with an exhausted IPAM range fails and leaves the pod empty", "[e2e][rollback][ipam]") {
    Workspace ws;
    Uplink up;
    ScopedNetns pod1("p1"), pod2("p2");
    // A range of exactly one address: the first pod takes it.
    const json ipam = {
        {"type", "host-local"},
        {"dataDir", ws.ipam_dir()},
        {"ranges",
         json::array({json::array(
             {{{"subnet", "10.250.32.0/24"}, {"rangeStart", "10.250.32.5"}, {"rangeEnd", "10.250.32.5"}}})})}};
    const auto file =
        ws.write("net.conflist", conflist("e2e-full", "1.0.0", macvlan_plugin(up.veth.name_a(), ipam)).dump());
    const Attachment a1{ws, file, pod1.path(), container_id("p1")};
    const Attachment a2{ws, file, pod2.path(), container_id("p2")};

    const auto first = a1.add();
    INFO(first.describe());
    REQUIRE(first.ok());

    const auto second = a2.add();
    require_failed(second);
    // host-local's own reason reaches the runtime.
    CHECK((second.msg() + second.details()).find("no IP addresses available") != std::string::npos);
    CHECK(only_loopback(pod2));
    CHECK(ws.state_files().size() == 1);
    CHECK(ws.ipam_reservations("e2e-full") == std::vector<std::string>{"10.250.32.5"});
    // The first pod is unaffected.
    CHECK(find_link(&pod1, "net1"));

    CHECK(a2.del().ok());
    CHECK(ws.ipam_reservations("e2e-full") == std::vector<std::string>{"10.250.32.5"});
    CHECK(a1.del().ok());
    CHECK(ws.ipam_reservations("e2e-full").empty());
    CHECK(ws.state_files().empty());
}

TEST_CASE("ADD with an IPAM that cannot serve fails cleanly", "[e2e][rollback][ipam]") {
    Workspace ws;
    Uplink up;
    ScopedNetns pod("pod");
    json ipam;
    SECTION("invalid subnet") { ipam = host_local(ws, "10.250.33.0/33"); }
    SECTION("IPAM plugin not in CNI_PATH") { ipam = {{"type", "no-such-ipam-plugin"}}; }
    const auto conf = conflist("e2e-badipam", "1.0.0", macvlan_plugin(up.veth.name_a(), ipam));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    require_failed(att.add());
    CHECK(only_loopback(pod));
    CHECK(host_links_on(up.veth.name_a()) == std::vector<std::string>{up.veth.name_b()});
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-badipam").empty());
}
