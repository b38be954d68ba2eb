// mode "sriov" through the plugin's entry point, in-process: the VF netdev (a real veth end) moves
// into a real pod netns and back on the real kernel; PF-side VF netlink is the recording fake
// (this kernel has no SR-IOV). Checks ADD -> CHECK -> DEL restores every original setting,
// every failure point in ADD leaves the VF exactly as it was, and bad input leaves it untouched.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sriov_bed.hpp"

using namespace rdmanet;
using namespace rdmanet::test;
using namespace rdmanet::test::sriov;
using netns::VfChange;
using Field = VfChange::Field;

namespace {

nlohmann::json full_settings() {
    return {{"mac", "0a:58:0a:01:00:05"}, {"vlan", 100},   {"vlanQoS", 3},           {"vlanProto", "802.1ad"},
            {"spoofchk", "off"},          {"trust", "on"}, {"link_state", "enable"}, {"min_tx_rate", 100},
            {"max_tx_rate", 1000},        {"mtu", 1400}};
}

std::string id(const std::string& tag) { return unique_name("c" + tag); }

}  // namespace

TEST_CASE("sriov: ADD -> CHECK -> DEL restores every original setting", "[integration][sriov]") {
    SriovBed bed;
    const auto before_vf = bed.fake.vf(bed.pf, 0);
    const auto before_dev = bed.host_netdev(bed.vf0.name_a());
    REQUIRE(before_dev);
    const std::string devinfo = bed.work + "/devinfo/cni/sriov-test-x_net1";
    auto conf = bed.conf(full_settings());
    conf["runtimeConfig"] = {{"CNIDeviceInfoFile", devinfo}};
    const auto cid = id("ok");

    const auto add = bed.call("ADD", conf, cid);
    INFO(add.raw);
    REQUIRE(add.rc == 0);
    // The result Multus reads: mac, mtu, pciID of our interface.
    const auto& iface = add.out["interfaces"][0];
    CHECK(iface["name"] == "net1");
    CHECK(iface["mac"] == "0a:58:0a:01:00:05");
    CHECK(iface["mtu"] == 1400);
    CHECK(iface["pciID"] == kVfPci);
    CHECK(iface["sandbox"] == bed.pod.path());

    // The netdev: gone from the host, in the pod as net1 with MAC and MTU, old name not an altname.
    CHECK_FALSE(bed.host_netdev(bed.vf0.name_a()));
    auto pod = rtnl_in(bed.pod);
    auto in_pod = pod->link_by_name("net1");
    REQUIRE(in_pod);
    CHECK(in_pod->mac == "0a:58:0a:01:00:05");
    CHECK(in_pod->mtu == 1400);
    CHECK(in_pod->alias == bed.vf0.name_a());
    CHECK(std::find(in_pod->altnames.begin(), in_pod->altnames.end(), bed.vf0.name_a()) == in_pod->altnames.end());

    // The PF side, in sriov-cni's order.
    const auto& vf = bed.fake.vf(bed.pf, 0);
    CHECK(vf.mac == "0a:58:0a:01:00:05");
    CHECK(vf.vlan == 100);
    CHECK(vf.qos == 3);
    CHECK(vf.vlan_proto == netns::kVlanProto8021AD);
    CHECK(vf.min_tx_rate == 100);
    CHECK(vf.max_tx_rate == 1000);
    CHECK(vf.spoofchk == std::optional<bool>(false));
    CHECK(vf.trust == std::optional<bool>(true));
    CHECK(vf.link_state == netns::VfLinkState::enable);
    std::vector<Field> order;
    for (const auto& [pf, change] : bed.fake.log) order.push_back(change.field);
    CHECK(order ==
          std::vector<Field>{Field::vlan, Field::mac, Field::rate, Field::spoofchk, Field::trust, Field::link_state});

    // Ownership record and Multus device-info file.
    CHECK(bed.vf_record_exists(kVfPci));
    {
        std::ifstream in(devinfo);
        REQUIRE(in);
        const auto info = nlohmann::json::parse(in);
        CHECK(info["type"] == "pci");
        CHECK(info["pci"]["pci-address"] == kVfPci);
        CHECK(info["pci"]["pf-pci-address"] == kPfPci);
        CHECK(info["pci"]["rdma-device"] == "mlx5_7");
    }

    // CHECK with the cached result passes ...
    auto check_conf = conf;
    check_conf["prevResult"] = add.out;
    const auto check = bed.call("CHECK", check_conf, cid);
    INFO(check.raw);
    CHECK(check.rc == 0);
    // ... and notices a PF-side setting changed behind our back.
    bed.fake.vf(bed.pf, 0).vlan = 5;
    const auto tampered = bed.call("CHECK", check_conf, cid);
    CHECK(tampered.rc != 0);
    CHECK_THAT(tampered.msg(), Catch::Matchers::Contains("no longer has vlan 100"));
    bed.fake.vf(bed.pf, 0).vlan = 100;

    const auto del = bed.call("DEL", conf, cid);
    INFO(del.raw);
    REQUIRE(del.rc == 0);
    CHECK(bed.fake.vf(bed.pf, 0) == before_vf);
    CHECK(bed.host_netdev(bed.vf0.name_a()) == before_dev);
    CHECK(bed.pod_links() == std::vector<std::string>{"lo"});
    CHECK_FALSE(bed.vf_record_exists(kVfPci));
    CHECK_FALSE(std::filesystem::exists(devinfo));
    CHECK(bed.state_files() == 0);

    // DEL is idempotent and touches nothing the second time.
    const auto log_size = bed.fake.log.size();
    CHECK(bed.call("DEL", conf, cid).rc == 0);
    CHECK(bed.fake.log.size() == log_size);
}

TEST_CASE("sriov: every failure point in ADD leaves the VF exactly as it was", "[integration][sriov]") {
    SriovBed bed;
    const auto before_vf = bed.fake.vf(bed.pf, 0);
    const auto before_dev = bed.host_netdev(bed.vf0.name_a());
    REQUIRE(before_dev);

    auto expect_untouched = [&](const Outcome& add) {
        INFO(add.raw);
        CHECK(add.rc != 0);
        CHECK(bed.fake.vf(bed.pf, 0) == before_vf);
        CHECK(bed.host_netdev(bed.vf0.name_a()) == before_dev);
        CHECK(bed.pod_links() == std::vector<std::string>{"lo"});
        CHECK_FALSE(bed.vf_record_exists(kVfPci));
        CHECK(bed.state_files() == 0);
    };

    // Each of the six PF-side writes fails in turn (EIO from the driver).
    for (int n = 1; n <= 6; ++n) {
        DYNAMIC_SECTION("PF-side write " << n << " fails") {
            bed.fake.fail_call(n, EIO);
            expect_untouched(bed.call("ADD", bed.conf(full_settings()), id("f")));
            // Writes before n happened and were undone; the failed field itself is written back too
            // (a driver may have applied part of it), so the log is never empty.
            CHECK(bed.fake.log.size() == static_cast<std::size_t>(2 * (n - 1) + 1));
        }
    }
    SECTION("the admin MAC never shows up") {
        bed.fake.mac_lag(-1);
        const auto add = bed.call("ADD", bed.conf(full_settings()), id("m"));
        CHECK_THAT(add.msg(), Catch::Matchers::Contains("still reports MAC"));
        expect_untouched(add);
    }
    SECTION("after the netdev moved: the device-info file cannot be written") {
        auto conf = bed.conf(full_settings());
        std::filesystem::create_directories(bed.work + "/a-directory");
        conf["runtimeConfig"] = {{"CNIDeviceInfoFile", bed.work + "/a-directory"}};
        const auto add = bed.call("ADD", conf, id("d"));
        CHECK(add.code() == 5);
        expect_untouched(add);
    }
    SECTION("the pod already has the name (as another link's altname)") {
        // The kernel resolves names through altnames too: net1 is not free, ADD refuses up front.
        ScopedVeth occupant(&bed.pod, &bed.pod, "oc");
        bed.pod.ip({"link", "property", "add", "dev", occupant.name_a(), "altname", "net1"});
        const auto add = bed.call("ADD", bed.conf(full_settings()), id("t"));
        INFO(add.raw);
        CHECK(add.code() == 102);
        CHECK(bed.fake.vf(bed.pf, 0) == before_vf);
        CHECK(bed.host_netdev(bed.vf0.name_a()) == before_dev);
        CHECK_FALSE(bed.vf_record_exists(kVfPci));
    }
}

TEST_CASE("sriov: bad input gets the right error and leaves the VF untouched", "[integration][sriov]") {
    SriovBed bed;
    bed.tree.add_function("0000:3b:00.0", std::nullopt);
    const auto before_vf = bed.fake.vf(bed.pf, 0);
    const auto before_dev = bed.host_netdev(bed.vf0.name_a());
    struct Case {
        std::string name;
        nlohmann::json extra;
        int code;
        std::string fragment;
    };
    const std::vector<Case> cases = {
        {"malformed deviceID", {{"deviceID", "0000:af:00"}}, 7, "not a PCI address"},
        {"not a VF", {{"deviceID", "0000:3b:00.0"}}, 7, "not an SR-IOV virtual function"},
        {"no such device", {{"deviceID", "0000:af:09.0"}}, 101, "does not exist"},
        {"vlan out of range", {{"vlan", 4095}}, 7, "vlan 4095 is out of range"},
        {"qos without vlan", {{"vlanQoS", 2}}, 7, "vlanQoS needs"},
        {"min above max", {{"min_tx_rate", 10}, {"max_tx_rate", 5}}, 7, "min_tx_rate 10 is above"},
        {"bad pkey", {{"pkey", "0x0000"}}, 7, "pkey"},
        {"bad guid", {{"guid", "00:00:00:00:00:00:00:00"}}, 7, "guid"},
        {"GUID for an Ethernet VF", {{"guid", "c2:00:00:00:00:00:00:01"}}, 7, "Ethernet VF"},
    };
    for (const auto& c : cases) {
        DYNAMIC_SECTION(c.name) {
            const auto add = bed.call("ADD", bed.conf(c.extra), id("b"));
            INFO(add.raw);
            CHECK(add.rc != 0);
            CHECK(add.code() == c.code);
            CHECK_THAT(add.msg(), Catch::Matchers::Contains(c.fragment));
            CHECK(bed.fake.log.empty());
            CHECK(bed.fake.vf(bed.pf, 0) == before_vf);
            CHECK(bed.host_netdev(bed.vf0.name_a()) == before_dev);
            CHECK(bed.state_files() == 0);
        }
    }
    SECTION("CNI_ARGS guid that is not a GUID") {
        const auto add = bed.call("ADD", bed.conf(), id("g"), "IgnoreUnknown=true;guid=zz");
        CHECK(add.code() == 4);
        CHECK(bed.fake.log.empty());
    }
}

TEST_CASE("sriov: a VF held by a live pod is refused, a stale record is cleaned", "[integration][sriov]") {
    SriovBed bed;
    ScopedNetns other("other");
    const auto before_vf = bed.fake.vf(bed.pf, 0);
    std::filesystem::create_directories(bed.state_dir() + "/sriov/pci");
    auto write_record = [&](const std::string& netns) {
        std::ofstream(bed.state_dir() + "/sriov/pci/" + kVfPci)
            << nlohmann::json{{"network", "x"}, {"containerID", "old"}, {"ifname", "net1"}, {"netns", netns}}.dump();
    };
    SECTION("live holder") {
        write_record(other.path());
        const auto add = bed.call("ADD", bed.conf(full_settings()), id("busy"));
        INFO(add.raw);
        CHECK(add.code() == 102);
        CHECK_THAT(add.msg(), Catch::Matchers::Contains("in use by container old"));
        CHECK(bed.fake.log.empty());
        CHECK(bed.fake.vf(bed.pf, 0) == before_vf);
        CHECK(bed.host_netdev(bed.vf0.name_a()));
    }
    SECTION("stale holder (netns gone)") {
        write_record("/run/netns/rdmanet-test-gone-" + std::to_string(::getpid()));
        const auto cid = id("st");
        const auto add = bed.call("ADD", bed.conf(), cid);
        INFO(add.raw);
        REQUIRE(add.rc == 0);
        CHECK(bed.call("DEL", bed.conf(), cid).rc == 0);
        CHECK_FALSE(bed.vf_record_exists(kVfPci));
    }
}

TEST_CASE("sriov: a late DEL of an old pod does not reset a VF given to a new pod", "[integration][sriov]") {
    SriovBed bed;
    auto old_pod = std::make_unique<ScopedNetns>("old");
    const std::string old_path = old_pod->path();
    const auto old_id = id("old");
    REQUIRE(bed.call("ADD", bed.conf({{"vlan", 10}}), old_id, "", old_path).rc == 0);
    ScopedNetns fresh("fresh");
    const auto new_id = id("new");

    SECTION("while the old pod's netns lives, the VF is refused") {
        const auto add = bed.call("ADD", bed.conf({{"vlan", 20}}), new_id, "", fresh.path());
        CHECK(add.code() == 102);
        CHECK(bed.fake.vf(bed.pf, 0).vlan == 10);
    }
    SECTION("the old netns died without DEL: the new pod takes the VF, the old DEL leaves it alone") {
        // What the kernel does on netns destruction: the physical netdev returns to the host.
        {
            auto pod = rtnl_in(*old_pod);
            auto link = pod->link_by_name("net1");
            REQUIRE(link);
            pod->move_link(link->index, netns::NetNamespace::current().fd(), bed.vf0.name_a());
        }
        old_pod.reset();
        const auto add = bed.call("ADD", bed.conf({{"vlan", 20}}), new_id, "", fresh.path());
        INFO(add.raw);
        REQUIRE(add.rc == 0);
        CHECK(bed.fake.vf(bed.pf, 0).vlan == 20);

        const auto log_size = bed.fake.log.size();
        const auto late = bed.call("DEL", bed.conf({{"vlan", 10}}), old_id, "", old_path);
        INFO(late.raw);
        CHECK(late.rc == 0);
        CHECK(bed.fake.log.size() == log_size);  // not a single PF-side write
        CHECK(bed.fake.vf(bed.pf, 0).vlan == 20);
        CHECK(bed.vf_record_exists(kVfPci));
        auto in_fresh = rtnl_in(fresh)->link_by_name("net1");
        CHECK(in_fresh);

        REQUIRE(bed.call("DEL", bed.conf({{"vlan", 20}}), new_id, "", fresh.path()).rc == 0);
        CHECK(bed.fake.vf(bed.pf, 0).vlan == 10);  // the new pod found it at vlan 10 and restores that
        CHECK_FALSE(bed.vf_record_exists(kVfPci));
    }
}

TEST_CASE("sriov: DEL finds the VF netdev the kernel returned under its pod name", "[integration][sriov]") {
    SriovBed bed;
    const auto before_dev = bed.host_netdev(bed.vf0.name_a());
    const auto cid = id("ret");
    REQUIRE(bed.call("ADD", bed.conf({{"mac", "0a:58:0a:01:00:09"}}), cid).rc == 0);
    // What the kernel does when the pod netns dies: the physical netdev comes back to the host
    // under its pod name (here a unique stand-in for "net1") with its alias; sysfs follows.
    const std::string returned = unique_name("net");
    {
        auto pod = rtnl_in(bed.pod);
        auto link = pod->link_by_name("net1");
        REQUIRE(link);
        pod->move_link(link->index, netns::NetNamespace::current().fd(), returned);
    }
    bed.tree.rename_netdev(kVfPci, bed.vf0.name_a(), returned);
    const auto del = bed.call("DEL", bed.conf({{"mac", "0a:58:0a:01:00:09"}}), cid, "",
                              "/run/netns/rdmanet-gone-" + std::to_string(::getpid()));
    INFO(del.raw);
    REQUIRE(del.rc == 0);
    bed.tree.rename_netdev(kVfPci, returned, bed.vf0.name_a());
    CHECK(bed.host_netdev(bed.vf0.name_a()) == before_dev);
    CHECK_FALSE(bed.host_netdev(returned));
    CHECK(bed.fake.vf(bed.pf, 0).mac == "0a:00:00:00:00:aa");
}

TEST_CASE("sriov: a DPDK (vfio) VF gets PF-side settings but no netdev move", "[integration][sriov]") {
    SriovBed bed;
    const auto before_vf = bed.fake.vf(bed.pf, 1);
    auto conf = bed.conf({{"deviceID", kVfioPci}, {"mac", "0a:58:0a:01:00:07"}, {"vlan", 30}});
    const auto cid = id("dpdk");
    const auto add = bed.call("ADD", conf, cid);
    INFO(add.raw);
    REQUIRE(add.rc == 0);
    CHECK(add.out["interfaces"][0]["mac"] == "0a:58:0a:01:00:07");
    CHECK(add.out["interfaces"][0]["pciID"] == kVfioPci);
    CHECK(bed.pod_links() == std::vector<std::string>{"lo"});
    CHECK(bed.fake.vf(bed.pf, 1).vlan == 30);

    auto check_conf = conf;
    check_conf["prevResult"] = add.out;
    const auto check = bed.call("CHECK", check_conf, cid);
    INFO(check.raw);
    CHECK(check.rc == 0);

    // DEL knows it was DPDK from the state, even though a config without deviceID is passed.
    auto del_conf = conf;
    del_conf.erase("deviceID");
    REQUIRE(bed.call("DEL", del_conf, cid).rc == 0);
    CHECK(bed.fake.vf(bed.pf, 1) == before_vf);
    CHECK(bed.state_files() == 0);
}

TEST_CASE("sriov: InfiniBand VF GUID set with a rebind, restored on DEL", "[integration][sriov][ib]") {
    SriovBed bed;
    const auto original = bed.fake.vf(bed.ibpf, 0);
    REQUIRE(original.node_guid);
    auto conf = bed.conf({{"deviceID", kIbVfPci}, {"pkey", "0x8001"}});
    conf["runtimeConfig"] = {{"infinibandGUID", "c2:11:22:33:44:55:66:77"}};
    const auto cid = id("ib");
    const auto add = bed.call("ADD", conf, cid);
    INFO(add.raw);
    REQUIRE(add.rc == 0);
    const auto& vf = bed.fake.vf(bed.ibpf, 0);
    CHECK(vf.node_guid == std::optional<std::uint64_t>(0xc211223344556677ull));
    CHECK(vf.port_guid == std::optional<std::uint64_t>(0xc211223344556677ull));
    CHECK(bed.tree.read("bus/pci/drivers/mlx5_core/unbind") == kIbVfPci);
    CHECK(bed.tree.read("bus/pci/drivers/mlx5_core/bind") == kIbVfPci);
    // No MAC or VLAN is ever written to an IB VF.
    for (const auto& [pf, change] : bed.fake.log) {
        CHECK(change.field != Field::mac);
        CHECK(change.field != Field::vlan);
    }
    // pkey is recorded in the state.
    std::ifstream state_in([&] {
        for (const auto& e : std::filesystem::directory_iterator(bed.state_dir()))
            if (e.is_regular_file()) return e.path().string();
        return std::string();
    }());
    const auto state = nlohmann::json::parse(state_in);
    CHECK(state["sriov"]["pkey"] == 0x8001);
    CHECK(state["sriov"]["guid"] == "c2:11:22:33:44:55:66:77");

    REQUIRE(bed.call("DEL", conf, cid).rc == 0);
    CHECK(bed.fake.vf(bed.ibpf, 0).node_guid == original.node_guid);
    CHECK(bed.fake.vf(bed.ibpf, 0).port_guid == original.port_guid);

    SECTION("no GUID given and the VF has none usable: refused before anything changes") {
        bed.fake.vf(bed.ibpf, 0).node_guid = 0;
        bed.fake.log.clear();
        const auto bad = bed.call("ADD", bed.conf({{"deviceID", kIbVfPci}}), id("ib0"));
        CHECK(bad.code() == 7);
        CHECK_THAT(bad.msg(), Catch::Matchers::Contains("has no usable GUID"));
        CHECK(bed.fake.log.empty());
        CHECK(bed.host_netdev(bed.ibvf.name_a()));
    }
    SECTION("a MAC for an IB VF is a config error") {
        const auto bad = bed.call("ADD", bed.conf({{"deviceID", kIbVfPci}, {"mac", "0a:00:00:00:00:01"}}), id("ibm"));
        CHECK(bad.code() == 7);
    }
}

TEST_CASE("sriov: args.cni.guid sets the IB VF GUID over CNI_ARGS and config", "[integration][sriov][ib][guid]") {
    SriovBed bed;
    const auto original = bed.fake.vf(bed.ibpf, 0);
    auto conf = bed.conf({{"deviceID", kIbVfPci},
                          {"guid", "c2:00:00:00:00:00:00:01"},
                          {"args", {{"cni", {{"guid", "C2:00:00:00:00:00:00:04"}}}}}});
    const auto cid = id("iba");
    const auto add = bed.call("ADD", conf, cid, "IgnoreUnknown=true;guid=c2:00:00:00:00:00:00:02");
    INFO(add.raw);
    REQUIRE(add.rc == 0);
    CHECK(bed.fake.vf(bed.ibpf, 0).node_guid == std::optional<std::uint64_t>(0xc200000000000004ull));
    CHECK(bed.fake.vf(bed.ibpf, 0).port_guid == std::optional<std::uint64_t>(0xc200000000000004ull));
    REQUIRE(bed.call("DEL", conf, cid).rc == 0);
    CHECK(bed.fake.vf(bed.ibpf, 0) == original);

    SECTION("a bad args.cni.guid is refused before the VF is touched") {
        bed.fake.log.clear();
        const auto bad = bed.call(
            "ADD", bed.conf({{"deviceID", kIbVfPci}, {"args", {{"cni", {{"guid", "ff:ff:ff:ff:ff:ff:ff:ff"}}}}}}),
            id("ibb"));
        CHECK(bad.code() == 7);
        CHECK_THAT(bad.msg(), Catch::Matchers::Contains("args.cni.guid"));
        CHECK(bed.fake.log.empty());
        CHECK(bed.fake.vf(bed.ibpf, 0) == original);
    }
}

TEST_CASE("sriov: CHECK verifies the IB VF's GUID and names the difference", "[integration][sriov][ib][guid]") {
    SriovBed bed;
    auto conf = bed.conf({{"deviceID", kIbVfPci}});
    conf["runtimeConfig"] = {{"infinibandGUID", "c2:11:22:33:44:55:66:77"}};
    const auto cid = id("ibc");
    const auto add = bed.call("ADD", conf, cid);
    INFO(add.raw);
    REQUIRE(add.rc == 0);
    auto check_conf = conf;
    check_conf["prevResult"] = add.out;
    const auto ok = bed.call("CHECK", check_conf, cid);
    INFO(ok.raw);
    CHECK(ok.rc == 0);

    // Something (a driver reload, another tool) puts another GUID on the VF.
    bed.fake.vf(bed.ibpf, 0).node_guid = 0xc211223344556699ull;
    const auto tampered = bed.call("CHECK", check_conf, cid);
    INFO(tampered.raw);
    CHECK(tampered.rc != 0);
    CHECK(tampered.code() == 7);
    CHECK_THAT(tampered.msg(), Catch::Matchers::Contains("InfiniBand VF " + std::string(kIbVfPci)) &&
                                   Catch::Matchers::Contains("has node GUID c2:11:22:33:44:55:66:99") &&
                                   Catch::Matchers::Contains("expected c2:11:22:33:44:55:66:77"));

    SECTION("without the runtime's GUID on CHECK, the one ADD recorded is the reference") {
        auto bare = bed.conf({{"deviceID", kIbVfPci}});
        bare["prevResult"] = add.out;
        const auto r = bed.call("CHECK", bare, cid);
        CHECK(r.rc != 0);
        CHECK_THAT(r.msg(), Catch::Matchers::Contains("expected c2:11:22:33:44:55:66:77"));
        bed.fake.vf(bed.ibpf, 0).node_guid = 0xc211223344556677ull;
        CHECK(bed.call("CHECK", bare, cid).rc == 0);
    }
    SECTION("the port GUID is checked too") {
        bed.fake.vf(bed.ibpf, 0).node_guid = 0xc211223344556677ull;
        bed.fake.vf(bed.ibpf, 0).port_guid = 0x1ull;
        const auto r = bed.call("CHECK", check_conf, cid);
        CHECK(r.rc != 0);
        CHECK_THAT(r.msg(), Catch::Matchers::Contains("port GUID 00:00:00:00:00:00:00:01"));
    }
    bed.fake.vf(bed.ibpf, 0).node_guid = 0xc211223344556677ull;
    bed.fake.vf(bed.ibpf, 0).port_guid = 0xc211223344556677ull;
    REQUIRE(bed.call("DEL", conf, cid).rc == 0);
}
