// Sysfs lookups on a fake tree in a temporary directory, and write_sysctl in a test namespace.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "netns_helpers.hpp"
#include "rdmanet/netns/sysfs.hpp"

using namespace rdmanet::netns;
using rdmanet::test::errno_of;
using rdmanet::test::ScopedNetns;
using rdmanet::test::ScopedVeth;
namespace fs = std::filesystem;

namespace {

// A miniature /sys: a ConnectX-like PF with a netdev, an unbound VF, a virtio-net function, an
// mlx5 SF on the auxiliary bus and a virtual link, linked the way the kernel links them.
struct FakeSysfs {
    fs::path root;
    FakeSysfs() {
        char tmpl[] = "/tmp/rdmt-sysfs-XXXXXX";
        if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
        root = tmpl;
        const fs::path devices = root / "devices/pci0000:00";
        dir(devices / "0000:03:00.0/net/ens1f0");
        dir(devices / "0000:03:00.1/net/ens1f1");
        dir(devices / "0000:03:00.1/net/ens1f1d1");   // a second netdev on one function
        dir(devices / "0000:03:00.2");                // VF without driver, no netdev
        dir(devices / "0000:00:03.0/virtio0/net/eth9");
        dir(devices / "0000:03:00.0/mlx5_core.sf.2/net/enp3s0f0s2");
        dir(root / "bus/pci/drivers/mlx5_core");
        dir(root / "bus/pci/drivers/vfio-pci");
        dir(root / "bus/pci/devices");
        dir(root / "bus/auxiliary/devices");
        dir(root / "class/net");
        dir(root / "devices/virtual/net/veth0");
        for (const char* fn : {"0000:03:00.0", "0000:03:00.1", "0000:03:00.2", "0000:00:03.0"})
            link("../../../devices/pci0000:00/" + std::string(fn), root / "bus/pci/devices" / fn);
        link("../../../devices/pci0000:00/0000:03:00.0/mlx5_core.sf.2",
             root / "bus/auxiliary/devices/mlx5_core.sf.2");
        link("../../../../bus/pci/drivers/mlx5_core", devices / "0000:03:00.0/driver");
        link("../../../../bus/pci/drivers/vfio-pci", devices / "0000:00:03.0/driver");
        // class/net/<if> -> the netdev directory; <netdev>/device -> its parent device.
        net("ens1f0", "../../devices/pci0000:00/0000:03:00.0/net/ens1f0", "../../../0000:03:00.0");
        net("ens1f1", "../../devices/pci0000:00/0000:03:00.1/net/ens1f1", "../../../0000:03:00.1");
        net("eth9", "../../devices/pci0000:00/0000:00:03.0/virtio0/net/eth9", "../../../virtio0");
        net("enp3s0f0s2", "../../devices/pci0000:00/0000:03:00.0/mlx5_core.sf.2/net/enp3s0f0s2",
            "../../../mlx5_core.sf.2");
        link("../../devices/virtual/net/veth0", root / "class/net/veth0");
    }
    ~FakeSysfs() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    static void dir(const fs::path& p) { fs::create_directories(p); }
    static void link(const std::string& target, const fs::path& at) {
        fs::create_symlink(target, at);
    }
    void net(const std::string& ifname, const std::string& netdev_dir, const std::string& device) {
        link(netdev_dir, root / "class/net" / ifname);
        link(device, root / "class/net" / ifname / "device");
    }
};

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("Sysfs on a fake tree", "[netns][sysfs]") {
    FakeSysfs tree;
    const Sysfs sys(tree.root.string());
    CHECK(sys.root() == tree.root.string());

    SECTION("devices") {
        CHECK(sys.pci_device_exists("0000:03:00.1"));
        CHECK_FALSE(sys.pci_device_exists("0000:03:00.7"));
        CHECK(sys.aux_device_exists("mlx5_core.sf.2"));
        CHECK_FALSE(sys.aux_device_exists("mlx5_core.sf.3"));
    }
    SECTION("netdevs of a function, sorted; virtio after the function's own") {
        CHECK(sys.pci_netdevs("0000:03:00.1") == Names{"ens1f1", "ens1f1d1"});
        CHECK(sys.pci_netdevs("0000:00:03.0") == Names{"eth9"});
        CHECK(sys.pci_netdevs("0000:03:00.2").empty());
        CHECK(sys.pci_netdevs("0000:09:00.0").empty());
        CHECK(sys.aux_netdevs("mlx5_core.sf.2") == Names{"enp3s0f0s2"});
        CHECK(sys.aux_netdevs("mlx5_core.sf.9").empty());
    }
    SECTION("kernelpath is re-rooted and must stay under /sys/devices") {
        CHECK(sys.kernelpath_netdevs("/sys/devices/pci0000:00/0000:03:00.0") == Names{"ens1f0"});
        CHECK(sys.kernelpath_netdevs("/sys/devices/pci0000:00/0000:03:00.0/") == Names{"ens1f0"});
        CHECK(sys.kernelpath_netdevs("/sys/devices/pci0000:00/0000:03:00.2").empty());
        CHECK(sys.kernelpath_netdevs("/sys/class/net/ens1f0").empty());
        CHECK(sys.kernelpath_netdevs("/sys/devices/../class/net").empty());
        CHECK(sys.kernelpath_netdevs("devices/pci0000:00/0000:03:00.0").empty());
        CHECK(sys.kernelpath_netdevs("/etc").empty());
        CHECK(sys.kernelpath_netdevs("").empty());
    }
    SECTION("driver binding") {
        CHECK(sys.pci_driver("0000:03:00.0") == "mlx5_core");
        CHECK(sys.pci_driver("0000:00:03.0") == "vfio-pci");
        CHECK_FALSE(sys.pci_driver("0000:03:00.2"));   // unbound
        CHECK_FALSE(sys.pci_driver("0000:09:00.0"));   // absent
    }
    SECTION("PCI address of a netdev") {
        CHECK(sys.netdev_pci_address("ens1f0") == "0000:03:00.0");
        CHECK(sys.netdev_pci_address("ens1f1") == "0000:03:00.1");
        CHECK(sys.netdev_pci_address("eth9") == "0000:00:03.0");   // through virtio0
        CHECK_FALSE(sys.netdev_pci_address("enp3s0f0s2"));         // an SF is not a PCI function
        CHECK_FALSE(sys.netdev_pci_address("veth0"));              // virtual
        CHECK_FALSE(sys.netdev_pci_address("nosuch0"));
    }
    SECTION("identifiers that would leave their directory find nothing") {
        for (const char* bad : {"", ".", "..", "../../..", "0000:03:00.0/..", "a/b", "/etc"}) {
            INFO("id: '" << bad << "'");
            CHECK_FALSE(sys.pci_device_exists(bad));
            CHECK_FALSE(sys.aux_device_exists(bad));
            CHECK(sys.pci_netdevs(bad).empty());
            CHECK(sys.aux_netdevs(bad).empty());
            CHECK_FALSE(sys.pci_driver(bad));
            CHECK_FALSE(sys.netdev_pci_address(bad));
        }
        // ".." from bus/pci/devices would be bus/pci, which exists: still refused.
        CHECK_FALSE(sys.pci_device_exists(".."));
    }
}

TEST_CASE("Sysfs defaults to /sys", "[netns][sysfs]") {
    const Sysfs sys;
    CHECK(sys.root() == "/sys");
    CHECK_FALSE(sys.pci_device_exists("ffff:ff:1f.7"));
    CHECK_FALSE(sys.netdev_pci_address("lo"));   // read-only look at the host's loopback
}

TEST_CASE("write_sysctl writes in the calling thread's namespace", "[netns][sysctl]") {
    ScopedNetns ns("sysctl");
    ScopedVeth veth(&ns, &ns);
    const NetNamespace target = ns.open();
    const std::string key = "net/ipv4/conf/" + veth.name_a() + "/arp_notify";

    auto read_key = [](const std::string& k) {
        std::ifstream in("/proc/sys/" + k);
        std::string value;
        in >> value;
        return value;
    };
    in_netns(target, [&] {
        CHECK(read_key(key) == "0");
        write_sysctl(key, "1");
        CHECK(read_key(key) == "1");
        write_sysctl("net/ipv6/conf/" + veth.name_a() + "/ndisc_notify", "1\n");
        CHECK(read_key("net/ipv6/conf/" + veth.name_a() + "/ndisc_notify") == "1");
    });
    // The interface exists only in the test namespace, so the host has no such key.
    CHECK(errno_of([&] { write_sysctl(key, "1"); }) == ENOENT);

    SECTION("bad keys are refused before any file is opened") {
        for (const char* bad : {"", "/net/ipv4/ip_forward", "../proc/sys/net/ipv4/ip_forward",
                                "net/../net/ipv4/ip_forward", "net//ipv4/ip_forward",
                                "net/./ipv4/ip_forward", "net/ipv4/ip_forward/"}) {
            INFO("key: '" << bad << "'");
            CHECK(errno_of([&] { write_sysctl(bad, "1"); }) == EINVAL);
        }
    }
    SECTION("the kernel's refusal of a value comes back as its errno") {
        in_netns(target, [&] {
            CHECK(errno_of([&] { write_sysctl(key, "not-a-number"); }) == EINVAL);
        });
    }
}
