// The file-backed fake kernel of rdmanet-fakekernel (support/fake_kernel_file.hpp): every
// operation is persisted before it returns (what makes a SIGKILLed ADD recoverable in the e2e
// failpoint walk), a refused one changes nothing, separate instances (processes) share one
// "kernel", and RDMA devices of a namespace that no longer exists come home.
#include <catch2/catch.hpp>

#include <filesystem>

#include "rdmanet/netns/error.hpp"
#include "support/fake_kernel_file.hpp"

using namespace rdmanet;
using namespace rdmanet::test;
using json = nlohmann::json;

namespace {

struct TempDir {
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "rdmanet-fk-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()));
        path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string path;
};

json seed() {
    FakeVfControl vfs;
    vfs.add_pf("pf0", 2);
    vfs.add_pf("ibpf0", 1, /*infiniband=*/true);
    return {{"vf", vfs.pfs_json()},
            {"rdma",
             {{"mode", "exclusive"},
              {"devices",
               {{{"index", 1}, {"name", "mlx5_7"}, {"owner", 0}}, {{"index", 2}, {"name", "mlx5_8"}, {"owner", 1}}}}}}};
}

}  // namespace

TEST_CASE("fake kernel file: VF writes are persisted one by one, refusals change nothing", "[fakekernel]") {
    TempDir dir;
    FakeKernelFile file(dir.path + "/kernel.json");
    file.write(seed());
    netns::Rtnl host;
    FakeKernelServices one(file.path(), "", host);
    auto vf = one.services().vf;
    vf->apply("pf0", netns::VfChange::set_vlan(1, 100, 3, netns::kVlanProto8021Q));

    // Another "process" sees it, in the attachment state's VF encoding.
    json now = file.read();
    CHECK(now["vf"]["pf0"]["vfs"][1]["vlan"] == 100);
    CHECK(now["vf"]["pf0"]["vfs"][1]["qos"] == 3);
    CHECK(now["vfLog"] ==
          json::array({"pf0: vf 1 " + netns::VfChange::set_vlan(1, 100, 3, netns::kVlanProto8021Q).describe()}));
    FakeKernelServices two(file.path(), "", host);
    CHECK(two.services().vf->get("pf0", 1).vlan == 100u);

    // The in-memory fake's rules hold: an Ethernet PF refuses a GUID, and nothing is written.
    const std::string before = file.read().dump();
    CHECK_THROWS_AS(vf->apply("pf0", netns::VfChange::set_node_guid(0, 1)), netns::KernelError);
    CHECK_THROWS_AS(vf->apply("nope", netns::VfChange::set_trust(0, true)), netns::KernelError);
    CHECK(file.read().dump() == before);
    vf->apply("ibpf0", netns::VfChange::set_node_guid(0, 0xc211223344556677ull));
    CHECK(file.read()["vf"]["ibpf0"]["vfs"][0]["nodeGuid"] == "c2:11:22:33:44:55:66:77");
}

TEST_CASE("fake kernel file: RDMA devices of a namespace that died return home", "[fakekernel]") {
    TempDir dir;
    FakeKernelFile file(dir.path + "/kernel.json");
    file.write(seed());  // mlx5_8 is owned by "namespace" inode 1, which exists nowhere
    netns::Rtnl host;
    FakeKernelServices fakes(file.path(), "", host);
    auto nl = fakes.services().rdma->open_in(netns::NetNamespace::current());
    CHECK(nl->netns_mode() == netns::RdmaNetnsMode::exclusive);
    const json devices = file.read()["rdma"]["devices"];
    CHECK(devices[0]["owner"] == 0);
    CHECK(devices[1]["owner"] == 0);
    CHECK(file.read()["rdmaCalls"] == json::array({"sys_get"}));
    // Exclusive mode: the host's view sees both now.
    CHECK(nl->devices().size() == 2);
}

TEST_CASE("fake kernel file: without a state file path every operation fails clearly", "[fakekernel]") {
    netns::Rtnl host;
    FakeKernelServices fakes("", "", host);
    CHECK_THROWS_WITH(fakes.services().vf->list("pf0"), Catch::Contains("RDMANET_FAKE_KERNEL_STATE is not set"));
}
