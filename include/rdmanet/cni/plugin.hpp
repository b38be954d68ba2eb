#pragma once
// The plugin's entry point: one CNI invocation, env + stdin in, result or error JSON out.
#include <iosfwd>

#include "rdmanet/cni/env.hpp"

namespace rdmanet::netns {
class VfControl;
}

namespace rdmanet::cni {

// Returns the process exit status. Only the result (or the error JSON) is written to `out`.
int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err);

// The kernel interfaces this development kernel lacks, injectable for in-process tests (a null
// member means the real kernel's). The plugin binary always uses the real ones: no environment
// switch can put a fake under a production ADD.
struct KernelServices {
    netns::VfControl* vf = nullptr;   // PF-side SR-IOV VF netlink
};
int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err,
               const KernelServices& services);

}  // namespace rdmanet::cni
