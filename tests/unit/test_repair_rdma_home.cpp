// The node agent's precondition for undoing a stranded attachment whose RDMA device the pod owned
// (exclusive mode): the device is back in the host, or nothing keeps the repair waiting.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <chrono>
#include <filesystem>

#include "rdmanet/base/fd.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/cni/node/repair_rdma_home.hpp"
#include "support/fake_rdma.hpp"
#include "support/fake_sysfs.hpp"

using namespace rdmanet;
using rdmanet::test::FakeRdmaKernel;
using rdmanet::test::FakeSysfs;
using rdmanet::test::netns_id_of_fd;

namespace {

constexpr const char* kVf = "0000:af:00.2";
constexpr std::chrono::milliseconds kNoWait{0};

}  // namespace

TEST_CASE("repair: an exclusive-mode RDMA device must be back in the host before the attachment is undone",
          "[unit][agent][rdma]") {
    FakeRdmaKernel kernel;  // the calling thread's namespace is the host's (init_net)
    kernel.boot_mode(netns::RdmaNetnsMode::exclusive);
    const auto index = kernel.add_device("mlx5_7");
    FakeSysfs tree;
    tree.add_pf("0000:af:00.0", "pfx");
    tree.add_vf("0000:af:00.0", 0, kVf, std::string("vfx"));
    tree.add_rdma_device(kVf, "mlx5_7");
    const netns::Sysfs sysfs = tree.sysfs();
    const cni::RdmaAccess access{[&](const netns::NetNamespace& ns) { return kernel.open_in(ns); }, {}};
    cni::KernelServices services;
    services.rdma = &access;
    services.sysfs = &sysfs;

    cni::AttachmentState state;
    state.mode = "sriov";
    state.pci_address = kVf;
    state.rdma_device = "mlx5_7";

    // The pod's namespace (a token with its own inode) owns the device.
    const base::UniqueFd pod(::memfd_create("rdmanet-test-pod-netns", MFD_CLOEXEC));
    REQUIRE(pod);
    kernel.netns_created(netns_id_of_fd(pod.get()));
    kernel.open_view(kernel.init_id())->move_device(index, pod.get());
    REQUIRE(kernel.owner_of("mlx5_7") == netns_id_of_fd(pod.get()));

    SECTION("the namespace is still held: the repair waits, saying why") {
        const auto why = cni::node::rdma_device_not_home(state, services, kNoWait);
        REQUIRE(why);
        CHECK(why->find("RDMA device mlx5_7 is not back in the host namespace") != std::string::npos);
        CHECK(why->find("nothing was undone") != std::string::npos);
    }
    SECTION("the namespace was freed: the kernel returned the device, the repair goes ahead") {
        kernel.netns_destroyed(netns_id_of_fd(pod.get()));
        CHECK(kernel.owner_of("mlx5_7") == kernel.init_id());
        CHECK_FALSE(cni::node::rdma_device_not_home(state, services, kNoWait));
    }
    SECTION("the VF's PCI function is gone: nothing to wait for") {
        std::filesystem::remove(std::filesystem::path(tree.root()) / "bus/pci/devices" / kVf);
        REQUIRE_FALSE(sysfs.pci_device_exists(kVf));
        CHECK_FALSE(cni::node::rdma_device_not_home(state, services, kNoWait));
    }
    SECTION("no RDMA device was moved at ADD") {
        state.rdma_device.clear();
        CHECK_FALSE(cni::node::rdma_device_not_home(state, services, kNoWait));
    }
    SECTION("shared mode: the device never left the host's view") {
        kernel.boot_mode(netns::RdmaNetnsMode::shared);
        CHECK_FALSE(cni::node::rdma_device_not_home(state, services, kNoWait));
    }
}
