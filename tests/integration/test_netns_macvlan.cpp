// create_macvlan: the link is born directly in the pod namespace (IFLA_NET_NS_FD) on a master
// that stays in the socket's namespace.
#include <catch2/catch.hpp>

#include "netns_helpers.hpp"

using namespace rdmanet::netns;
using rdmanet::test::errno_of;
using rdmanet::test::index_of;
using rdmanet::test::rtnl_in;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;

TEST_CASE("create_macvlan into another namespace", "[netns][rtnl][macvlan]") {
    ScopedNetns host("mvlh"), pod("mvlp");
    ScopedVeth master(&host, &host);
    auto host_rtnl = rtnl_in(host);
    auto pod_rtnl = rtnl_in(pod);
    const NetNamespace pod_ns = pod.open();
    const int master_index = index_of(*host_rtnl, master.name_a());

    SECTION("each mode, with MTU and MAC") {
        const auto [mode, name] = GENERATE(table<MacvlanMode, const char*>({
            {MacvlanMode::bridge, "mvbridge"},
            {MacvlanMode::private_, "mvprivate"},
            {MacvlanMode::vepa, "mvvepa"},
            {MacvlanMode::passthru, "mvpassthru"},
        }));
        MacvlanSpec spec;
        spec.name = name;
        spec.master_index = master_index;
        spec.mode = mode;
        spec.mtu = 1400;
        spec.mac = "02:00:5E:10:00:01";
        spec.target_netns_fd = pod_ns.fd();
        host_rtnl->create_macvlan(spec);

        CHECK_FALSE(host_rtnl->link_by_name(name));
        auto link = pod_rtnl->link_by_name(name);
        REQUIRE(link);
        CHECK(link->kind == "macvlan");
        CHECK(link->macvlan_mode == static_cast<int>(mode));
        CHECK(link->mtu == 1400);
        if (mode == MacvlanMode::passthru) {
            // The kernel ignores IFLA_ADDRESS here: a passthru macvlan takes the master's MAC.
            CHECK(link->mac == host_rtnl->link_by_index(master_index)->mac);
        } else {
            CHECK(link->mac == "02:00:5e:10:00:01");
        }
        CHECK_FALSE(link->up);
        // Then it is renamed inside the pod like the reference plugin does.
        pod_rtnl->rename_link(link->index, "net1");
        pod_rtnl->set_up(link->index, true);
        CHECK(pod_rtnl->link_by_name("net1")->up);
    }
    SECTION("defaults: bridge mode, the master's MTU, a kernel-chosen MAC") {
        host_rtnl->set_mtu(master_index, 9000);
        MacvlanSpec spec;
        spec.name = "mvdefault";
        spec.master_index = master_index;
        spec.target_netns_fd = pod_ns.fd();
        host_rtnl->create_macvlan(spec);
        auto link = pod_rtnl->link_by_name("mvdefault");
        REQUIRE(link);
        CHECK(link->macvlan_mode == static_cast<int>(MacvlanMode::bridge));
        CHECK(link->mtu == 9000);
        CHECK(is_valid_mac(link->mac));
        CHECK(link->mac != host_rtnl->link_by_index(master_index)->mac);
    }
    SECTION("without a target namespace it is created next to its master") {
        MacvlanSpec spec;
        spec.name = "mvlocal";
        spec.master_index = master_index;
        host_rtnl->create_macvlan(spec);
        auto link = host_rtnl->link_by_name("mvlocal");
        REQUIRE(link);
        CHECK(link->parent_index == master_index);
        host_rtnl->delete_link(link->index);
        CHECK_FALSE(host_rtnl->link_by_name("mvlocal"));
    }
    SECTION("errors carry the kernel's errno") {
        MacvlanSpec spec;
        spec.name = "mverr";
        spec.master_index = master_index;
        spec.target_netns_fd = pod_ns.fd();

        MacvlanSpec too_big = spec;
        too_big.mtu = 9000;  // above the master's 1500
        CHECK(errno_of([&] { host_rtnl->create_macvlan(too_big); }) == EINVAL);

        MacvlanSpec no_master = spec;
        no_master.master_index = 999999;
        CHECK(errno_of([&] { host_rtnl->create_macvlan(no_master); }) == ENODEV);

        MacvlanSpec bad_mac = spec;
        bad_mac.mac = "02:00:5e:10:00";
        CHECK(errno_of([&] { host_rtnl->create_macvlan(bad_mac); }) == EINVAL);

        // The name is checked in the target namespace.
        ScopedVeth occupant(&pod, &pod);
        MacvlanSpec clash = spec;
        clash.name = occupant.name_a();
        CHECK(errno_of([&] { host_rtnl->create_macvlan(clash); }) == EEXIST);

        // passthru takes the master exclusively.
        MacvlanSpec pt = spec;
        pt.mode = MacvlanMode::passthru;
        pt.name = "mvpt1";
        host_rtnl->create_macvlan(pt);
        pt.name = "mvpt2";
        CHECK(errno_of([&] { host_rtnl->create_macvlan(pt); }) == EINVAL);

        CHECK_FALSE(pod_rtnl->link_by_name("mverr"));
        CHECK_FALSE(pod_rtnl->link_by_name("mvpt2"));
    }
    SECTION("deleting the pod namespace destroys the macvlan, the master stays") {
        auto doomed = std::make_unique<ScopedNetns>("mvldoomed");
        {
            // An open handle keeps a namespace alive: close it before deleting the name.
            const NetNamespace doomed_ns = doomed->open();
            MacvlanSpec spec;
            spec.name = "mvgone";
            spec.master_index = master_index;
            spec.target_netns_fd = doomed_ns.fd();
            host_rtnl->create_macvlan(spec);
        }
        doomed.reset();
        CHECK(host_rtnl->link_by_index(master_index));
    }
}
