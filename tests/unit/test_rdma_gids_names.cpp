// The RDMA GIDs and device names of a rail (multi-rail RDMA), the pieces that are pure logic or
// fake-kernel semantics: rdma.deviceName and rdma.gidTimeoutMs parsing, the RoCE v2 GID of an
// address and its lookup in a GID table, the GID table as sysfs shows it, the rename message, and
// the fake kernel's rename rules.
#include <catch2/catch.hpp>

#include <linux/netlink.h>

#include <filesystem>
#include <fstream>

#include "cni_test_helpers.hpp"
#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/modes/net_conf.hpp"
#include "rdmanet/cni/modes/rdma/roce_gids.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/rdma.hpp"
#include "rdmanet/netns/rdma_gids.hpp"
#include "support/fake_rdma.hpp"

using namespace rdmanet;
using namespace rdmanet::cni;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json hostdev(json extra = json::object()) {
    json j =
        json::parse(R"({"cniVersion":"1.0.0","name":"rail0","type":"rdmanet","mode":"hostdev","device":"ens2f0"})");
    j.update(extra);
    return j;
}
NetConf parse(const json& j, Command c = Command::add) { return parse_net_conf(j.dump(), c); }
base::IpAddress ip(const char* text) { return *base::IpAddress::parse(text); }

struct TempTree {
    fs::path root = fs::temp_directory_path() / ("rdmanet-gids-" + std::to_string(::getpid()));
    TempTree() { fs::create_directories(root); }
    ~TempTree() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    void put(const std::string& rel, const std::string& content) const {
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << content << "\n";
    }
};

}  // namespace

TEST_CASE("rdma.deviceName: optional, validated like a kernel RDMA device name",
          "[rdma][config][unit][rdma-gids-names]") {
    CHECK(parse(hostdev()).rdma.device_name.empty());
    CHECK(parse(hostdev({{"rdma", {{"deviceName", "rdma0"}}}})).rdma.device_name == "rdma0");
    CHECK(parse(hostdev({{"rdma", {{"deviceName", "rail_3.a-b"}}}})).rdma.device_name == "rail_3.a-b");
    CHECK(parse(hostdev({{"rdma", {{"deviceName", std::string(63, 'a')}}}})).rdma.device_name.size() == 63);
    for (const std::string& bad :
         std::vector<std::string>{"", "mlx5_%d", "a/b", "a b", ".", "..", "rdma\n0", std::string(64, 'a')})
        REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"deviceName", bad}}}})), ErrorCode::invalid_config,
                          "rdma.deviceName");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"deviceName", 7}}}})), ErrorCode::invalid_config, "rdma.deviceName");
    // The pod never owns the device with isolation off: a name cannot be given to it.
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"deviceName", "rdma0"}, {"isolation", "off"}}}})),
                      ErrorCode::invalid_config, "rdma.deviceName");
    CHECK(rdma_device_name_problem("rdma0").empty());
    CHECK_THAT(rdma_device_name_problem("x%d"), Catch::Contains("%"));
    CHECK_THAT(rdma_device_name_problem(std::string(64, 'x')), Catch::Contains("63"));
}

TEST_CASE("rdma.gidTimeoutMs: 5000 by default, 0-60000", "[rdma][config][unit][rdma-gids-names]") {
    CHECK(parse(hostdev()).rdma.gid_timeout_ms == 5000);
    CHECK(parse(hostdev({{"rdma", {{"gidTimeoutMs", 0}}}})).rdma.gid_timeout_ms == 0);
    CHECK(parse(hostdev({{"rdma", {{"gidTimeoutMs", 60000}}}})).rdma.gid_timeout_ms == 60000);
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"gidTimeoutMs", 60001}}}})), ErrorCode::invalid_config,
                      "rdma.gidTimeoutMs");
    REQUIRE_CNI_ERROR(parse(hostdev({{"rdma", {{"gidTimeoutMs", -1}}}})), ErrorCode::invalid_config,
                      "rdma.gidTimeoutMs");
}

TEST_CASE("RoCE v2 GID of an address, as sysfs prints it", "[rdma][unit][rdma-gids-names]") {
    CHECK(roce_v2_gid(ip("192.168.100.1")) == "0000:0000:0000:0000:0000:ffff:c0a8:6401");
    CHECK(roce_v2_gid(ip("10.0.0.255")) == "0000:0000:0000:0000:0000:ffff:0a00:00ff");
    CHECK(roce_v2_gid(ip("fd00:1::a")) == "fd00:0001:0000:0000:0000:0000:0000:000a");
    CHECK(roce_v2_gid(ip("2001:db8::ABCD:1")) == "2001:0db8:0000:0000:0000:0000:abcd:0001");
}

TEST_CASE("GID match: the lowest RoCE v2 entry per address, v1 and IB entries ignored",
          "[rdma][unit][rdma-gids-names]") {
    const std::string v4 = "0000:0000:0000:0000:0000:ffff:c0a8:6401";
    const std::string v6 = "fd00:0001:0000:0000:0000:0000:0000:000a";
    const std::vector<netns::RdmaGidEntry> table = {
        {1, 0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"},
        {1, 1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2"},
        {1, 2, v4, "IB/RoCE v1"},
        {1, 3, v4, "RoCE v2"},
        {1, 5, v4, "RoCE v2"},
        {1, 6, v6, "IB/RoCE v1"},
    };
    const auto match = match_roce_v2_gids(table, {ip("192.168.100.1"), ip("fd00:1::a")});
    REQUIRE(match.found.size() == 1);
    CHECK(match.found[0] == RoceGid{"192.168.100.1", v4, 1, 3});
    CHECK(match.missing == std::vector<std::string>{"fd00:1::a"});
    CHECK(match_roce_v2_gids({}, {ip("192.168.100.1")}).missing.size() == 1);
    CHECK(match_roce_v2_gids(table, {}).found.empty());

    // The record survives the attachment state / device-info JSON; junk entries are skipped.
    json j = roce_gids_to_json(match.found);
    CHECK(j == json::parse(R"([{"address":"192.168.100.1","gid":")" + v4 + R"(","port":1,"index":3}])"));
    j.push_back({{"address", 5}});
    j.push_back("x");
    CHECK(roce_gids_from_json(j) == match.found);
}

TEST_CASE("GID table from sysfs: used entries with their types, RoCE detected by link layer",
          "[rdma][unit][rdma-gids-names]") {
    TempTree tree;
    const std::string port = "class/infiniband/rdma0/ports/1/";
    tree.put(port + "link_layer", "Ethernet");
    tree.put(port + "gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456");
    tree.put(port + "gid_attrs/types/0", "IB/RoCE v1");
    tree.put(port + "gids/1", "0000:0000:0000:0000:0000:0000:0000:0000");  // unused slot
    tree.put(port + "gids/10", "0000:0000:0000:0000:0000:FFFF:C0A8:6401");
    tree.put(port + "gid_attrs/types/10", "RoCE v2");
    tree.put(port + "gids/2", "0000:0000:0000:0000:0000:ffff:c0a8:6402");  // type unreadable
    const netns::Sysfs sysfs(tree.root.string());
    const auto table = netns::read_gid_table(sysfs, "rdma0");
    CHECK(table.exists);
    CHECK(table.roce);
    REQUIRE(table.entries.size() == 3);
    CHECK(table.entries[0] == netns::RdmaGidEntry{1, 0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"});
    CHECK(table.entries[1] == netns::RdmaGidEntry{1, 2, "0000:0000:0000:0000:0000:ffff:c0a8:6402", ""});
    CHECK(table.entries[2] == netns::RdmaGidEntry{1, 10, "0000:0000:0000:0000:0000:ffff:c0a8:6401", "RoCE v2"});
    CHECK(match_roce_v2_gids(table.entries, {ip("192.168.100.1")}).found.at(0).index == 10);

    tree.put("class/infiniband/ib0dev/ports/1/link_layer", "InfiniBand");
    const auto ib = netns::read_gid_table(sysfs, "ib0dev");
    CHECK(ib.exists);
    CHECK_FALSE(ib.roce);
    CHECK_FALSE(netns::read_gid_table(sysfs, "absent").exists);
    CHECK_FALSE(netns::read_gid_table(sysfs, "..").exists);
    CHECK_FALSE(netns::read_gid_table(sysfs, "rdma0/../rdma0").exists);
}

TEST_CASE("rename is SET with DEV_INDEX and a NUL-terminated DEV_NAME", "[rdma][unit][rdma-gids-names]") {
    const auto msg = netns::rdma_wire::encode_rename(7, 3, "rdma0");
    // header 16 + index attr 8 + name attr (4 + 6 -> padded 12) = 36
    REQUIRE(msg.size() == 36);
    const auto* hdr = reinterpret_cast<const nlmsghdr*>(msg.data());
    CHECK(hdr->nlmsg_len == 36);
    CHECK(hdr->nlmsg_type == 0x1402);
    CHECK(hdr->nlmsg_flags == (NLM_F_REQUEST | NLM_F_ACK));
    CHECK(hdr->nlmsg_seq == 7);
    CHECK(msg[16] == 8);  // nla_len
    CHECK(msg[18] == 1);  // RDMA_NLDEV_ATTR_DEV_INDEX
    CHECK(msg[20] == 3);
    CHECK(msg[24] == 10);  // 4 + "rdma0\0"
    CHECK(msg[26] == 2);   // RDMA_NLDEV_ATTR_DEV_NAME
    CHECK(std::string(reinterpret_cast<const char*>(&msg[28])) == "rdma0");
}

TEST_CASE("fake RDMA kernel: rename follows ib_device_rename", "[rdma][unit][rdma-gids-names]") {
    using netns::KernelError;
    test::FakeRdmaKernel kernel(1);  // namespace ids: 1 = init, 2 and 3 = pods
    kernel.boot_mode(netns::RdmaNetnsMode::exclusive);
    const auto a = kernel.add_device("mlx5_3");
    kernel.add_device("mlx5_4");
    auto host = kernel.open_view(1);
    std::vector<std::pair<std::string, std::string>> renames;
    kernel.on_rename = [&](const std::string& from, const std::string& to) { renames.emplace_back(from, to); };

    host->rename_device(a, "mlx5_3");  // its own name: a no-op
    CHECK(renames.empty());
    try {
        host->rename_device(a, "mlx5_4");
        FAIL("no EEXIST");
    } catch (const KernelError& e) {
        CHECK(e.errno_value() == EEXIST);
    }
    CHECK_THROWS_AS(host->rename_device(a, ""), KernelError);
    CHECK_THROWS_AS(host->rename_device(99, "x"), KernelError);
    host->rename_device(a, "rdma0");
    CHECK(host->device_by_name("rdma0"));
    CHECK_FALSE(host->device_by_name("mlx5_3"));
    CHECK(renames == std::vector<std::pair<std::string, std::string>>{{"mlx5_3", "rdma0"}});

    // Names are node-wide: a device in another namespace still blocks the name, and a view that
    // does not see a device cannot rename it.
    auto pod2 = kernel.open_view(2);
    CHECK_THROWS_AS(pod2->rename_device(a, "x"), KernelError);
    CHECK(kernel.visible_in("rdma0", 1));
    CHECK_FALSE(kernel.visible_in("rdma0", 2));
    CHECK(kernel.calls().back() == "rename #" + std::to_string(a) + " x");
}
