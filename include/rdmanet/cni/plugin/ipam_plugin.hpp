#pragma once
// rdmanet-ipam: the embedded IPAM as a stand-alone CNI IPAM plugin for other CNIs
// ("ipam": {"type": "rdmanet-ipam", ...}). Prints the IPAM result shape (no interfaces).
#include <iosfwd>

#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::cni {

int run_ipam_plugin(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace rdmanet::cni
