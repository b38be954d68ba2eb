// rdma.isolation through hostdev (and the child check through macvlan) on the real kernel:
// the netdev moves for real between test namespaces; RDMA netlink is the fake kernel, which
// follows the semantics the [rdma-real] lab scenarios check on Debian 6.1 + soft-RoCE; sysfs is a
// fake tree naming the veth as the RDMA device's netdev.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "rdmanet/cni/modes/macvlan/mode.hpp"
#include "rdmanet/cni/modes/hostdev/mode.hpp"
#include "support/mode_context.hpp"
#include "unit/cni_test_helpers.hpp"
#include "netns_helpers.hpp"
#include "rdmanet/cni/modes/backend.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/netns/rdma_sysfs.hpp"
#include "rdmanet/netns/rdma_cm_configfs.hpp"
#include "support/fake_rdma.hpp"
#include "support/fake_rdma_sysfs.hpp"
#include "support/fake_sysfs.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;
using namespace rdmanet::test;
using netns::RdmaNetnsMode;

namespace {

struct Rig : HostAndPod {
    ScopedVeth veth{&host, &host, "rv"};
    FakeRdmaSysfs sys;
    netns::Sysfs sysfs{sys.root()};
    FakeRdmaKernel rdma{netns_id_of_fd(host_ns.fd())};
    RdmaAccess access{[this](const netns::NetNamespace& ns) { return rdma.open_in(ns); }, {}};
    netns::RdmaCmConfigfs rdma_cm{sys.configfs_root()};
    Kernel kernel{host_ns,        *host_rtnl, &pod_ns,
                  pod_rtnl.get(), sysfs,      {}};  // .services.rdma, .rdma_cm set in the constructor
    NetConf conf;
    Environment env;
    AttachmentState state;
    rdmanet::test::ModeContext ctx;
    int saves = 0;

    // The veth plays a RoCE function whose RDMA device `rdma_name` names it in its GID table;
    // `parent` is the RDMA device's PCI function (hardware), "" for a software device (rxe).
    explicit Rig(const std::string& rdma_name = "mlx5_7", bool movable = true,
                 const std::string& parent = "0000:af:00.2")
        : HostAndPod("rih", "rip") {
        kernel.services.rdma = &access;
        conf.mode = "hostdev";
        conf.settings.edit<HostdevConf>().device = veth.name_a();
        env.command = Command::add;
        env.container_id = "c1";
        env.ifname = "net1";
        env.netns = pod.path();
        if (!parent.empty()) sys.add_pci_function(parent);
        sys.add_rdma_device(rdma_name, parent, {{1, "4: ACTIVE", "Ethernet", {veth.name_a()}}});
        rdma.add_device("other0", true);
        rdma.add_device(rdma_name, movable);
        // The kernel's host sysfs view loses a device that moves into a pod, and the move
        // re-creates its rdma_cm client, whose defaults start from 0 again.
        rdma.on_host_visibility = [this](const std::string& dev, bool home) {
            home ? sys.show_rdma_device(dev) : sys.hide_rdma_device(dev);
            sys.reset_rdma_cm(dev);
        };
        kernel.services.rdma_cm = &rdma_cm;
    }
    PodLink add(Rollback& rollback) {
        return hostdev_add(AddRequest{conf, env, ctx.policy, ctx.states, kernel, rollback, state, [this] { ++saves; }});
    }
    // ADD as the plugin runs it: the backend, then (after the pod interface is configured) the
    // ownership check at the end.
    PodLink add_and_verify(Rollback& rollback) {
        const AddRequest req{conf, env, ctx.policy, ctx.states, kernel, rollback, state, [this] { ++saves; }};
        const PodLink link = hostdev_add(req);
        rdma_isolation_verify_owned(req);
        return link;
    }
    // The device's driver deletes it when the veth leaves the host namespace (soft-RoCE).
    void bind_device_to_veth(const std::string& rdma_name) {
        rdma.bind_to_netdev(rdma_name, veth.name_a());
        rdma.netdev_in_init = [this](const std::string& netdev) { return host_rtnl->link_by_name(netdev).has_value(); };
        rdma.on_deleted = [this](const std::string& dev) { sys.delete_rdma_device(dev); };
    }
    // Asks the fake kernel (its driver notifier runs on each request) whether the device exists.
    bool rdma_device_exists(const std::string& name) {
        rdma.open_view(rdma.init_id())->netns_mode();
        return rdma.exists(name);
    }
    void del() {
        const std::optional<AttachmentState> saved = state;
        hostdev_del(DelRequest{env, saved, ctx.policy, ctx.states, kernel});
    }
    bool netdev_in_host() { return host_rtnl->link_by_name(veth.name_a()).has_value(); }
    bool netdev_in_pod() { return pod_rtnl->link_by_name("net1").has_value(); }
    std::size_t moves() const {
        std::size_t n = 0;
        for (const auto& c : rdma.calls()) n += c.rfind("move", 0) == 0;
        return n;
    }
};

}  // namespace

TEST_CASE("hostdev, isolation auto, shared mode: netdev moves, RDMA device stays", "[rdma][hostdev][integration]") {
    Rig rig;
    Rollback rollback;
    rig.add(rollback);
    rollback.commit();
    CHECK(rig.netdev_in_pod());
    CHECK(rig.rdma.calls() == std::vector<std::string>{"sys_get"});
    CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
    CHECK(rig.state.rdma_device.empty());
    rig.del();
    CHECK(rig.netdev_in_host());
    CHECK(rig.moves() == 0);
}

TEST_CASE("hostdev, isolation off: RDMA netlink is never asked", "[rdma][hostdev][integration]") {
    Rig rig;
    rig.conf.rdma.isolation = RdmaIsolation::off;
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    Rollback rollback;
    rig.add(rollback);
    rollback.commit();
    CHECK(rig.netdev_in_pod());
    CHECK(rig.rdma.calls().empty());
    CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
}

TEST_CASE("hostdev, isolation required in shared mode: clear error, device untouched", "[rdma][hostdev][integration]") {
    Rig rig;
    rig.conf.rdma.isolation = RdmaIsolation::required;
    const auto before = rig.host_rtnl->link_by_name(rig.veth.name_a());
    REQUIRE(before);
    {
        Rollback rollback;
        const auto e = cni::testing::expect_cni_error([&] { rig.add(rollback); });
        CHECK(e.code() == static_cast<int>(ErrorCode::invalid_config));
        CHECK_THAT(e.msg(), Catch::Contains("shared"));
        CHECK_THAT(e.details(), Catch::Contains("netns_mode=0"));
    }
    const auto after = rig.host_rtnl->link_by_name(rig.veth.name_a());
    REQUIRE(after);
    CHECK(after->index == before->index);
    CHECK(after->alias == before->alias);
    CHECK_FALSE(rig.netdev_in_pod());
    CHECK(rig.moves() == 0);
    CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
}

TEST_CASE("hostdev, exclusive mode: RDMA device moves first, returns on DEL", "[rdma][hostdev][integration]") {
    Rig rig;
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    rig.conf.rdma.isolation = GENERATE(RdmaIsolation::auto_, RdmaIsolation::required);
    Rollback rollback;
    rig.add(rollback);
    rollback.commit();
    CHECK(rig.netdev_in_pod());
    CHECK(rig.state.rdma_device == "mlx5_7");
    CHECK(rig.saves >= 2);  // saved with the RDMA device name before it moved
    CHECK(rig.rdma.owner_of("mlx5_7") == netns_id_of_fd(rig.pod_ns.fd()));
    CHECK(netns::rdma_devices(rig.sysfs) == std::vector<std::string>{});  // gone from the host view
    CHECK(rig.rdma.owner_of("other0") == rig.rdma.init_id());

    rig.del();
    CHECK(rig.netdev_in_host());
    CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
    CHECK(netns::rdma_devices(rig.sysfs) == std::vector<std::string>{"mlx5_7"});
    // DEL again: idempotent, nothing left to move.
    const auto moves = rig.moves();
    rig.del();
    CHECK(rig.moves() == moves);
}

TEST_CASE("hostdev, exclusive mode: a failed ADD returns netdev and RDMA device", "[rdma][hostdev][integration]") {
    Rig rig;
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    {
        Rollback rollback;
        rig.add(rollback);
        CHECK(rig.rdma.owner_of("mlx5_7") == netns_id_of_fd(rig.pod_ns.fd()));
        // A later step fails: the rollback unwinds (netdev back first, then the RDMA device).
    }
    CHECK(rig.netdev_in_host());
    CHECK_FALSE(rig.netdev_in_pod());
    CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
}

TEST_CASE("hostdev, exclusive mode, a hardware device that cannot disassociate", "[rdma][hostdev][integration]") {
    Rig rig("rxe0", /*movable=*/false);
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);

    SECTION("required: EOPNOTSUPP is an error and nothing is left moved") {
        rig.conf.rdma.isolation = RdmaIsolation::required;
        {
            Rollback rollback;
            const auto e = cni::testing::expect_cni_error([&] { rig.add(rollback); });
            CHECK(e.code() == static_cast<int>(ErrorCode::kernel_failure));
            CHECK_THAT(e.msg(), Catch::Contains("could not move RDMA device rxe0"));
            CHECK_THAT(e.details(), Catch::Contains("disassociate"));
        }
        CHECK(rig.netdev_in_host());
        CHECK_FALSE(rig.netdev_in_pod());
        CHECK(rig.rdma.owner_of("rxe0") == rig.rdma.init_id());
    }
    SECTION("auto: a warning, the netdev still goes") {
        Rollback rollback;
        rig.add(rollback);
        rollback.commit();
        CHECK(rig.netdev_in_pod());
        CHECK(rig.state.rdma_device.empty());
        CHECK(rig.rdma.owner_of("rxe0") == rig.rdma.init_id());
    }
}

// Soft-RoCE (rxe) registers without a parent device and is deleted by its driver when its netdev
// leaves the namespace; Linux 7.x lets the RDMA device itself move (6.1: EOPNOTSUPP). Moving the
// RDMA device and then the netdev used to report success for `required` with the device gone.
TEST_CASE("hostdev, rxe bound to the netdev: required refuses before anything changes",
          "[rdma][hostdev][integration][rxe]") {
    Rig rig("rxe0", /*movable=*/true, /*parent=*/"");
    rig.bind_device_to_veth("rxe0");
    rig.conf.rdma.isolation = RdmaIsolation::required;
    const bool exclusive = GENERATE(true, false);
    if (exclusive) rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    CAPTURE(exclusive);
    const auto before = rig.host_rtnl->link_by_name(rig.veth.name_a());
    REQUIRE(before);
    {
        Rollback rollback;
        const auto e = cni::testing::expect_cni_error([&] { rig.add_and_verify(rollback); });
        CHECK(e.code() == static_cast<int>(ErrorCode::invalid_config));
        CHECK_THAT(e.msg(), Catch::Contains("rxe0"));
        if (exclusive) {
            CHECK_THAT(e.msg(), Catch::Contains("software device bound to " + rig.veth.name_a()));
            CHECK_THAT(e.msg(), Catch::Contains("the host would lose it"));
            CHECK_THAT(e.details(), Catch::Contains("rdma link add"));
        } else {
            CHECK_THAT(e.msg(), Catch::Contains("shared"));
        }
    }
    // Nothing the host had is lost: the netdev as it was, the RDMA device in the host.
    const auto after = rig.host_rtnl->link_by_name(rig.veth.name_a());
    REQUIRE(after);
    CHECK(after->index == before->index);
    CHECK(after->alias == before->alias);
    CHECK_FALSE(rig.netdev_in_pod());
    CHECK(rig.moves() == 0);
    CHECK(rig.rdma_device_exists("rxe0"));
    CHECK(rig.rdma.owner_of("rxe0") == rig.rdma.init_id());
    CHECK(netns::rdma_devices(rig.sysfs) == std::vector<std::string>{"rxe0"});
}

TEST_CASE("hostdev, rxe bound to the netdev: auto warns, moves only the netdev", "[rdma][hostdev][integration][rxe]") {
    Rig rig("rxe0", /*movable=*/true, /*parent=*/"");
    rig.bind_device_to_veth("rxe0");
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    Rollback rollback;
    rig.add_and_verify(rollback);
    rollback.commit();
    CHECK(rig.netdev_in_pod());
    CHECK(rig.moves() == 0);
    CHECK(rig.state.rdma_device.empty());
    // The kernel's rxe driver deletes it with the netdev's move (what auto warned about).
    CHECK_FALSE(rig.rdma_device_exists("rxe0"));
    rig.del();
    CHECK(rig.netdev_in_host());
}

TEST_CASE("end of ADD: required fails when the driver deleted the moved device", "[rdma][hostdev][integration][rxe]") {
    // A device with a parent of its own passes the up-front check, yet its driver deletes it when
    // the netdev moves: only the check at the end of ADD can see that.
    Rig rig;
    rig.bind_device_to_veth("mlx5_7");
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    SECTION("required: error 100 naming the device, everything rolled back") {
        rig.conf.rdma.isolation = RdmaIsolation::required;
        {
            Rollback rollback;
            const auto e = cni::testing::expect_cni_error([&] { rig.add_and_verify(rollback); });
            CHECK(e.code() == static_cast<int>(ErrorCode::kernel_failure));
            CHECK_THAT(e.msg(), Catch::Contains("RDMA device mlx5_7 no longer exists"));
            CHECK_THAT(e.msg(), Catch::Contains(rig.veth.name_a()));
        }
        CHECK(rig.moves() == 1);
        CHECK(rig.netdev_in_host());
        CHECK_FALSE(rig.netdev_in_pod());
    }
    SECTION("auto: a warning, the attachment forgets the device") {
        Rollback rollback;
        rig.add_and_verify(rollback);
        rollback.commit();
        CHECK(rig.netdev_in_pod());
        CHECK(rig.state.rdma_device.empty());
    }
}

TEST_CASE("end of ADD: a device the pod owns passes the check", "[rdma][hostdev][integration]") {
    Rig rig;
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    rig.conf.rdma.isolation = RdmaIsolation::required;
    Rollback rollback;
    rig.add_and_verify(rollback);
    rollback.commit();
    CHECK(rig.state.rdma_device == "mlx5_7");
    CHECK(rig.rdma.owner_of("mlx5_7") == netns_id_of_fd(rig.pod_ns.fd()));
    rig.del();
    CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
}

TEST_CASE("rdma.tos: set on the moved device after the move reset it", "[rdma][hostdev][integration][tos]") {
    Rig rig;
    rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
    rig.conf.rdma.tos = 106;

    SECTION("exclusive mode: every port of the pod's device gets it") {
        rig.sys.add_rdma_cm("mlx5_7", 2);
        Rollback rollback;
        rig.add(rollback);
        rollback.commit();
        CHECK(rig.rdma.owner_of("mlx5_7") == netns_id_of_fd(rig.pod_ns.fd()));
        CHECK(rig.sys.rdma_cm_tos("mlx5_7", 1) == "106");
        CHECK(rig.sys.rdma_cm_tos("mlx5_7", 2) == "106");
        CHECK(rig.rdma_cm.default_roce_tos("mlx5_7", 1) == 106u);
        rig.del();  // back in the host: the kernel's reset, nothing of ours to undo
        CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
    }
    SECTION("shared mode: the device is the node's, its value is left alone") {
        rig.rdma.boot_mode(RdmaNetnsMode::shared);
        rig.sys.add_rdma_cm("mlx5_7");
        Rollback rollback;
        rig.add(rollback);
        rollback.commit();
        CHECK(rig.netdev_in_pod());
        CHECK(rig.sys.rdma_cm_tos("mlx5_7", 1) == "0");
    }
    SECTION("no rdma_cm configfs on the node: ADD fails, the device goes back") {
        {
            Rollback rollback;
            const auto e = cni::testing::expect_cni_error([&] { rig.add(rollback); });
            CHECK(e.code() == static_cast<int>(ErrorCode::kernel_failure));
            CHECK_THAT(e.msg(), Catch::Contains("rdma.tos 106 for RDMA device mlx5_7 cannot be set"));
            CHECK_THAT(e.details(), Catch::Contains("rdma_cm module"));
        }
        CHECK(rig.netdev_in_host());
        CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
    }
    SECTION("rdma_cm without a port group for the device: ADD fails, the device goes back") {
        rig.sys.add_rdma_cm();
        {
            Rollback rollback;
            const auto e = cni::testing::expect_cni_error([&] { rig.add(rollback); });
            CHECK_THAT(e.msg(), Catch::Contains("rdma_cm lists no port"));
        }
        CHECK(rig.rdma.owner_of("mlx5_7") == rig.rdma.init_id());
    }
}

TEST_CASE("macvlan with isolation required: refused before anything is created", "[rdma][macvlan][integration]") {
    Rig rig;
    rig.conf.mode = "macvlan";
    rig.conf.settings.edit<MacvlanConf>().master = rig.veth.name_a();
    rig.conf.rdma.isolation = RdmaIsolation::required;
    Rollback rollback;
    const auto e = cni::testing::expect_cni_error([&] {
        macvlan_add(
            AddRequest{rig.conf, rig.env, rig.ctx.policy, rig.ctx.states, rig.kernel, rollback, rig.state, [] {}});
    });
    CHECK(e.code() == static_cast<int>(ErrorCode::invalid_config));
    CHECK_THAT(e.msg(), Catch::Contains("cannot own its parent's RDMA device"));
    CHECK(rig.pod_rtnl->links().size() == 1);  // only lo

    SECTION("auto in exclusive mode: created, with the device left in the host") {
        rig.conf.rdma.isolation = RdmaIsolation::auto_;
        rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
        Rollback ok;
        macvlan_add(AddRequest{rig.conf, rig.env, rig.ctx.policy, rig.ctx.states, rig.kernel, ok, rig.state, [] {}});
        ok.commit();
        CHECK(rig.netdev_in_pod());
        CHECK(rig.moves() == 0);
    }
}

namespace {

// hostdev of a PCI netdev (a veth end standing in for a VF of a PF) with Multus' device-info file.
struct DevinfoRig : HostAndPod {
    ScopedVeth veth{&host, &host, "dv"};
    FakeSysfs tree;
    netns::Sysfs sysfs{tree.root()};
    FakeRdmaKernel rdma{netns_id_of_fd(host_ns.fd())};
    RdmaAccess access{[this](const netns::NetNamespace& ns) { return rdma.open_in(ns); }, {}};
    Kernel kernel{host_ns, *host_rtnl, &pod_ns, pod_rtnl.get(), sysfs, {}};
    NetConf conf;
    Environment env;
    AttachmentState state;
    rdmanet::test::ModeContext ctx;
    std::string devinfo = tree.root() + "/devinfo/net-c1_net1";

    DevinfoRig() : HostAndPod("dih", "dip") {
        kernel.services.rdma = &access;
        conf.mode = "hostdev";
        conf.runtime.device_info_file = devinfo;
        env.command = Command::add;
        env.container_id = "c1";
        env.ifname = "net1";
        env.netns = pod.path();
        rdma.add_device("mlx5_3");
        rdma.on_host_visibility = [this](const std::string& dev, bool home) {
            home ? tree.add_rdma_device("0000:af:00.4", dev) : tree.remove_rdma_device("0000:af:00.4", dev);
        };
    }
    void add() {
        Rollback rollback;
        hostdev_add(AddRequest{conf, env, ctx.policy, ctx.states, kernel, rollback, state, [] {}});
        rollback.commit();
    }
    nlohmann::json read_devinfo() const {
        std::ifstream in(devinfo);
        REQUIRE(in);
        return nlohmann::json::parse(in);
    }
};

}  // namespace

TEST_CASE("hostdev writes Multus' device-info file for a PCI netdev", "[rdma][hostdev][integration][devinfo]") {
    DevinfoRig rig;
    SECTION("a VF: PF address, and the RDMA device the pod owns (exclusive mode)") {
        rig.tree.add_pf("0000:af:00.0", unique_name("pf"));
        rig.tree.add_vf("0000:af:00.0", 2, "0000:af:00.4", rig.veth.name_a());
        rig.tree.add_rdma_device("0000:af:00.4", "mlx5_3");
        rig.conf.settings.edit<HostdevConf>().pci_address = "0000:af:00.4";
        rig.rdma.boot_mode(RdmaNetnsMode::exclusive);
        rig.add();
        CHECK(rig.state.rdma_device == "mlx5_3");
        const auto info = rig.read_devinfo();
        CHECK(info["type"] == "pci");
        CHECK(info["version"] == "1.1.0");
        CHECK(info["pci"]["pci-address"] == "0000:af:00.4");
        CHECK(info["pci"]["pf-pci-address"] == "0000:af:00.0");
        CHECK(info["pci"]["rdma-device"] == "mlx5_3");
    }
    SECTION("a plain function, shared mode: no PF address, the function's RDMA device") {
        rig.tree.add_function("0000:af:00.4", rig.veth.name_a());
        rig.tree.add_rdma_device("0000:af:00.4", "mlx5_3");
        rig.conf.settings.edit<HostdevConf>().device = rig.veth.name_a();
        // Multus copied the device plugin's file here first: its extra keys survive.
        std::filesystem::create_directories(std::filesystem::path(rig.devinfo).parent_path());
        std::ofstream(rig.devinfo)
            << R"({"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:af:00.4","vhost-net":"/dev/vhost-net"}})";
        rig.add();
        const auto info = rig.read_devinfo();
        CHECK(info["pci"]["pci-address"] == "0000:af:00.4");
        CHECK_FALSE(info["pci"].contains("pf-pci-address"));
        CHECK(info["pci"]["rdma-device"] == "mlx5_3");
        CHECK(info["pci"]["vhost-net"] == "/dev/vhost-net");
    }
    SECTION("not a PCI netdev: no file") {
        rig.conf.settings.edit<HostdevConf>().device = rig.veth.name_a();
        rig.add();
        CHECK_FALSE(std::filesystem::exists(rig.devinfo));
    }
    SECTION("a failed ADD removes the file it wrote") {
        rig.tree.add_function("0000:af:00.4", rig.veth.name_a());
        rig.conf.settings.edit<HostdevConf>().device = rig.veth.name_a();
        {
            Rollback rollback;
            hostdev_add(
                AddRequest{rig.conf, rig.env, rig.ctx.policy, rig.ctx.states, rig.kernel, rollback, rig.state, [] {}});
            CHECK(std::filesystem::exists(rig.devinfo));
        }
        CHECK_FALSE(std::filesystem::exists(rig.devinfo));
        CHECK(rig.host_rtnl->link_by_name(rig.veth.name_a()));
    }
}
