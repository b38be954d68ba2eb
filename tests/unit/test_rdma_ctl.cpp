// rdmanetctl rdma mode / devices against the fake RDMA kernel and a fake sysfs tree.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdmanet/cni/cli/rdma.hpp"
#include "rdmanet/cni/doctor/devices.hpp"
#include "rdmanet/netns/rdma_sysfs.hpp"
#include "rdmanet/netns/error.hpp"
#include "support/fake_rdma.hpp"
#include "support/fake_rdma_sysfs.hpp"

using namespace rdmanet;
using namespace rdmanet::cni::cli;
using namespace rdmanet::cni::doctor;
using rdmanet::netns::RdmaNetnsMode;
namespace fs = std::filesystem;

namespace {

struct Ctl {
    test::FakeRdmaKernel kernel;
    test::FakeRdmaSysfs dir;  // only used as a scratch modprobe.d
    std::ostringstream out, err;

    int mode(RdmaModeOptions o) {
        o.modprobe_dir = dir.root() + "/modprobe.d";
        o.system_modprobe_dirs = {dir.root() + "/lib-modprobe.d"};
        o.cmdline_file = dir.root() + "/cmdline";
        return rdma_mode(
            o, [this] { return kernel.open_view(kernel.init_id()); }, out, err);
    }
    std::string conf() const {
        std::ifstream in(dir.root() + "/modprobe.d/rdmanet-ib_core.conf");
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }
};

}  // namespace

TEST_CASE("ib_core.conf editing keeps other options and replaces netns_mode", "[rdma][ctl][unit]") {
    const std::string existing =
        "# site\noptions ib_core netns_mode=1 recv_queue_size=512\noptions mlx5_core foo=1\n"
        "options ib_core netns_mode=1\n";
    const auto updated = ib_core_conf_with_mode(existing, RdmaNetnsMode::exclusive);
    CHECK_THAT(updated, Catch::Contains("# site\n"));
    CHECK_THAT(updated, Catch::Contains("options ib_core recv_queue_size=512\n"));
    CHECK_THAT(updated, Catch::Contains("options mlx5_core foo=1\n"));
    CHECK_THAT(updated, !Catch::Contains("netns_mode=1"));
    CHECK_THAT(updated, Catch::EndsWith("options ib_core netns_mode=0\n"));
    CHECK(ib_core_conf_mode(updated) == RdmaNetnsMode::exclusive);
    CHECK(ib_core_conf_mode(existing) == RdmaNetnsMode::shared);
    CHECK_FALSE(ib_core_conf_mode("options mlx5_core netns_mode=0\n"));
    CHECK(ib_core_conf_mode(ib_core_conf_with_mode(updated, RdmaNetnsMode::shared)) == RdmaNetnsMode::shared);
}

TEST_CASE("rdma mode shows the mode, its meaning and the boot setting", "[rdma][ctl][unit]") {
    Ctl c;
    CHECK(c.mode({}) == 0);
    CHECK_THAT(c.out.str(), Catch::StartsWith("RDMA netns mode: shared\n"));
    CHECK_THAT(c.out.str(), Catch::Contains("boot setting: none"));
    c.kernel.boot_mode(RdmaNetnsMode::exclusive);
    c.out.str("");
    CHECK(c.mode({}) == 0);
    CHECK_THAT(c.out.str(), Catch::StartsWith("RDMA netns mode: exclusive\n"));
}

TEST_CASE("rdma mode reads the boot setting as modprobe does: every dir, name order, cmdline last",
          "[rdma][ctl][unit]") {
    Ctl c;
    auto write = [&](const std::string& rel, const std::string& text) {
        fs::create_directories(fs::path(c.dir.root() + "/" + rel).parent_path());
        std::ofstream(c.dir.root() + "/" + rel) << text;
    };
    // An admin's own file in a system dir: exclusive.
    write("lib-modprobe.d/ib_core.conf", "options ib_core netns_mode=0\n");
    CHECK(c.mode({}) == 0);
    CHECK_THAT(c.out.str(),
               Catch::Contains("boot setting (" + c.dir.root() + "/lib-modprobe.d/ib_core.conf): exclusive"));
    // Ours sorts after ib_core.conf and wins (what install --rdma-netns-mode writes).
    write("modprobe.d/rdmanet-ib_core.conf", "options ib_core netns_mode=1\n");
    c.out.str("");
    CHECK(c.mode({}) == 0);
    CHECK_THAT(c.out.str(), Catch::Contains("rdmanet-ib_core.conf): shared"));
    // The kernel command line beats every file.
    write("cmdline", "BOOT_IMAGE=/vmlinuz ro ib_core.netns_mode=0 quiet\n");
    c.out.str("");
    CHECK(c.mode({}) == 0);
    CHECK_THAT(c.out.str(), Catch::Contains("cmdline): exclusive"));
    CHECK(boot_netns_mode({c.dir.root() + "/nowhere"}, c.dir.root() + "/nocmdline").value.empty());
}

TEST_CASE("rdma mode sets the mode when no other namespace exists", "[rdma][ctl][unit]") {
    Ctl c;
    CHECK(c.mode({"exclusive", false, ""}) == 0);
    CHECK(c.kernel.mode() == RdmaNetnsMode::exclusive);
    CHECK_THAT(c.out.str(), Catch::Contains("exclusive (was shared)"));
    CHECK_FALSE(fs::exists(c.dir.root() + "/modprobe.d/rdmanet-ib_core.conf"));
}

TEST_CASE("rdma mode explains EBUSY in admin words and how to proceed", "[rdma][ctl][unit]") {
    Ctl c;
    c.kernel.netns_created(12345);
    CHECK(c.mode({"exclusive", false, ""}) == 1);
    CHECK(c.kernel.mode() == RdmaNetnsMode::shared);
    CHECK_THAT(c.err.str(), Catch::Contains("other network namespaces exist"));
    CHECK_THAT(c.err.str(), Catch::Contains("--persist"));
    CHECK_THAT(c.err.str(), Catch::Contains("reboot"));

    SECTION("with --persist the boot option is written and the exit is 0") {
        c.err.str("");
        CHECK(c.mode({"exclusive", true, ""}) == 0);
        CHECK(c.conf().find("options ib_core netns_mode=0\n") != std::string::npos);
        CHECK_THAT(c.err.str(), Catch::Contains("reboot the node"));
        c.out.str("");
        CHECK(c.mode({}) == 0);
        CHECK_THAT(c.out.str(), Catch::Contains("differs from the running mode"));
    }
}

TEST_CASE("rdma mode: no RDMA netlink and bad arguments", "[rdma][ctl][unit]") {
    std::ostringstream out, err;
    auto none = []() -> std::unique_ptr<netns::RdmaNetlink> {
        throw netns::KernelError(EPROTONOSUPPORT, "open netlink socket");
    };
    CHECK(rdma_mode({}, none, out, err) == 1);
    CHECK_THAT(err.str(), Catch::Contains("ib_core is not loaded"));
    CHECK(rdma_mode({"", true, "/nonexistent"}, none, out, err) == 2);

    // Persisting is what a node without ib_core loaded needs: written, exit 0.
    test::FakeRdmaSysfs scratch;
    err.str("");
    CHECK(rdma_mode({"exclusive", true, scratch.root() + "/modprobe.d"}, none, out, err) == 0);
    CHECK(ib_core_conf_mode([&] {
              std::ifstream in(scratch.root() + "/modprobe.d/rdmanet-ib_core.conf");
              std::ostringstream s;
              s << in.rdbuf();
              return s.str();
          }()) == RdmaNetnsMode::exclusive);
    CHECK_THAT(err.str(), Catch::Contains("applies when ib_core is next loaded"));
    CHECK(rdma_mode({"private", false, "/nonexistent"}, none, out, err) == 2);
}

TEST_CASE("devices: sysfs table with PF, VF, SF and rxe, merged with verbs", "[rdma][ctl][unit]") {
    test::FakeRdmaSysfs sys;
    sys.add_pci_function("0000:af:00.0");
    sys.add_pci_function("0000:af:00.2", "0000:af:00.0");
    sys.add_aux_device("mlx5_core.sf.4");
    sys.add_rdma_device("mlx5_0", "0000:af:00.0", {{1, "4: ACTIVE", "InfiniBand", {}}});
    sys.add_rdma_device("mlx5_3", "0000:af:00.2", {{1, "1: DOWN", "Ethernet", {"ens1f0v0", "ens1f0v0"}}});
    sys.add_rdma_device("mlx5_9", "mlx5_core.sf.4", {{1, "4: ACTIVE", "Ethernet", {"en3f0pf0sf4"}}});
    sys.add_rdma_device("rxe0", "", {{1, "4: ACTIVE", "Ethernet", {"va"}}});

    const std::vector<VerbsPort> verbs = {{"mlx5_3", 1, "ACTIVE", "Ethernet"}, {"siw0", 1, "ACTIVE", "Ethernet"}};
    const auto rows = device_rows(netns::Sysfs(sys.root()), verbs);
    REQUIRE(rows.size() == 5);
    CHECK(rows[0].device == "mlx5_0");
    CHECK(rows[0].function == "PF");
    CHECK(rows[0].link_layer == "InfiniBand");
    CHECK(rows[0].netdev == "-");
    CHECK(rows[1].device == "mlx5_3");
    CHECK(rows[1].function == "VF");
    CHECK(rows[1].pci == "0000:af:00.2 (PF 0000:af:00.0)");
    CHECK(rows[1].netdev == "ens1f0v0");
    CHECK(rows[1].state == "ACTIVE");  // verbs wins over the sysfs snapshot
    CHECK(rows[2].function == "SF");
    CHECK(rows[3].device == "rxe0");
    CHECK(rows[3].function == "-");
    CHECK(rows[3].netdev == "va");
    CHECK(rows[4].device == "siw0");  // known to verbs only

    const auto table = format_device_table(rows);
    CHECK_THAT(table, Catch::StartsWith("DEVICE  PORT  STATE   LINK_LAYER  NETDEV"));
    CHECK_THAT(table, Catch::Contains("rxe0    1     ACTIVE  Ethernet    va "));
}

TEST_CASE("devices: rxe on a VF's netdev reads VF -> PF through the netdev", "[rdma][ctl][unit]") {
    test::FakeRdmaSysfs sys;
    sys.add_pci_function("0000:01:00.0");
    sys.add_pci_function("0000:01:10.2", "0000:01:00.0");
    sys.add_rdma_device("rxevf", "", {{1, "4: ACTIVE", "Ethernet", {"eth2"}}});
    sys.add_rdma_device("rxe0", "", {{1, "4: ACTIVE", "Ethernet", {"va"}}});
    const std::filesystem::path root(sys.root());
    std::filesystem::create_directories(root / "class/net/eth2");
    std::filesystem::create_directory_symlink("../../../bus/pci/devices/0000:01:10.2", root / "class/net/eth2/device");

    const auto rows = device_rows(netns::Sysfs(sys.root()), {});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].device == "rxe0");  // a veth has no device: nothing to show
    CHECK(rows[0].pci == "-");
    CHECK(rows[0].function == "-");
    CHECK(rows[1].device == "rxevf");
    CHECK(rows[1].pci == "0000:01:10.2 (PF 0000:01:00.0)");
    CHECK(rows[1].function == "VF (soft)");
}

TEST_CASE("devices: zero devices is a helpful line, not an error", "[rdma][ctl][unit]") {
    test::FakeRdmaSysfs sys;
    std::ostringstream out, err;
    bool verbs_called = false;
    CHECK(devices(
              {sys.root(), true},
              [&] {
                  verbs_called = true;
                  return std::vector<VerbsPort>{};
              },
              out, err) == 0);
    CHECK_FALSE(verbs_called);  // another sysfs root never mixes in the real node's verbs
    CHECK_THAT(out.str(), Catch::Contains("no RDMA devices"));
    CHECK_THAT(out.str(), Catch::Contains("rdma link add"));
}

TEST_CASE("sysfs discovery: netdev and function to RDMA device", "[rdma][sysfs][unit]") {
    test::FakeRdmaSysfs sys;
    sys.add_pci_function("0000:af:00.2");
    sys.add_aux_device("mlx5_core.sf.4");
    sys.add_rdma_device("mlx5_3", "0000:af:00.2", {{1, "4: ACTIVE", "Ethernet", {"ens1f0v0"}}});
    sys.add_rdma_device("mlx5_9", "mlx5_core.sf.4", {});
    sys.add_rdma_device("rxe0", "", {{1, "4: ACTIVE", "Ethernet", {"va", "va"}}});
    const netns::Sysfs sysfs(sys.root());
    CHECK(netns::pci_rdma_devices(sysfs, "0000:af:00.2") == std::vector<std::string>{"mlx5_3"});
    CHECK(netns::aux_rdma_devices(sysfs, "mlx5_core.sf.4") == std::vector<std::string>{"mlx5_9"});
    CHECK(netns::netdev_rdma_devices(sysfs, "va") == std::vector<std::string>{"rxe0"});
    CHECK(netns::netdev_rdma_devices(sysfs, "ens1f0v0") == std::vector<std::string>{"mlx5_3"});
    CHECK(netns::netdev_rdma_devices(sysfs, "eth9").empty());
    CHECK(netns::pci_rdma_devices(sysfs, "../../..").empty());
    CHECK(netns::rdma_devices(sysfs) == std::vector<std::string>{"mlx5_3", "mlx5_9", "rxe0"});

    SECTION("a device moved into a pod vanishes from the host view and comes back") {
        sys.hide_rdma_device("mlx5_3");
        CHECK(netns::pci_rdma_devices(sysfs, "0000:af:00.2").empty());
        CHECK(netns::netdev_rdma_devices(sysfs, "ens1f0v0").empty());
        sys.show_rdma_device("mlx5_3");
        CHECK(netns::pci_rdma_devices(sysfs, "0000:af:00.2") == std::vector<std::string>{"mlx5_3"});
    }
}
