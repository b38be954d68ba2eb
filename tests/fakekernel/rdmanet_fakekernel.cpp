// rdmanet-fakekernel: the rdmanet plugin with the kernel parts this development kernel lacks
// (PF-side SR-IOV VF netlink, RDMA netlink, IPoIB child creation) replaced by the file-backed
// fakes of support/fake_kernel_file.hpp, whose state file $RDMANET_FAKE_KERNEL_STATE names.
// Everything else -- netns moves, renames, addresses, IPAM, state, locks -- is the product's code
// on the real kernel. TEST ONLY: built into <build>/test-bin, never installed or packaged. The
// production binary (cni/main/rdmanet.cpp) has no way to reach these fakes.
//
// `rdmanet-fakekernel reconcile-local [--dry-run]` runs the node agent's repair pass
// (rdmanetctl reconcile --local) over the same fakes, so sriov/ipoib repairs are tested too.
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "rdmanet/cni/ctl/agent.hpp"

#include "rdmanet/cni/plugin/plugin.hpp"
#include "rdmanet/netns/rtnl.hpp"
#include "support/fake_kernel_file.hpp"

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    const char* state = std::getenv(rdmanet::test::kFakeKernelStateEnv);
    const char* sysfs = std::getenv("RDMANET_SYSFS_ROOT");
    rdmanet::netns::Rtnl host;   // where IPoIB stand-in children are created: the plugin's namespace
    rdmanet::test::FakeKernelServices fakes(state ? state : "", sysfs ? sysfs : "", host);
    if (argc > 1 && std::string_view(argv[1]) == "reconcile-local") {
        const bool dry_run = argc > 2 && std::string_view(argv[2]) == "--dry-run";
        return rdmanet::cni::ctl::reconcile_local({dry_run, fakes.services()}, std::cout, std::cerr);
    }
    return rdmanet::cni::run_plugin(rdmanet::cni::process_env_lookup(), std::cin, std::cout, std::cerr,
                                    fakes.services());
}
