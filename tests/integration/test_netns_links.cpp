// Rtnl link lookups and changes inside a test namespace.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "netns_helpers.hpp"

using namespace rdmanet::netns;
using rdmanet::test::errno_of;
using rdmanet::test::index_of;
using rdmanet::test::rtnl_in;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;

namespace {
constexpr int kMissingIndex = 999999;
}  // namespace

TEST_CASE("Link lookups", "[netns][rtnl][links]") {
    ScopedNetns ns("lookup");
    ScopedVeth veth(&ns, &ns);
    auto rtnl = rtnl_in(ns);

    SECTION("loopback of a fresh namespace") {
        auto lo = rtnl->link_by_name("lo");
        REQUIRE(lo);
        CHECK(lo->index == 1);
        CHECK(lo->name == "lo");
        CHECK(lo->kind.empty());
        CHECK_FALSE(lo->up);
        CHECK(lo->mtu == 65536);
        CHECK(lo->mac == "00:00:00:00:00:00");
        CHECK(lo->parent_index == 0);
        CHECK(lo->altnames.empty());
        auto by_index = rtnl->link_by_index(1);
        REQUIRE(by_index);
        CHECK(by_index->name == "lo");
    }
    SECTION("missing links are nullopt, not errors") {
        CHECK_FALSE(rtnl->link_by_name("nosuchlink0"));
        CHECK_FALSE(rtnl->link_by_name(""));
        CHECK_FALSE(rtnl->link_by_index(kMissingIndex));
        CHECK_FALSE(rtnl->link_by_index(0));
        CHECK_FALSE(rtnl->link_by_index(-1));
        // Longer than IFNAMSIZ: looked up as an altname, and there is none.
        CHECK_FALSE(rtnl->link_by_name("a-name-longer-than-ifnamsiz"));
    }
    SECTION("veth ends") {
        auto a = rtnl->link_by_name(veth.name_a());
        auto b = rtnl->link_by_name(veth.name_b());
        REQUIRE(a);
        REQUIRE(b);
        CHECK(a->kind == "veth");
        CHECK(a->parent_index == b->index);  // IFLA_LINK of a veth is its peer
        CHECK(b->parent_index == a->index);
        CHECK(a->mtu == 1500);
        CHECK(is_valid_mac(a->mac));
        CHECK(a->mac == Catch::toLower(a->mac));
        CHECK(a->macvlan_mode == 0);
    }
    SECTION("the full dump holds every link once") {
        auto links = rtnl->links();
        std::set<std::string> names;
        for (const auto& l : links) names.insert(l.name);
        CHECK(links.size() == 3);
        CHECK(names == std::set<std::string>{"lo", veth.name_a(), veth.name_b()});
    }
}

TEST_CASE("Link changes", "[netns][rtnl][links]") {
    ScopedNetns ns("change");
    ScopedVeth veth(&ns, &ns);
    auto rtnl = rtnl_in(ns);
    const int a = index_of(*rtnl, veth.name_a());

    SECTION("rename") {
        rtnl->rename_link(a, "renamed0");
        auto link = rtnl->link_by_name("renamed0");
        REQUIRE(link);
        CHECK(link->index == a);
        CHECK_FALSE(rtnl->link_by_name(veth.name_a()));
        // The kernel itself keeps no altname for the old name (udev may add one on a host).
        CHECK(link->altnames.empty());
        rtnl->rename_link(a, veth.name_a());
        CHECK(rtnl->link_by_name(veth.name_a()));
    }
    SECTION("rename errors keep the kernel's errno") {
        CHECK(errno_of([&] { rtnl->rename_link(a, veth.name_b()); }) == EEXIST);
        CHECK(errno_of([&] { rtnl->rename_link(a, "lo"); }) == EEXIST);
        CHECK(errno_of([&] { rtnl->rename_link(kMissingIndex, "x0"); }) == ENODEV);
        CHECK(errno_of([&] { rtnl->rename_link(a, "name-longer-than-15"); }) != 0);
        CHECK(errno_of([&] { rtnl->rename_link(a, "bad/name"); }) == EINVAL);
        CHECK(rtnl->link_by_name(veth.name_a()));
    }
    SECTION("up and down") {
        rtnl->set_up(a, true);
        CHECK(rtnl->link_by_index(a)->up);
        rtnl->set_up(a, true);  // idempotent
        CHECK(rtnl->link_by_index(a)->up);
        rtnl->set_up(a, false);
        CHECK_FALSE(rtnl->link_by_index(a)->up);
        CHECK(errno_of([&] { rtnl->set_up(kMissingIndex, true); }) == ENODEV);
    }
    SECTION("MTU") {
        rtnl->set_mtu(a, 1400);
        CHECK(rtnl->link_by_index(a)->mtu == 1400);
        rtnl->set_mtu(a, 9000);
        CHECK(rtnl->link_by_index(a)->mtu == 9000);
        CHECK(errno_of([&] { rtnl->set_mtu(a, 70000); }) == EINVAL);  // above veth's max
        CHECK(errno_of([&] { rtnl->set_mtu(a, 10); }) == EINVAL);     // below ETH_MIN_MTU
        CHECK(rtnl->link_by_index(a)->mtu == 9000);
    }
    SECTION("MAC") {
        rtnl->set_mac(a, "02:AA:bb:cc:dd:01");
        CHECK(rtnl->link_by_index(a)->mac == "02:aa:bb:cc:dd:01");
        // A multicast address is refused by the kernel, not by us.
        CHECK(errno_of([&] { rtnl->set_mac(a, "01:00:5e:00:00:01"); }) == EADDRNOTAVAIL);
        CHECK(errno_of([&] { rtnl->set_mac(a, "not-a-mac"); }) == EINVAL);
        CHECK(errno_of([&] { rtnl->set_mac(a, "02:aa:bb:cc:dd"); }) == EINVAL);
        CHECK(rtnl->link_by_index(a)->mac == "02:aa:bb:cc:dd:01");
    }
    SECTION("alias set and cleared") {
        CHECK(rtnl->link_by_index(a)->alias.empty());
        rtnl->set_alias(a, "host:ens1f0v3");
        CHECK(rtnl->link_by_index(a)->alias == "host:ens1f0v3");
        rtnl->set_alias(a, "");
        CHECK(rtnl->link_by_index(a)->alias.empty());
        CHECK_THAT(ns.ip({"link", "show", "dev", veth.name_a()}), !Catch::Contains("alias"));
        rtnl->set_alias(a, "");  // clearing twice is fine
    }
    SECTION("delete") {
        rtnl->delete_link(a);
        CHECK_FALSE(rtnl->link_by_index(a));
        CHECK_FALSE(rtnl->link_by_name(veth.name_b()));  // a veth goes as a pair
        CHECK(errno_of([&] { rtnl->delete_link(a); }) == ENODEV);
        CHECK(errno_of([&] { rtnl->delete_link(1); }) == EOPNOTSUPP);  // loopback is not deletable
    }
    SECTION("the kernel's extended ack text is part of the message") {
        try {
            rtnl->set_mtu(a, 70000);
            FAIL("no exception");
        } catch (const KernelError& e) {
            CHECK_THAT(e.what(), Catch::Contains("set MTU 70000"));
            CHECK_THAT(e.what(), Catch::Contains("kernel:"));
        }
    }
}

TEST_CASE("Alternative names", "[netns][rtnl][altname]") {
    ScopedNetns ns("altname");
    ScopedVeth veth(&ns, &ns);
    auto rtnl = rtnl_in(ns);
    const int a = index_of(*rtnl, veth.name_a());
    const int b = index_of(*rtnl, veth.name_b());
    const std::string long_alt = "an-altname-longer-than-ifnamsiz";
    ns.ip({"link", "property", "add", "dev", veth.name_a(), "altname", "oldname0", "altname", long_alt});

    auto link = rtnl->link_by_index(a);
    REQUIRE(link);
    CHECK(link->altnames == std::vector<std::string>{"oldname0", long_alt});

    SECTION("a lookup by altname finds the link under its primary name") {
        auto by_alt = rtnl->link_by_name("oldname0");
        REQUIRE(by_alt);
        CHECK(by_alt->index == a);
        CHECK(by_alt->name == veth.name_a());
        auto by_long = rtnl->link_by_name(long_alt);
        REQUIRE(by_long);
        CHECK(by_long->index == a);
    }
    SECTION("an altname blocks the name for renames") {
        CHECK(errno_of([&] { rtnl->rename_link(b, "oldname0"); }) == EEXIST);
    }
    SECTION("delete removes it; deleting what is absent is a no-op") {
        rtnl->delete_altname(a, "oldname0");
        CHECK(rtnl->link_by_index(a)->altnames == std::vector<std::string>{long_alt});
        CHECK_FALSE(rtnl->link_by_name("oldname0"));
        rtnl->delete_altname(a, "oldname0");    // kernel: ENOENT
        rtnl->delete_altname(a, "neverthere");  // kernel: ENOENT
        rtnl->delete_altname(a, long_alt);
        CHECK(rtnl->link_by_index(a)->altnames.empty());
        // Now the name is free again.
        rtnl->rename_link(b, "oldname0");
        CHECK(rtnl->link_by_name("oldname0")->index == b);
    }
    SECTION("names that are not this link's altnames are no-ops too") {
        rtnl->delete_altname(a, veth.name_b());  // kernel: EINVAL (another link's name)
        rtnl->delete_altname(a, veth.name_a());  // kernel: EINVAL (its own primary name)
        rtnl->delete_altname(b, "oldname0");     // kernel: EINVAL (an altname of another link)
        CHECK(rtnl->link_by_index(a)->altnames.size() == 2);
        CHECK(rtnl->link_by_index(b)->name == veth.name_b());
    }
    SECTION("a missing link is an error") {
        CHECK(errno_of([&] { rtnl->delete_altname(kMissingIndex, "oldname0"); }) == ENODEV);
    }
}
