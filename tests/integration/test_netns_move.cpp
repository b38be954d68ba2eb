// move_link: one RTM_SETLINK carrying IFLA_NET_NS_FD and IFLA_IFNAME, both directions, and
// what the kernel does when the target name is taken.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "netns_helpers.hpp"

using namespace rdmanet::netns;
using rdmanet::test::errno_of;
using rdmanet::test::index_of;
using rdmanet::test::rtnl_in;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;

TEST_CASE("move_link moves and renames in one call, both directions", "[netns][rtnl][move]") {
    ScopedNetns host("mvhost"), pod("mvpod");
    ScopedVeth veth(&host, &host);
    auto host_rtnl = rtnl_in(host);
    auto pod_rtnl = rtnl_in(pod);
    const NetNamespace host_ns = host.open(), pod_ns = pod.open();
    const std::string name = veth.name_a();
    int index = index_of(*host_rtnl, name);
    host_rtnl->set_mtu(index, 1450);
    host_rtnl->set_alias(index, "origin:" + name);
    host_rtnl->set_up(index, true);

    SECTION("into the pod under the pod name, and back under the host name") {
        host_rtnl->move_link(index, pod_ns.fd(), "net1");
        CHECK_FALSE(host_rtnl->link_by_name(name));
        CHECK_FALSE(host_rtnl->link_by_name("net1"));
        auto in_pod = pod_rtnl->link_by_name("net1");
        REQUIRE(in_pod);
        CHECK_FALSE(pod_rtnl->link_by_name(name));
        // Settings travel along; the link is DOWN after a move (set UP after the final move).
        CHECK(in_pod->mtu == 1450);
        CHECK(in_pod->alias == "origin:" + name);
        CHECK_FALSE(in_pod->up);

        pod_rtnl->move_link(in_pod->index, host_ns.fd(), name);
        CHECK_FALSE(pod_rtnl->link_by_name("net1"));
        auto back = host_rtnl->link_by_name(name);
        REQUIRE(back);
        CHECK(back->mtu == 1450);
    }
    SECTION("without a new name the link keeps its name") {
        host_rtnl->move_link(index, pod_ns.fd());
        auto in_pod = pod_rtnl->link_by_name(name);
        REQUIRE(in_pod);
        CHECK(in_pod->kind == "veth");
        pod_rtnl->move_link(in_pod->index, host_ns.fd());
        CHECK(host_rtnl->link_by_name(name));
    }
    SECTION("the new name may equal the current one") {
        host_rtnl->move_link(index, pod_ns.fd(), name);
        CHECK(pod_rtnl->link_by_name(name));
    }
    SECTION("a missing link or a bad namespace fd") {
        CHECK(errno_of([&] { host_rtnl->move_link(999999, pod_ns.fd(), "net1"); }) == ENODEV);
        const int not_ns = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        REQUIRE(not_ns >= 0);
        CHECK(errno_of([&] { host_rtnl->move_link(index, not_ns, "net1"); }) != 0);
        ::close(not_ns);
        CHECK(host_rtnl->link_by_name(name));
        CHECK_FALSE(pod_rtnl->link_by_name("net1"));
    }
}

TEST_CASE("move_link when the target name is taken", "[netns][rtnl][move]") {
    ScopedNetns host("takenh"), pod("takenp");
    ScopedVeth veth(&host, &host);
    ScopedVeth occupant(&pod, &pod);  // provides a taken name in the pod
    auto host_rtnl = rtnl_in(host);
    auto pod_rtnl = rtnl_in(pod);
    const NetNamespace pod_ns = pod.open();
    const std::string name = veth.name_a();
    const int index = index_of(*host_rtnl, name);

    SECTION("current name free in the target: moved, then the rename fails (EEXIST)") {
        // Not atomic: the link ends up in the pod under its host name. Callers roll back that.
        CHECK(errno_of([&] { host_rtnl->move_link(index, pod_ns.fd(), occupant.name_a()); }) == EEXIST);
        CHECK_FALSE(host_rtnl->link_by_name(name));
        auto stranded = pod_rtnl->link_by_name(name);
        REQUIRE(stranded);
        CHECK(stranded->kind == "veth");
    }
    SECTION("both names taken in the target: nothing moves") {
        // A link in the pod with the host name too.
        pod_rtnl->rename_link(index_of(*pod_rtnl, occupant.name_b()), name);
        CHECK(errno_of([&] { host_rtnl->move_link(index, pod_ns.fd(), occupant.name_a()); }) == EEXIST);
        auto still = host_rtnl->link_by_name(name);
        REQUIRE(still);
        CHECK(still->index == index);
        // A free new name is used instead of the taken current one.
        host_rtnl->move_link(index, pod_ns.fd(), "net7");
        CHECK(pod_rtnl->link_by_name("net7"));
    }
    SECTION("an altname of the link taken in the target: nothing moves") {
        host.ip({"link", "property", "add", "dev", name, "altname", occupant.name_a()});
        try {
            host_rtnl->move_link(index, pod_ns.fd(), "net2");
            FAIL("no exception");
        } catch (const KernelError& e) {
            CHECK(e.errno_value() == EEXIST);
            // Newer kernels explain EEXIST in an extack message naming the altname; 6.1 sends no
            // text (kernel lab), so only the operation and errno are promised.
            CHECK_THAT(e.what(), Catch::Contains("move link"));
        }
        CHECK(host_rtnl->link_by_index(index));
        CHECK_FALSE(pod_rtnl->link_by_name("net2"));
        // Deleting the stale altname first makes the move possible (sriov-cni #445).
        host_rtnl->delete_altname(index, occupant.name_a());
        host_rtnl->move_link(index, pod_ns.fd(), "net2");
        CHECK(pod_rtnl->link_by_name("net2"));
    }
}
