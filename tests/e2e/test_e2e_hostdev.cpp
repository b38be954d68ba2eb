// hostdev through the real caller, with one end of a host veth pair standing in for the device:
// it moves into the pod as CNI_IFNAME (host name kept in the alias) and comes back on DEL under
// its original name with the alias cleared.
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

TEST_CASE("hostdev ADD, CHECK and DEL through libcni", "[e2e][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "hd");
    ScopedNetns pod("pod");
    const std::string device = dev.name_a();
    set_link_up(nullptr, device);
    const auto before = find_link(nullptr, device);
    REQUIRE(before);
    const std::string mac = link_mac(*before);

    const auto conf = conflist("e2e-hd", "1.0.0", hostdev_plugin(device, host_local(ws, "10.250.10.0/24")));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());

    // In the pod under CNI_IFNAME, same device (MAC), host name in the alias, up, addressed.
    CHECK_FALSE(find_link(nullptr, device));
    auto inside = find_link(&pod, "net1");
    REQUIRE(inside);
    CHECK(link_mac(*inside) == mac);
    CHECK(link_alias(*inside) == device);
    CHECK(link_is_up(*inside));
    const auto& iface = add.json["interfaces"][0];
    CHECK(iface.value("name", "") == "net1");
    CHECK(iface.value("sandbox", "") == pod.path());
    CHECK(iface.value("mac", "") == mac);
    const auto address = add.json["ips"][0].value("address", "");
    CHECK(ipv4_addresses(pod, "net1") == std::vector<std::string>{address});
    CHECK(ws.state_files().size() == 1);

    const auto check = att.check();
    INFO(check.describe());
    CHECK(check.ok());

    const auto del = att.del();
    INFO(del.describe());
    REQUIRE(del.ok());
    CHECK(only_loopback(pod));
    auto back = find_link(nullptr, device);
    REQUIRE(back);
    CHECK(link_mac(*back) == mac);
    CHECK(link_alias(*back).empty());
    CHECK_FALSE(find_link(nullptr, "net1"));
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-hd").empty());

    SECTION("the device can be attached again after DEL") {
        const auto again = att.add();
        INFO(again.describe());
        CHECK(again.ok());
        CHECK(att.del().ok());
        CHECK(find_link(nullptr, device));
    }
}

TEST_CASE("hostdev ADD of a device that does not exist fails cleanly", "[e2e][hostdev]") {
    Workspace ws;
    ScopedNetns pod("pod");
    const std::string missing = unique_name("nodev");
    const auto conf = conflist("e2e-hdmiss", "1.0.0", hostdev_plugin(missing, host_local(ws, "10.250.11.0/24")));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};

    const auto add = att.add();
    INFO(add.describe());
    CHECK_FALSE(add.ok());
    CHECK(add.code() == 101);  // device_not_found (include/rdmanet/cni/error.hpp)
    CHECK((add.msg() + add.details()).find(missing) != std::string::npos);
    CHECK(only_loopback(pod));
    CHECK_FALSE(find_link(nullptr, "net1"));
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-hdmiss").empty());
}
