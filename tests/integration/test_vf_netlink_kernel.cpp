// The real rtnetlink VfControl against this kernel. It has no SR-IOV, but rtnetlink still parses
// our requests before it asks the driver: do_setlink() walks IFLA_VFINFO_LIST and validates every
// IFLA_VF_* against ifla_vf_policy's minimum sizes (malformed -> EINVAL) and only then finds the
// driver lacks ndo_set_vf_* (-> EOPNOTSUPP). So EOPNOTSUPP on a veth proves the kernel accepted
// the encoding; RTM_GETLINK with RTEXT_FILTER_VF proves the read request and an empty decode.
#include <catch2/catch.hpp>

#include "netns_helpers.hpp"
#include "rdmanet/netns/vf.hpp"

using namespace rdmanet::netns;
using rdmanet::test::errno_of;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;

TEST_CASE("netlink VfControl: the kernel accepts every VF request shape", "[integration][vf][netlink]") {
    ScopedNetns ns("vfnl");
    ScopedVeth veth(&ns, &ns);
    NetnsGuard guard(ns.open());  // the VfControl's socket binds to this netns
    auto vfs = make_netlink_vf_control();

    SECTION("reading VFs of a link without SR-IOV gives none") { CHECK(vfs->list(veth.name_a()).empty()); }
    SECTION("every setter: parsed by rtnetlink, refused by the driver") {
        const std::vector<VfChange> changes = {
            VfChange::set_mac(0, "0a:58:0a:01:00:05"),
            VfChange::set_vlan(0, 100, 3, kVlanProto8021Q),
            VfChange::set_vlan(0, 100, 3, kVlanProto8021AD),
            VfChange::set_rate(0, 10, 100),
            VfChange::set_spoofchk(0, true),
            VfChange::set_trust(0, false),
            VfChange::set_link_state(0, VfLinkState::enable),
            VfChange::set_node_guid(0, 0xc211223344556677ull),
            VfChange::set_port_guid(0, 0xc211223344556677ull),
        };
        for (const auto& change : changes) {
            INFO(change.describe());
            CHECK(errno_of([&] { vfs->apply(veth.name_a(), change); }) == EOPNOTSUPP);
        }
    }
    SECTION("a missing PF is ENODEV, for reads and writes") {
        CHECK(errno_of([&] { vfs->list("rdmnopf0"); }) == ENODEV);
        CHECK(errno_of([&] { vfs->apply("rdmnopf0", VfChange::set_trust(0, true)); }) == ENODEV);
        CHECK(errno_of([&] { vfs->get(veth.name_a(), 0); }) == ENOENT);
    }
}
