// mode "ipoib" on the real kernel with a stand-in for the IPoIB child itself (this kernel has no
// ipoib): the stand-in creates a macvlan on a veth "parent" under the temporary name, and
// everything around it -- temporary name, move + rename in one call, MTU, proxy_arp, rollback,
// DEL -- is the backend's real code on real links. The parent's IPoIB attributes come from a
// fake sysfs tree.
#include <catch2/catch.hpp>

#include <fstream>

#include "rdmanet/cni/modes/ipoib/mode.hpp"
#include "support/mode_context.hpp"
#include "netns_helpers.hpp"
#include "rdmanet/cni/modes/backend.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "support/fake_rdma.hpp"
#include "support/fake_rdma_sysfs.hpp"
#include "unit/cni_test_helpers.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;
using namespace rdmanet::test;

namespace {

struct IpoibRig : HostAndPod {
    ScopedVeth parent{&host, &host, "ib"};
    FakeRdmaSysfs sys;
    netns::Sysfs sysfs{sys.root()};
    StandInIpoibLinks links{*host_rtnl};
    Kernel kernel{host_ns, *host_rtnl, &pod_ns, pod_rtnl.get(), sysfs, {}};  // .services.ipoib set in the constructor
    NetConf conf;
    Environment env;
    AttachmentState state;
    rdmanet::test::ModeContext ctx;

    IpoibRig() : HostAndPod("ibh", "ibp") {
        kernel.services.ipoib = &links;
        conf.mode = "ipoib";
        conf.settings.edit<IpoibConf>().master = parent.name_a();
        env.command = Command::add;
        env.container_id = "c1";
        env.ifname = "ib1";
        env.netns = pod.path();
        sys.add_netdev(parent.name_a(), 32, "0xffff", "connected");
        host_rtnl->set_mtu(index_of(*host_rtnl, parent.name_a()), 4092);
    }
    PodLink add(Rollback& rollback) {
        return ipoib_add(AddRequest{conf, env, ctx.policy, ctx.states, kernel, rollback, state, [] {}});
    }
    void del() {
        const std::optional<AttachmentState> saved = state;
        ipoib_del(DelRequest{env, saved, ctx.policy, ctx.states, kernel});
    }
    std::size_t host_links() { return host_rtnl->links().size(); }
};

std::string proxy_arp_in(const ScopedNetns& ns, const std::string& ifname) {
    auto out = run_command_checked(
        {"ip", "netns", "exec", ns.name(), "cat", "/proc/sys/net/ipv4/conf/" + ifname + "/proxy_arp"});
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

}  // namespace

TEST_CASE("ipoib: child inherits pkey and mode, moved and renamed, DEL deletes it", "[ipoib][integration]") {
    IpoibRig rig;
    const auto host_before = rig.host_links();
    Rollback rollback;
    const auto link = rig.add(rollback);
    rollback.commit();

    REQUIRE(rig.links.created().size() == 1);
    const auto& spec = rig.links.created().front();
    CHECK(spec.pkey == 0x7fff);                       // parent's 0xffff & 0x7fff
    CHECK(spec.mode == netns::IpoibMode::connected);  // parent's mode
    CHECK(spec.umcast);
    CHECK(spec.name.rfind("rdm", 0) == 0);  // created under a temporary name
    CHECK(spec.parent_index == index_of(*rig.host_rtnl, rig.parent.name_a()));

    CHECK(link.name == "ib1");
    auto in_pod = rig.pod_rtnl->link_by_name("ib1");
    REQUIRE(in_pod);
    CHECK(in_pod->index == link.index);
    CHECK(in_pod->mtu == 4092);                           // inherited
    CHECK_FALSE(rig.host_rtnl->link_by_name(spec.name));  // nothing left in the host
    CHECK(rig.host_links() == host_before);
    CHECK(rig.state.child_kind == "macvlan");
    CHECK(proxy_arp_in(rig.pod, "ib1") == "1");

    rig.del();
    CHECK_FALSE(rig.pod_rtnl->link_by_name("ib1"));
    rig.del();  // idempotent
}

TEST_CASE("ipoib: configured pkey, mode and MTU", "[ipoib][integration]") {
    IpoibRig rig;
    rig.conf.settings.edit<IpoibConf>().pkey = 0x8012;
    rig.conf.settings.edit<IpoibConf>().mode = "datagram";
    rig.conf.settings.edit<IpoibConf>().mtu = 2044;
    Rollback rollback;
    rig.add(rollback);
    rollback.commit();
    CHECK(rig.links.created().front().pkey == 0x8012);
    CHECK(rig.links.created().front().mode == netns::IpoibMode::datagram);
    CHECK(rig.pod_rtnl->link_by_name("ib1")->mtu == 2044);
}

TEST_CASE("ipoib: bad masters and MTUs fail before anything is created", "[ipoib][integration]") {
    IpoibRig rig;
    const auto host_before = rig.host_links();
    Rollback rollback;
    SECTION("master missing") {
        rig.conf.settings.edit<IpoibConf>().master = "nosuchib0";
        REQUIRE_CNI_ERROR(rig.add(rollback), ErrorCode::device_not_found, "nosuchib0");
    }
    SECTION("master is Ethernet") {
        rig.sys.add_netdev(rig.parent.name_b(), 1);
        rig.conf.settings.edit<IpoibConf>().master = rig.parent.name_b();
        REQUIRE_CNI_ERROR(rig.add(rollback), ErrorCode::invalid_config, "not an InfiniBand");
    }
    SECTION("mtu above the parent's") {
        rig.conf.settings.edit<IpoibConf>().mtu = 9000;
        REQUIRE_CNI_ERROR(rig.add(rollback), ErrorCode::invalid_config, "larger than master");
    }
    SECTION("isolation required: a child cannot own the parent's RDMA device") {
        rig.conf.rdma.isolation = RdmaIsolation::required;
        REQUIRE_CNI_ERROR(rig.add(rollback), ErrorCode::invalid_config, "child");
    }
    CHECK(rig.links.created().empty());
    CHECK(rig.host_links() == host_before);
    CHECK(rig.pod_rtnl->links().size() == 1);
}

TEST_CASE("ipoib: a failure after the move deletes the child", "[ipoib][integration]") {
    IpoibRig rig;
    const auto host_before = rig.host_links();
    {
        Rollback rollback;
        rig.add(rollback);
        REQUIRE(rig.pod_rtnl->link_by_name("ib1"));
    }  // not committed: a later ADD step failed
    CHECK_FALSE(rig.pod_rtnl->link_by_name("ib1"));
    CHECK(rig.host_links() == host_before);
}

TEST_CASE("ipoib DEL leaves foreign links alone", "[ipoib][integration]") {
    IpoibRig rig;
    // A veth named like the pod interface is not ours.
    ScopedVeth foreign(&rig.pod, &rig.pod, "fx");
    rig.pod_rtnl->rename_link(index_of(*rig.pod_rtnl, foreign.name_a()), "ib1");
    rig.state.child_kind = "macvlan";
    rig.del();
    CHECK(rig.pod_rtnl->link_by_name("ib1"));
}
