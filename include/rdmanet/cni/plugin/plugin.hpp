#pragma once
// The plugin's entry point: one CNI invocation, env + stdin in, result or error JSON out.
#include <iosfwd>

#include "rdmanet/cni/modes/kernel.hpp"
#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::cni {

// Returns the process exit status. Only the result (or the error JSON) is written to `out`.
int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err);

// The same with injected kernel interfaces (KernelServices, modes/kernel.hpp): in-process tests
// and the test-only rdmanet-fakekernel.
int run_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err,
               const KernelServices& services);

}  // namespace rdmanet::cni
