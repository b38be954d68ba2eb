// DEL as runtimes really send it: twice, without a prior ADD, after the pod netns is gone, with
// an empty CNI_NETNS, after the macvlan master vanished. DEL must succeed in every case and
// leave no state or IPAM reservation behind.
#include <catch2/catch.hpp>

#include "e2e/e2e_helpers.hpp"

using namespace rdmanet::test;
using namespace rdmanet::test::e2e;

namespace {

struct MacvlanSetup {
    Workspace ws;
    ScopedVeth uplink{nullptr, nullptr, "dl"};
    ScopedNetns pod{"pod"};
    std::string network;
    Attachment att;

    explicit MacvlanSetup(const std::string& net, const std::string& subnet)
        : network(net), att{ws, "", pod.path(), container_id()} {
        set_link_up(nullptr, uplink.name_a());
        set_link_up(nullptr, uplink.name_b());
        att.conflist_path = ws.write(
            "net.conflist", conflist(net, "1.0.0", macvlan_plugin(uplink.name_a(), host_local(ws, subnet))).dump());
    }

    void require_added() const {
        const auto add = att.add();
        INFO(add.describe());
        REQUIRE(add.ok());
        REQUIRE(ws.state_files().size() == 1);
        REQUIRE(ws.ipam_reservations(network).size() == 1);
    }

    void require_clean_del(const Attachment& a) const {
        const auto del = a.del();
        INFO(del.describe());
        REQUIRE(del.ok());
        CHECK(ws.state_files().empty());
        CHECK(ws.ipam_reservations(network).empty());
    }
};

// `ip netns del` outside the ScopedNetns (whose destructor then finds nothing to do).
void destroy_netns(const ScopedNetns& ns) { run_command_checked({"ip", "netns", "del", ns.name()}); }

}  // namespace

TEST_CASE("DEL twice succeeds both times", "[e2e][del]") {
    MacvlanSetup s("e2e-del2", "10.250.20.0/24");
    s.require_added();
    s.require_clean_del(s.att);
    CHECK(only_loopback(s.pod));
    // The second DEL has no libcni cache (no prevResult) and no rdmanet state.
    s.require_clean_del(s.att);
    CHECK(only_loopback(s.pod));
}

TEST_CASE("DEL without any ADD succeeds and creates nothing", "[e2e][del]") {
    SECTION("macvlan") {
        MacvlanSetup s("e2e-del0", "10.250.21.0/24");
        s.require_clean_del(s.att);
        CHECK(only_loopback(s.pod));
        CHECK(host_links_on(s.uplink.name_a()) == std::vector<std::string>{s.uplink.name_b()});
    }
    SECTION("hostdev: the named device stays where it is") {
        Workspace ws;
        ScopedVeth dev(nullptr, nullptr, "d0");
        ScopedNetns pod("pod");
        const auto conf =
            conflist("e2e-del0h", "1.0.0", hostdev_plugin(dev.name_a(), host_local(ws, "10.250.22.0/24")));
        const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};
        const auto del = att.del();
        INFO(del.describe());
        CHECK(del.ok());
        CHECK(find_link(nullptr, dev.name_a()));
        CHECK(only_loopback(pod));
        CHECK(ws.state_files().empty());
    }
}

TEST_CASE("macvlan DEL after the pod netns was deleted", "[e2e][del]") {
    MacvlanSetup s("e2e-delns", "10.250.23.0/24");
    s.require_added();
    destroy_netns(s.pod);
    s.require_clean_del(s.att);
    // The macvlan died with the netns; nothing came back to the host.
    CHECK(eventually([&] { return host_links_on(s.uplink.name_a()) == std::vector<std::string>{s.uplink.name_b()}; }));
    CHECK_FALSE(find_link(nullptr, "net1"));
}

TEST_CASE("macvlan DEL with an empty CNI_NETNS releases IPAM and state", "[e2e][del]") {
    MacvlanSetup s("e2e-delempty", "10.250.24.0/24");
    s.require_added();
    Attachment no_netns = s.att;
    no_netns.netns_path = "";
    s.require_clean_del(no_netns);
}

TEST_CASE("macvlan DEL after the master disappeared", "[e2e][del]") {
    MacvlanSetup s("e2e-delmaster", "10.250.25.0/24");
    s.require_added();
    // Deleting the master takes its macvlans with it; DEL must not re-validate the master.
    run_command_checked({"ip", "link", "del", s.uplink.name_a()});
    CHECK(eventually([&] { return only_loopback(s.pod); }));
    s.require_clean_del(s.att);
}

TEST_CASE("hostdev DEL after the pod netns was deleted", "[e2e][del][hostdev]") {
    Workspace ws;
    ScopedVeth dev(nullptr, nullptr, "dn");
    ScopedNetns pod("pod");
    const std::string device = dev.name_a(), peer = dev.name_b();
    const auto conf = conflist("e2e-delnsh", "1.0.0", hostdev_plugin(device, host_local(ws, "10.250.26.0/24")));
    const Attachment att{ws, ws.write("net.conflist", conf.dump()), pod.path(), container_id()};
    const auto add = att.add();
    INFO(add.describe());
    REQUIRE(add.ok());

    // A veth is virtual: destroying the netns destroys the moved end and, with it, its peer in
    // the host (a physical device would come back to the host instead).
    destroy_netns(pod);
    REQUIRE(eventually([&] { return !find_link(nullptr, peer); }));

    const auto del = att.del();
    INFO(del.describe());
    CHECK(del.ok());
    CHECK(ws.state_files().empty());
    CHECK(ws.ipam_reservations("e2e-delnsh").empty());
    // The host is left sane: nothing resurrected under either name, no stray net1.
    CHECK_FALSE(find_link(nullptr, device));
    CHECK_FALSE(find_link(nullptr, "net1"));
}
