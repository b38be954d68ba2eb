// The RDMA netlink scenarios against the fake kernel: the same functions the kernel lab runs
// against Debian 6.1 with soft-RoCE ([rdma-real]), so the fake keeps the kernel's semantics.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdmanet/netns/error.hpp"
#include "support/fake_rdma.hpp"
#include "support/rdma_scenarios.hpp"

using namespace rdmanet;
using namespace rdmanet::test;
namespace sc = rdmanet::test::rdma_scenarios;

namespace {

// A token with its own inode stands for a namespace; the fake counts it as existing.
class FakeNetns final : public sc::ScenarioNetns {
public:
    explicit FakeNetns(FakeRdmaKernel& k) : k_(k), fd_(::memfd_create("rdmanet-fake-netns", MFD_CLOEXEC)) {
        if (fd_ < 0) throw std::runtime_error("memfd_create");
        k_.netns_created(netns_id_of_fd(fd_));
    }
    ~FakeNetns() override {
        k_.netns_destroyed(netns_id_of_fd(fd_));
        ::close(fd_);
    }
    int fd() const override { return fd_; }

private:
    FakeRdmaKernel& k_;
    int fd_;
};

struct FakeEnv {
    FakeRdmaKernel kernel;
    std::unique_ptr<netns::RdmaNetlink> host = kernel.open_view(kernel.init_id());
    int host_fd = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    ~FakeEnv() { ::close(host_fd); }

    sc::Env env(const std::string& device, bool can_move) {
        return sc::Env{*host,
                       host_fd,
                       device,
                       can_move,
                       [this] { return std::make_unique<FakeNetns>(kernel); },
                       [this](const sc::ScenarioNetns& ns) { return kernel.open_view(netns_id_of_fd(ns.fd())); }};
    }
};

}  // namespace

TEST_CASE("RDMA scenarios hold for the fake with an rxe-like device", "[rdma][unit]") {
    FakeEnv f;
    f.kernel.add_device("ens1rxe", /*can_disassociate=*/true);
    f.kernel.add_device("rxe0", /*can_disassociate=*/false);
    auto env = f.env("rxe0", false);
    sc::run_all(env);
    CHECK(f.kernel.mode() == netns::RdmaNetnsMode::shared);
}

TEST_CASE("RDMA scenarios hold for the fake with a movable (mlx5-like) device", "[rdma][unit]") {
    FakeEnv f;
    f.kernel.add_device("mlx5_0", true);
    std::vector<std::pair<std::string, bool>> visibility;
    f.kernel.on_host_visibility = [&](const std::string& dev, bool home) { visibility.emplace_back(dev, home); };
    auto env = f.env("mlx5_0", true);
    sc::run_all(env);
    // exclusive_isolation moved it out and back once.
    REQUIRE(visibility.size() == 2);
    CHECK(visibility[0] == std::make_pair(std::string("mlx5_0"), false));
    CHECK(visibility[1] == std::make_pair(std::string("mlx5_0"), true));
}

TEST_CASE("fake RDMA kernel: a dying namespace returns its devices", "[rdma][unit]") {
    FakeEnv f;
    f.kernel.add_device("mlx5_1", true);
    f.kernel.boot_mode(netns::RdmaNetnsMode::exclusive);
    {
        FakeNetns ns(f.kernel);
        auto dev = f.host->device_by_name("mlx5_1");
        REQUIRE(dev);
        f.host->move_device(dev->index, ns.fd());
        CHECK_FALSE(f.host->device_by_name("mlx5_1"));
        CHECK(f.kernel.owner_of("mlx5_1") == netns_id_of_fd(ns.fd()));
    }
    CHECK(f.host->device_by_name("mlx5_1"));
    CHECK(f.kernel.owner_of("mlx5_1") == f.kernel.init_id());
}

TEST_CASE("fake RDMA kernel: an index the caller does not see is EINVAL", "[rdma][unit]") {
    FakeEnv f;
    f.kernel.add_device("mlx5_2", true);
    f.kernel.boot_mode(netns::RdmaNetnsMode::exclusive);
    FakeNetns ns(f.kernel);
    auto inside = f.kernel.open_view(netns_id_of_fd(ns.fd()));
    try {
        inside->move_device(1, f.host_fd);
        FAIL("moving a device the namespace does not own must fail");
    } catch (const netns::KernelError& e) {
        CHECK(e.errno_value() == EINVAL);
    }
    CHECK(f.kernel.owner_of("mlx5_2") == f.kernel.init_id());
}

TEST_CASE("RDMA scenarios: the fake's rxe driver deletes the device when its netdev leaves", "[rdma][unit]") {
    FakeEnv f;
    f.kernel.add_device("rxe0", /*can_disassociate=*/false);
    f.kernel.bind_to_netdev("rxe0", "va");
    bool netdev_home = true;
    std::vector<std::string> deleted;
    f.kernel.netdev_in_init = [&](const std::string& netdev) { return netdev != "va" || netdev_home; };
    f.kernel.on_deleted = [&](const std::string& device) { deleted.push_back(device); };
    auto env = f.env("rxe0", false);
    sc::bound_device_deleted_with_netdev(
        env, [&] { netdev_home = false; }, [&] { netdev_home = true; });
    CHECK(deleted == std::vector<std::string>{"rxe0"});
    CHECK_FALSE(f.kernel.exists("rxe0"));
}
