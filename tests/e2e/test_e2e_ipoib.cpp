// mode "ipoib" through the real caller (Debian's libcni) as a real process: rdmanet-fakekernel,
// whose IPoIB creation is the stand-in (a macvlan on a veth "parent", recorded with the IPoIB
// attributes asked for in the fake-kernel state file). Temporary name, move + rename, MTU,
// proxy_arp, addresses, CHECK and DEL are the product's code on real links.
#include <catch2/catch.hpp>

#include "e2e/e2e_fakekernel.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

TEST_CASE("ipoib: child ADD, CHECK, DEL through libcni", "[e2e][ipoib]") {
    Workspace ws;
    IpoibNode node(ws);
    ScopedNetns pod("ib");

    SECTION("pkey and mode inherited from the parent") {
        auto plugin = fakekernel_plugin("ipoib", host_local(ws, "10.250.44.0/24"), {{"master", node.parent.name_a()}});
        const std::string conf = ws.write("ipoib.conflist", conflist("e2e-ipoib", "1.0.0", plugin).dump());
        FakeKernelCall call{"add", conf, pod.path(), container_id("ib")};
        const auto add = drive(ws, node.env(), call);
        INFO(add.describe());
        REQUIRE(add.ok());

        const json created = node.created();
        REQUIRE(created.size() == 1);
        CHECK(created[0]["pkey"] == 0x7fff);       // parent's 0xffff & 0x7fff
        CHECK(created[0]["mode"] == "connected");  // parent's mode
        CHECK(created[0]["umcast"] == true);
        const std::string temp = created[0].value("name", "");
        CHECK(temp.rfind("rdm", 0) == 0);
        CHECK_FALSE(find_link(nullptr, temp));  // moved out of the host under its temporary name

        auto inside = find_link(&pod, "net1");
        REQUIRE(inside);
        CHECK(link_kind(*inside) == "macvlan");  // the stand-in's kind
        CHECK(inside->value("mtu", 0) == 4092);
        CHECK(link_is_up(*inside));
        CHECK(ipv4_addresses(pod, "net1") == std::vector<std::string>{add.json["ips"][0].value("address", "")});
        CHECK(add.json["interfaces"][0].value("mac", "") == link_mac(*inside));

        require_verb_ok(ws, node.env(), call, "check");
        require_verb_ok(ws, node.env(), call, "del");
        CHECK(only_loopback(pod));
        CHECK(host_links_on(node.parent.name_a()) == std::vector<std::string>{node.parent.name_b()});
        CHECK(attachment_files(ws).empty());
        CHECK(ws.ipam_reservations("e2e-ipoib").empty());
        CHECK(drive(ws, node.env(), call).ok());  // DEL again: nothing left, still success
    }

    SECTION("explicit pkey, datagram mode and a smaller MTU") {
        auto plugin = fakekernel_plugin(
            "ipoib", host_local(ws, "10.250.45.0/24"),
            {{"master", node.parent.name_a()}, {"pkey", "0x8005"}, {"ipoibMode", "datagram"}, {"mtu", 2044}});
        const std::string conf = ws.write("ipoib2.conflist", conflist("e2e-ipoib2", "1.0.0", plugin).dump());
        FakeKernelCall call{"add", conf, pod.path(), container_id("ib")};
        const auto add = drive(ws, node.env(), call);
        INFO(add.describe());
        REQUIRE(add.ok());
        const json created = node.created();
        REQUIRE(created.size() == 1);
        CHECK(created[0]["pkey"] == 0x8005);
        CHECK(created[0]["mode"] == "datagram");
        auto inside = find_link(&pod, "net1");
        REQUIRE(inside);
        CHECK(inside->value("mtu", 0) == 2044);

        call.verb = "del";
        REQUIRE(drive(ws, node.env(), call).ok());
        CHECK(only_loopback(pod));
    }

    SECTION("an MTU above the parent's is refused and nothing is created") {
        auto plugin = fakekernel_plugin("ipoib", host_local(ws, "10.250.46.0/24"),
                                        {{"master", node.parent.name_a()}, {"mtu", 9000}});
        const std::string conf = ws.write("ipoib3.conflist", conflist("e2e-ipoib3", "1.0.0", plugin).dump());
        const auto add = drive(ws, node.env(), {"add", conf, pod.path(), container_id("ib")});
        INFO(add.describe());
        CHECK(add.code() == 7);
        CHECK_THAT(add.msg(), Catch::Contains("larger than master"));
        CHECK(node.created().empty());
        CHECK(only_loopback(pod));
        CHECK(ws.ipam_reservations("e2e-ipoib3").empty());
    }
}
