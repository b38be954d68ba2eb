// rdmanet-fakekernel: the rdmanet plugin with the kernel parts this development kernel lacks
// (PF-side SR-IOV VF netlink, RDMA netlink, IPoIB child creation) replaced by the file-backed
// fakes of support/fake_kernel_file.hpp, whose state file $RDMANET_FAKE_KERNEL_STATE names, and
// sysfs read under $RDMANET_FAKE_SYSFS_ROOT. Without a state file the real kernel's services are
// used and only sysfs is fake (a PCI tree that maps a PCI address onto a real veth end).
// Everything else -- netns moves, renames, addresses, IPAM, state, locks -- is the product's code
// on the real kernel. TEST ONLY: built into <build>/test-bin, never installed or packaged. The
// production binary (cni/main/rdmanet.cpp) reads no such variable: it has no way to reach fakes.
//
// `rdmanet-fakekernel reconcile-local [--dry-run]` runs the node agent's repair pass
// (rdmanetctl reconcile --local) over the same fakes, so sriov/ipoib repairs are tested too.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>

#include "rdmanet/cni/cli/pool.hpp"

#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/netns/rtnl.hpp"
#include "rdmanet/netns/sysfs.hpp"
#include "support/fake_kernel_file.hpp"

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    const char* state = std::getenv(rdmanet::test::kFakeKernelStateEnv);
    const char* sysfs_root = std::getenv(rdmanet::test::kFakeSysfsRootEnv);
    rdmanet::netns::Rtnl host;  // where IPoIB stand-in children are created: the plugin's namespace
    std::unique_ptr<rdmanet::test::FakeKernelServices> fakes;
    rdmanet::cni::KernelServices services;
    if (state && *state) {
        fakes = std::make_unique<rdmanet::test::FakeKernelServices>(state, sysfs_root ? sysfs_root : "", host);
        services = fakes->services();
    }
    std::optional<rdmanet::netns::Sysfs> sysfs;
    if (sysfs_root && *sysfs_root) {
        sysfs.emplace(sysfs_root);
        services.sysfs = &*sysfs;
    }
    if (argc > 1 && std::string_view(argv[1]) == "reconcile-local") {
        const bool dry_run = argc > 2 && std::string_view(argv[2]) == "--dry-run";
        return rdmanet::cni::cli::reconcile_local({dry_run, services}, std::cout, std::cerr);
    }
    return rdmanet::cni::run_plugin(rdmanet::cni::process_env_lookup(), std::cin, std::cout, std::cerr, services);
}
