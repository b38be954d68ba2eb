#pragma once
// The plugin's entry point: one CNI invocation, env + stdin in, result or error JSON out.
#include <iosfwd>

#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::netns {
class IpoibLinks;
class Sysfs;
class VfControl;
}

namespace rdmanet::cni {

struct RdmaAccess;

// Returns the process exit status. Only the result (or the error JSON) is written to `out`.
int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err);

// The kernel interfaces this development kernel lacks, and sysfs, injectable for in-process tests
// (a null member means the real kernel's). The plugin binary always uses the real ones: it reads
// no environment switch that could put a fake under a production ADD (the state directory comes
// from the node policy). The test-only binary rdmanet-fakekernel (tests/fakekernel/, never
// installed) is the one process that passes file-backed fakes here.
struct KernelServices {
    netns::VfControl* vf = nullptr;       // PF-side SR-IOV VF netlink
    const RdmaAccess* rdma = nullptr;     // RDMA netlink for rdma.isolation (rdma_isolation.hpp)
    netns::IpoibLinks* ipoib = nullptr;   // IPoIB child creation (netns/ipoib.hpp)
    const netns::Sysfs* sysfs = nullptr;  // a fake sysfs tree (PCI functions, VFs, RDMA devices)
};
int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err,
               const KernelServices& services);

}  // namespace rdmanet::cni
