// The sriov backend's parts that need no kernel: VF discovery in a fake sysfs tree, the PF-side
// settings plan and its undo, GUID helpers, the lock and in-use record, the device-info file,
// and the attachment state round trip.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/state/attachment_state.hpp"
#include "rdmanet/cni/modes/sriov/sriov.hpp"
#include "support/fake_sysfs.hpp"
#include "support/fake_vf_control.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;
using netns::VfChange;
using rdmanet::test::FakeSysfs;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPf = "0000:af:00.0";
constexpr const char* kVf0 = "0000:af:00.2";
constexpr const char* kVfio = "0000:af:00.3";
constexpr const char* kIbPf = "0000:d8:00.0";
constexpr const char* kIbVf = "0000:d8:00.1";

void build_tree(FakeSysfs& t) {
    t.add_pf(kPf, "ens1f0");
    t.add_vf(kPf, 0, kVf0, "ens1f0v0");
    t.add_vf(kPf, 1, kVfio, std::nullopt, "vfio-pci");
    t.add_pf(kIbPf, "ibp216s0f0", /*infiniband=*/true);
    t.add_vf(kIbPf, 4, kIbVf, "ibp216s0f0v4");
    t.add_function("0000:3b:00.0", "eno1");
    t.add_rdma_device(kVf0, "mlx5_5");
    t.add_aux_sf(kPf, "mlx5_core.sf.4", "enp175s0f0s4", "mlx5_9");
}

struct TempDir {
    fs::path path;
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "rdmanet-unit-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()));
        path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("find_vf resolves a VF from its PCI address", "[sriov][sysfs]") {
    FakeSysfs tree;
    build_tree(tree);
    const auto sysfs = tree.sysfs();

    SECTION("Ethernet VF with a netdev") {
        const auto vf = find_vf(sysfs, kVf0);
        CHECK(vf.pf_pci == kPf);
        CHECK(vf.pf == "ens1f0");
        CHECK(vf.index == 0);
        CHECK(vf.driver == "mlx5_core");
        CHECK_FALSE(vf.userspace);
        CHECK(vf.netdev == std::optional<std::string>("ens1f0v0"));
        CHECK_FALSE(vf.infiniband);
        CHECK(pci_vendor_id(sysfs, kVf0) == "15b3");
    }
    SECTION("vfio-bound VF: DPDK mode, no netdev needed") {
        const auto vf = find_vf(sysfs, kVfio);
        CHECK(vf.index == 1);
        CHECK(vf.userspace);
        CHECK_FALSE(vf.netdev);
    }
    SECTION("InfiniBand VF: the PF's link type decides") {
        const auto vf = find_vf(sysfs, kIbVf);
        CHECK(vf.infiniband);
        CHECK(vf.index == 4);
    }
    SECTION("not a VF, not there, no netdev") {
        REQUIRE_CNI_ERROR(find_vf(sysfs, "0000:3b:00.0"), ErrorCode::invalid_config,
                          "is not an SR-IOV virtual function");
        REQUIRE_CNI_ERROR(find_vf(sysfs, kPf), ErrorCode::invalid_config, "is not an SR-IOV virtual function");
        REQUIRE_CNI_ERROR(find_vf(sysfs, "0000:af:07.0"), ErrorCode::device_not_found, "does not exist");
        tree.remove_netdev(kVf0, "ens1f0v0");
        REQUIRE_CNI_ERROR(find_vf(sysfs, kVf0), ErrorCode::device_not_found, "has no network interface in the host");
        tree.set_driver(kVf0, "");
        REQUIRE_CNI_ERROR(find_vf(sysfs, kVf0), ErrorCode::device_not_found, "bound to no driver");
    }
    SECTION("PF without netdev (after a reboot, before VFs are recreated)") {
        tree.remove_netdev(kPf, "ens1f0");
        REQUIRE_CNI_ERROR(find_vf(sysfs, kVf0), ErrorCode::device_not_found, "has no network interface");
    }
    SECTION("a rename is followed: the netdev is looked up by PCI address every time") {
        tree.rename_netdev(kVf0, "ens1f0v0", "net1");
        CHECK(vf_netdev(sysfs, kVf0) == std::optional<std::string>("net1"));
        CHECK(sysfs.netdev_pci_address("net1") == std::optional<std::string>(kVf0));
    }
}

TEST_CASE("settings plan follows sriov-cni's order and rules", "[sriov][settings]") {
    SriovConf conf;
    conf.vlan = 100;
    conf.vlan_qos = 2;
    conf.vlan_proto = "802.1ad";
    conf.vlan_set = true;
    conf.spoofchk = false;
    conf.trust = true;
    conf.link_state = "disable";
    conf.max_tx_rate = 1000;
    const auto plan = plan_apply(conf, std::string("0a:00:00:00:00:01"), 3, false);
    std::vector<std::string> fields;
    for (const auto& c : plan) fields.push_back(field_name(c.field));
    CHECK(fields == std::vector<std::string>{"vlan", "mac", "rate", "spoofchk", "trust", "link_state"});
    CHECK(plan[0] == VfChange::set_vlan(3, 100, 2, netns::kVlanProto8021AD));
    CHECK(plan[2] == VfChange::set_rate(3, 0, 1000));
    CHECK(plan[5] == VfChange::set_link_state(3, netns::VfLinkState::disable));

    SECTION("the VLAN is always reset on Ethernet, nothing else unless asked") {
        const auto minimal = plan_apply(SriovConf{}, std::nullopt, 0, false);
        REQUIRE(minimal.size() == 1);
        CHECK(minimal[0] == VfChange::set_vlan(0, 0, 0, netns::kVlanProto8021Q));
    }
    SECTION("InfiniBand: no VLAN, no MAC") {
        CHECK(plan_apply(SriovConf{}, std::nullopt, 0, true).empty());
        REQUIRE_CNI_ERROR(plan_apply(conf, std::nullopt, 0, true), ErrorCode::invalid_config, "InfiniBand");
        REQUIRE_CNI_ERROR(plan_apply(SriovConf{}, std::string("0a:00:00:00:00:01"), 0, true), ErrorCode::invalid_config,
                          "no Ethernet MAC");
    }
    SECTION("each change is undone from the saved VF") {
        netns::VfInfo original;
        original.mac = "0a:aa:00:00:00:09";
        original.vlan = 7;
        original.qos = 1;
        original.max_tx_rate = 50;
        original.spoofchk = true;
        original.trust = std::nullopt;  // not reported by this driver
        original.link_state = netns::VfLinkState::auto_;
        test::FakeVfControl fake;
        fake.add_pf("pf", 4);
        fake.vf("pf", 3) = original;
        fake.vf("pf", 3).index = 3;
        fake.vf("pf", 3).trust = false;  // the fake accepts trust; the record says "unknown"
        for (const auto& c : plan) fake.apply("pf", c);
        for (auto it = plan.rbegin(); it != plan.rend(); ++it)
            if (auto undo = restore_change(field_name(it->field), original, 3)) fake.apply("pf", *undo);
        auto after = fake.get("pf", 3);
        CHECK(after.mac == original.mac);
        CHECK(after.vlan == 7);
        CHECK(after.qos == 1);
        CHECK(after.max_tx_rate == 50);
        CHECK(after.spoofchk == std::optional<bool>(true));
        CHECK(after.link_state == netns::VfLinkState::auto_);
        CHECK_FALSE(restore_change("trust", original, 3));  // unknown before: cannot be restored
    }
}

TEST_CASE("apply_verified re-reads the MAC until the driver shows it", "[sriov][settings]") {
    test::FakeVfControl fake;
    fake.add_pf("pf", 1);
    SECTION("late but within the bound") {
        fake.mac_lag(3);
        apply_verified(fake, "pf", VfChange::set_mac(0, "0a:00:00:00:00:02"), 20, std::chrono::milliseconds(1));
        CHECK(fake.vf("pf", 0).mac == "0a:00:00:00:00:02");
        CHECK(fake.list_calls == 4);
    }
    SECTION("never: a clear error after the bounded retries") {
        fake.mac_lag(-1);
        REQUIRE_CNI_ERROR(
            apply_verified(fake, "pf", VfChange::set_mac(0, "0a:00:00:00:00:02"), 5, std::chrono::milliseconds(1)),
            ErrorCode::kernel_failure, "still reports MAC 00:00:00:00:00:00");
        CHECK(fake.list_calls == 5);
    }
}

TEST_CASE("GUID helpers", "[sriov][guid]") {
    netns::VfInfo vf;
    CHECK(current_guid(vf, "") == "");
    // 20-byte IPoIB address: the last 8 bytes are the port GUID.
    CHECK(current_guid(vf, "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a0:b0:01") == "00:02:c9:03:00:a0:b0:01");
    vf.node_guid = 0x1122334455667788ull;
    CHECK(current_guid(vf, "") == "11:22:33:44:55:66:77:88");
    CHECK(is_reserved_guid("00:00:00:00:00:00:00:00"));
    CHECK(is_reserved_guid("ff:ff:ff:ff:ff:ff:ff:ff"));
    CHECK_FALSE(is_reserved_guid("00:00:00:00:00:00:00:01"));

    FakeSysfs tree;
    build_tree(tree);
    rebind_vf(tree.sysfs(), kIbVf, "mlx5_core");
    CHECK(tree.read("bus/pci/drivers/mlx5_core/unbind") == kIbVf);
    CHECK(tree.read("bus/pci/drivers/mlx5_core/bind") == kIbVf);
    CHECK_NOTHROW(rebind_vf(tree.sysfs(), kVfio, "vfio-pci"));  // skipped: nothing written
    CHECK(tree.read("bus/pci/drivers/vfio-pci/unbind").empty());
    CHECK_THROWS(rebind_vf(tree.sysfs(), kIbVf, "no_such_driver"));
}

TEST_CASE("the VF lock is exclusive and bounded", "[sriov][lock]") {
    TempDir dir;
    auto first = FileLock::acquire(dir.path.string(), kVf0, std::chrono::milliseconds(100), "VF lock");
    const auto start = std::chrono::steady_clock::now();
    REQUIRE_CNI_ERROR(FileLock::acquire(dir.path.string(), kVf0, std::chrono::milliseconds(150), "the lock of VF x"),
                      ErrorCode::timeout, "timed out after 150 ms waiting for the lock of VF x");
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(150));
    CHECK_NOTHROW(FileLock::acquire(dir.path.string(), kVfio, std::chrono::milliseconds(10), "other VF"));
    { auto moved = std::move(first); }  // released with its owner
    CHECK_NOTHROW(FileLock::acquire(dir.path.string(), kVf0, std::chrono::milliseconds(10), "VF lock"));
    struct stat st {};
    REQUIRE(::stat((dir.path / (std::string(kVf0) + ".lock")).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("in-use records refuse a VF held by a live netns and clean stale ones", "[sriov][lock]") {
    TempDir dir;
    const InUseRecords records(dir.path.string());
    const VfOwner a{"net", "ctr-a", "net1", "/proc/self/ns/net"};  // a live namespace
    const VfOwner b{"net", "ctr-b", "net1", "/run/netns/rdmanet-gone-" + std::to_string(::getpid())};
    CHECK_FALSE(records.claim(kVf0, a));
    CHECK(records.read(kVf0) == std::optional<VfOwner>(a));
    CHECK(records.claim(kVf0, a));  // ADD retried by the same attachment
    REQUIRE_CNI_ERROR(records.claim(kVf0, b), ErrorCode::device_busy, "VF 0000:af:00.2 is in use by container ctr-a");
    CHECK(records.read(kVf0) == std::optional<VfOwner>(a));

    // b's netns is gone: a later claim by someone else replaces it.
    records.write(kVf0, b);
    CHECK_FALSE(records.claim(kVf0, a));
    CHECK(records.read(kVf0) == std::optional<VfOwner>(a));
    records.remove(kVf0);
    CHECK_FALSE(records.read(kVf0));
    CHECK_NOTHROW(records.remove(kVf0));
}

TEST_CASE("device-info file for Multus", "[sriov][devinfo]") {
    TempDir dir;
    const std::vector<std::string> allowed{(dir.path / "devinfo").string()};
    const std::string path = (dir.path / "devinfo/cni/net-abc_net1").string();
    SECTION("written fresh") {
        write_device_info(allowed, path, kVf0, kPf, "mlx5_5");
        std::ifstream in(path);
        const auto j = nlohmann::json::parse(in);
        CHECK(j["type"] == "pci");
        CHECK(j["version"] == "1.1.0");
        CHECK(j["pci"]["pci-address"] == kVf0);
        CHECK(j["pci"]["pf-pci-address"] == kPf);
        CHECK(j["pci"]["rdma-device"] == "mlx5_5");
        struct stat st {};
        REQUIRE(::stat(path.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0600);
    }
    SECTION("the device plugin's copy is kept and completed") {
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path)
            << R"({"type":"pci","version":"1.0.0","pci":{"pci-address":"x","representor-device":"pf0vf2"}})";
        write_device_info(allowed, path, kVf0, kPf, "");
        std::ifstream in(path);
        const auto j = nlohmann::json::parse(in);
        CHECK(j["pci"]["representor-device"] == "pf0vf2");
        CHECK(j["pci"]["pci-address"] == kVf0);
        CHECK_FALSE(j["pci"].contains("rdma-device"));
    }
    remove_device_info(allowed, path);
    CHECK_FALSE(fs::exists(path));
    CHECK_NOTHROW(remove_device_info(allowed, path));
    CHECK_NOTHROW(remove_device_info(allowed, (dir.path / "devinfo/gone/x").string()));
}

// The path is the NAD author's to choose (a literal runtimeConfig passes through libcni): the
// root plugin must not write or delete anything outside deviceInfoDirs, nor through a symlink.
TEST_CASE("device-info file stays inside deviceInfoDirs", "[sriov][devinfo][policy]") {
    TempDir dir;
    const std::vector<std::string> allowed{(dir.path / "devinfo").string()};
    fs::create_directories(dir.path / "devinfo");
    fs::create_directories(dir.path / "elsewhere");
    const std::string victim = (dir.path / "elsewhere/victim").string();
    std::ofstream(victim) << "keep";
    auto content = [](const std::string& file) {
        std::ifstream in(file);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    auto code_of = [&](const std::string& path) {
        try {
            write_device_info(allowed, path, kVf0, kPf, "");
        } catch (const Error& e) {
            return static_cast<int>(e.code());
        }
        return 0;
    };

    SECTION("outside the allowed directories: code 7, nothing written or removed") {
        CHECK(code_of(victim) == 7);
        CHECK(code_of((dir.path / "devinfo/../elsewhere/victim").string()) == 7);
        CHECK(code_of((dir.path / "devinfo").string()) == 7);
        remove_device_info(allowed, victim);
        CHECK(content(victim) == "keep");
    }
    SECTION("a symlinked directory below the allowed one is not followed") {
        fs::create_directory_symlink(dir.path / "elsewhere", dir.path / "devinfo/cni");
        CHECK(code_of((dir.path / "devinfo/cni/victim").string()) == 5);
        remove_device_info(allowed, (dir.path / "devinfo/cni/victim").string());
        CHECK(content(victim) == "keep");
        CHECK(fs::directory_iterator(dir.path / "elsewhere")->path() == fs::path(victim));
    }
    SECTION("a symlink in the file's place is neither followed nor replaced") {
        const std::string link = (dir.path / "devinfo/net-abc_net1").string();
        fs::create_symlink(victim, link);
        CHECK(code_of(link) == 5);
        CHECK(fs::is_symlink(link));
        CHECK(content(victim) == "keep");
    }
}

TEST_CASE("sriov attachment state survives the JSON round trip", "[sriov][state]") {
    AttachmentState state;
    state.network = "n";
    state.mode = "sriov";
    state.pci_address = kVf0;
    SriovState s;
    s.pf = "ens1f0";
    s.pf_pci = kPf;
    s.vf_index = 3;
    s.dpdk = true;
    s.infiniband = true;
    s.driver = "mlx5_core";
    s.original.index = 3;
    s.original.mac = "0a:00:00:00:00:03";
    s.original.vlan = 5;
    s.original.vlan_proto = netns::kVlanProto8021AD;
    s.original.spoofchk = true;
    s.original.trust = std::nullopt;
    s.original.link_state = netns::VfLinkState::disable;
    s.original.node_guid = 0xfedcba9876543210ull;
    s.applied = {"guid", "rate", "trust"};
    s.original_mtu = 1500;
    s.original_guid = "fe:dc:ba:98:76:54:32:10";
    s.guid = "c2:00:00:00:00:00:00:01";
    s.pkey = 0x8001;
    s.device_info_file = "/run/x";
    state.mode_record = s.to_json();
    const auto back_state = AttachmentState::from_json(nlohmann::json::parse(state.to_json().dump()));
    REQUIRE(back_state.mode_record.is_object());
    CHECK(state.to_json().contains("sriov"));  // the key earlier versions wrote: states survive an upgrade
    const auto back = SriovState::from_json(back_state.mode_record);
    CHECK(back.original == s.original);
    CHECK(back.applied == s.applied);
    CHECK(back.pf == s.pf);
    CHECK(back.vf_index == 3);
    CHECK(back.dpdk);
    CHECK(back.infiniband);
    CHECK(back.original_mtu == 1500);
    CHECK(back.guid == s.guid);
    CHECK(back.original_guid == s.original_guid);
    CHECK(back.pkey == std::optional<unsigned>(0x8001));
    CHECK(back.device_info_file == "/run/x");
    // Other modes carry no sriov object.
    AttachmentState plain;
    CHECK_FALSE(plain.to_json().contains("sriov"));
    CHECK(AttachmentState::from_json(plain.to_json()).mode_record.is_null());
}
